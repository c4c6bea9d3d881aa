"""Flow's figure-eight 0, 1 and 2 learned from scratch, against all-human and the snake rule.

Flow's loopy intersection (Vinitsky et al. 2018): 14 vehicles on a one-lane loop that
crosses itself, 1500 steps of 0.1 s from a standing start, desired-velocity reward, AV
accelerations in [-3, 3] m/s^2; Flow's humans (IDM plus noise, not yielding at the
crossing). Variant 0: 13 humans + 1 AV (rlsuite/FigureEight-v0); 1: 7 + 7 AVs and 2: 0 + 14
AVs under one shared policy (rlsuite/FigureEightMulti-v0). The metric is Flow's mean speed
of all vehicles; all-human is 14 humans and no AV on the same seeds. Pass: mean speed >=
Flow's best (Table 1 of the CoRL 2018 paper: 8.26 / 6.43 / 5.96 m/s) and learned /
all-human >= Flow's ratio (1.98 / 1.54 / 1.43), since SUMO versions differ. Writes
``traffic_figure_eight_<variant>.json`` and ``.png``.
"""

from dataclasses import dataclass

from rlsuite.apps.traffic.benchmarking import TrainingSettings
from rlsuite.bench import Benchmark, Row, Value, pub

VARIANTS = {
    0: ("rlsuite/FigureEight-v0", "figure_eight", 1, 8.26, 1.98),
    1: ("rlsuite/FigureEightMulti-v0", "figure_eight_multi", 7, 6.43, 1.54),
    2: ("rlsuite/FigureEightMulti-v0", "figure_eight_multi", 14, 5.96, 1.43),
}
"""variant -> (env id, scenario, AVs, Flow's best mean speed, its ratio to all-human)."""


@dataclass(frozen=True)
class Settings(TrainingSettings):
    minutes: float = 20.0
    """training wall-clock budget in minutes"""
    variant: int = 0
    """Flow's variant: 0, 1 or 2"""
    plan: str = "es"
    """es or sync"""
    episodes: int = 3
    """seeded evaluation episodes"""


def all_human(seeds: list[int]) -> float:
    """Mean speed of 14 Flow humans and no AV, over 1500 steps from the standing start."""
    import numpy as np

    from rlsuite.apps.traffic.envs.figure_eight import FigureEightConfig, FigureEightSimulation

    speeds = []
    for s in seeds:
        sim = FigureEightSimulation(FigureEightConfig(num_avs=0))
        try:
            sim.start(np.random.default_rng(s))
            for _ in range(FigureEightConfig().horizon):
                sim.control({})
            speeds.append(sim.metrics()["mean_speed"])
        finally:
            sim.close()
    return float(np.mean(speeds))


def run(ctx) -> int:
    from rich.console import Console

    from rlsuite.apps.traffic import scenarios
    from rlsuite.apps.traffic.benchmarking import evaluate_controllers, save_training, train_plan
    from rlsuite.cli_common import parse_sets
    from rlsuite.platform import envs

    s = ctx.settings
    if s.variant not in VARIANTS or s.plan not in ("es", "sync"):
        raise ValueError(
            f"--variant is one of 0, 1, 2 and --plan es or sync, not {s.variant}, {s.plan}"
        )
    env_id, scen_name, avs, flow_best, flow_ratio = VARIANTS[s.variant]
    cfg = {"num_avs": avs, **parse_sets(s.env_set)}
    envs.rllib_env(env_id)
    if s.plan == "es":  # whole deterministic episodes; a shared policy for every AV
        fields = dict(num_workers=s.workers, hidden=(32, 32))
    else:
        fields = dict(num_env_runners=s.workers, train_batch_size=3000 * max(1, avs // 4),
                      minibatch_size=500, num_epochs=10, gamma=0.99, hidden=(64, 64),
                      vf_clip_param=1e6, lr=3e-4)  # fmt: skip
    plan, res, curve, train_s = train_plan(
        ctx, s.plan, dict(env=env_id, env_config=cfg, seed=0, **fields),
        run_dir=f"runs/benchmarks/traffic_figure_eight_{s.variant}",
    )  # fmt: skip
    scen = scenarios.get(scen_name)
    seeds = list(range(1000, 1000 + s.episodes))
    rows = evaluate_controllers(
        env_id, ("learned", "snake", "idm"),
        lambda n: (res.checkpoint, {}) if n == "learned" else scenarios.controller_for(scen, n, cfg),
        seeds, cfg, dict(mean_speed="mean_speed", frac_below_0_5="frac_below_0_5",
                         return_="return", collisions="collisions"),
        lambda r: f"{r['controller']}: mean speed {r['mean_speed']:.2f} m/s", Console(),
    )  # fmt: skip
    human = all_human(seeds)
    rows.append(dict(controller="all-human (no AV)", mean_speed=human, frac_below_0_5=None,
                     return_=None, collisions=0.0))  # fmt: skip
    learned = rows[0]["mean_speed"]
    ctx.table([{**r, "/ all-human": r["mean_speed"] / human} for r in rows],
              f"figure-eight {s.variant} ({14 - avs} humans + {avs} AVs), {s.episodes} episodes: "
              f"{plan.name} ({res.iterations} it, {res.env_steps} env steps, {train_s / 60:.1f} min)")  # fmt: skip
    checks = {
        f"mean speed >= Flow's {flow_best} m/s": learned >= flow_best,
        f"learned / all-human >= Flow's {flow_ratio}": learned / human >= flow_ratio,
    }
    return save_training(
        ctx, s.out or f"traffic_figure_eight_{s.variant}", plan, cfg, res, curve, rows, train_s,
        checks, metric="mean_speed", curve_label="episode return",
        curve_title=f"{plan.name} on figure-eight {s.variant}", bar_label="mean speed (m/s)",
        bar_title=f"figure-eight {s.variant}, {14 - avs} humans + {avs} AVs",
    )  # fmt: skip


FLOW_T1 = "Vinitsky et al. 2018, Table 1"

# fmt: off
BENCHMARK = Benchmark(
    claim="Flow's figure-eight 0/1/2 learned from scratch: mean speed >= Flow's best and its ratio to all-human.",
    run=run, settings=Settings, quick=dict(variant=0, minutes=0.2, chunk=1, episodes=1, workers=1),
    rows=(
        Row("traffic", "figure-eight 1 (7 AVs)", "mean speed, m/s", "traffic_figure_eight_1.json",
            Value(("rows", {"controller": "learned"}, "mean_speed")), pub(f"Flow ARS, {FLOW_T1}", 6.43),
            "rlsuite bench run traffic_figure_eight --variant 1 --plan es --minutes 10 --chunk 5 --plan-set lr=0.01 "
            "--plan-set sigma=0.03", "`figure_eight_1_es`"),
    ),
)
# fmt: on
