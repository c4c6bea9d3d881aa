"""Signal controllers beyond RESCO's protocol: a map's demand scaled by SUMO's ``--scale`` and the
grid's route files redrawn by ``randomTrips.py``, each (part, map, routes, scale, controller)
cell scored by RESCO's delay on held-out seeds (:func:`resco_scoring.run_seeds`); the check
per group: the learned policy within 10% of the best baseline. ``rlsuite bench run
traffic_resco_beyond`` drives it."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass

from rlsuite.apps.traffic.resco_scoring import JAM_RULE, jam_report

TEXT = {
    "protocol": "RESCO v1.0 windows and 10 s decisions, --time-to-teleport -1, one SUMO seed "
    "per episode; demand scaled by SUMO's --scale (never-inserted vehicles: those SUMO still "
    "holds at the window's end)",
    "pass_criterion": "learned within 10% of the best baseline's delay at each scale and route "
    "file, on the same held-out seeds",
    "jam_rule": JAM_RULE["text"],
}
"""What the results file says of its protocol, pass criterion and jam rule."""


@dataclass(frozen=True)
class BeyondSettings:
    """What ``traffic_resco_beyond`` takes (each field a flag)."""

    part: str = "all"
    """scales, routes or all"""
    scales: str = "0.8,1.0,1.2"
    """demand scales of --part scales"""
    controllers: str = "fixed,greedy,maxpressure,actuated"
    """baselines of --part scales"""
    map: str = "cologne1"
    """RESCO map of --part scales"""
    policy: str = "benchmarks/policies/resco_cologne1_replay"
    """the learned policy of --part scales"""
    sumo: str = "1.9.2"
    """SUMO release of --part scales"""
    grid_controllers: str = "fixed,greedy,maxpressure"
    """baselines of --part routes"""
    grid_policy: str = ""
    """a policy (run dir or checkpoint) for the grid"""
    grid_sumo: str = "1.28"
    """SUMO release of --part routes"""
    route_seeds: str = "1"
    """randomTrips seeds of the unseen route files"""
    route_dir: str = "runs/benchmarks/traffic_resco_beyond"
    """where the generated route files go"""
    seeds: int = 10
    """held-out episodes per cell"""
    seed: int = 1000
    """first held-out SUMO seed"""
    num_seconds: int = 0
    """window length (0: the map's)"""
    json: str = ""
    """results file (its name is kept; default traffic_resco_beyond.json)"""


def sha(path: str) -> str:
    return hashlib.sha256(open(path, "rb").read()).hexdigest()[:16]


def policy_meta(path: str) -> str:
    """The ``rlsuite.json`` of a shipped policy, or of a run directory's latest checkpoint."""
    from rlsuite.platform.checkpoints.layout import latest_checkpoint

    meta = os.path.join(path, "rlsuite.json")
    return (
        meta
        if os.path.exists(meta)
        else os.path.join(latest_checkpoint(path) or path, "rlsuite.json")
    )


def key(c: dict) -> str:
    return f"{c['part']}|{c['map']}|{c['routes']}|{c['scale']:g}|{c['controller']}|{c['sumo']}"


def stale(c: dict, rows: dict) -> bool:
    """A kept learned cell scored another policy than the one at its path now."""
    old = rows.get(key(c))
    return (
        bool(c["policy"])
        and old is not None
        and old.get("policy_sha") != sha(policy_meta(c["policy"]))
    )


def cells(s: BeyondSettings) -> list[dict]:
    """Every (part, map, routes, scale, controller) cell to run, in order."""
    out = []
    if s.part in ("scales", "all"):
        for x in s.scales.split(","):
            for c in ["learned", *s.controllers.split(",")]:
                pol = s.policy if c == "learned" else ""
                out.append(dict(part="scales", map=s.map, routes="resco", scale=float(x),
                                controller=c, sumo=s.sumo, policy=pol))  # fmt: skip
    if s.part in ("routes", "all"):
        for rl in ["resco"] + [f"gen{x}" for x in s.route_seeds.split(",") if x]:
            for c in (["learned"] if s.grid_policy else []) + s.grid_controllers.split(","):
                out.append(dict(part="routes", map="grid4x4_resco", routes=rl, scale=1.0, controller=c,
                                sumo=s.grid_sumo, policy=s.grid_policy if c == "learned" else ""))  # fmt: skip
    return out


def route_file(s: BeyondSettings, label: str, info: dict) -> str:
    """RESCO's grid route file ("resco") or the generated one of ``gen<seed>`` (made once,
    its vehicle count and hash kept in ``info``)."""
    from rlsuite.apps.traffic import resco

    net, path = resco.MAPS["grid4x4_resco"].files()
    n = len(resco.scheduled_departures(path))
    gen = ""
    if label != "resco":
        path = os.path.abspath(os.path.join(s.route_dir, f"grid4x4_{label}.rou.xml"))
        if not os.path.exists(path):
            os.makedirs(s.route_dir, exist_ok=True)
            resco.generate_routes(net, path, n, int(label[3:]), 0, 3600)
        gen = f"randomTrips.py --fringe-factor max --random-depart --seed {label[3:]} -b 0 -e 3600 -p 3600/{n}"
    info[label] = {"file": path, "vehicles": len(resco.scheduled_departures(path)),
                   "sha256_16": sha(path), "generator": gen}  # fmt: skip
    return path


def run_cell(s: BeyondSettings, c: dict, info: dict) -> dict:
    from rlsuite.apps.traffic.controllers import SignalProgram
    from rlsuite.apps.traffic.resco_scoring import run_seeds
    from rlsuite.platform.checkpoints.loading import load_controller

    seeds = list(range(s.seed, s.seed + s.seeds))
    if c["policy"]:
        cfg = json.load(open(policy_meta(c["policy"])))["env_config"]
        cfg = {**{k: v for k, v in cfg.items() if k != "episode_log"}, "sumo_version": c["sumo"]}
        ctrl = load_controller(c["policy"])
    else:
        cfg = {"network": c["map"], "sumo_version": c["sumo"], "program": c["controller"]}
        ctrl = SignalProgram(c["controller"])
    cfg |= {"demand_scale": c["scale"]} if c["scale"] != 1.0 else {}
    cfg |= {"num_seconds": s.num_seconds} if s.num_seconds else {}
    if c["part"] == "routes":
        cfg["route_file"] = route_file(s, c["routes"], info)
    row = run_seeds(ctrl, c["controller"], seeds, cfg, f"{c['map']} {c['routes']} x{c['scale']:g}")
    row |= {"policy_sha": sha(policy_meta(c["policy"]))} if c["policy"] else {}
    return {**c, "seeds": seeds, "env_config": cfg, **row}


def checks(rows: dict) -> dict:
    """Per map, scale, SUMO release and route file: the baselines best to worst, the
    learned policy within 10% of the best baseline, and each controller's jam rate and
    jammed seeds (:data:`~rlsuite.apps.traffic.resco_scoring.JAM_RULE`)."""
    groups: dict = {}
    for r in rows.values():
        groups.setdefault((r["part"], r["map"], r["routes"], r["scale"], r["sumo"]), []).append(r)
    out: dict = {}
    for (part, map_, routes, scale, sumo), rs in sorted(groups.items()):
        base = sorted(
            (r for r in rs if r["controller"] != "learned" and r["delay"]),
            key=lambda r: r["delay_mean"],
        )
        c: dict = {"order": [r["controller"] for r in base]}
        learned = next((r for r in rs if r["controller"] == "learned"), None)
        if learned and base:
            c |= {"learned": learned["delay_mean"], "best": base[0]["controller"],
                  "best_delay": base[0]["delay_mean"], "pass": learned["delay_mean"] <= 1.1 * base[0]["delay_mean"]}  # fmt: skip
        jams = jam_report({r["controller"]: r for r in rs if r["delay"]})
        c["jam_rate"] = {k: v["jam_rate"] for k, v in jams.items() if k != "rule"}
        c["jammed_seeds"] = {k: v["jammed_seeds"] for k, v in jams.items() if k != "rule"}
        out[f"{part} {map_} {routes} x{scale:g} SUMO {sumo}"] = c
    return out


def figure(rows: dict):
    """Delay against the demand scale (each controller), and per grid route file (bars)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a1, a2) = plt.subplots(1, 2, figsize=(12, 4.2))
    sc = [r for r in rows.values() if r["part"] == "scales"]
    for c in dict.fromkeys(r["controller"] for r in sc):
        rs = sorted((r for r in sc if r["controller"] == c), key=lambda r: r["scale"])
        a1.errorbar([r["scale"] for r in rs], [r["delay_mean"] for r in rs], yerr=[r["delay_std"] for r in rs],
                    marker="o", capsize=3, label=f"{c} ({rs[0]['map']}, SUMO {rs[0]['sumo']})")  # fmt: skip
    a1.set(xlabel="demand scale", ylabel="delay (s/veh)", title="held-out seeds")
    rt = [r for r in rows.values() if r["part"] == "routes"]
    a2.bar([f"{r['controller']}\n{r['routes']}" for r in rt], [r["delay_mean"] for r in rt])
    a2.set(ylabel="delay (s/veh)", title="grid4x4_resco: RESCO's and unseen routes")
    if sc:
        a1.legend(fontsize=7)
    return fig
