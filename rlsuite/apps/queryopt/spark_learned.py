"""The DQN rewriter on Spark SQL against Spark's own plans (``rlsuite bench run
queryopt_spark``): each workload's target, training on a workload, and the held-out
comparison with each decision's reasons and Catalyst's plans."""

from __future__ import annotations

import time
from typing import Any


def passed(name: str, s: dict, cheap: bool = False) -> bool:
    """The workload's target on a summary (udf: ``cheap`` for the cheap cost)."""
    if name == "joins":
        ok = s["geomean_speedup"] >= 10
    elif name == "tpch":
        ok = s["total_rewritten_s"] <= s["total_postgres_s"] and s["regressions"] == 0
    else:
        ok = s["regressions"] == 0 if cheap else s["geomean_speedup"] >= 4
    return bool(ok and s["wrong_results"] == 0)


def train(
    s: Any, root: str, eng, name: str, wcfg: dict, queries: int, iterations: int
) -> tuple[str, dict]:
    """The DQN trained on ``queries`` of workload ``name`` under ``root/name``; its run dir and
    a record of the training."""
    import shutil

    from rlsuite.apps.queryopt import train as T
    from rlsuite.platform import cluster

    run_dir = f"{root}/{name}"
    shutil.rmtree(run_dir, ignore_errors=True)
    cfg = T.TrainConfig(
        engine="spark", master=s.master, spark_dir=str(eng.home), workload=name, workload_config=wcfg,
        num_queries=queries, max_steps=s.max_steps, timeout_ms=s.train_timeout_ms, iterations=iterations,
        env_steps_per_iteration=s.env_steps, learning_starts=min(100, s.env_steps * 2),
        epsilon_timesteps=iterations * s.env_steps // 3, repeat=s.repeat,
    )  # fmt: skip
    t0 = time.time()
    with cluster.local_cluster(num_cpus=2):
        res = T.train(cfg, run_dir, progress=True)
    return run_dir, dict(iterations=res.iterations, env_steps=res.env_steps, wall_s=time.time() - t0, final_return=res.final_return)  # fmt: skip


def test(s: Any, eng, rw, w, n: int, explain: bool = True) -> dict:
    """The held-out comparison of rewriter ``rw`` on ``n`` queries of ``w``, with each
    decision's reasons and Catalyst's own plan of each query."""
    from rlsuite.apps.queryopt.bench import compare

    queries, reasons, chosen = w.queries("test", n, 0), [], []
    inner = rw.rewrite

    def rewrite(sql, check=True):
        d = inner(sql, check)
        reasons.append(d.reasons)
        chosen.append({"sql": d.sql, "settings": d.settings} if d.applied else None)
        return d

    rw.rewrite = rewrite
    try:
        b = compare(eng, w, queries, rw, timeout_ms=s.timeout_ms, repeat=s.repeat, baseline="Spark")  # fmt: skip
    finally:
        rw.close()
    d = {**b.to_dict(), "reasons": reasons, "chosen": chosen}
    if explain:
        d["plans"] = [eng.explain(q, w.schema, w.settings())["operators"] for q in queries]
    return d
