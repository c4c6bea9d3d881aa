"""The seed's join workload: a DQN rewriter trained on generated queries, tested on held-out ones.

Pass criterion: on held-out test queries the learned rewriter's
geometric-mean speed-up over PostgreSQL is >= 100x, with zero wrong results.
Seed: 18.3 s -> 3.9 s (4.7x) on its test query.

Usage:
    flock /tmp/rlsuite-heavy.lock .venv/bin/python benchmarks/queryopt_joins.py \
        [--train-queries 50] [--test-queries 20] [--iterations 6] [--dsn DSN]

Writes benchmarks/results/queryopt/queryopt_joins.json and queryopt_joins.png.
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from rlsuite.apps.queryopt import benchmarking as common


def main() -> int:
    ap = common.training_parser(
        "queryopt_joins",
        __doc__,
        iterations=6,
        max_steps=2,
        train_timeout_ms=300,
        test_timeout_ms=120_000,
        reward_help="relative (-runtime / PostgreSQL runtime): every query weighs the same",
    )
    ap.add_argument("--train-queries", type=int, default=50)
    ap.add_argument("--test-queries", type=int, default=20)
    args = ap.parse_args()

    from rlsuite.apps.queryopt.workloads import get
    from rlsuite.apps.queryopt.workloads.joins import SEED_QUERY

    console = Console()
    w = get("joins")
    with common.database(args.dsn) as db:
        w.ensure(db)
        res, train_s, b = common.train_and_compare(
            db,
            w,
            [SEED_QUERY] + w.queries("test", args.test_queries - 1),
            args,
            progress=lambda i, r: console.print(
                f"[dim]{i:3d} {r.postgres_s:8.3f} s -> {r.rewritten_s:7.4f} s "
                f"{r.speedup:7.1f}x {r.rewrites}[/]"
            ),
            num_queries=args.train_queries,
            epsilon_timesteps=2000,
        )
    console.print(b.table(max_rows=40))
    s = b.summary()
    passed = s["geomean_speedup"] >= 100 and s["wrong_results"] == 0
    seed_row = b.rows[0]
    t = Table(title="queryopt joins: learned rewriter vs PostgreSQL 15")
    for c in ("metric", "measured", "seed / target"):
        t.add_column(c)
    t.add_row("seed query: PostgreSQL", f"{seed_row.postgres_s:.3f} s", "18.3 s")
    t.add_row(
        "seed query: learned",
        f"{seed_row.rewritten_s:.4f} s ({', '.join(seed_row.rewrites)})",
        "3.9 s",
    )
    t.add_row("held-out geo-mean speed-up", f"{s['geomean_speedup']:.1f}x", ">= 100x (seed 4.7x)")
    t.add_row("total time", f"{s['total_postgres_s']:.2f} s -> {s['total_rewritten_s']:.3f} s", "")
    t.add_row(
        "regressions / wrong results", f"{s['regressions']} / {s['wrong_results']}", "0 wrong"
    )
    t.add_row("training", f"{res.iterations} it, {res.env_steps} steps, {train_s:.0f} s", "")
    t.add_row("PASS" if passed else "FAIL", "", "")
    console.print(t)
    payload = {
        "benchmark": "queryopt_joins",
        "passed": passed,
        "criterion": "held-out geo-mean speed-up >= 100x and 0 wrong results",
        "args": vars(args),
        "train": common.train_summary(res, train_s),
        "seed_query": {
            "postgres_s": seed_row.postgres_s,
            "learned_s": seed_row.rewritten_s,
            "rewrites": seed_row.rewrites,
        },
    }
    common.save_comparison(
        "queryopt_joins",
        payload,
        b,
        f"joins: geo-mean speed-up {s['geomean_speedup']:.0f}x",
        console,
    )
    return 0 if passed else 1


if __name__ == "__main__":
    raise SystemExit(main())
