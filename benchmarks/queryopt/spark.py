"""The DQN rewriter on Spark SQL (embedded ``local[2]``, Catalyst + AQE on), learned against
Spark's own plans on the joins, udf (a Python UDF whose cost drifts) and TPC-H SF 0.1 workloads,
tested on held-out queries. Targets: joins >= 10x; udf >= 4x at the expensive costs and no
regression at the cheap one; TPC-H no worse than Spark's total, none > 10% slower; 0 wrong.

Each workload is loaded as Parquet; the model trains on ``train`` queries with the reward
``-runtime / Spark's runtime`` (the udf model at ``--train-cost``, tested at every cost), and
every rewrite's rows are compared with Spark's answer before use. The hand rewrite (one rule
on every query) is measured beside it."""

from dataclasses import dataclass

from rlsuite.bench import Benchmark, Row, Value, here


@dataclass(frozen=True)
class Settings:
    workloads: str = "joins,udf"
    """any of joins, udf, tpch"""
    costs: str = "10,10000,30000"
    """udf costs tested (the first: the cheap one)"""
    train_cost: int = 10000
    """udf cost trained at"""
    train_queries: int = 10
    """training queries (TPC-H: --tpch-train-queries)"""
    joins_test_queries: int = 8
    """held-out joins queries"""
    udf_test_queries: int = 4
    """held-out udf queries"""
    tpch_train_queries: int = 22
    """TPC-H training instances (one per template)"""
    tpch_test_queries: int = 22
    """held-out TPC-H instances"""
    iterations: int = 10
    """DQN iterations (TPC-H: 15)"""
    env_steps: int = 40
    """env steps per iteration"""
    max_steps: int = 2
    """rewrites per query"""
    repeat: int = 2
    """timed runs per query; the fastest counts"""
    timeout_ms: int = 60_000
    """cap while testing"""
    train_timeout_ms: int = 20_000
    """cap while training"""
    check_runs: int = 1
    """runs of each in the rewriter's check; above 1 a rewrite is kept only if its slowest run beats Spark's fastest"""
    master: str = "local[2]"
    """Spark master"""
    out: str = "queryopt_spark"
    """results name"""


def run(ctx) -> int:
    from rlsuite.apps.queryopt import train as T
    from rlsuite.apps.queryopt.benchmarking import speedup_plot
    from rlsuite.apps.queryopt.engines.spark import SparkEngine, ensure_workload
    from rlsuite.apps.queryopt.spark_learned import passed, test, train
    from rlsuite.apps.queryopt.spark_rules import SparkRules
    from rlsuite.apps.queryopt.workloads import get

    s, root = ctx.settings, ctx.run_dir("runs/bench/queryopt_spark")
    wl, costs = s.workloads.split(","), [int(c) for c in s.costs.split(",")]
    if set(wl) - {"joins", "udf", "tpch"}:
        raise ValueError(f"--workloads: any of joins, udf, tpch; got {s.workloads!r}")
    eng = SparkEngine(master=s.master)
    out: dict = {"engine": f"{eng.ping()}, Catalyst + AQE on (Spark's defaults)", "workloads": {}}

    def learned(run_dir, w, wcfg):
        return T.LearnedRewriter(run_dir, engine="spark", master=s.master, spark_dir=str(eng.home), workload=w.name, workload_config=wcfg, timeout_ms=s.timeout_ms, check_runs=s.check_runs)  # fmt: skip

    def hand(w, n, rule):
        rw = SparkRules(eng, w.schema, [rule], w.settings(), timeout_ms=s.timeout_ms)
        return {**test(s, eng, rw, w, n, explain=False)["summary"], "rule": rule}

    panels = []
    try:
        if "joins" in wl:
            w = get("joins")
            ensure_workload(eng, w)
            run_dir, tr = train(s, root, eng, "joins", {}, s.train_queries, s.iterations)
            res = test(s, eng, learned(run_dir, w, {}), w, s.joins_test_queries)
            out["workloads"]["joins"] = {"train": tr, "hand_rewrite": hand(w, s.joins_test_queries, "eager_aggregation"), **res, "pass": passed("joins", res["summary"])}  # fmt: skip
            panels.append(("joins", out["workloads"]["joins"]))
        if "udf" in wl:
            ensure_workload(eng, get("udf", udf_cost=s.train_cost))
            run_dir, tr = train(s, root, eng, "udf", {"udf_cost": s.train_cost}, s.train_queries, s.iterations)  # fmt: skip
            per_cost = {}
            for c in costs:
                wc = get("udf", udf_cost=c)
                res = test(s, eng, learned(run_dir, wc, {"udf_cost": c}), wc, s.udf_test_queries)
                res["hand_rewrite"] = hand(wc, s.udf_test_queries, "filter_after_aggregation")
                per_cost[str(c)] = {**res, "pass": passed("udf", res["summary"], cheap=c == min(costs))}  # fmt: skip
                panels.append((f"udf, cost {c}", per_cost[str(c)]))
            out["workloads"]["udf"] = {"train": tr, "train_cost": s.train_cost, "cheap_cost": min(costs), "costs": per_cost, "pass": all(v["pass"] for v in per_cost.values())}  # fmt: skip
        if "tpch" in wl:
            w = get("tpch")
            ensure_workload(eng, w)
            run_dir, tr = train(
                s, root, eng, "tpch", {}, s.tpch_train_queries, max(s.iterations, 15)
            )
            res = test(s, eng, learned(run_dir, w, {}), w, s.tpch_test_queries)
            out["workloads"]["tpch"] = {"train": tr, **res, "pass": passed("tpch", res["summary"])}
            panels.append(("TPC-H", out["workloads"]["tpch"]))
    finally:
        eng.close()
    keys = ("queries", "geomean_speedup", "total_postgres_s", "total_rewritten_s", "regressions", "wrong_results")  # fmt: skip
    ctx.table([{"workload": n, **{k: v["summary"][k] for k in keys}, "hand": v.get("hand_rewrite", {}).get("geomean_speedup", "-")} for n, v in panels], "learned rewriter vs Spark's own plan (held-out queries)")  # fmt: skip
    ctx.save(s.out, out)
    rows = [r for _, v in panels for r in v["queries"]]
    speedup_plot(ctx, s.out, rows, " | ".join(f"{n}: {v['summary']['geomean_speedup']:.2f}x" for n, v in panels), ("Spark's plan", "learned"))  # fmt: skip
    return ctx.verdict({f"{n}: the target": v["pass"] for n, v in panels})


# fmt: off
BENCHMARK = Benchmark(run=run, settings=Settings, quick=dict(workloads="joins", train_queries=3, joins_test_queries=2, iterations=1, env_steps=10, repeat=1), rows=(
    Row("queryopt", "joins, Spark 4.3", "geo-mean speed-up, 8 held-out queries", "queryopt_spark.json",
        Value(("workloads", "joins", "summary", "geomean_speedup")),
        here("eager aggregation on every query", "workloads", "joins", "hand_rewrite", "geomean_speedup"),
        "rlsuite bench run queryopt_spark", "`runs/bench/queryopt_spark`", fmt="{:.2f}x"),
    Row("queryopt", "udf at cost 30000, Spark 4.3", "geo-mean speed-up, 4 held-out queries", "queryopt_spark.json",
        Value(("workloads", "udf", "costs", "30000", "summary", "geomean_speedup")),
        here("hand rewrite", "workloads", "udf", "costs", "30000", "hand_rewrite", "geomean_speedup"),
        "rlsuite bench run queryopt_spark", "`runs/bench/queryopt_spark`", fmt="{:.2f}x"),
    Row("queryopt", "TPC-H SF 0.1, Spark 4.3", "total time speed-up, 22 held-out queries",
        "queryopt_spark_tpch.json", Value(("workloads", "tpch", "summary", "total_speedup")), None,
        "rlsuite bench run queryopt_spark --workloads tpch --out queryopt_spark_tpch --timeout-ms 20000 "
        "--train-timeout-ms 10000 --check-runs 5", "`runs/bench/queryopt_spark`", fmt="{:.2f}x"),
))
# fmt: on
