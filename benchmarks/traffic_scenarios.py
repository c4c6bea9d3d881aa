"""Baselines on the other traffic scenarios: the figure-eight and signalised intersections.

* figure-eight (Flow's loopy intersection, 14 vehicles, 150 s): the AV(s) driven by
  IDM (all-human), FollowerStopper or PI, with 1, 7 and 14 AVs; mean speed, throughput
  and Flow's desired-velocity return (1500 = everyone at 20 m/s throughout).
* signals (sumo-rl networks, 1 h of demand): fixed-time, SUMO-actuated and max-pressure
  programs; mean waiting time and queue.

Pass criterion: max-pressure and actuated control wait less than fixed-time on every
signal network; every figure-eight run is collision-free.

Usage:
    flock /tmp/rlsuite-heavy.lock .venv/bin/python benchmarks/traffic_scenarios.py [--episodes 2] [--networks single,grid2x2]

Writes benchmarks/results/traffic/traffic_scenarios.json.
"""

from __future__ import annotations

import argparse
import json
import os
import time

from rlsuite.bench import results_dir

RESULTS = results_dir("traffic")


def main(argv: list[str] | None = None) -> int:
    from rich.console import Console
    from rich.table import Table

    from rlsuite.apps.traffic import scenarios
    from rlsuite.platform import cluster, evaluation

    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--episodes", type=int, default=2)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--networks", default="single,grid2x2")
    p.add_argument(
        "--seconds", type=int, default=3600, help="simulated seconds per signals episode"
    )
    args = p.parse_args(argv)
    console = Console(width=140)
    t0 = time.time()
    f8, sig = [], []
    with cluster.local_cluster(num_cpus=args.workers):
        scen = scenarios.get("figure_eight")
        for k in (1, 7, 14):
            for name in ("idm", "followerstopper", "pi"):
                cfg = {"num_avs": k}
                ctrl, _ = scenarios.controller_for(scen, name, cfg)
                res = evaluation.evaluate(ctrl, evaluation.scenarios(scen.env_id, args.episodes, cfg),
                                          num_workers=args.workers, name=name)  # fmt: skip
                s = res.summary
                f8.append(dict(num_avs=k, controller=name, mean_speed=s["mean_speed"]["mean"],
                               throughput_veh_h=s["throughput_veh_h"]["mean"],
                               desired_velocity_return=s["return"]["mean"],
                               collisions=s["collisions"]["max"]))  # fmt: skip
                console.print(f"figure-eight {k} AV {name}: {s['mean_speed']['mean']:.2f} m/s")
        scen = scenarios.get("signals")
        for net in args.networks.split(","):
            for name in ("fixed", "actuated", "maxpressure"):
                ctrl, over = scenarios.controller_for(scen, name)
                cfg = {"network": net, "num_seconds": args.seconds, **over}
                res = evaluation.evaluate(ctrl, evaluation.scenarios(scen.env_id, args.episodes, cfg),
                                          num_workers=args.workers, name=name)  # fmt: skip
                s = res.summary
                sig.append(dict(network=net, controller=name,
                                mean_waiting_time=s["mean_waiting_time"]["mean"],
                                mean_queue=s["mean_queue"]["mean"], mean_speed=s["mean_speed"]["mean"]))  # fmt: skip
                console.print(f"signals {net} {name}: wait {s['mean_waiting_time']['mean']:.2f} s")
    wall = time.time() - t0

    def wait(net, name):
        return next(
            r["mean_waiting_time"] for r in sig if r["network"] == net and r["controller"] == name
        )

    checks = {
        "max-pressure and actuated wait less than fixed-time": all(
            wait(n, c) < wait(n, "fixed")
            for n in args.networks.split(",")
            for c in ("actuated", "maxpressure")
        ),
        "figure-eight collision-free": all(r["collisions"] == 0 for r in f8),
    }
    t = Table(title=f"figure-eight baselines ({args.episodes} episodes each)")
    for c in ("AVs", "controller", "mean speed", "veh/h", "desired-velocity return"):
        t.add_column(c, justify="right")
    for r in f8:
        t.add_row(str(r["num_avs"]), r["controller"], f"{r['mean_speed']:.2f}",
                  f"{r['throughput_veh_h']:.0f}", f"{r['desired_velocity_return']:.0f}")  # fmt: skip
    console.print(t)
    t = Table(title=f"signal baselines ({args.seconds} s, {args.episodes} episodes each)")
    for c in ("network", "program", "mean waiting time (s)", "mean queue (veh)", "mean speed"):
        t.add_column(c, justify="right")
    for r in sig:
        t.add_row(r["network"], r["controller"], f"{r['mean_waiting_time']:.2f}",
                  f"{r['mean_queue']:.1f}", f"{r['mean_speed']:.2f}")  # fmt: skip
    console.print(t)
    for k, ok in checks.items():
        console.print(f"{'PASS' if ok else 'FAIL'}  {k}")
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, "traffic_scenarios.json"), "w") as f:
        json.dump(dict(benchmark="traffic_scenarios", machine="2-core CPU, no GPU", wall_s=wall,
                       figure_eight=f8, signals=sig, checks=checks,
                       command="flock /tmp/rlsuite-heavy.lock .venv/bin/python benchmarks/traffic_scenarios.py"),
                  f, indent=2)  # fmt: skip
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
