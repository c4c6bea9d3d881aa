"""`make demo` section: the DQN rewriter trained briefly on Spark SQL, then benchmarked.

The PostgreSQL section's recipe on the second engine: an embedded ``local[2]`` Spark
(Parquet tables in its private directory, loaded once), the ``udf`` workload with an
expensive filter UDF (cost 10000), a short training of the ``replay`` plan (DQN) with
the env in the driver, then held-out queries with Spark's own plan (Catalyst and AQE
on) and with the learned rewrites, rows compared. The full run is
``rlsuite bench run queryopt_spark`` (4.2x on this workload).
"""

from __future__ import annotations

import os
import tempfile

from rich.console import Console

console = Console()

UDF_COST = 10_000
"""The filter UDF's cost: high enough that evaluating it per row, below the aggregate as
Catalyst does, is what makes the query slow."""


def run(
    train_queries: int = 4,
    test_queries: int = 3,
    iterations: int = 3,
    env_steps: int = 12,
    master: str = "local[2]",
    home: str | None = None,
    udf_cost: int = UDF_COST,
) -> list[dict]:
    """Train, then run ``test_queries`` held-out queries both ways; ``home`` is Spark's
    private directory (default: the engine's, where the tables stay loaded between runs).
    ``udf_cost`` is the filter UDF's cost (a smaller one makes every query cheaper)."""
    from rlsuite.apps.queryopt import train as T
    from rlsuite.apps.queryopt.bench import compare
    from rlsuite.apps.queryopt.engines.spark import SparkEngine, ensure_workload, java_problem
    from rlsuite.apps.queryopt.spark_rules import spark_queries
    from rlsuite.apps.queryopt.workloads import get

    problem = java_problem()
    if problem:
        raise RuntimeError(problem)
    os.environ.setdefault("PYARROW_IGNORE_TIMEZONE", "1")
    w = get("udf", udf_cost=udf_cost)
    wcfg = {"udf_cost": udf_cost}
    with SparkEngine(master=master, home=home) as eng:
        console.print(f"Spark {eng.master}, files in {eng.home}")
        ensure_workload(eng, w)
        cfg = T.TrainConfig(
            engine="spark",
            master=master,
            spark_dir=str(eng.home),
            workload="udf",
            workload_config=wcfg,
            num_queries=train_queries,
            max_steps=1,
            timeout_ms=10_000,
            repeat=1,
            iterations=iterations,
            env_steps_per_iteration=env_steps,
            learning_starts=env_steps,
            epsilon_timesteps=iterations * env_steps // 2,
            target_update_freq=env_steps,
            train_batch_size=16,
        )
        with tempfile.TemporaryDirectory(prefix="qopt-spark-demo-") as run_dir:
            console.print(
                f"training DQN on {train_queries} udf queries on Spark ({iterations} iterations)"
            )
            res = T.train(cfg, run_dir, progress=True)
            rw = T.LearnedRewriter(
                run_dir,
                engine="spark",
                master=master,
                spark_dir=str(eng.home),
                workload="udf",
                workload_config=wcfg,
                timeout_ms=30_000,
            )
            try:
                queries = spark_queries(w, "test", test_queries)
                console.print(f"running {len(queries)} held-out queries both ways")
                b = compare(eng, w, queries, rw, timeout_ms=30_000, baseline="Spark")
            finally:
                rw.close()
    console.print(b.table())
    s = b.summary()
    ctrl = f"DQN on Spark ({res.iterations} it, {res.wall_time_s:.0f} s)"
    return [
        dict(
            app="queryopt",
            task=f"Spark SQL, udf (cost {udf_cost}), {len(queries)} held-out queries",
            controller=ctrl,
            metric="geo-mean speed-up",
            value=float(s["geomean_speedup"]),
            reference=f"Spark {s['total_postgres_s']:.2f} s -> {s['total_rewritten_s']:.2f} s, "
            f"{s['wrong_results']} wrong; benchmark: 4.2x on 4 queries",
        )
    ]


if __name__ == "__main__":
    from rlsuite.platform import cluster

    with cluster.local_cluster():
        for row in run():
            print(row)
