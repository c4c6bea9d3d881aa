"""pg_qopt learning online while the UDF gets dearer (100 -> 1000 -> 30000 loop iterations per
call): within 200 executions after each drift a 20-execution window reaches 90% of the offline
rewriter's speed-up; no 50-execution window slower than the standard plan; 0 wrong results;
and, the same server on the joins workload from no model, a 20-window above 10x.

A shuffled stream of the udf queries runs through a plugin session (SQL unchanged) while the
model server runs as deployed, ``qopt-bench serve --learn``, from no model (``--start none``;
the cheap cost then runs at least ``--learn-s``) and from a model trained offline at the cheap
cost (``cheap``). Each execution's speed-up is the standard plan's median time (measured
beforehand in a plain session) over the plugin session's (rlsuite.apps.queryopt.plugin.drift)."""

import os
from dataclasses import dataclass

from rlsuite.bench import Benchmark, Row, Value, here


@dataclass(frozen=True)
class Settings:
    costs: str = "100,1000,30000"
    """UDF cost steps (the first: the cheap one)"""
    per_cost: int = 250
    """executions per cost"""
    queries: int = 10
    """distinct udf queries (the seed query first)"""
    start: str = "none,cheap"
    """the server's starting model: none, cheap, or both"""
    learn_s: float = 60.0
    """from no model, the cheap cost runs at least this long"""
    joins: int = 300
    """executions of the joins workload from no model (0: none)"""
    joins_queries: int = 6
    """distinct joins queries"""
    baseline_repeat: int = 3
    """rounds of the standard plans (more, up to 15, while a cost's rounds take under 2 s)"""
    explore: float = 0.05
    """serve --explore"""
    retrain_every: int = 50
    """serve --retrain-every"""
    wait_ms: float = 5.0
    """serve --wait-ms"""
    qopt_timeout_ms: int = 50
    """qopt.timeout_ms of the plugin session"""
    warm_session: bool = True
    """run each query once in the plugin session with pg_qopt off before the stream"""
    seed: int = 0
    """seed of the queries and the stream's order"""
    dsn: str = ""
    """libpq DSN (default: the embedded server)"""
    run_dir: str = ""
    """where the cheap model, the server logs and stores go (default runs/bench/queryopt_online)"""


def run(ctx) -> int:
    import shutil
    import tempfile

    from rich.console import Console

    from rlsuite.apps.queryopt.benchmarking import database
    from rlsuite.apps.queryopt.plugin import drift as D
    from rlsuite.apps.queryopt.plugin.build import install
    from rlsuite.apps.queryopt.plugin.drift_runs import figure, one_run, train_cheap, verdicts
    from rlsuite.apps.queryopt.workloads import get
    from rlsuite.apps.queryopt.workloads.joins import SEED_QUERY as JOINS_SEED
    from rlsuite.apps.queryopt.workloads.udf import SEED_QUERY

    s, con = ctx.settings, Console()
    root = ctx.run_dir("runs/bench/queryopt_online")
    costs, starts = [int(c) for c in s.costs.split(",")], [x for x in s.start.split(",") if x]
    if set(starts) - {"none", "cheap"}:
        raise ValueError(f"--start: none, cheap or both; got {s.start!r}")
    ctx.say(f"pg_qopt installed at {install()}")
    w, runs = get("udf"), {}
    tmp = tempfile.mkdtemp(prefix="qopt-online-")
    os.chmod(tmp, 0o711)
    with database(s.dsn) as db, D.restored_udf(db.dsn, w.schema):
        w.ensure(db)
        queries = [SEED_QUERY, *w.queries("test", s.queries - 1, s.seed)]
        base, rows = D.baseline(db, w.schema, queries, costs, s.baseline_repeat, con)
        for start in starts:
            model = train_cheap(root, db.dsn, costs[0]) if start == "cheap" else None
            ctx.say(f"[bold]model server from {model or 'no model'}[/]")
            runs[start] = one_run(s, root, start, "udf", db, w.schema, queries, costs, s.per_cost, base, rows, model, s.learn_s if model is None else 0.0, True, tmp)  # fmt: skip
        if s.joins:
            wj = get("joins")
            wj.ensure(db)
            jq = [JOINS_SEED, *wj.queries("test", s.joins_queries - 1, s.seed)]
            jbase, jrows = D.baseline(db, wj.schema, jq, [0], s.baseline_repeat, con, drift=False)
            r = one_run(s, root, "joins-empty", "joins", db, wj.schema, jq, [0], s.joins, jbase, jrows, None, 0.0, False, tmp)  # fmt: skip
            runs["joins-empty"] = {**r, "first_above_10x": D.first_above(r["trace"], 10.0), "queries": jq}  # fmt: skip
    shutil.rmtree(tmp, ignore_errors=True)
    keys = ("cost", "executions", "offline_speedup", "target_speedup", "adapted_after_executions", "speedup_whole_phase", "speedup_last_100", "passed")  # fmt: skip
    ctx.table([{"start": k, **{c: p[c] for c in keys}} for k, r in runs.items() if r["workload"] == "udf" for p in r["analysis"]["phases"]], "pg_qopt online, udf")  # fmt: skip
    checks = verdicts(runs)
    columns = ("phase", "query", "s", "standard_s", "t", "same_rows")
    compact = {k: {**{kk: vv for kk, vv in r.items() if kk != "trace"}, "trace": [[round(e[c], 6) if isinstance(e[c], float) else e[c] for c in columns] for e in r["trace"]]} for k, r in runs.items()}  # fmt: skip
    ctx.save("queryopt_online", {
        "passed": all(checks.values()), "costs": costs, "per_cost": s.per_cost, "queries": queries,
        "offline_speedup": D.OFFLINE, "standard_s": {f"{c}:{j}": v for (c, j), v in base.items()},
        "trace_columns": ["phase", "query", "plugin_s", "standard_s", "t", "same_rows"], "runs": compact,
    })  # fmt: skip
    ctx.save_plot("queryopt_online", figure(runs, costs))
    return ctx.verdict(checks)


# fmt: off
BENCHMARK = Benchmark(run=run, settings=Settings, quick=dict(per_cost=20, queries=3, costs="100,30000", start="none", learn_s=5.0, joins=0), rows=(
    Row("queryopt", "pg_qopt online, udf from no model", "speed-up over the cost-30000 phase",
        "queryopt_online.json",
        Value(("runs", "none", "analysis", "phases", {"cost": 30000}, "speedup_whole_phase")),
        here("offline learned rewriter", "offline_speedup", "30000"),
        "rlsuite bench run queryopt_online --run-dir runs/bench/queryopt_online", "learned online", fmt="{:.1f}x"),
))
# fmt: on
