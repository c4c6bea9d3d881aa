"""The seed's join workload: a DQN rewriter trained on generated queries, tested on held-out
ones. Pass: on the held-out queries the learned rewriter's geometric-mean speed-up over
PostgreSQL is >= 100x with zero wrong results (the seed: 18.3 s -> 3.9 s, 4.7x, on its test
query). Writes ``queryopt_joins.json`` and ``.png``."""

import dataclasses
from dataclasses import dataclass

from rlsuite.apps.queryopt.benchmarking import TrainSettings
from rlsuite.bench import Benchmark, Row, Value, pub


@dataclass(frozen=True)
class Settings(TrainSettings):
    train_queries: int = 50
    """generated training queries"""
    test_queries: int = 20
    """held-out test queries (the seed's query first)"""


def run(ctx) -> int:
    from rich.console import Console

    from rlsuite.apps.queryopt import benchmarking as common
    from rlsuite.apps.queryopt.workloads import get
    from rlsuite.apps.queryopt.workloads.joins import SEED_QUERY

    s = dataclasses.replace(ctx.settings, run_dir=ctx.run_dir("runs/bench/queryopt_joins"))
    console = Console()
    w = get("joins")
    with common.database(s.dsn or None) as db:
        w.ensure(db)
        res, train_s, b = common.train_and_compare(
            db, w, [SEED_QUERY] + w.queries("test", s.test_queries - 1), s,
            progress=lambda i, r: console.print(f"[dim]{i:3d} {r.postgres_s:8.3f} s -> "
                                                f"{r.rewritten_s:7.4f} s {r.speedup:7.1f}x {r.rewrites}[/]"),
            num_queries=s.train_queries, epsilon_timesteps=2000,
        )  # fmt: skip
    console.print(b.table(max_rows=40))
    summary, seed = b.summary(), b.rows[0]
    passed = summary["geomean_speedup"] >= 100 and summary["wrong_results"] == 0
    ctx.table([
        dict(metric="seed query: PostgreSQL", measured=f"{seed.postgres_s:.3f} s", target="18.3 s"),
        dict(metric="seed query: learned", measured=f"{seed.rewritten_s:.4f} s ({', '.join(seed.rewrites)})",
             target="3.9 s"),
        dict(metric="held-out geo-mean speed-up", measured=f"{summary['geomean_speedup']:.1f}x",
             target=">= 100x (seed 4.7x)"),
        dict(metric="regressions / wrong results", measured=f"{summary['regressions']} / "
             f"{summary['wrong_results']}", target="0 wrong"),
        dict(metric="training", measured=f"{res.iterations} it, {res.env_steps} steps, {train_s:.0f} s", target=""),
    ], "queryopt joins: learned rewriter vs PostgreSQL 15")  # fmt: skip
    payload = dict(passed=passed, criterion="held-out geo-mean speed-up >= 100x and 0 wrong results",
                   train=common.train_summary(res, train_s),
                   seed_query=dict(postgres_s=seed.postgres_s, learned_s=seed.rewritten_s,
                                   rewrites=seed.rewrites))  # fmt: skip
    common.save_comparison(ctx, "queryopt_joins", payload, b,
                           f"joins: geo-mean speed-up {summary['geomean_speedup']:.0f}x")  # fmt: skip
    return ctx.verdict({"held-out geo-mean speed-up >= 100x and 0 wrong results": passed})


# fmt: off
BENCHMARK = Benchmark(run=run, settings=Settings, quick=dict(train_queries=5, test_queries=3, iterations=1), rows=(
    Row("queryopt", "joins, PostgreSQL 15", "seed query speed-up", "queryopt_joins.json",
        Value(("seed_query", "postgres_s"), over=("seed_query", "learned_s")),
        pub("the seed's learned rewrite, 18.3 s -> 3.9 s", 18.3 / 3.9),
        "rlsuite bench run queryopt_joins", "`runs/bench/queryopt_joins`", fmt="{:,.1f}x"),
    Row("queryopt", "joins, PostgreSQL 15", "geo-mean speed-up, 20 held-out queries", "queryopt_joins.json",
        Value(("summary", "geomean_speedup")), pub("target: >= 100x", 100.0),
        "rlsuite bench run queryopt_joins", "`runs/bench/queryopt_joins`", fmt="{:.0f}x"),
))
# fmt: on
