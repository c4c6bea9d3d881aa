"""Flow's merge 0/1/2: a learned AV policy against all-human and the hand-written AV rules.

Each variant's shipped policy (``merge_es``, ``merge1_es``, ``merge2_es``, one shared by every
AV of ``rlsuite/MergeMulti-v0``) runs on seeded 750 s episodes beside all-human, the IDM,
FollowerStopper and PI on every AV, and a probe that holds the AVs at 4 m/s over the first
15% of the highway (it raises Flow's metric by keeping cars off the road). Merge 0's policy
also drives merge 1 and 2. Outflow, cars on the road and waiting to enter, and the speed with
the waiting cars at 0 are reported beside the metric. Pass: merge 0's learned / all-human mean
speed >= 1.8 (Flow: 14.95 / 7.39 = 2.02), both measured here on the same seeds.
"""

from dataclasses import dataclass

import numpy as np

from rlsuite.bench import Benchmark, Row, Value, pub, repo_root

ENV_ID = "rlsuite/MergeMulti-v0"
VARIANTS = {0: 0.1, 1: 0.25, 2: 0.333}
"""merge variant -> AV share of the highway inflow."""
FLOW = {0: (14.95, "TRPO"), 1: (17.29, "ES"), 2: (17.36, "ES")}
"""Flow's best learned mean speed (m/s) per variant and its algorithm (CoRL 2018, Table 1)."""
FLOW_HUMAN = 7.39
MERGE0_ROW = "merge 0's policy"
METER = "entrance meter (probe)"
BASELINES = ("idm", "followerstopper", "pi")
KEYS = ("mean_speed", "throughput_veh_h", "vehicles", "waiting_to_enter")


@dataclass(frozen=True)
class Settings:
    controller: str = "benchmarks/policies/merge_es"
    """merge 0's learned policy (a checkpoint; relative paths from the repository root)"""
    controller_1: str = "benchmarks/policies/merge1_es"
    """merge 1's learned policy"""
    controller_2: str = "benchmarks/policies/merge2_es"
    """merge 2's learned policy"""
    episodes: int = 3
    """seeded episodes per controller (seeds from 1000)"""
    out: str = "traffic_merge"
    """results name"""


def evaluate(controller, cfg: dict, seeds: list[int]) -> dict:
    """Mean metrics of a controller (a baseline name, a class or a checkpoint) on ``seeds``,
    with ``speed_with_waiting``: the cars held off the road counted at 0 m/s."""
    from rlsuite.apps.traffic import scenarios
    from rlsuite.platform import evaluation

    if controller in BASELINES:
        controller, _ = scenarios.controller_for(scenarios.get("merge"), controller, cfg)
    ev = evaluation.evaluate(controller, evaluation.scenarios(ENV_ID, seeds, cfg), num_workers=0)
    return waiting({k: ev.summary[k]["mean"] for k in (*KEYS, "return", "collisions")})


def waiting(row: dict) -> dict:
    on, off = row["vehicles"], row["waiting_to_enter"]
    return {**row, "speed_with_waiting": row["mean_speed"] * on / max(on + off, 1e-9)}


def run(ctx) -> int:
    from rlsuite.apps.traffic.envs.merge import all_human
    from rlsuite.apps.traffic.probe_controllers import EntranceMeter

    s = ctx.settings
    seeds = list(range(1000, 1000 + s.episodes))
    own = {
        v: str(repo_root() / c)
        for v, c in enumerate((s.controller, s.controller_1, s.controller_2))
    }
    out: dict = dict(controllers=own, seeds=seeds, flow_all_human=FLOW_HUMAN, variants={})
    table = []
    for v, share in VARIANTS.items():
        cfg = {"av_share": share}
        rows = {"learned": evaluate(own[v], cfg, seeds)}
        if v:
            rows[MERGE0_ROW] = evaluate(own[0], cfg, seeds)
        rows |= {b: evaluate(b, cfg, seeds) for b in BASELINES}
        rows[METER] = evaluate(EntranceMeter, cfg, seeds)
        human = all_human(cfg, seeds)
        rows["all-human"] = waiting({k: float(np.mean([h[k] for h in human])) for k in KEYS})
        for name, r in rows.items():
            r["ratio"] = r["mean_speed"] / rows["all-human"]["mean_speed"]
            table.append(dict(variant=v, controller=name, **{k: r[k] for k in (*KEYS, "ratio")}))
        out["variants"][str(v)] = dict(av_share=share, rows=rows, flow_learned=FLOW[v][0],
                                       flow_algorithm=FLOW[v][1])  # fmt: skip
    ctx.table(table, f"Flow's merge, {s.episodes} episodes each (750 s); Flow all-human 7.39")
    ratio = out["variants"]["0"]["rows"]["learned"]["ratio"]
    out["checks"] = {"merge 0: learned / all-human >= 1.8 (Flow 2.02), measured here": ratio >= 1.8}
    ctx.save(s.out, out)
    ctx.save_plot(s.out, figure(out))
    return ctx.verdict(out["checks"])


def figure(out: dict):
    """Mean speed of every controller on merge 0/1/2, Flow's learned and all-human beside."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, b = plt.subplots(figsize=(10, 4.2), dpi=110)
    names = ["learned", MERGE0_ROW, "all-human", *BASELINES, METER]
    for j, name in enumerate(names):
        vals = [out["variants"][str(v)]["rows"].get(name, {}).get("mean_speed", np.nan)
                for v in VARIANTS]  # fmt: skip
        b.bar(np.arange(3) + (j - 3) * 0.11, vals, 0.11, label=name)
    b.scatter(np.arange(3), [FLOW[v][0] for v in VARIANTS], marker="*", s=120, color="tab:red",
              label="Flow learned", zorder=3)  # fmt: skip
    b.axhline(FLOW_HUMAN, color="tab:red", ls="--", lw=1, label="Flow all-human")
    b.set_xticks(np.arange(3), [f"merge {v} ({VARIANTS[v]:.0%} AVs)" for v in VARIANTS])
    b.set_ylabel("mean speed (m/s)")
    b.legend(fontsize=7, ncol=3, loc="upper left")
    return fig


FLOW_T1 = "Vinitsky et al. 2018, Table 1"


def _row(v: int, policy: str) -> Row:
    what = f"Flow {FLOW[v][1]}, {FLOW_T1}"
    return Row("traffic", f"merge {v} ({VARIANTS[v]:.0%} AVs)", "mean speed, m/s", "traffic_merge.json",
               Value(("variants", str(v), "rows", "learned", "mean_speed")), pub(what, FLOW[v][0]),
               "rlsuite bench run traffic_merge", f"`{policy}`")  # fmt: skip


BENCHMARK = Benchmark(
    run=run, settings=Settings, quick=dict(episodes=1),
    rows=(_row(0, "merge_es"), _row(1, "merge1_es"), _row(2, "merge2_es")),
)  # fmt: skip
