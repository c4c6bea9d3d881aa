"""Learn Flow's figure-eight benchmarks 0, 1 and 2 from scratch and compare with all-human.

Flow's loopy intersection (Vinitsky et al. 2018): 14 vehicles on a one-lane loop that
crosses itself; 1500 steps of 0.1 s from a standing start; desired-velocity reward
(target 20 m/s); AV accelerations in [-3, 3] m/s^2. Humans are Flow's: its IDM plus
acceleration noise, commanded every step under SUMO speed mode 1, so they do not yield to
cars approaching the crossing (the env's default ``human_model="flow"``).

    variant 0  13 humans + 1 AV   rlsuite/FigureEight-v0 (one policy, every vehicle observed)
    variant 1   7 humans + 7 AVs  rlsuite/FigureEightMulti-v0, one shared policy (PettingZoo)
    variant 2   0 humans + 14 AVs rlsuite/FigureEightMulti-v0, one shared policy

The metric is Flow's: mean speed of all vehicles over the 1500 steps. All-human is 14
Flow humans with no AV (the simulation alone), on the same seeds. The ``snake`` rule (the
last AV stands 25 s, then leads at 7 m/s, the others follow) is the hand-written
reference.

Pass criteria (Flow's published best, Table 1 of the CoRL 2018 paper, and the same ratio
to all-human since SUMO versions differ): mean speed >= 8.26 / 6.43 / 5.96 m/s and
learned / all-human >= 1.98 / 1.54 / 1.43.

Usage:
    flock /tmp/rlsuite-heavy.lock .venv/bin/python benchmarks/traffic_figure_eight.py --variant 0 --plan es --minutes 20

Writes benchmarks/results/traffic/traffic_figure_eight_<variant>.json and .png (``--out`` names
them otherwise), and the run under runs/benchmarks/traffic_figure_eight_<variant>.
``--env-set`` sets an env option for training and every evaluated controller, e.g.
``av_min_gap=2.5`` (Flow's learning vehicle's SUMO minGap).
"""

from __future__ import annotations

import json

import numpy as np

from rlsuite.apps.traffic.benchmarking import (
    evaluate_controllers,
    finish,
    train_for_minutes,
    training_parser,
)

VARIANTS = {
    0: ("rlsuite/FigureEight-v0", "figure_eight", 1, 8.26, 1.98),
    1: ("rlsuite/FigureEightMulti-v0", "figure_eight_multi", 7, 6.43, 1.54),
    2: ("rlsuite/FigureEightMulti-v0", "figure_eight_multi", 14, 5.96, 1.43),
}
"""variant -> (env id, scenario, AVs, Flow's best mean speed, its ratio to all-human)."""


def all_human(seeds: list[int]) -> float:
    """Mean speed of 14 Flow humans and no AV, over 1500 steps from the standing start."""
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


def main(argv: list[str] | None = None) -> int:
    from rich.console import Console
    from rich.table import Table

    from rlsuite.apps.traffic import scenarios
    from rlsuite.platform import envs, optimizers

    p = training_parser("traffic_figure_eight", __doc__, minutes=20.0)
    p.add_argument("--variant", type=int, choices=sorted(VARIANTS), default=0)
    p.add_argument("--plan", choices=("sync", "es"), default="es")
    p.add_argument("--episodes", type=int, default=3, help="seeded evaluation episodes")
    p.add_argument("--plan-set", action="append", default=[], metavar="KEY=JSON")
    p.add_argument(
        "--env-set", action="append", default=[], metavar="KEY=JSON",
        help="env option for training and evaluation alike (e.g. av_min_gap=2.5, Flow's AV)",
    )  # fmt: skip
    p.add_argument(
        "--out", default=None, metavar="NAME",
        help="results name (default traffic_figure_eight_<variant>): results/NAME.json and .png",
    )  # fmt: skip
    args = p.parse_args(argv)
    env_id, scen_name, avs, flow_best, flow_ratio = VARIANTS[args.variant]
    name = args.out or f"traffic_figure_eight_{args.variant}"
    if args.run_dir.endswith("traffic_figure_eight"):
        args.run_dir += f"_{args.variant}"
    console = Console(width=140)
    cfg = {"num_avs": avs}
    for kv in args.env_set:
        k, v = kv.split("=", 1)
        cfg[k] = json.loads(v)
    envs.rllib_env(env_id)
    scen = scenarios.get(scen_name)
    if args.plan == "es":  # whole deterministic episodes; a shared policy for every AV
        fields = dict(env=env_id, env_config=cfg, num_workers=args.workers, seed=0,
                      hidden=(32, 32))  # fmt: skip
    else:
        fields = dict(env=env_id, env_config=cfg, num_env_runners=args.workers, seed=0,
                      train_batch_size=3000 * max(1, avs // 4), minibatch_size=500,
                      num_epochs=10, gamma=0.99, hidden=(64, 64), vf_clip_param=1e6,
                      lr=3e-4)  # fmt: skip
    for kv in args.plan_set:
        k, v = kv.split("=", 1)
        fields[k] = json.loads(v)
    plan = optimizers.make_plan(args.plan, **fields)
    res, curve, train_s = train_for_minutes(
        plan, args.run_dir, args.minutes, args.chunk, args.workers, console
    )
    seeds = list(range(1000, 1000 + args.episodes))
    rows = evaluate_controllers(
        env_id, ("learned", "snake", "idm"),
        lambda n: (res.checkpoint, {}) if n == "learned" else scenarios.controller_for(scen, n, cfg),
        seeds, cfg, dict(mean_speed="mean_speed", frac_below_0_5="frac_below_0_5",
                         return_="return", collisions="collisions"),
        lambda r: f"{r['controller']}: mean speed {r['mean_speed']:.2f} m/s", console,
    )  # fmt: skip
    human = all_human(seeds)
    rows.append(dict(controller="all-human (no AV)", mean_speed=human, frac_below_0_5=None,
                     return_=None, collisions=0.0))  # fmt: skip
    by = {r["controller"]: r for r in rows}
    learned = by["learned"]["mean_speed"]
    checks = {
        f"mean speed >= Flow's {flow_best} m/s": learned >= flow_best,
        f"learned / all-human >= Flow's {flow_ratio}": learned / human >= flow_ratio,
    }
    t = Table(title=f"figure-eight {args.variant} ({14 - avs} humans + {avs} AVs), "
                    f"{args.episodes} episodes: {plan.name} ({res.iterations} it, "
                    f"{res.env_steps} env steps, {train_s / 60:.1f} min)")  # fmt: skip
    for c in ("AV controller", "mean speed (m/s)", "/ all-human", "samples < 0.5 m/s"):
        t.add_column(c, justify="right")
    for r in rows:
        slow = "-" if r["frac_below_0_5"] is None else f"{r['frac_below_0_5']:.0%}"
        t.add_row(r["controller"], f"{r['mean_speed']:.2f}", f"{r['mean_speed'] / human:.2f}", slow)
    console.print(t)
    return finish(
        name, argv, plan, cfg, res, curve, rows, train_s, checks, console,
        script="traffic_figure_eight", metric="mean_speed", curve_label="episode return",
        curve_title=f"{plan.name} on figure-eight {args.variant}", bar_label="mean speed (m/s)",
        bar_title=f"figure-eight {args.variant}, {14 - avs} humans + {avs} AVs",
    )  # fmt: skip


if __name__ == "__main__":
    raise SystemExit(main())
