"""Learn one shared AV policy for the multi-AV ring and compare it with PI on every AV.

Trains on ``rlsuite/RingMulti-v0`` (22 vehicles, ``--avs`` of them AVs, each an agent
of a PettingZoo parallel env sharing one policy) on lengths drawn per reset from
[220, 270] m, under Flow's env protocol (even start, 750 human-driven warm-up steps,
3000 controlled steps, reward 0.2 * mean speed - 4 * mean |a|), from scratch. Then it
evaluates the learned policy with 2, 3 and 4 AVs at 230 and 260 m (and at any
``--held-out-lengths``) beside PI with saturation on every AV and all-human driving (the
AVs driven by the IDM), on the same seeds (the policy acts on each AV's own three
features, so it applies to any count).

``--plan-set init_from='"DIR"'`` (es plan) starts ES from the parameters and observation
filter of the ES policy in DIR (e.g. one trained here or on the single-AV ring) instead
of a random draw: a warm start, its optimiser fresh.

Pass criterion: the learned AVs at least match PI on every AV (within 2%) at 230 and
260 m, for the trained count.

Usage:
    flock /tmp/rlsuite-heavy.lock .venv/bin/python benchmarks/traffic_ring_multi.py --avs 3 --plan es --minutes 10

Writes benchmarks/results/traffic/traffic_ring_multi.json and .png (``--out NAME``: NAME.json and
.png), and the run under runs/benchmarks/traffic_ring_multi.
"""

from __future__ import annotations

import json

from rlsuite.apps.traffic.benchmarking import finish, train_for_minutes, training_parser

ENV_ID = "rlsuite/RingMulti-v0"
LENGTHS = (230, 260)
COUNTS = (2, 3, 4)


def main(argv: list[str] | None = None) -> int:
    from rich.console import Console
    from rich.table import Table

    from rlsuite.apps.traffic import scenarios
    from rlsuite.apps.traffic.envs.ring import equilibrium_speed
    from rlsuite.platform import envs, evaluation, optimizers

    p = training_parser("traffic_ring_multi", __doc__, minutes=10.0)
    p.add_argument("--avs", type=int, default=3, help="AVs on the training rings")
    p.add_argument("--plan", choices=("sync", "es"), default="es")
    p.add_argument("--episodes", type=int, default=2, help="seeded evaluation episodes")
    p.add_argument("--plan-set", action="append", default=[], metavar="KEY=JSON")
    p.add_argument(
        "--env-set", action="append", default=[], metavar="KEY=JSON",
        help="training env option (e.g. warmup_steps=0, bunching=20); evaluation keeps "
        "Flow's protocol",
    )  # fmt: skip
    p.add_argument(
        "--held-out-lengths", type=int, nargs="*", default=[], metavar="M",
        help="ring lengths (m) also evaluated and reported, outside the pass criterion",
    )  # fmt: skip
    p.add_argument("--out", default="traffic_ring_multi",
                   help="results file name under benchmarks/results/traffic/ (without .json)")  # fmt: skip
    args = p.parse_args(argv)
    console = Console(width=140)
    cfg = dict(ring_length=[220, 270], num_avs=args.avs)
    for kv in args.env_set:
        k, v = kv.split("=", 1)
        cfg[k] = json.loads(v)
    envs.rllib_env(ENV_ID)
    scen = scenarios.get("ring_multi")
    if args.plan == "es":
        fields = dict(env=ENV_ID, env_config=cfg, num_workers=args.workers, seed=0,
                      hidden=(32, 32))  # fmt: skip
    else:
        fields = dict(env=ENV_ID, env_config=cfg, num_env_runners=args.workers, seed=0,
                      train_batch_size=12000, minibatch_size=2000, num_epochs=6,
                      gamma=0.999, lambda_=0.97, vf_clip_param=1e6)  # fmt: skip
    for kv in args.plan_set:
        k, v = kv.split("=", 1)
        fields[k] = json.loads(v)
    plan = optimizers.make_plan(args.plan, **fields)
    res, curve, train_s = train_for_minutes(
        plan, args.run_dir, args.minutes, args.chunk, args.workers, console
    )
    rows = []
    for k in COUNTS:
        for length in (*LENGTHS, *args.held_out_lengths):
            eval_cfg = dict(ring_length=length, num_avs=k)
            row = dict(avs=k, ring_length=length, uniform_flow=equilibrium_speed(length),
                       held_out=length not in LENGTHS)  # fmt: skip
            for who in ("learned", "pi", "idm"):
                ctrl = res.checkpoint if who == "learned" else scenarios.controller_for(
                    scen, who, eval_cfg)[0]  # fmt: skip
                ev = evaluation.evaluate(
                    ctrl, evaluation.scenarios(ENV_ID, args.episodes, eval_cfg), num_workers=0,
                    name=who,
                )  # fmt: skip
                row[who] = ev.summary["mean_speed"]["mean"]
            rows.append(row)
            console.print(
                f"{k} AVs, {length} m: learned {row['learned']:.2f}, PI {row['pi']:.2f}, "
                f"all-human {row['idm']:.2f} m/s"
            )
    trained = [r for r in rows if r["avs"] == args.avs and not r["held_out"]]
    checks = {
        f"learned >= 98% of PI on every AV ({args.avs} AVs, 230 and 260 m)": all(
            r["learned"] >= 0.98 * r["pi"] for r in trained
        )
    }
    t = Table(title=f"multi-AV ring: one shared policy trained with {args.avs} AVs "
                    f"({plan.name}, {res.iterations} it, {res.env_steps} steps, "
                    f"{train_s / 60:.1f} min); mean speed m/s (% of uniform flow)")  # fmt: skip
    for c in ("AVs", "length", "learned", "PI on every AV", "all-human", "learned / PI"):
        t.add_column(c, justify="right")
    for r in rows:
        t.add_row(str(r["avs"]), f"{r['ring_length']} m" + (" (held out)" if r["held_out"] else ""),
                  *[f"{r[w]:.2f} ({r[w] / r['uniform_flow']:.0%})" for w in ("learned", "pi", "idm")],
                  f"{r['learned'] / r['pi']:.1%}")  # fmt: skip
    console.print(t)
    bars = [dict(controller=f"{w} ({args.avs} AVs, 230 m)", mean_speed=r[w])
            for r in trained if r["ring_length"] == 230 for w in ("learned", "pi", "idm")]  # fmt: skip
    return finish(
        args.out, argv, plan, cfg, res, curve, rows, train_s, checks, console,
        metric="mean_speed", curve_label="episode return",
        curve_title=f"{plan.name} on the multi-AV ring", bar_label="mean speed (m/s)",
        bar_title=f"{args.avs} AVs, 230 m", bars=bars, script="traffic_ring_multi",
    )  # fmt: skip


if __name__ == "__main__":
    raise SystemExit(main())
