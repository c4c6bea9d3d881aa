"""The bottleneck's measurements behind its benchmarks: the all-human road's inflow-outflow
curve per SUMO version and road setting (``rlsuite bench run traffic_bottleneck_capacity``),
checked against Flow's capacity drop, with what differs from Flow's road item by item; and
the controllers on the road, all-human, ALINEA and a learned policy, on the same seeded
episodes (``rlsuite bench run traffic_bottleneck``)."""

from __future__ import annotations

from typing import Any

import numpy as np

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
FLOW_ALL_HUMAN = {"outflow_1900": 1023.0, "std_1900": 263.0, "tolerance": 0.15, "min_seeds": 8}
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


def capacity_checks(out: dict) -> dict[str, bool]:
    """The pass criterion on the ``breakdown`` setting under SUMO 1.28 (if measured)."""
    pts = out["points"].get("breakdown", {}).get("1.28", {})
    res: dict[str, bool] = {}
    p = pts.get("1900")
    if p:
        flow = FLOW_ALL_HUMAN
        lo, hi = (flow["outflow_1900"] * (1 + d * flow["tolerance"]) for d in (-1, 1))
        near = sum(lo <= e["outflow_veh_h"] <= hi for e in p["episodes"])
        res[f"1.28 breakdown: >= {flow['min_seeds']} seeds within 15% of 1023 at 1900 "
            f"({near}/{len(p['episodes'])})"] = near >= flow["min_seeds"]  # fmt: skip
    if len(pts) >= 3:
        curve = [pts[k]["outflow_veh_h"] for k in sorted(pts, key=float)]
        res["1.28 breakdown: outflow falls past capacity"] = curve[-1] <= (1 - CURVE_DROP) * max(
            curve
        )
    return res


def capacity_figure(out: dict) -> Any:
    """Inflow against outflow: one panel per road setting, one curve per SUMO version."""
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
        flow = FLOW_ALL_HUMAN
        ax.errorbar([1900], [flow["outflow_1900"]], yerr=[flow["std_1900"]], color="k",
                    marker="*", ms=12, ls="none", capsize=4, label="Flow all-human")  # fmt: skip
        ax.set_title(f"bottleneck0 all-human, road: {setting}")
        ax.set_xlabel("inflow (veh/h)")
        ax.set_ylabel("outflow over the last 500 s (veh/h)")
        ax.legend(fontsize=8)
    return fig


def capacity_rows(out: dict) -> list[dict[str, Any]]:
    """One row per (road setting, SUMO version): the mean outflow at each inflow, and at
    1900 veh/h the seeds that broke down (below 1300 veh/h)."""
    inflows = sorted({k for s in out["points"].values() for v in s.values() for k in v},
                     key=float)  # fmt: skip
    rows = []
    for setting, versions in out["points"].items():
        for version, pts in sorted(versions.items(), key=version_key):
            row: dict[str, Any] = {"road": setting, "SUMO": version}
            for k in inflows:
                p = pts.get(k)
                row[k] = "" if p is None else f"{p['outflow_veh_h']:.0f}"
                if p is not None and k == "1900":
                    low = sum(e["outflow_veh_h"] < 1300 for e in p["episodes"])
                    row[k] += f" [{low}/{len(p['episodes'])}]"
            rows.append(row)
    return rows


# --- the controllers on the road (rlsuite bench run traffic_bottleneck) ---------------------

ENV_ID = "rlsuite/Bottleneck-v0"
ROADS = {
    "breaking": ({"capacity_drop": True}, "bottleneck_drop_es", "traffic_bottleneck_capacity_drop"),
    "free": ({"capacity_drop": False}, "bottleneck_es", "traffic_bottleneck"),
}  # fmt: skip
"""A road by name: its env options (every row's and training's), its shipped policy under
``benchmarks/policies/`` and its results' stem (the free road's is the name from before the
breaking road was the env's default)."""
FLOW_OUTFLOW = {"all-human": (1023, 263), "learned": (1360, 200)}
"""Flow's bottleneck0 outflow (veh/h, mean and std over 40 rollouts; ES is the learned one)."""
GAIN = 1.25
"""Pass: learned >= this x all-human (Flow's ES: +33%), and >= the ALINEA ramp meter."""
PLAN = dict(hidden=[32, 32], population_size=16, episodes_per_eval=1, eval_episodes=2,
            sigma=0.02, lr=0.02)  # fmt: skip
"""The es plan the shipped policy was trained with (from scratch)."""
TRAIN_ENV = {"max_shift_up": 1.5}
"""Flow's env but for the largest raise of a speed limit per step, 1.5 m/s instead of 1: the
action box is then symmetric, so the policy's zero output (tanh(0), the middle of the box)
keeps the AVs' limits. With Flow's [-1.5, 1] it cuts every limit by 0.25 m/s per step and
the AVs stop and block their lanes from the first generation on (two runs of Flow's box
stayed below all-human; RESULTS.md)."""


def controller(name: str, learned: str, cfg: dict) -> tuple[object, dict]:
    """The controller of a row name and its episodes' env options: ``cfg`` (the road always
    among them), the baseline's own and, for a checkpoint, those its policy was trained with."""
    from rlsuite.apps.traffic import scenarios

    spec, extra = scenarios.controller_for(
        scenarios.get("bottleneck"), learned if name == "learned" else name, cfg
    )
    return spec, scenarios.with_policy_fields(ENV_ID, {**cfg, **extra}, spec)


def run_rows(names, learned: str, cfg: dict, seeds: list[int]) -> dict[str, dict]:
    """Per controller: every seeded episode's metrics and per-step outflow (in this process)."""
    from rlsuite.platform import envs, evaluation

    out = {}
    for name in names:
        spec, ecfg = controller(name, learned, cfg)
        ctrl = evaluation.build_controller(spec)
        env = envs.make(ENV_ID, ecfg)
        try:
            eps = []
            for s in seeds:
                row = evaluation.run_episode(env, ctrl, evaluation.Scenario(ENV_ID, ecfg, s))
                ser = env.unwrapped.series()
                eps.append({**row, "outflow_series": ser["outflow"].tolist(),
                            "t": ser["t"].tolist()})  # fmt: skip
        finally:
            env.close()
        flows = np.array([e["outflow_veh_h"] for e in eps])
        out[name] = {"outflow_veh_h": float(flows.mean()), "outflow_std": float(flows.std()),
                     "outflow_min": float(flows.min()), "outflow_max": float(flows.max()),
                     "mean_speed": float(np.mean([e["mean_speed"] for e in eps])),
                     "teleports": float(np.sum([e["teleports"] for e in eps])),
                     "collisions": float(np.sum([e["collisions"] for e in eps])),
                     "env_config": ecfg, "episodes": eps}  # fmt: skip
    return out


def inflow_curve(names, learned: str, road: dict, seeds: list[int], say) -> dict[str, list]:
    """Each controller's outflow (mean and std over ``seeds``) at inflows 1000-2000 veh/h."""
    curve: dict[str, list] = {}
    for inflow in range(1000, 2001, 200):
        rows = run_rows(names, learned, {**road, "inflow": float(inflow)}, seeds)
        for name, r in rows.items():
            curve.setdefault(name, []).append(
                {
                    "inflow": inflow,
                    "outflow_veh_h": r["outflow_veh_h"],
                    "outflow_std": r["outflow_std"],
                }
            )
        say(
            f"inflow {inflow}: "
            + ", ".join(f"{n} {r['outflow_veh_h']:.0f}" for n, r in rows.items())
        )
    return curve


def raw_rate(steps: int, road: dict) -> float:
    """Steps/s of a raw libsumo loop of the same network and demand: one SUMO step, the
    drivers' modes set as they enter (no lane changes, speed mode 9, as the scenario has
    them) and every vehicle's lane state read per step, no control, from the end of the
    warm-up on."""
    import time

    from rlsuite.apps.traffic.envs.bottleneck import (
        LANE_CHANGE_MODE,
        SPEED_MODE,
        BottleneckConfig,
        BottleneckSimulation,
    )

    core = BottleneckSimulation(BottleneckConfig(horizon=10_000, **road))
    try:
        core.start(np.random.default_rng(0))
        sim = core.sim
        assert sim.backend == "libsumo", sim.backend
        t = time.perf_counter()
        for _ in range(steps):
            sim.step()
            departed = sim.call("simulation", "getDepartedIDList")
            for vid in departed:  # the scenario's drivers: no lane changes, speed mode 9
                sim.call("vehicle", "setLaneChangeMode", vid, LANE_CHANGE_MODE)
            sim.set_speed_modes(departed, SPEED_MODE)
            sim.vehicle_lane_states(sim.vehicle_ids())
        return steps / (time.perf_counter() - t)
    finally:
        core.close()


def rows_figure(out: dict) -> Any:
    """Outflow over time per controller (60 s moving sums, mean over seeds) beside each
    controller's outflow against Flow's."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(12, 4), dpi=110)
    for name, r in out["rows"].items():
        ep = r["episodes"]
        window = 120  # 60 s moving sum -> veh/h
        series = np.mean(
            [np.convolve(e["outflow_series"], np.ones(window), "valid") for e in ep], 0
        )
        t = np.array(ep[0]["t"])[window - 1 :]
        a.plot(t, series / (window * 0.5) * 3600, label=f"{name} ({r['outflow_veh_h']:.0f})")
    a.set_xlabel("time (s)")
    a.set_ylabel("outflow, last 60 s (veh/h)")
    road = ", breaking road" if out.get("road", {}).get("capacity_drop") else ", free road"
    a.set_title(f"bottleneck0{road}, mean over {len(out['seeds'])} seeds")
    a.legend()
    names = list(out["rows"])
    b.bar(names, [out["rows"][n]["outflow_veh_h"] for n in names],
          yerr=[out["rows"][n]["outflow_std"] for n in names], color="grey")  # fmt: skip
    b.axhline(FLOW_OUTFLOW["all-human"][0], color="tab:red", ls="--", label="Flow all-human 1023")
    b.axhline(FLOW_OUTFLOW["learned"][0], color="tab:green", ls="--", label="Flow ES 1360")
    b.set_ylabel("outflow over the last 500 s (veh/h)")
    b.legend()
    return fig


def inflow_figure(out: dict) -> Any:
    """Each controller's outflow against the inflow (``out["inflow_curve"]``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    road = ", breaking road" if out.get("road", {}).get("capacity_drop") else ", free road"
    fig, ax = plt.subplots(figsize=(6, 4), dpi=110)
    for name, pts in out["inflow_curve"].items():
        x = [p["inflow"] for p in pts]
        ax.errorbar(x, [p["outflow_veh_h"] for p in pts], yerr=[p["outflow_std"] for p in pts],
                    marker="o", capsize=3, label=name)  # fmt: skip
    lim = [min(x), max(x)]
    ax.plot(lim, [v * 460 / 500 for v in lim], color="grey", ls=":", label="free flow (fill time)")
    ax.set_xlabel("inflow (veh/h)")
    ax.set_ylabel("outflow over the last 500 s (veh/h)")
    ax.set_title(f"bottleneck0{road}: inflow-outflow")
    ax.legend()
    return fig
