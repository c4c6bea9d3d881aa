"""The lights of a sumo-rl grid under ONE shared PPO policy, against fixed-time, SUMO-actuated
and max-pressure control on the same demand.

Every light is an agent of the PettingZoo parallel env ``rlsuite/Signals-v0``; the ``sync``
plan's ``policies="shared"`` maps them all to one module (RLlib's multi-agent API). Every
controller runs one episode of ``--num-seconds`` simulated seconds (sumo-rl's fixed demand,
SUMO seeded). Pass: the learned policy's mean waiting time is below fixed-time control's.
Writes ``traffic_signals.json`` and ``.png``.
"""

from dataclasses import dataclass

from rlsuite.apps.traffic.benchmarking import TrainingSettings
from rlsuite.bench import Benchmark, Row, Value, here

ENV_ID = "rlsuite/Signals-v0"
BASELINES = ("fixed", "actuated", "maxpressure")


@dataclass(frozen=True)
class Settings(TrainingSettings):
    network: str = "grid2x2"
    """single, grid2x2 or grid4x4"""
    num_seconds: int = 1800
    """simulated seconds per episode"""


def run(ctx) -> int:
    from rich.console import Console

    from rlsuite.apps.traffic import scenarios
    from rlsuite.apps.traffic.benchmarking import evaluate_controllers, save_training, train_plan
    from rlsuite.platform import envs

    s = ctx.settings
    cfg = {"network": s.network, "num_seconds": s.num_seconds}
    envs.rllib_env(ENV_ID)
    decisions = s.num_seconds // 5  # sumo-rl's delta_time
    plan, res, curve, train_s = train_plan(ctx, "sync", dict(
        env=ENV_ID, env_config=cfg, num_env_runners=s.workers, seed=0, policies="shared",
        train_batch_size=2 * decisions, minibatch_size=decisions // 2, num_epochs=10, lr=1e-3,
        gamma=0.95, hidden=(64, 64), entropy_coeff=0.01, vf_clip_param=100.0,
    ))  # fmt: skip
    scen = scenarios.get("signals")
    rows = evaluate_controllers(
        ENV_ID, ("learned", *BASELINES),
        lambda n: (res.checkpoint, {}) if n == "learned" else scenarios.controller_for(scen, n, cfg),
        [0], cfg, dict(mean_waiting_time="mean_waiting_time", mean_queue="mean_queue",
                       mean_speed="mean_speed"),
        lambda r: f"{r['controller']}: waiting {r['mean_waiting_time']:.2f} s", Console(),
    )  # fmt: skip
    ctx.table(rows, f"signals {s.network}, {s.num_seconds} s: shared PPO policy ({res.iterations} "
                    f"it, {res.env_steps} env steps, {train_s / 60:.1f} min) vs programs")  # fmt: skip
    waiting = {r["controller"]: r["mean_waiting_time"] for r in rows}
    checks = {"learned waiting time < fixed-time": waiting["learned"] < waiting["fixed"]}
    return save_training(
        ctx, s.out or "traffic_signals", plan, cfg, res, curve, rows, train_s, checks,
        metric="mean_waiting_time", curve_label="episode return (sum over lights)",
        curve_title="shared PPO policy", bar_label="mean waiting time (s)",
        bar_title=f"{s.network}, {s.num_seconds} s",
    )  # fmt: skip


# fmt: off
BENCHMARK = Benchmark(
    claim="One shared PPO policy for a sumo-rl grid's lights waits less than fixed-time control.",
    run=run, settings=Settings, quick=dict(minutes=0.2, chunk=1, num_seconds=300), rows=(
    Row("traffic", "signals, sumo-rl 2x2 grid", "mean waiting time, s", "traffic_signals.json",
        Value(("rows", {"controller": "learned"}, "mean_waiting_time")),
        here("max-pressure", "rows", {"controller": "maxpressure"}, "mean_waiting_time"),
        "rlsuite bench run traffic_signals --minutes 10", "run dir (not shipped)", lower_is_better=True),
))
# fmt: on
