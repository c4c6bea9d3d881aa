"""Learn the traffic lights of a sumo-rl grid with ONE shared policy (RLlib multi-agent through
the platform's ``sync`` plan = PPO), then compare it with fixed-time, SUMO-actuated and
max-pressure control on the same demand.

Every light is an agent of the PettingZoo parallel env ``rlsuite/Signals-v0``; the plan's
``policies="shared"`` maps them all to one module (RLlib's multi-agent API). The
comparison runs every controller for one episode of ``--num-seconds`` simulated seconds
(sumo-rl's demand is fixed, SUMO seeded) and reports mean waiting time and queue.

Pass criterion: the learned policy's mean waiting time is below fixed-time control's.

Usage:
    flock /tmp/rlsuite-heavy.lock .venv/bin/python benchmarks/traffic_signals.py --minutes 10

Writes benchmarks/results/traffic/traffic_signals.json and traffic_signals.png, and the run under
runs/benchmarks/traffic_signals.
"""

from __future__ import annotations

from rlsuite.apps.traffic.benchmarking import (
    evaluate_controllers,
    finish,
    train_for_minutes,
    training_parser,
)

ENV_ID = "rlsuite/Signals-v0"
BASELINES = ("fixed", "actuated", "maxpressure")


def main(argv: list[str] | None = None) -> int:
    from rich.console import Console
    from rich.table import Table

    from rlsuite.apps.traffic import scenarios
    from rlsuite.platform import envs, optimizers

    p = training_parser("traffic_signals", __doc__)
    p.add_argument("--network", default="grid2x2", help="single, grid2x2 or grid4x4")
    p.add_argument("--num-seconds", type=int, default=1800, help="simulated s per episode")
    args = p.parse_args(argv)
    console = Console(width=140)
    cfg = {"network": args.network, "num_seconds": args.num_seconds}
    envs.rllib_env(ENV_ID)
    decisions = args.num_seconds // 5  # sumo-rl's delta_time
    plan = optimizers.make_plan(
        "sync", env=ENV_ID, env_config=cfg, num_env_runners=args.workers, seed=0,
        policies="shared", train_batch_size=2 * decisions, minibatch_size=decisions // 2,
        num_epochs=10, lr=1e-3, gamma=0.95, hidden=(64, 64), entropy_coeff=0.01,
        vf_clip_param=100.0,
    )  # fmt: skip
    res, curve, train_s = train_for_minutes(
        plan, args.run_dir, args.minutes, args.chunk, args.workers, console
    )
    scen = scenarios.get("signals")
    rows = evaluate_controllers(
        ENV_ID,
        ("learned", *BASELINES),
        lambda name: (
            (res.checkpoint, {}) if name == "learned" else scenarios.controller_for(scen, name, cfg)
        ),
        [0],
        cfg,
        dict(
            mean_waiting_time="mean_waiting_time", mean_queue="mean_queue", mean_speed="mean_speed"
        ),  # fmt: skip
        lambda r: f"{r['controller']}: waiting {r['mean_waiting_time']:.2f} s",
        console,
    )
    by = {r["controller"]: r for r in rows}
    checks = {
        "learned waiting time < fixed-time": by["learned"]["mean_waiting_time"]
        < by["fixed"]["mean_waiting_time"]
    }
    t = Table(title=f"signals {args.network}, {args.num_seconds} s: shared PPO policy "
                    f"({res.iterations} it, {res.env_steps} env steps, {train_s / 60:.1f} min) vs programs")  # fmt: skip
    for c in ("controller", "mean waiting time (s)", "mean halted vehicles", "mean speed (m/s)"):
        t.add_column(c, justify="right")
    for r in rows:
        t.add_row(r["controller"], f"{r['mean_waiting_time']:.2f}", f"{r['mean_queue']:.1f}",
                  f"{r['mean_speed']:.2f}")  # fmt: skip
    console.print(t)
    return finish(
        "traffic_signals", argv, plan, cfg, res, curve, rows, train_s, checks, console,
        metric="mean_waiting_time", curve_label="episode return (sum over lights)",
        curve_title="shared PPO policy", bar_label="mean waiting time (s)",
        bar_title=f"{args.network}, {args.num_seconds} s",
    )  # fmt: skip


if __name__ == "__main__":
    raise SystemExit(main())
