"""Shared pieces of the queryopt benchmarks (``benchmarks/queryopt/``): the training settings,
train-then-compare, the embedded database, and the comparison's JSON and speed-up plot.

The TPC-DS benchmarks' pieces (``queryopt_tpcds``, ``_repeat``, ``_learn``): per query
PostgreSQL's own plan, the greedy-by-cost rules, and the default decision
(:class:`~rlsuite.apps.queryopt.choosers.MeasuredChooser`) over a fixed candidate set
(:func:`measure_query`); the page-cache prewarm and the totals."""

from __future__ import annotations

import contextlib
import math
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class TrainSettings:
    """The settings of a train-then-test benchmark; a declaration subclasses it with its
    own defaults and adds its own fields."""

    iterations: int = 6
    """DQN training iterations"""
    train_timeout_ms: int = 300
    """per-query cap while training"""
    test_timeout_ms: int = 120_000
    """per-query cap while testing"""
    max_steps: int = 2
    """rewrites per query"""
    reward: str = "relative"
    """relative (-runtime / the engine's runtime: every query weighs the same) or runtime"""
    dsn: str = ""
    """libpq DSN (default: the embedded server)"""
    run_dir: str = ""
    """where the model is trained (default runs/bench/NAME)"""


@dataclass(frozen=True)
class TpcdsSettings:
    """What the TPC-DS benchmarks share (a declaration subclasses it)."""

    scale: float = 1.0
    """TPC-DS scale factor"""
    cap_s: float = 30.0
    """per-query cap (s)"""
    queries: str = ""
    """comma-separated query numbers (default all)"""


def train_and_compare(
    ctx,
    db,
    w,
    queries: Sequence[str],
    progress: Callable[[int, Any], None] | None = None,
    repeat: int = 1,
    workload_config: Mapping[str, Any] | None = None,
    **train: Any,
):
    """Train the DQN rewriter from scratch in the run's folder (embedded Ray, 2 CPUs) on
    workload ``w`` with ``ctx.settings`` (a :class:`TrainSettings`), then time ``queries``
    with the engine's plan and with the learned rewrites. ``train`` holds the
    :class:`TrainConfig` fields the benchmark sets itself. Returns the comparison and the
    results file's ``train`` entry."""
    from rlsuite.apps.queryopt import train as T
    from rlsuite.apps.queryopt.bench import compare
    from rlsuite.platform import cluster

    s = ctx.settings
    if s.reward not in ("relative", "runtime"):
        raise ValueError(f"--reward must be relative or runtime, got {s.reward!r}")
    run_dir = ctx.run_dir(f"runs/bench/{ctx.bench.name}")
    cfg = T.TrainConfig(
        dsn=db.dsn, workload=w.name, workload_config=dict(workload_config or {}),
        max_steps=s.max_steps, reward=s.reward, timeout_ms=s.train_timeout_ms,
        iterations=s.iterations, learning_starts=100, target_update_freq=100, **train,
    )  # fmt: skip
    shutil.rmtree(run_dir, ignore_errors=True)
    t0 = time.time()
    with cluster.local_cluster(num_cpus=2):
        res = T.train(cfg, run_dir, progress=True)
    trained = {"iterations": res.iterations, "env_steps": res.env_steps}
    trained.update(wall_s=time.time() - t0, final_return=res.final_return)
    on = {} if workload_config is None else dict(workload=w.name, workload_config=workload_config)
    rw = T.LearnedRewriter(run_dir, db.dsn, timeout_ms=s.test_timeout_ms, **on)
    try:
        b = compare(db, w, queries, rw, timeout_ms=s.test_timeout_ms, repeat=repeat, progress=progress)  # fmt: skip
    finally:
        rw.close()
    return b, trained


def show(i: int, r) -> None:
    """A compared query's line (the ``progress`` of :func:`train_and_compare`)."""
    from rich.console import Console

    Console().print(
        f"[dim]{i:3d} {r.postgres_s:8.3f} s -> {r.rewritten_s:8.4f} s {r.speedup:7.2f}x "
        f"{r.rewrites}{' REGRESSION' if r.regression else ''}[/]"
    )


@contextlib.contextmanager
def database(dsn: str | None):
    """The embedded server (started and stopped here unless it already ran) or ``dsn``: the
    CLI's own session on PostgreSQL, without its console line."""
    from rlsuite.apps.queryopt.spaces import PostgresSpace

    with PostgresSpace().session(dsn or None, say=lambda _line: None) as db:
        yield db


def save_comparison(ctx, stem: str, payload: dict, bench, title: str) -> None:
    """Write ``<stem>.json`` (``payload`` followed by the comparison's summary and rows) and
    ``<stem>.png`` (its :func:`speedup_plot`)."""
    queries = bench.to_dict()
    ctx.save(stem, {**payload, **queries})
    speedup_plot(ctx, stem, queries["queries"], title)


def speedup_plot(ctx, stem: str, rows: list[dict], title: str, labels=("PostgreSQL", "learned rewrite")) -> None:  # fmt: skip
    """Per-query engine vs rewritten time (log scale), saved as ``<stem>.png``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(max(6, 0.35 * len(rows) + 2), 4))
    x = range(len(rows))
    ax.bar([i - 0.2 for i in x], [r["postgres_s"] for r in rows], 0.4, label=labels[0])
    ax.bar([i + 0.2 for i in x], [r["rewritten_s"] for r in rows], 0.4, label=labels[1])
    ax.set_yscale("log")
    ax.set_xlabel("held-out query")
    ax.set_ylabel("runtime (s, log)")
    ax.set_title(title)
    ax.legend()
    ctx.save_plot(stem, fig)


ARMS = ("arm_no_nestloop", "unnest_subqueries", "arm_no_hashjoin", "arm_no_mergejoin")
"""The runtime chooser's single-rule candidates (the set earlier results were measured with)."""
NEW_RULES = (
    "decorrelate_exists_inequality",
    "not_in_to_not_exists",
    "cte_not_materialized",
    "cte_materialized",
    "pushdown_predicates",
    "or_to_union_all",
)
"""The rules written for TPC-DS, in the candidates unless ``--earlier-candidates``."""
SHAPE_RULES = ("cte_not_materialized", "cte_materialized", "unnest_subqueries")
"""Query-shape rules that ``--pair-candidates`` pairs with each planner arm."""


def between_bars(rows: list[dict], low: float, high: float) -> tuple[list[dict], set[int]]:
    """The rows to keep and the queries to rerun when the search bar goes from ``high`` down
    to ``low``: those whose original took at least ``low`` but less than ``high`` seconds,
    which the earlier run measured without searching."""
    redo = {r["query"] for r in rows if low <= r["postgres_s"] < high}
    return [r for r in rows if r["query"] not in redo], redo


def run_capped(db, schema, sql, settings, cap_ms):
    """Seconds (the cap when it hit it), whether it hit the cap, and the rows."""
    r = db.run(sql, schema, cap_ms, settings)
    return (cap_ms / 1000.0 if r.timed_out else r.runtime_s), r.timed_out, r.rows


def try_rewrite(db, schema, sql, settings, cap_ms):
    """:func:`run_capped` of a rewrite; one PostgreSQL rejects counts as never finishing."""
    from rlsuite.apps.queryopt.engines.base import DatabaseError

    try:
        return run_capped(db, schema, sql, settings, cap_ms)
    except DatabaseError:
        return cap_ms / 1000.0, True, None


REFERENCE = "duckdb_same_data"
"""``checked_on`` of a rewrite whose full-data rows were compared with DuckDB's answer."""


def candidates(q0, greedy_names, new_rules=False, pairs=False):
    """The rule sequences the runtime chooser tries, in order (those that apply in full);
    ``pairs`` adds each of :data:`SHAPE_RULES` followed by each planner arm."""
    from rlsuite.apps.queryopt.choosers import ARMS as PLANNER_ARMS
    from rlsuite.apps.queryopt.rewriter import apply_rules

    seqs = [tuple(greedy_names)] if greedy_names else []
    seqs += [(a,) for a in ARMS]  # arm_no_nestloop early: it bounds the later tries
    if greedy_names and "arm_no_nestloop" not in greedy_names:
        seqs.append((*greedy_names, "arm_no_nestloop"))
    if new_rules:
        seqs += [(r,) for r in NEW_RULES]
        if greedy_names:
            seqs += [(*greedy_names, r) for r in NEW_RULES if r not in greedy_names]
    if pairs:
        seqs += [(r, a) for r in SHAPE_RULES for a in PLANNER_ARMS]
    out = {}
    for seq in dict.fromkeys(seqs):
        q, reasons = apply_rules(q0, seq)
        if q.applied and not reasons:
            out[seq] = q
    return out


def prewarm(db, schemas) -> dict:
    """Read every table and index of ``schemas`` once (``pg_prewarm``, mode ``read``: into
    the OS page cache), so that no query pays for the first read of a table from disk
    while the queries after it find the table cached. Returns the seconds and pages."""
    from rlsuite.apps.queryopt.engines.postgres import admin_execute

    t = time.time()
    admin_execute(db.dsn, "CREATE EXTENSION IF NOT EXISTS pg_prewarm", autocommit=True)
    pages = 0
    for schema in dict.fromkeys(schemas):
        r = db.run(
            "SELECT sum(pg_prewarm(c.oid::regclass, 'read')) FROM pg_class c "
            f"JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = '{schema}' "
            "AND c.relkind IN ('r', 'i')",
            schema,
            600_000,
        )
        pages += int(r.rows[0][0] or 0)
    return {"s": round(time.time() - t, 1), "pages": pages}


@contextlib.contextmanager
def default_chooser(db, w, s):
    """With ``s.default_chooser``, the MeasuredChooser that ``qopt-bench rewrite --workload
    tpcds --timeout-ms CAP --budget-s B`` builds (the shipped model's choice one of its
    candidates, DuckDB over the same tables its full-data check), else None."""
    if not s.default_chooser:
        yield None
        return
    from rlsuite.apps.queryopt.spaces import PostgresSpace
    from rlsuite.apps.queryopt.train import LearnedRewriter

    cap_ms = int(s.cap_s * 1000)
    model = LearnedRewriter(
        w.shipped_model, db.dsn, workload=w.name, workload_config={"scale": s.scale},
        timeout_ms=cap_ms,
    )  # fmt: skip
    ch = PostgresSpace().rewriter(
        db, w, [], cap_ms, w.check_schema, chooser="measured", budget_s=s.budget_s, model=model
    )
    try:
        yield ch
    finally:
        ch.close()


def measure_query(
    db, w, n, sql, cap_ms, measure_above_s, duck=None, new_rules=False, pairs=False, chooser=None
):
    """Query ``n`` of workload ``w``: PostgreSQL's own plan (run twice, the second timed),
    the greedy-by-cost rules, and, when the original takes at least ``measure_above_s``,
    the default decision (:class:`~rlsuite.apps.queryopt.choosers.MeasuredChooser`, the one
    ``qopt-bench rewrite`` makes) over the sequences of :func:`candidates`, with DuckDB's
    answer ``duck`` on the same data as its reference when the original cannot finish.
    ``chooser``: a MeasuredChooser built as the command builds it (its own candidates,
    budget and reference), whose decision alone is the ``measured`` column."""
    from rlsuite.apps.queryopt import rules as R
    from rlsuite.apps.queryopt.choosers import MeasuredChooser
    from rlsuite.apps.queryopt.engines.base import DatabaseError, RunResult
    from rlsuite.apps.queryopt.rewriter import GreedyByCost, apply_rules, catalog
    from rlsuite.apps.queryopt.tpcds_answers import classify
    from rlsuite.apps.queryopt.verify import check_rewrite, has_order_by

    orig = db.run(sql, w.schema, cap_ms)
    row = {}
    if not orig.timed_out:  # the rerun is the time reported, as for the chosen rewrite
        row["postgres_first_s"] = orig.runtime_s
        orig = db.run(sql, w.schema, cap_ms)
    pg_s, pg_to = (cap_ms / 1000.0 if orig.timed_out else orig.runtime_s), orig.timed_out
    row = {"query": n, "postgres_s": pg_s, "postgres_capped": pg_to, **row}
    d_rows = None
    if duck is not None:
        d_rows = duck.execute(sql).fetchall()
        if orig.timed_out:
            row["answer"] = {"verdict": "timeout", "example": "", "duckdb_rows": len(d_rows)}
        else:
            verdict, example = classify(orig.rows, d_rows, has_order_by(sql))
            row["answer"] = {"verdict": verdict, "example": example[:300], "rows": len(orig.rows)}
    reference = None if d_rows is None else (lambda _sql: d_rows)
    q0 = R.Query.parse(sql, catalog(db, w.schema))
    # greedy by estimated cost: served unless its rows differ (a baseline, not the default)
    try:
        names = GreedyByCost(db, w.schema, timeout_ms=cap_ms).choose(sql)
    except Exception as e:  # noqa: BLE001 - an unsupported query keeps its plan
        names, row["greedy_note"] = [], str(e)[:200]
    g = {"rules": names, "s": pg_s, "capped": pg_to, "rows": None, "served": False}
    q, _ = apply_rules(q0, names)
    if names and q.applied:
        try:
            b = db.run(q.sql(), w.schema, cap_ms, q.settings_dict)
        except DatabaseError:  # one PostgreSQL rejects counts as never finishing
            b = RunResult(None, cap_ms / 1000.0, timed_out=True)
        v = check_rewrite(
            db, w.schema, sql, q.sql(), {}, q.settings_dict, cap_ms, w.check_schema,
            reference, REFERENCE, measured=(orig, b),
        )  # fmt: skip
        g.update(s=b.runtime_s, capped=b.timed_out, rows=v.rows_match, checked_on=v.checked_on)
        g["served"] = v.rows_match is not False
        if v.rows_match is False:  # never serve other rows
            g.update(s=pg_s, capped=pg_to)
    row["greedy"] = g
    # the default decision
    m = {"rules": [], "s": pg_s, "capped": pg_to, "rows": None, "tried": {}}
    # the fixed set's greedy choice, verified and measured above (a chooser's own has it)
    if chooser is None and g["served"] and g["rows"] and g["rules"] and g["s"] < pg_s:
        m.update(rules=list(names), s=g["s"], capped=g["capped"], rows=True)
        m["checked_on"] = g.get("checked_on")
    if pg_s >= measure_above_s:
        seqs, ch = None, chooser
        if ch is None:
            seqs = list(candidates(q0, names, new_rules, pairs))
            ch = MeasuredChooser(
                db, w.schema, {}, timeout_ms=cap_ms, check_schema=w.check_schema,
                budget_s=3 * cap_ms / 1000.0 * (len(seqs) + 2), reference=reference,
                reference_label=REFERENCE,
            )  # fmt: skip
        d = ch.decide(sql, seqs, original=orig)
        m["tried"] = {
            ",".join(k): v if v is None else round(v, 4) for k, v in ch.last.tried.items()
        }
        s = ch.last.chosen_s
        if d.applied and s is not None and s < m["s"]:
            m.update(rules=list(d.applied), s=s, capped=False, rows=True, checked_on=d.checked_on)
        elif not d.applied:
            m["note"] = d.reasons.get("*", "")
    row["measured"] = m
    return row


def summary(rows, key, cap_s):
    """Totals of ``rows`` for the chooser ``key`` (``greedy`` or ``measured``) against
    PostgreSQL's plans: speed-ups, queries at the cap, at least 2x, 10% slower, wrong."""
    pg = [r["postgres_s"] for r in rows]
    new = [r[key]["s"] for r in rows]
    sp = [a / max(b, 1e-6) for a, b in zip(pg, new, strict=True)]
    return {
        "queries": len(rows),
        "total_postgres_s": sum(pg),
        "total_s": sum(new),
        "total_speedup": sum(pg) / max(sum(new), 1e-9),
        "geomean_speedup": math.exp(sum(math.log(x) for x in sp) / len(sp)),
        "at_cap_postgres": sum(r["postgres_capped"] for r in rows),
        "at_cap": sum(bool(r[key]["capped"]) for r in rows),
        "at_least_2x": sum(x >= 2 for x in sp),
        "slower_10pct": sum(b > 1.1 * a and b - a > 0.01 for a, b in zip(pg, new, strict=True)),
        "wrong_results": sum(r[key]["rows"] is False and bool(r[key].get("served")) for r in rows),
        "unverified_served": sum(
            bool(r[key]["rules"]) and r[key]["rows"] is None and r[key].get("served", True)
            for r in rows
        ),
        "cap_s": cap_s,
    }
