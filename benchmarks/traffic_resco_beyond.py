"""Beyond RESCO's protocol: signal controllers under other demand than the one they were
tuned or trained on.

Two parts, both scored by RESCO's average delay (s/veh) on held-out SUMO seeds (from
``--seed``, default 1000, as ``traffic_resco_learned.py`` scores):

- ``scales``: cologne1 (or ``--map``) on SUMO 1.9.2 (RESCO's protocol; or ``--sumo``) with
  its demand scaled by SUMO's ``--scale`` (the env's ``demand_scale``: 0.8 drops a fifth of
  the route file's vehicles, 1.2 adds copies of a fifth), for the shipped DQN policy
  ``benchmarks/policies/resco_cologne1_replay`` (or ``--policy``; trained at 1.0x) and the
  baselines.
- ``routes``: grid4x4_resco on RESCO's route file and on route files it never saw, drawn
  by SUMO's ``randomTrips.py`` (fringe to fringe as RESCO's, as many vehicles over the
  same window, a fixed seed per file), for the baselines and, with ``--grid-policy``, a
  policy trained on RESCO's routes.

Pass criterion (does the learned policy carry over?): at every demand scale, the DQN's mean
delay is at most 10% above the best baseline's on the same seeds (at 1.0x it ties greedy).
On the grid, the baselines' order on the unseen routes is the one on RESCO's (reported,
with ``--grid-policy`` the same 10% rule for the policy on each route file).

Every controller runs one seed at a time (a seed on which SUMO crashes is recorded, not
fatal). ``--resume`` keeps the cells already in ``--json`` and runs only the missing ones,
and a learned cell again when the policy at its path is not the one it scored.

Usage:
    flock /tmp/rlsuite-heavy.lock nice -n 15 .venv/bin/python benchmarks/traffic_resco_beyond.py \\
        --part scales --resume
    ... --part routes --resume

Writes benchmarks/results/traffic/traffic_resco_beyond.json and .png (delay against the demand
scale on cologne1; per route file on the grid).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time

from rlsuite.apps.traffic.benchmarking import MACHINE, RESULTS
from rlsuite.apps.traffic.resco_scoring import run_seeds

POLICY = os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "policies", "resco_cologne1_replay"
)
BASELINES = ("fixed", "greedy", "maxpressure", "actuated")


def generate_routes(net_file: str, out: str, vehicles: int, seed: int, begin: int = 0,
                    end: int = 3600) -> str:  # fmt: skip
    """A route file of about ``vehicles`` trips (randomTrips' period ``(end - begin) /
    vehicles``, whose rounding can add one) from fringe edges to fringe edges of
    ``net_file`` (SUMO's ``randomTrips.py`` with ``--fringe-factor max``, departures drawn
    uniformly in ``[begin, end)``, routed by duarouter), all drawn from ``seed``: the same
    arguments give the same file. Vehicle ids are ``gen<seed>_<k>``. Returns ``out``."""
    from rlsuite.apps.traffic import kernel

    if vehicles < 1 or end <= begin:
        raise ValueError(f"need vehicles >= 1 and end > begin, got {vehicles}, [{begin}, {end}]")
    home = kernel.sumo_home()
    out, net_file = os.path.abspath(out), os.path.abspath(net_file)
    tool = os.path.join(home, "tools", "randomTrips.py")
    stem = os.path.splitext(out)[0]
    cmd = [sys.executable, tool, "-n", net_file, "-o", stem + ".trips.xml", "-r", out,
           "-b", str(begin), "-e", str(end), "-p", repr((end - begin) / vehicles),
           "--random-depart", "--fringe-factor", "max", "--seed", str(seed),
           "--prefix", f"gen{seed}_"]  # fmt: skip
    env = {**os.environ, "SUMO_HOME": home}
    r = subprocess.run(
        cmd, capture_output=True, text=True, env=env, cwd=os.path.dirname(out) or "."
    )
    if r.returncode != 0 or not os.path.exists(out):
        raise RuntimeError(f"randomTrips.py failed ({r.returncode}): {r.stderr[-2000:]}")
    for f in (stem + ".trips.xml", stem + ".rou.alt.xml"):
        if os.path.exists(f):
            os.remove(f)
    return out


def _sha(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        h.update(f.read())
    return h.hexdigest()[:16]


def _policy_meta(path: str) -> str:
    """The ``rlsuite.json`` of a shipped policy, or of a run directory's latest checkpoint."""
    from rlsuite.platform.checkpoints.layout import latest_checkpoint

    meta = os.path.join(path, "rlsuite.json")
    if not os.path.exists(meta):
        meta = os.path.join(latest_checkpoint(path) or path, "rlsuite.json")
    return meta


def _policy_cfg(path: str) -> dict:
    """The env config a shipped or run-directory policy trained with, without its log."""
    with open(_policy_meta(path)) as f:
        cfg = json.load(f)["env_config"]
    return {k: v for k, v in cfg.items() if k != "episode_log"}


def _stale(c: dict, rows: dict) -> bool:
    """A kept learned cell scored another policy than the one at its path now (a policy
    shipped again in its place, or a cell from before the fingerprint was kept)."""
    old = rows.get(key(c))
    return (
        bool(c["policy"])
        and old is not None
        and old.get("policy_sha") != _sha(_policy_meta(c["policy"]))
    )


def cells(args: argparse.Namespace) -> list[dict]:
    """Every (part, map, routes, scale, controller) cell to run, in order."""
    out = []
    if args.part in ("scales", "all"):
        ctrls = ["learned", *args.controllers.split(",")]
        for s in (float(x) for x in args.scales.split(",")):
            for c in ctrls:
                pol = args.policy if c == "learned" else ""
                out.append(dict(part="scales", map=args.map, routes="resco", scale=s,
                                controller=c, sumo=args.sumo, policy=pol))  # fmt: skip
    if args.part in ("routes", "all"):
        ctrls = (["learned"] if args.grid_policy else []) + args.grid_controllers.split(",")
        labels = ["resco"] + [f"gen{s}" for s in args.route_seeds.split(",") if s]
        for rl in labels:
            for c in ctrls:
                out.append(dict(part="routes", map="grid4x4_resco", routes=rl, scale=1.0,
                                controller=c, sumo=args.grid_sumo,
                                policy=args.grid_policy if c == "learned" else ""))  # fmt: skip
    return out


def key(c: dict) -> str:
    return f"{c['part']}|{c['map']}|{c['routes']}|{c['scale']:g}|{c['controller']}|{c['sumo']}"


def route_file(args: argparse.Namespace, label: str, info: dict) -> str:
    """RESCO's grid route file ("resco") or the generated one of ``gen<seed>`` (made once,
    its vehicle count and hash kept in ``info``)."""
    from rlsuite.apps.traffic import resco

    net, rou = resco.MAPS["grid4x4_resco"].files()
    n = len(resco.scheduled_departures(rou))
    if label == "resco":
        path = rou
    else:
        seed = int(label[3:])
        path = os.path.abspath(os.path.join(args.route_dir, f"grid4x4_{label}.rou.xml"))
        if not os.path.exists(path):
            os.makedirs(args.route_dir, exist_ok=True)
            generate_routes(net, path, n, seed, 0, 3600)
    d = resco.scheduled_departures(path)
    gen = (
        ""
        if label == "resco"
        else (
            f"randomTrips.py --fringe-factor max --random-depart --seed {label[3:]} "
            f"-b 0 -e 3600 -p 3600/{n}"
        )
    )
    info[label] = {"file": path, "vehicles": len(d), "sha256_16": _sha(path), "generator": gen}
    return path


def run_cell(args: argparse.Namespace, c: dict, info: dict) -> dict:
    from rlsuite.apps.traffic.controllers import SignalProgram
    from rlsuite.platform.checkpoints.loading import load_controller

    seeds = list(range(args.seed, args.seed + args.seeds))
    cfg: dict = {"network": c["map"], "sumo_version": c["sumo"]}
    if c["policy"]:
        cfg = {**_policy_cfg(c["policy"]), "sumo_version": c["sumo"]}
        ctrl = load_controller(c["policy"])
    else:
        ctrl = SignalProgram(c["controller"])
        cfg["program"] = c["controller"]
    if c["scale"] != 1.0:
        cfg["demand_scale"] = c["scale"]
    if args.num_seconds:
        cfg["num_seconds"] = args.num_seconds
    if c["part"] == "routes":
        cfg["route_file"] = route_file(args, c["routes"], info)
    label = f"{c['map']} {c['routes']} x{c['scale']:g}"
    row = run_seeds(ctrl, c["controller"], seeds, cfg, label)
    if c["policy"]:
        row["policy_sha"] = _sha(_policy_meta(c["policy"]))
    return {**c, "seeds": seeds, "env_config": cfg, "command": " ".join(sys.argv), **row}


def _demand_rows(rows: dict) -> list[dict]:
    """The demand-scale cells of cologne1 on SUMO 1.9.2 (the table's and the plot's; the
    other maps and releases of ``--part scales`` are in the checks)."""
    return [r for r in rows.values()
            if r["part"] == "scales" and r["map"] == "cologne1" and r["sumo"] == "1.9.2"]  # fmt: skip


def table(rows: dict) -> str:
    """Markdown tables of both parts (mean ± std delay, s/veh)."""
    out = []
    sc = _demand_rows(rows)
    if sc:
        scales = sorted({r["scale"] for r in sc})
        ctrls = list(dict.fromkeys(r["controller"] for r in sc))
        out.append("| controller | " + " | ".join(f"{s:g}x" for s in scales) + " |")
        out.append("|---|" + "---:|" * len(scales))
        for c in ctrls:
            cols = [_cell(next((r for r in sc if r["controller"] == c and r["scale"] == s), None))
                    for s in scales]  # fmt: skip
            out.append(f"| {c} | " + " | ".join(cols) + " |")
    rt = [r for r in rows.values() if r["part"] == "routes"]
    if rt:
        labels = list(dict.fromkeys(_col(r) for r in rt))
        ctrls = list(dict.fromkeys(r["controller"] for r in rt))
        out.append("")
        out.append("| controller | " + " | ".join(labels) + " |")
        out.append("|---|" + "---:|" * len(labels))
        for c in ctrls:
            cols = [_cell(next((r for r in rt if r["controller"] == c and _col(r) == x), None))
                    for x in labels]  # fmt: skip
            out.append(f"| {c} | " + " | ".join(cols) + " |")
    return "\n".join(out)


def _col(r: dict) -> str:
    """A grid column: the route file, the SUMO release and the seeds."""
    return f"{r['routes']} routes, SUMO {r['sumo'] or '1.28'}, {len(r['seeds'])} seeds"


def _cell(r: dict | None) -> str:
    if r is None:
        return "-"
    s = f"{r['delay_mean']:.2f} ± {r['delay_std']:.2f}"
    ni = sum(r["never_inserted"]) / max(len(r["never_inserted"]), 1)
    if ni >= 1:
        s += f" ({ni:.0f} never inserted)"
    if r["sumo_crashed"]:
        s += f" ({len(r['sumo_crashed'])} seeds SUMO crashed)"
    return s


def checks(rows: dict) -> dict:
    """The pass criterion per map, scale and SUMO release, and per route file (grid): the
    learned policy within 10% of the best baseline, and the grid baselines' order per route
    file."""
    out: dict = {}
    groups: dict = {}
    for r in rows.values():
        groups.setdefault((r["part"], r["map"], r["routes"], r["scale"], r["sumo"]), []).append(r)
    for (part, map_, routes, scale, sumo), rs in sorted(groups.items()):
        base = [r for r in rs if r["controller"] != "learned" and r["delay"]]
        best = min(base, key=lambda r: r["delay_mean"]) if base else None
        name = f"{part} {map_} {routes} x{scale:g} SUMO {sumo}"
        c: dict = {"order": [r["controller"] for r in sorted(base, key=lambda r: r["delay_mean"])]}
        learned = next((r for r in rs if r["controller"] == "learned"), None)
        if learned and best:
            c.update(learned=learned["delay_mean"], best=best["controller"],
                     best_delay=best["delay_mean"],
                     **{"pass": learned["delay_mean"] <= 1.1 * best["delay_mean"]})  # fmt: skip
        out[name] = c
    return out


def plot(rows: dict, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a1, a2) = plt.subplots(1, 2, figsize=(12, 4.2))
    sc = _demand_rows(rows)
    for c in dict.fromkeys(r["controller"] for r in sc):
        rs = sorted((r for r in sc if r["controller"] == c), key=lambda r: r["scale"])
        style = dict(color="black", ls="--", zorder=5) if c == "learned" else {}  # on top
        a1.errorbar([r["scale"] for r in rs], [r["delay_mean"] for r in rs],
                    yerr=[r["delay_std"] for r in rs], marker="o", capsize=3, **style,
                    label="DQN (trained at 1.0x)" if c == "learned" else c)  # fmt: skip
    a1.set_xlabel("demand scale")
    a1.set_ylabel("delay (s/veh)")
    a1.set_title("cologne1, SUMO 1.9.2, held-out seeds")
    if sc:
        a1.legend(fontsize=8)
    rt = [r for r in rows.values() if r["part"] == "routes"]
    labels = list(dict.fromkeys(_col(r) for r in rt))
    ctrls = list(dict.fromkeys(r["controller"] for r in rt))
    w = 0.8 / max(len(labels), 1)
    for i, x in enumerate(labels):
        vals = [next((r for r in rt if r["controller"] == c and _col(r) == x), None) for c in ctrls]
        means = [v["delay_mean"] if v else 0 for v in vals]
        stds = [v["delay_std"] if v else 0 for v in vals]
        xs = [k + i * w for k in range(len(ctrls))]
        a2.bar(xs, means, w, yerr=stds, capsize=3, label=x)
    a2.set_xticks([k + w * (len(labels) - 1) / 2 for k in range(len(ctrls))], ctrls)
    a2.set_ylabel("delay (s/veh)")
    a2.set_title("grid4x4_resco, held-out seeds: RESCO's and unseen routes")
    if rt:
        a2.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--part", default="all", choices=("scales", "routes", "all"))
    p.add_argument("--scales", default="0.8,1.0,1.2")
    p.add_argument("--controllers", default=",".join(BASELINES), help="baselines of --part scales")
    p.add_argument("--map", default="cologne1", help="RESCO map of --part scales")
    p.add_argument("--policy", default=POLICY, help="the learned policy of --part scales")
    p.add_argument("--sumo", default="1.9.2", help="SUMO release of --part scales")
    p.add_argument("--grid-controllers", default="fixed,greedy,maxpressure")
    p.add_argument(
        "--grid-policy", default="", help="a policy (run dir or checkpoint) for the grid"
    )
    p.add_argument("--grid-sumo", default="1.28", help="SUMO release of --part routes")
    p.add_argument("--route-seeds", default="1", help="randomTrips seeds of the unseen route files")
    p.add_argument(
        "--route-dir", default=os.path.join("runs", "benchmarks", "traffic_resco_beyond")
    )
    p.add_argument("--seeds", type=int, default=10, help="held-out episodes per cell")
    p.add_argument("--seed", type=int, default=1000, help="first held-out SUMO seed")
    p.add_argument("--num-seconds", type=int, default=0, help="window length (0: the map's)")
    p.add_argument("--resume", action="store_true", help="keep --json's cells, run the missing")
    p.add_argument("--json", default=os.path.join(RESULTS, "traffic_resco_beyond.json"))
    args = p.parse_args(argv)
    rows: dict = {}
    info: dict = {}
    if os.path.exists(args.json):
        old = json.load(open(args.json))
        info = old.get("route_files", {})
        if args.resume:
            rows = old["rows"]
    todo = [c for c in cells(args) if key(c) not in rows or _stale(c, rows)]
    t0 = time.time()
    for i, c in enumerate(todo):
        r = run_cell(args, c, info)
        rows[key(c)] = r
        _write(args, rows, info)
        el = time.time() - t0
        print(f"[{i + 1}/{len(todo)}] {key(c)}: {r['delay_mean']:.2f} ± {r['delay_std']:.2f} "
              f"in {r['wall_s']:.0f} s; elapsed {el:.0f} s, "
              f"~{el / (i + 1) * (len(todo) - i - 1):.0f} s left", flush=True)  # fmt: skip
    _write(args, rows, info)
    png = os.path.splitext(args.json)[0] + ".png"
    plot(rows, png)
    print(table(rows))
    ok = True
    for name, c in checks(rows).items():
        line = f"{name}: baselines best to worst {', '.join(c['order'])}"
        if "pass" in c:
            ok &= c["pass"]
            line += (f"; learned {c['learned']:.2f} vs {c['best']} {c['best_delay']:.2f} "
                     f"{'PASS' if c['pass'] else 'FAIL'}")  # fmt: skip
        print(line)
    print(f"results: {args.json}, {png}")
    return 0 if ok else 1


def _write(args: argparse.Namespace, rows: dict, info: dict) -> None:
    out = {
        "benchmark": "traffic_resco_beyond",
        "machine": MACHINE,
        "command": " ".join(sys.argv),
        "protocol": "RESCO v1.0 windows and 10 s decisions, --time-to-teleport -1, one SUMO "
        "seed per episode; demand scaled by SUMO's --scale (never-inserted vehicles: those "
        "SUMO still holds at the window's end)",
        "pass_criterion": "learned within 10% of the best baseline's delay at each scale "
        "and route file, on the same held-out seeds",
        "checks": checks(rows),
        "route_files": info,
        "rows": rows,
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    tmp = args.json + ".tmp"
    with open(tmp, "w") as f:
        json.dump(out, f, indent=1)
    os.replace(tmp, args.json)


if __name__ == "__main__":
    raise SystemExit(main())
