"""Hierarchical imitation vs flat cloning on pybullet pick-and-place, and skill reuse.

Pass criteria, success over 100 seeded episodes (seeds 0-99; demonstrations
come from seeds 100000+):
  1. hierarchical (strong supervision) >= 90% success with 20 demonstrations;
  2. hierarchical ahead of flat cloning at every count (5, 10, 20, 50);
  3. at least 2x fewer demonstrations than flat cloning for the same success: the
     success flat cloning reaches with its most demonstrations (capped at 90%) is
     reached by the hierarchy with at most half as many;
  4. skill reuse (``--reuse``): learning ``stack`` with the procedures learned on
     ``pick_place`` (reuse as is, retrain on both tasks, or recreate PLACE) needs fewer
     stack demonstrations to reach 90% than learning it from scratch.

Usage:
    flock /tmp/rlsuite-heavy.lock .venv/bin/python benchmarks/hierarchy_robot.py [--quick] [--reuse]

Writes benchmarks/results/hierarchy_robot.json and .png (and hierarchy_robot_reuse.*).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


def criteria(rows: list[dict]) -> dict[str, dict]:
    by_n = {r["demos"]: r["success"] for r in rows}
    counts = sorted(by_n)
    hier = [k for k in rows[0]["success"] if k.startswith("hierarchical")]
    out = {}
    if 20 in by_n and "hierarchical-strong" in by_n[20]:
        v = by_n[20]["hierarchical-strong"]
        out["strong >= 90% at 20 demos"] = {"value": v, "pass": v >= 0.9}
    for h in hier:
        ahead = all(by_n[n][h] > by_n[n]["flat"] or by_n[n][h] == 1.0 for n in counts)
        out[f"{h} ahead of flat at every count"] = {
            "value": {n: round(by_n[n][h] - by_n[n]["flat"], 3) for n in counts},
            "pass": ahead,
        }
        level = min(0.9, by_n[counts[-1]]["flat"])
        flat_need = next((n for n in counts if by_n[n]["flat"] >= level), None)
        hier_need = next((n for n in counts if by_n[n][h] >= level), None)
        ratio = (flat_need / hier_need) if flat_need and hier_need else None
        out[f"{h}: >= 2x fewer demos than flat at {level:.0%}"] = {
            "value": {"flat": flat_need, h: hier_need, "ratio": ratio},
            "pass": bool(level > 0 and ratio is not None and ratio >= 2),
        }
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--quick", action="store_true", help="counts 2,5 and 20 episodes (a smoke run)")
    ap.add_argument("--reuse", action="store_true", help="also run the skill-reuse experiment")
    ap.add_argument("--episodes", type=int, default=None)
    args = ap.parse_args(argv)

    from rich.console import Console
    from rich.table import Table

    from rlsuite.apps.hierarchy.robot import experiment as X
    from rlsuite.platform import cluster

    counts = [2, 5] if args.quick else [5, 10, 20, 50]
    episodes = args.episodes or (20 if args.quick else 100)
    os.makedirs(RESULTS, exist_ok=True)
    console = Console()
    t0 = time.perf_counter()
    with cluster.local_cluster():
        base = X.RobotRunConfig(
            demos=max(counts), supervision=("strong", "weak"), episodes=episodes
        )
        rows = X.sweep(counts, base, progress=True)
        reuse = None
        if args.reuse:
            reuse = X.reuse_experiment(X.ReuseConfig(episodes=episodes, counts=(1, 2, 5, 10)))
    X.print_sweep(rows, title=f"pick_place: success over {episodes} seeded episodes")
    X.plot_sweep(rows, os.path.join(RESULTS, "hierarchy_robot.png"), "pick_place (pybullet Panda)")
    crit = criteria(rows)
    if reuse is not None:
        X.print_reuse(reuse)
        X.plot_reuse(reuse, os.path.join(RESULTS, "hierarchy_robot_reuse.png"))
        need = reuse["demos_to_90"]
        scratch = need.get("scratch")
        best = min((v for k, v in need.items() if k != "scratch" and v is not None), default=None)
        crit["reuse needs fewer stack demos than scratch (to 90%)"] = {
            "value": need,
            "pass": best is not None and (scratch is None or best < scratch),
        }
    t = Table(title="pass criteria")
    t.add_column("criterion")
    t.add_column("measured")
    t.add_column("pass")
    for k, v in crit.items():
        t.add_row(k, json.dumps(v["value"]), "[green]yes[/]" if v["pass"] else "[red]no[/]")
    console.print(t)
    out = {
        "benchmark": "hierarchy_robot",
        "machine": f"{platform.machine()} {os.cpu_count()}-core CPU, no GPU",
        "command": "flock /tmp/rlsuite-heavy.lock .venv/bin/python benchmarks/hierarchy_robot.py"
        + (" --quick" if args.quick else "")
        + (" --reuse" if args.reuse else ""),
        "episodes": episodes,
        "hierarchical_model": "procedures.model.ProcedureModel on robot.program.SPEC (RobotView); "
        "weak = procedures.fit.fit(model, weak_infer=robot.model.infer_stacks)",
        "rows": rows,
        "reuse": reuse,
        "criteria": crit,
        "wall_s": time.perf_counter() - t0,
    }
    name = "hierarchy_robot_quick.json" if args.quick else "hierarchy_robot.json"
    with open(os.path.join(RESULTS, name), "w") as f:
        json.dump(out, f, indent=2, default=str)
    console.print(f"wrote {os.path.join(RESULTS, name)} in {out['wall_s']:.0f} s")
    return 0 if all(v["pass"] for v in crit.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
