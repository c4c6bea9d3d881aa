"""Flow's bottleneck0 without control: the inflow-outflow curve per SUMO version and road setting.

The all-human road (no AVs, nobody changes lanes) of Flow's bottleneck0 (Vinitsky et al.,
CoRL 2018; Flow commit bc44b21) on SUMO 1.8.0, 1.9.2, 1.14.1 and the project's 1.28, each
through its own ``sumo`` binary and its own netconvert, at inflows of 1000-2000 veh/h and
the same seeds. The metric is Flow's: the outflow (veh/h) over the last 500 s of 1000 steps
of 0.5 s after 40 warm-up steps. Flow's all-human outflow at 1900 veh/h is 1023 +- 263; its
capacity diagram drops past about 1500-1600 veh/h of inflow (Vinitsky et al., ITSC 2018).

Road settings (``--setting``, a name of :data:`SETTINGS`), each stating the road: ``free``
(``capacity_drop=False``: Flow's own drivers), ``breakdown`` (the env's default
``capacity_drop=True``, see ``BottleneckConfig.capacity_drop``), and the spread of desired
speeds around it (``speed_dev_0.15``, ``speed_dev_0.25``).

Pass criterion (``breakdown`` on SUMO 1.28): at 1900 veh/h the outflow is within 15% of
Flow's 1023 veh/h on at least 8 of 10 seeds, and the curve falls past capacity (the outflow
at 2000 veh/h is below the curve's maximum by at least 15%).

Each call runs the points asked for and merges them into the JSON (points already there
are kept unless ``--redo``), so versions and settings run as separate calls:

    flock /tmp/rlsuite-heavy.lock .venv/bin/python benchmarks/traffic_bottleneck_capacity.py --versions 1.28 --setting breakdown
    flock /tmp/rlsuite-heavy.lock .venv/bin/python benchmarks/traffic_bottleneck_capacity.py --versions 1.8.0 --setting free
    ...
    .venv/bin/python benchmarks/traffic_bottleneck_capacity.py --report

SUMO X installs with ``pip install --no-deps --target ~/.cache/rlsuite/sumo-X eclipse-sumo==X``.

Writes benchmarks/results/traffic/traffic_bottleneck_capacity.json and .png (inflow against outflow,
one panel per setting, one curve per version).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

from rlsuite.apps.traffic.benchmarking import MACHINE, RESULTS  # noqa: E402

PATH = os.path.join(RESULTS, "traffic_bottleneck_capacity.json")
VERSIONS = ("1.8.0", "1.9.2", "1.14.1", "1.28")
INFLOWS = (1000, 1200, 1400, 1600, 1700, 1800, 1900, 2000)
FLOW_DRIVERS = {"capacity_drop": False}
SETTINGS = {
    "free": FLOW_DRIVERS,
    "breakdown": {"capacity_drop": True},
    "speed_dev_0.15": {**FLOW_DRIVERS, "human_type": {"min_gap": 2.5, "speed_dev": 0.15,
                                                      "impatience": 0.5}},
    "speed_dev_0.25": {**FLOW_DRIVERS, "human_type": {"min_gap": 2.5, "speed_dev": 0.25,
                                                      "impatience": 0.5}},
}  # fmt: skip
"""Env options of each road setting (all-human: ``av_share`` 0 is added): Flow's drivers
(the free-flowing road), ``capacity_drop`` (speedDev 0.2, the env's default) and two
neighbours of its spread of desired speeds."""
FLOW = {"outflow_1900": 1023.0, "std_1900": 263.0, "tolerance": 0.15, "min_seeds": 8}
"""Flow's all-human outflow at 1900 veh/h (CoRL 2018 Table 1) and the pass criterion."""
CURVE_DROP = 0.15
"""The curve falls past capacity: outflow at the top inflow <= (1 - this) x the maximum."""

DIAGNOSIS = [
    # (item, Flow bc44b21, ours by default, same?)
    ("network", "edges 1-5: 100/310/140/280/155 m, 4/4/4/2/1 lanes x scaling, 23 m/s, "
     "spreadType center (flow/scenarios/bottleneck/gen.py)", "the same", True),
    ("merges", "nodes 4 and 5 type zipper, radius 20; connections 3->4 and 4->5 lane i -> "
     "floor(i/2); internal links on (no_internal_links=False)", "the same (2->3 lane i -> i "
     "given explicitly, as netconvert would)", True),
    ("scaling", "SCALING=1 (bottleneck0)", "lane_scale=1", True),
    ("demand", "InFlows: 1900 veh/h on edge 1 (baseline: all human), departLane random, "
     "departSpeed 10, begin 1, end 2e6 (vehsPerHour: evenly spaced)", "the same, begin 0",
     True),
    ("initial vehicles", "1 human placed at reset on edges 2-5 (uniform, min_gap 5)", "none",
     False),
    ("car following", "SumoCarFollowingParams(): IDM, accel 1, decel 1.5, tau 1, minGap 2.5, "
     "maxSpeed 30, speedFactor 1, speedDev 0.1, impatience 0.5, sigma 0.5",
     "the same but sigma 0 and emergencyDecel 9 (capacity_drop: speedDev 0.2)", False),
    ("lane-change params", "SumoLaneChangeParams(): LC2013, lcStrategic/lcCooperative/"
     "lcSpeedGain/lcKeepRight 1 (SUMO's defaults); lcAssertive is written for SL2015 only",
     "SUMO's defaults (LC2013)", True),
    ("lane-change mode", "0 (no lane changes of any kind), set over TraCI at departure",
     "0, set at departure", True),
    ("--lanechange.duration", "not set (SUMO's 0: instant changes; moot with mode 0)",
     "not set", True),
    ("speed mode", "9 (safe speed and right of way; no accel/decel bounds on TraCI "
     "speeds), set at departure", "9", True),
    ("time", "sim_step 0.5, warmup 40, horizon 1000, time-to-teleport -1, SUMO's default "
     "collision action", "the same, collisions removed", True),
    ("metric", "get_outflow_rate(500): arrivals over the last 1000 steps / 500 s",
     "the same", True),
    ("SUMO", "git 1d4338ab80 plus Flow's tmp.patch (a late-2017 0.32-era build; "
     "docs/source/flow_setup.rst, docker/Dockerfile)", "1.28 (wheel); 1.8.0 is the oldest "
     "wheel", False),
]  # fmt: skip
"""Flow's bottleneck0 at bc44b21 against our all-human road, item by item."""


def version_key(item: tuple[str, dict]) -> tuple[int, ...]:
    """Sort (version, points) pairs by release: 1.8.0 before 1.14.1."""
    return tuple(int(x) for x in item[0].split("."))


def run_point(version: str, setting: str, inflow: float, seeds: list[int]) -> dict:
    """All-human episodes at one (version, setting, inflow): per seed Flow's outflow."""
    from rlsuite.apps.traffic.envs.bottleneck import BottleneckEnv

    opts = {**SETTINGS[setting], "av_share": 0.0, "inflow": float(inflow)}
    if version != "1.28":
        opts.update(sumo_version=version, backend="traci")
    env = BottleneckEnv(**opts)
    eps = []
    try:
        zero = np.zeros(env.action_space.shape, np.float32)
        for s in seeds:
            env.reset(seed=s)
            done, info = False, {}
            while not done:
                _, _, term, trunc, info = env.step(zero)
                done = term or trunc
            m = env.episode_metrics()
            eps.append({"seed": s, **{k: float(v) for k, v in m.items()},
                        "failed": info.get("reason", "")})  # fmt: skip
    finally:
        env.close()
    flows = np.array([e["outflow_veh_h"] for e in eps])
    return {"inflow": inflow, "env_config": opts, "outflow_veh_h": float(flows.mean()),
            "outflow_std": float(flows.std()), "outflow_min": float(flows.min()),
            "outflow_max": float(flows.max()), "episodes": eps}  # fmt: skip


def load() -> dict:
    if os.path.exists(PATH):
        with open(PATH) as f:
            return json.load(f)
    return {"benchmark": "traffic_bottleneck_capacity", "machine": MACHINE, "flow": FLOW,
            "points": {}, "commands": []}  # fmt: skip


def checks(out: dict) -> dict[str, bool]:
    """The pass criterion on the ``breakdown`` setting under SUMO 1.28 (if measured)."""
    pts = out["points"].get("breakdown", {}).get("1.28", {})
    res: dict[str, bool] = {}
    p = pts.get("1900")
    if p:
        lo, hi = (FLOW["outflow_1900"] * (1 + d * FLOW["tolerance"]) for d in (-1, 1))
        near = sum(lo <= e["outflow_veh_h"] <= hi for e in p["episodes"])
        res[f"1.28 breakdown: >= {FLOW['min_seeds']} seeds within 15% of 1023 at 1900 "
            f"({near}/{len(p['episodes'])})"] = near >= FLOW["min_seeds"]  # fmt: skip
    if len(pts) >= 3:
        curve = [pts[k]["outflow_veh_h"] for k in sorted(pts, key=float)]
        res["1.28 breakdown: outflow falls past capacity"] = curve[-1] <= (1 - CURVE_DROP) * max(
            curve
        )
    return res


def plot(out: dict, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    settings = list(out["points"])
    cols = min(2, len(settings))
    rows = -(-len(settings) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(6 * cols, 4.2 * rows), dpi=110,
                             squeeze=False, sharey=True)  # fmt: skip
    for ax in axes.ravel()[len(settings) :]:
        ax.set_visible(False)
    for ax, setting in zip(axes.ravel(), settings):
        for version, pts in sorted(out["points"][setting].items(), key=version_key):
            ks = sorted(pts, key=float)
            ax.errorbar([float(k) for k in ks], [pts[k]["outflow_veh_h"] for k in ks],
                        yerr=[pts[k]["outflow_std"] for k in ks], marker="o", capsize=3,
                        label=f"SUMO {version}")  # fmt: skip
        ax.plot([1000, 2000], [920, 1840], color="grey", ls=":", label="inflow x 460/500")
        ax.errorbar([1900], [FLOW["outflow_1900"]], yerr=[FLOW["std_1900"]], color="k",
                    marker="*", ms=12, ls="none", capsize=4, label="Flow all-human")  # fmt: skip
        ax.set_title(f"bottleneck0 all-human, road: {setting}")
        ax.set_xlabel("inflow (veh/h)")
        ax.set_ylabel("outflow over the last 500 s (veh/h)")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def report(out: dict, console) -> None:
    from rich.table import Table

    inflows = sorted({k for s in out["points"].values() for v in s.values() for k in v},
                     key=float)  # fmt: skip
    t = Table(title="bottleneck0 all-human: outflow over the last 500 s (veh/h), mean over seeds "
              "[seeds below 1300 at 1900]")  # fmt: skip
    for c in ("road", "SUMO", *inflows):
        t.add_column(c, no_wrap=True, min_width=len(c))
    for setting, versions in out["points"].items():
        for version, pts in sorted(versions.items(), key=version_key):
            cells = []
            for k in inflows:
                p = pts.get(k)
                if p is None:
                    cells.append("")
                    continue
                cell = f"{p['outflow_veh_h']:.0f}"
                if k == "1900":
                    low = sum(e["outflow_veh_h"] < 1300 for e in p["episodes"])
                    cell += f" [{low}/{len(p['episodes'])}]"
                cells.append(cell)
            t.add_row(setting, version, *cells)
    console.print(t)
    for k, ok in out.get("checks", {}).items():
        console.print(f"{'PASS' if ok else 'FAIL'}  {k}")


def main(argv: list[str] | None = None) -> int:
    from rich.console import Console

    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--versions", default=",".join(VERSIONS), help="SUMO versions, comma-separated")
    p.add_argument("--setting", default="breakdown", choices=sorted(SETTINGS), help="road setting")
    p.add_argument("--inflows", default=",".join(map(str, INFLOWS)), help="veh/h, comma-separated")
    p.add_argument("--episodes", type=int, default=10, help="seeds per point")
    p.add_argument("--seed", type=int, default=0, help="first seed")
    p.add_argument("--redo", action="store_true", help="rerun points already in the JSON")
    p.add_argument("--report", action="store_true", help="only print the table and redraw")
    args = p.parse_args(argv)
    console = Console()
    out = load()
    out["diagnosis"] = [dict(item=i, flow=f, ours=o, same=s) for i, f, o, s in DIAGNOSIS]
    if not args.report:
        seeds = list(range(args.seed, args.seed + args.episodes))
        cmd = (
            "flock /tmp/rlsuite-heavy.lock .venv/bin/python benchmarks/traffic_bottleneck_capacity.py "
            + " ".join(argv if argv is not None else sys.argv[1:])
        )
        out["commands"] = [c for c in out["commands"] if c != cmd] + [cmd]
        for version in args.versions.split(","):
            for inflow in (int(x) for x in args.inflows.split(",")):
                pts = out["points"].setdefault(args.setting, {}).setdefault(version, {})
                if str(inflow) in pts and not args.redo:
                    continue
                t0 = time.time()
                pts[str(inflow)] = {**run_point(version, args.setting, inflow, seeds),
                                    "wall_s": time.time() - t0}  # fmt: skip
                r = pts[str(inflow)]
                console.print(f"{args.setting} SUMO {version} inflow {inflow}: outflow "
                              f"{r['outflow_veh_h']:.0f} +- {r['outflow_std']:.0f} "
                              f"({r['outflow_min']:.0f}-{r['outflow_max']:.0f}), "
                              f"{r['wall_s']:.0f} s")  # fmt: skip
                os.makedirs(RESULTS, exist_ok=True)
                with open(PATH, "w") as f:  # after every point: an interrupted call resumes
                    json.dump(out, f, indent=1)
    out["checks"] = checks(out)
    with open(PATH, "w") as f:
        json.dump(out, f, indent=1)
    plot(out, PATH.replace(".json", ".png"))
    report(out, console)
    console.print(f"results: {PATH}")
    return 0 if all(out["checks"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
