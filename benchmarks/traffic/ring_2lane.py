"""The two-lane ring (Kheterpal et al. 2018, "Flow: Deep RL for Control in SUMO"): baselines and
a learned AV that accelerates and changes lanes, on the same seeded episodes.

230 m, two lanes, 41 humans (SUMO's IDM and lane changes, Flow's parameters) and one AV
(``rlsuite/Ring2Lane-v0``), from a bunched start, 1000 human-driven warm-up steps, then 1500
controlled steps of 0.1 s; the metric is all 42 vehicles' mean speed. Controllers: ``human``
(the AV one more SUMO human: all-human), ``idm``, ``followerstopper`` and ``pi`` (keeping
their lane), a probe (PI that asks for the other lane for 15 s every 30 s) and the policy
under ``--policy`` (its training command is in its ``rlsuite.json``). Published: all-human
2.83 m/s, learned 3.11 m/s (+10%). Pass: learned mean speed >= 1.10 x all-human measured
here. Also writes the first seed's space-time diagrams of the learned AV and all-human.
"""

import os
import time
from dataclasses import dataclass

from rlsuite.bench import Benchmark, Row, Value, pub, repo_root

ENV_ID = "rlsuite/Ring2Lane-v0"
POLICY = str(repo_root() / "benchmarks" / "policies" / "ring_2lane_es")
PUBLISHED = {"all-human": 2.83, "learned": 3.11, "gain": 0.10}
"""Kheterpal et al. (2018): mean speeds (m/s) and the learned AV's gain."""
TARGET_GAIN = 0.10
PROBE = "pi + held lane requests (probe)"


@dataclass(frozen=True)
class Settings:
    policy: str = POLICY
    """the learned policy (a checkpoint directory)"""
    episodes: int = 4
    """seeded episodes per controller"""
    seed: int = 1000
    """first seed"""
    out: str = "traffic_ring_2lane"
    """results name"""


def run(ctx) -> int:
    from rich.console import Console

    from rlsuite.apps.traffic import scenarios
    from rlsuite.apps.traffic.benchmarking import evaluate_controllers
    from rlsuite.apps.traffic.plots import space_time_diagram
    from rlsuite.apps.traffic.probe_controllers import WeaveProbe
    from rlsuite.platform import envs, evaluation

    s = ctx.settings
    scen = scenarios.get("ring_2lane")
    seeds = list(range(s.seed, s.seed + s.episodes))

    def controller(name: str):
        if name == "learned":  # with the options its policy was trained with (lane_threshold)
            path = os.path.abspath(s.policy)
            return path, scenarios.with_policy_fields(ENV_ID, {}, path)
        if name == PROBE:
            return WeaveProbe, {}
        return scenarios.controller_for(scen, name, {})

    columns = dict(
        mean_speed="mean_speed", lane_0="mean_speed_lane_0", lane_1="mean_speed_lane_1",
        frac_below_0_5="frac_below_0_5", return_="return", lane_changes="lane_changes",
        refused="lane_changes_refused", human_lane_changes="human_lane_changes",
        av_left_lane_share="av_left_lane_share", collisions="collisions",
    )  # fmt: skip
    t0 = time.time()
    rows = evaluate_controllers(
        ENV_ID, ["human", "idm", "followerstopper", "pi", PROBE, "learned"], controller, seeds,
        {}, columns, lambda r: f"{r['controller']}: mean speed {r['mean_speed']:.3f} m/s",
        Console(),
    )  # fmt: skip
    eval_s = time.time() - t0
    by = {r["controller"]: r for r in rows}
    human = by["human"]["mean_speed"]
    gain = by["learned"]["mean_speed"] / human - 1
    ctx.table([{**r, "vs all-human": r["mean_speed"] / human - 1} for r in rows],
              f"two-lane ring, 230 m, 41 humans + 1 AV, seeds {seeds[0]}-{seeds[-1]} "
              f"(Kheterpal 2018: learned {PUBLISHED['learned']}, +{PUBLISHED['gain']:.0%})")  # fmt: skip
    checks = {
        f"learned >= (1 + {TARGET_GAIN:g}) x all-human mean speed ({gain:+.1%})": gain
        >= TARGET_GAIN
    }
    pngs = {}
    for name in ("learned", "human"):
        ctrl, extra = controller(name)
        cfg = {**extra, "record": True}
        env = envs.make(ENV_ID, cfg)
        try:
            evaluation.run_episode(env, evaluation.build_controller(ctrl),
                                   evaluation.Scenario(ENV_ID, cfg, seeds[0]))  # fmt: skip
            traj = env.unwrapped.trajectories()
        finally:
            env.close()
        pngs[name] = space_time_diagram(traj, str(ctx.path(f"{s.out}_{name}", ".png")),
                                        title=f"two-lane ring, {name}, seed {seeds[0]}")  # fmt: skip
    ctx.save(s.out, dict(env_id=ENV_ID, seeds=seeds, policy=s.policy, rows=rows, published=PUBLISHED,
                         gain_over_all_human=gain, checks=checks, eval_s=eval_s, space_time_png=pngs))  # fmt: skip
    return ctx.verdict(checks)


# fmt: off
BENCHMARK = Benchmark(
    claim="A learned two-lane-ring AV (acceleration and lane changes) lifts the mean speed >= 10% over all-human.",
    run=run, settings=Settings, quick=dict(episodes=1), rows=(
    Row("traffic", "two-lane ring (1 AV, lane changes)", "mean speed / all-human", "traffic_ring_2lane.json",
        Value(("rows", {"controller": "learned"}, "mean_speed"), over=("rows", {"controller": "human"}, "mean_speed")),
        pub("Kheterpal et al. 2018: 3.11 / 2.83 m/s", 3.11 / 2.83),
        "rlsuite bench run traffic_ring_2lane", "`ring_2lane_es`"),
))
# fmt: on
