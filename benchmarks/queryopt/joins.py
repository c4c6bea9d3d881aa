"""The seed's join workload: a DQN rewriter trained on generated queries has a held-out
geo-mean speed-up >= 100x over PostgreSQL with 0 wrong results (the seed: 18.3 s -> 3.9 s,
4.7x, on its test query)."""

from dataclasses import dataclass

from rlsuite.apps.queryopt import benchmarking as B
from rlsuite.bench import Benchmark, Row, Value, pub


@dataclass(frozen=True)
class Settings(B.TrainSettings):
    train_queries: int = 50
    """training queries"""
    test_queries: int = 20
    """held-out queries (the seed query first)"""


def run(ctx) -> int:
    from rlsuite.apps.queryopt.workloads import get
    from rlsuite.apps.queryopt.workloads.joins import SEED_QUERY

    s, w = ctx.settings, get("joins")
    with B.database(s.dsn) as db:
        w.ensure(db)
        queries = [SEED_QUERY] + w.queries("test", s.test_queries - 1)
        b, trained = B.train_and_compare(ctx, db, w, queries, B.show, num_queries=s.train_queries, epsilon_timesteps=2000)  # fmt: skip
    ctx.say(b.table(max_rows=40))
    sm, seed = b.summary(), b.rows[0]
    seed_query = {"postgres_s": seed.postgres_s, "learned_s": seed.rewritten_s, "rewrites": seed.rewrites}  # fmt: skip
    checks = {
        f"held-out geo-mean speed-up {sm['geomean_speedup']:.1f}x >= 100x (seed 4.7x)": sm[
            "geomean_speedup"
        ]
        >= 100,  # fmt: skip
        f"0 wrong results ({sm['wrong_results']})": sm["wrong_results"] == 0,
    }
    ctx.say(f"seed query: {seed.postgres_s:.3f} s -> {seed.rewritten_s:.4f} s {seed.rewrites} (seed: 18.3 s -> 3.9 s)")  # fmt: skip
    payload = {"passed": all(checks.values()), "train": trained, "seed_query": seed_query}
    B.save_comparison(ctx, "queryopt_joins", payload, b, f"joins: geo-mean speed-up {sm['geomean_speedup']:.0f}x")  # fmt: skip
    return ctx.verdict(checks)


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
