"""TPC-H (SF 0.1 by default): the learned rewriter against PostgreSQL on held-out instances.

Training and test instances of the 22 templates come from disjoint parameter samples. Pass:
the test instances' total time >= 5x lower than PostgreSQL's, no query more than 10%
slower, zero wrong results. PostgreSQL's time of a query past ``--test-timeout-ms`` counts
as the timeout (its speed-up a lower bound). Measured by hand before: Q17 25 s -> 0.7 s,
Q20 > 120 s -> 0.19 s after unnesting. Writes ``queryopt_tpch.json`` and ``.png``.
"""

import dataclasses
import time
from dataclasses import dataclass

from rlsuite.apps.queryopt.benchmarking import TrainSettings
from rlsuite.bench import Benchmark, Row, Value, pub


@dataclass(frozen=True)
class Settings(TrainSettings):
    iterations: int = 8
    """training iterations of the DQN rewriter"""
    train_timeout_ms: int = 2000
    """a query's time cap while training"""
    test_timeout_ms: int = 60_000
    """a query's time cap while testing"""
    max_steps: int = 1
    """rewrite steps per query"""
    scale: float = 0.1
    """TPC-H scale factor"""
    train_per_template: int = 2
    """training instances per template"""
    out_name: str = "queryopt_tpch"
    """results file name (no extension)"""


def run(ctx) -> int:
    from rich.console import Console

    from rlsuite.apps.queryopt import benchmarking as common
    from rlsuite.apps.queryopt.workloads import get

    s = dataclasses.replace(ctx.settings, run_dir=ctx.run_dir("runs/bench/queryopt_tpch"))
    console = Console()
    w = get("tpch", scale=s.scale)
    with common.database(s.dsn or None) as db:
        if not w.is_loaded(db):
            t = time.time()
            ctx.say(f"generating TPC-H SF {s.scale} and loading it")
            ctx.say(f"loaded {w.setup(db)} in {time.time() - t:.0f} s")
        res, train_s, b = common.train_and_compare(
            db, w, w.queries("test", 22), s,
            progress=lambda i, r: console.print(
                f"[dim]Q{i + 1:<3d} {r.postgres_s:8.3f} s -> {r.rewritten_s:8.3f} s "
                f"{r.speedup:7.2f}x {r.rewrites} {'REGRESSION' if r.regression else ''}[/]"),
            repeat=3, workload_config={"scale": s.scale}, num_queries=22 * s.train_per_template,
            epsilon_timesteps=2500,
        )  # fmt: skip
    console.print(b.table(max_rows=22))
    summary = b.summary()
    rows = [dict(metric="total time, 22 held-out instances", target=">= 5x lower",
                 measured=f"{summary['total_postgres_s']:.2f} s -> {summary['total_rewritten_s']:.2f} s "
                 f"({summary['total_speedup']:.1f}x)")]  # fmt: skip
    for i in (16, 19):
        r = b.rows[i]
        rows.append(dict(metric=f"Q{i + 1}", target="by hand: Q17 25 s -> 0.7 s; Q20 > 120 s -> 0.19 s",
                         measured=f"{r.postgres_s:.2f} s{' (timeout)' if r.postgres_timed_out else ''} -> "
                         f"{r.rewritten_s:.3f} s ({', '.join(r.rewrites) or '-'})"))  # fmt: skip
    ctx.table(rows, f"queryopt TPC-H SF {s.scale}: learned rewriter vs PostgreSQL 15")
    checks = {
        "total time >= 5x lower": summary["total_speedup"] >= 5,
        "no query > 10% slower": summary["regressions"] == 0,
        "no wrong results": summary["wrong_results"] == 0,
    }
    payload = dict(passed=all(checks.values()),
                   criterion="total >= 5x lower, 0 queries > 10% slower, 0 wrong results",
                   train=common.train_summary(res, train_s))  # fmt: skip
    common.save_comparison(ctx, s.out_name, payload, b,
                           f"TPC-H SF {s.scale}: total {summary['total_speedup']:.1f}x")  # fmt: skip
    return ctx.verdict(checks)


# fmt: off
BENCHMARK = Benchmark(run=run, settings=Settings, quick=dict(scale=0.01, train_per_template=1, iterations=1), rows=(
    Row("queryopt", "TPC-H SF 0.1, PostgreSQL 15", "total time speed-up, 22 held-out queries",
        "queryopt_tpch.json", Value(("summary", "total_speedup")),
        pub("R-Bot, TPC-H SF 10 on PostgreSQL 14, 104.9 -> 57.6 s; another scale", 104.86 / 57.60),
        "rlsuite bench run queryopt_tpch", "`runs/bench/queryopt_tpch`", fmt="{:.1f}x"),
))
# fmt: on
