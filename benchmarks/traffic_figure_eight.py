"""Learn the figure-eight AV (Flow's loopy intersection, 13 humans + 1 AV) with the platform's
``sync`` plan (PPO) for a short wall-clock budget, then compare it with the all-human
IDM and the ring controllers on the same seeded episodes.

Flow's env: 1500 controlled steps of 0.1 s, desired-velocity reward (target 20 m/s),
AV acceleration in [-3, 3] m/s^2, full observation (every vehicle's speed and position).

Pass criterion: the learned AV's mean speed is at least 1% above the all-human IDM's.
``--demonstrations N`` warm-starts PPO from N recorded PI episodes (and reports the clone).

Usage:
    flock /tmp/rlsuite-heavy.lock .venv/bin/python benchmarks/traffic_figure_eight.py --minutes 10

Writes benchmarks/results/traffic_figure_eight.json and .png, and the run under
runs/benchmarks/traffic_figure_eight.
"""

from __future__ import annotations

import os

from traffic_common import (
    add_demonstrations_flag,
    evaluate_controllers,
    finish,
    train_for_minutes,
    training_parser,
)

ENV_ID = "rlsuite/FigureEight-v0"
BASELINES = ("idm", "followerstopper", "pi")


def main(argv: list[str] | None = None) -> int:
    from rich.console import Console
    from rich.table import Table

    from rlsuite.apps.traffic import scenarios
    from rlsuite.platform import demonstrations, envs, optimizers

    p = training_parser("traffic_figure_eight", __doc__)
    p.add_argument("--episodes", type=int, default=2, help="seeded evaluation episodes")
    add_demonstrations_flag(
        p, "warm-start PPO from this many recorded PI episodes (0: random weights)"
    )
    args = p.parse_args(argv)
    console = Console(width=140)
    cfg: dict = {}
    envs.rllib_env(ENV_ID)
    scen = scenarios.get("figure_eight")
    demo: dict = {}
    if args.demonstrations:  # next to the run dir, which train_for_minutes starts afresh
        path = os.path.abspath(args.run_dir) + ".demonstrations.parquet"
        rec = demonstrations.record_episodes(
            scenarios.controller_for(scen, "pi", cfg)[0], ENV_ID, args.demonstrations, path,
            cfg, seed=10_000,
        )  # fmt: skip
        console.print(
            f"recorded {int(rec['transitions'])} PI transitions, return {rec['return_mean']:.0f}"
        )
        demo = dict(demonstrations=path, demo_epochs=50)
    plan = optimizers.make_plan(
        "sync", env=ENV_ID, env_config=cfg, num_env_runners=args.workers, seed=0,
        train_batch_size=3000, minibatch_size=500, num_epochs=10, gamma=0.99,
        hidden=(64, 64), vf_clip_param=1000.0, lr=5e-5 if demo else 3e-4, **demo,
    )  # fmt: skip
    res, curve, train_s = train_for_minutes(
        plan, args.run_dir, args.minutes, args.chunk, args.workers, console
    )
    clone = os.path.join(args.run_dir, "clone")  # the warm start, before any RL
    known = {"learned": res.checkpoint, "pi clone": clone}
    rows = evaluate_controllers(
        ENV_ID,
        ("learned", *(("pi clone",) if os.path.isdir(clone) else ()), *BASELINES),
        lambda name: (
            (known[name], {}) if name in known else scenarios.controller_for(scen, name, cfg)
        ),
        args.episodes,
        cfg,
        dict(
            mean_speed="mean_speed",
            throughput_veh_h="throughput_veh_h",
            speed_std="speed_std",
            return_="return",
            collisions="collisions",
        ),  # fmt: skip
        lambda r: f"{r['controller']}: mean speed {r['mean_speed']:.2f} m/s",
        console,
    )
    by = {r["controller"]: r for r in rows}
    checks = {
        "learned mean speed >= 1% above all-human IDM": by["learned"]["mean_speed"]
        >= 1.01 * by["idm"]["mean_speed"]
    }
    t = Table(title=f"figure-eight, 14 vehicles (1 AV), {args.episodes} episodes: PPO "
                    f"({res.iterations} it, {res.env_steps} env steps, {train_s / 60:.1f} min) vs baselines")  # fmt: skip
    for c in ("AV controller", "mean speed (m/s)", "veh/h past a point", "return", "collisions"):
        t.add_column(c, justify="right")
    for r in rows:
        t.add_row(r["controller"], f"{r['mean_speed']:.2f}", f"{r['throughput_veh_h']:.0f}",
                  f"{r['return_']:.0f}", f"{r['collisions']:.1f}")  # fmt: skip
    console.print(t)
    return finish(
        "traffic_figure_eight", argv, plan, cfg, res, curve, rows, train_s, checks, console,
        metric="mean_speed", curve_label="episode return", curve_title="PPO on the figure-eight",
        bar_label="mean speed (m/s)", bar_title="figure-eight, 13 humans + 1 AV",
    )  # fmt: skip


if __name__ == "__main__":
    raise SystemExit(main())
