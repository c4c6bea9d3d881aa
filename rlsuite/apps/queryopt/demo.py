"""`make demo` section: train the DQN rewriter briefly on the joins workload and benchmark it.

On the embedded PostgreSQL: load the seed's R/S/T tables, train for a few
iterations (reward = -runtime, capped at 200 ms), then run held-out test
queries with PostgreSQL's plan and with the learned rewrites.
"""

from __future__ import annotations

import tempfile

from rich.console import Console

console = Console()


def run(train_queries: int = 10, test_queries: int = 4, iterations: int = 3) -> list[dict]:
    from rlsuite.apps.queryopt import train as T
    from rlsuite.apps.queryopt.bench import compare
    from rlsuite.apps.queryopt.engines.postgres import Database
    from rlsuite.apps.queryopt.server import EmbeddedServer
    from rlsuite.apps.queryopt.workloads import get

    srv = EmbeddedServer()
    console.print(f"embedded PostgreSQL in {srv.root}")
    srv.start()
    try:
        w = get("joins")
        with Database(srv.dsn) as db:
            w.ensure(db)
        cfg = T.TrainConfig(
            dsn=srv.dsn,
            workload="joins",
            num_queries=train_queries,
            max_steps=1,
            timeout_ms=200,
            iterations=iterations,
            learning_starts=50,
            epsilon_timesteps=400,
            target_update_freq=50,
        )
        with tempfile.TemporaryDirectory(prefix="qopt-demo-") as run_dir:
            console.print(
                f"training DQN on {train_queries} joins queries ({iterations} iterations)"
            )
            res = T.train(cfg, run_dir, progress=True)
            rw = T.LearnedRewriter(run_dir, srv.dsn, timeout_ms=30_000)
            try:
                with Database(srv.dsn) as db:
                    queries = w.queries("test", test_queries)
                    console.print(f"running {len(queries)} held-out queries both ways")
                    b = compare(db, w, queries, rw, timeout_ms=30_000)
            finally:
                rw.close()
        console.print(b.table())
        s = b.summary()
        task = f"joins, {len(queries)} held-out queries"
        ctrl = f"DQN ({res.iterations} it, {res.wall_time_s:.0f} s)"

        def row(controller: str, metric: str, value: float, reference: str) -> dict:
            return dict(app="queryopt", task=task, controller=controller, metric=metric,
                        value=float(value), reference=reference)  # fmt: skip

        return [
            row("PostgreSQL", "total time s", s["total_postgres_s"], "seed: 18.3 s (one query)"),
            row(ctrl, "total time s", s["total_rewritten_s"], "seed: 3.9 s (one query)"),
            row(
                ctrl,
                "geo-mean speed-up",
                s["geomean_speedup"],
                "seed 4.7x; benchmark: 243x on 20 queries (target >= 100x)",
            ),
            row(ctrl, "wrong results", s["wrong_results"], "0"),
        ]
    finally:
        if srv.started_here:
            srv.stop()


if __name__ == "__main__":
    from rlsuite.platform import cluster

    with cluster.local_cluster():
        for row in run():
            print(row)
