"""pg_qopt learning online while a workload drifts (``rlsuite bench run queryopt_online``): the
UDF's cost stepped up under a live plugin session, every execution timed against the standard
plan's median and its rows compared, and the windows, adaptation and safety of the stream.

The function is replaced with a new default cost, as a new version of a UDF would be deployed
(the workload's session setting ``qopt.udf_cost`` cannot be set in a session that loads
pg_qopt, which reserves the ``qopt.`` prefix); :func:`restored_udf` puts it back.
"""

from __future__ import annotations

import contextlib
import statistics
import time

from rich.progress import Progress

from rlsuite.apps.queryopt.plugin.sessions import plugin_options

OFFLINE = {10: 3.4, 100: 5.96, 1000: 7.4, 10000: 7.9, 30000: 8.0}
"""The offline-trained learned rewriter's geo-mean speed-up per UDF cost (RESULTS.md, udf)."""
WINDOW = 50
ADAPT_WINDOW = 20
ADAPT_WITHIN = 200


def set_udf_cost(dsn: str, schema: str, cost: int) -> None:
    """Make ``udf`` cost ``cost`` loop iterations per call in every session: the function is
    replaced with that default. (The workload's session setting ``qopt.udf_cost`` cannot be
    set where pg_qopt is loaded: the extension reserves the ``qopt.`` prefix.)"""
    from rlsuite.apps.queryopt.engines.postgres import admin_execute
    from rlsuite.apps.queryopt.workloads.udf import UDF_SQL

    sql = UDF_SQL.replace("CREATE FUNCTION udf(", f"CREATE OR REPLACE FUNCTION {schema}.udf(")
    new = sql.replace("''), '100')", f"''), '{int(cost)}')")
    if new == sql and cost != 100:
        raise RuntimeError("the udf workload's function changed: cannot set its default cost")
    admin_execute(dsn, new)


@contextlib.contextmanager
def restored_udf(dsn: str, schema: str):
    """The workload's own ``udf`` back afterwards (the drift replaces it)."""
    try:
        yield
    finally:
        from rlsuite.apps.queryopt.engines.postgres import admin_execute
        from rlsuite.apps.queryopt.workloads.udf import UDF_SQL

        admin_execute(
            dsn,
            UDF_SQL.replace("CREATE FUNCTION udf(", f"CREATE OR REPLACE FUNCTION {schema}.udf("),
        )


def baseline(
    db, schema: str, queries: list[str], costs: list[int], repeat: int, console, drift: bool = True
):
    """The standard plan's median time (s) per (cost, query) and the rows per query (with
    ``drift`` off, the workload as it is, under cost ``costs[0]``).

    The runs are rounds through all the queries, as the stream interleaves them: this
    machine has bursts of 5-10 executions at 1.5x their usual time, and ``repeat`` runs of
    one query back to back could land in one burst and make its median. At least
    ``repeat`` rounds, more while they are cheap."""
    times: dict[tuple[int, int], float] = {}
    rows: dict[int, list] = {}
    with Progress(console=console, transient=True) as bar:
        task = bar.add_task("standard plans", total=len(costs) * len(queries) * repeat)
        for cost in costs:
            if drift:
                set_udf_cost(db.dsn, schema, cost)
            ts: dict[int, list[float]] = {j: [] for j in range(len(queries))}
            t0, rounds = time.time(), 0
            # ``repeat`` rounds, and more (up to 15) while they take under 2 s in all: a
            # cheap cost's median then holds against a burst (one baseline at cost 100
            # came out 38% above another)
            while rounds < repeat or (rounds < 15 and time.time() - t0 < 2.0):
                rounds += 1
                for j, q in enumerate(queries):
                    r = db.run(q, schema, 600_000)
                    ts[j].append(r.runtime_s)
                    rows.setdefault(j, r.rows or [])
                bar.advance(task, len(queries) if rounds <= repeat else 0)
            for j in ts:
                times[(cost, j)] = statistics.median(ts[j])
    return times, rows


def run_stream(
    db_dsn, schema, queries, costs, per_cost, base, rows, sock, qopt_timeout_ms, console, seed,
    first_s, drift=True, warm_session=True,
):  # fmt: skip
    """The drifting stream through one plugin session; one record per execution. The first
    cost runs ``per_cost`` executions and at least ``first_s`` seconds (``drift`` off: one
    phase, the workload as it is). ``warm_session``: each query first runs once with pg_qopt
    off, so the session's backend is as warm as the baseline's and the server sees nothing."""
    import numpy as np

    from rlsuite.apps.queryopt.engines.postgres import Database
    from rlsuite.apps.queryopt.verify import has_order_by, same_rows

    rng = np.random.default_rng(seed)
    order: list[int] = []
    plug = Database(f"{db_dsn} options='{plugin_options(sock, qopt_timeout_ms)}'")
    if warm_session:
        # the session's backend warmed as the baseline's was (catalog caches, the UDF
        # compiled): each query once with pg_qopt switched off, so the server sees nothing
        conn = plug.conn
        with conn.cursor() as cur:
            cur.execute("SET qopt.enabled = off")
        conn.commit()
        for q in queries:
            plug.run(q, schema, 600_000)
        with conn.cursor() as cur:
            cur.execute("SET qopt.enabled = on")
        conn.commit()
    trace = []
    t_start = time.time()
    try:
        with Progress(console=console, transient=True) as bar:
            task = bar.add_task("plugin session", total=len(costs) * per_cost)
            for p, cost in enumerate(costs):
                if drift:
                    set_udf_cost(db_dsn, schema, cost)  # the drift
                t_phase = time.time()
                k = 0
                while k < per_cost or (p == 0 and time.time() - t_phase < first_s):
                    k += 1
                    if not order:
                        order = [int(x) for x in rng.permutation(len(queries))]
                    j = order.pop()
                    q = queries[j]
                    r = plug.run(q, schema, 600_000)
                    same = (not r.timed_out) and same_rows(
                        rows[j], r.rows or [], ordered=has_order_by(q)
                    )
                    trace.append(
                        {
                            "i": len(trace),
                            "t": time.time() - t_start,
                            "wall": time.time(),
                            "phase": p,
                            "cost": cost,
                            "query": j,
                            "s": r.runtime_s,
                            "standard_s": base[(cost, j)],
                            "same_rows": same,
                        }
                    )
                    bar.advance(task)
    finally:
        plug.close()
    return trace


def ratio(part: list[dict]) -> float:
    return sum(e["standard_s"] for e in part) / max(1e-9, sum(e["s"] for e in part))


def analyse(trace: list[dict], costs: list[int], per_cost: int) -> dict:
    windows = [
        {
            "start": k,
            "cost": trace[k]["cost"],
            "speedup": ratio(trace[k : k + WINDOW]),
            "standard_s": sum(e["standard_s"] for e in trace[k : k + WINDOW]),
            "plugin_s": sum(e["s"] for e in trace[k : k + WINDOW]),
        }
        for k in range(0, len(trace) - WINDOW + 1, WINDOW)
    ]
    first_fast = next(
        (
            end
            for end in range(ADAPT_WINDOW, len(trace) + 1)
            if ratio(trace[end - ADAPT_WINDOW : end]) >= 1.0
        ),
        None,
    )
    phases = []
    for p, cost in enumerate(costs):
        seg = [e for e in trace if e["phase"] == p]
        target = 0.9 * OFFLINE.get(cost, float("nan"))
        adapted = None
        for end in range(ADAPT_WINDOW, len(seg) + 1):
            if ratio(seg[end - ADAPT_WINDOW : end]) >= target:
                adapted = end
                break
        tail = seg[-min(len(seg), 100) :]
        phases.append(
            {
                "cost": cost,
                "drift": p > 0,
                "first_execution": seg[0]["i"],
                "executions": len(seg),
                "seconds": seg[-1]["t"] - seg[0]["t"],
                "offline_speedup": OFFLINE.get(cost),
                "target_speedup": target,
                "adapted_after_executions": adapted,
                "adapted_after_s": None if adapted is None else seg[adapted - 1]["t"] - seg[0]["t"],
                "speedup_whole_phase": ratio(seg),
                "speedup_last_100": ratio(tail),
                "passed": (adapted is not None and adapted <= ADAPT_WITHIN) if p > 0 else None,
            }
        )
    wrong = sum(1 for e in trace if not e["same_rows"])
    slower = [
        e for e in trace if e["s"] > 1.10 * e["standard_s"] and e["s"] - e["standard_s"] > 0.001
    ]
    worst = min(windows, key=lambda w: w["speedup"]) if windows else None
    return {
        "windows": windows,
        "phases": phases,
        "wrong_results": wrong,
        "executions_slower_than_standard": len(slower),
        "time_lost_to_slower_executions_s": sum(e["s"] - e["standard_s"] for e in slower),
        "worst_window": worst,
        "windows_slower": sum(1 for w in windows if w["speedup"] < 1.0),
        "first_20_window_faster_than_standard": None
        if first_fast is None
        else {"executions": first_fast, "s": trace[first_fast - 1]["t"]},
        "pass_adapt": all(p["passed"] for p in phases if p["drift"]),
        "pass_windows": all(w["speedup"] >= 1.0 for w in windows),
        "pass_wrong": wrong == 0,
    }


def during_retrains(trace: list[dict], retrains: list[dict]) -> dict:
    """Executions while a retrain ran against the others: count and median time over the
    standard plan's (1.0: as slow as the standard plan), per cost."""
    spans = [(r["time"], r["time"] + r["seconds"]) for r in retrains or []]
    out: dict[str, dict] = {}
    for cost in sorted({e["cost"] for e in trace}):
        part = [e for e in trace if e["cost"] == cost]
        inside = [e for e in part if any(a <= e["wall"] <= b for a, b in spans)]
        outside = [e for e in part if not any(a <= e["wall"] <= b for a, b in spans)]
        out[str(cost)] = {
            k: {
                "executions": len(v),
                "median_time_over_standard": statistics.median(e["s"] / e["standard_s"] for e in v)
                if v
                else None,
            }
            for k, v in (("during_retrain", inside), ("no_retrain", outside))
        }
    return out


def first_above(trace: list[dict], target: float) -> dict | None:
    """The first 20-execution window whose speed-up exceeds ``target``."""
    for end in range(ADAPT_WINDOW, len(trace) + 1):
        if ratio(trace[end - ADAPT_WINDOW : end]) > target:
            return {"executions": end, "s": trace[end - 1]["t"]}
    return None
