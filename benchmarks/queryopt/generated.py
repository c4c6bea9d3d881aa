"""Generated queries of the subquery shapes analysts write, over TPC-DS on PostgreSQL: its own
plans against the default command's decision (the measured chooser), per query.

``qopt-bench generate`` draws ``--n`` queries of nine shapes (correlated scalar subqueries in
WHERE, through a join, in HAVING on a GROUP BY key, in the SELECT list, on two columns;
EXISTS, NOT EXISTS, IN, NOT IN) with ``--seed`` (2027: a seed not used while the rules and
the generator were written). Per query: PostgreSQL's plan under ``--cap-s`` (a capped query
counts as the cap), then the default decision (candidates measured within ``--budget-s``,
verified: on the same data, by DuckDB reading the same tables, or on the SF 0.01 copy), and
the decision run under the cap. Every served rewrite's rows are compared again, outside the
chooser: with the original's when it finished, else with DuckDB's answer on the same tables;
a mismatch is a wrong result.

Pass criterion (the issue's, at SF 1 with a 300 s cap): of the queries that take >= 10 s on
PostgreSQL's plan, >= 90% get a verified rewrite at least 2x faster; 0 wrong; none more than
10% slower; none left at the cap.

Writes ``queryopt_generated.json`` and ``queryopt_generated.png`` (speed-up per query by
shape).

Measured: the first 45 of seed 2027's queries at SF 1 with a 30 s cap and a 30 s budget
(``queryopt_generated_sf1.json``; the target's 200 queries under a 300 s cap do not fit a
shared 2-core machine's time): all 12 queries >= 10 s natively (every one past the 30 s cap)
made >= 2x faster (to 0.05-1.24 s, each verified by DuckDB on the same tables), 0 wrong, none
slower, 17.7x in total; 9 faster ones rewritten too (WHERE, SELECT-list and NOT IN shapes,
checked on the same data). Earlier, 18 queries at SF 0.1 with a 30 s cap
(``queryopt_generated_sf0_1.json``): all 5 queries >= 1 s natively made >= 2x faster.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from rlsuite.bench import Benchmark, Row, Value, pub


@dataclass(frozen=True)
class Settings:
    scale: float = 1.0
    """TPC-DS scale factor of the data the queries run on"""
    n: int = 200
    """generated queries"""
    seed: int = 2027
    """the generator's seed"""
    cap_s: float = 300.0
    """per-query cap on PostgreSQL (its plan and the decision's)"""
    budget_s: float = 60.0
    """the measured chooser's budget per query"""
    slow_s: float = 10.0
    """queries at least this slow natively are the ones the criterion counts"""
    dsn: str = ""
    """libpq DSN (default: the embedded server)"""
    out: str = "queryopt_generated"
    """results name"""


def _query(eng, w, shape, sql, s, duck) -> dict:
    from rlsuite.apps.queryopt.choosers import FULL_DATA, MeasuredChooser
    from rlsuite.apps.queryopt.verify import has_order_by, reference_rows_match, same_rows

    cap_ms = int(s.cap_s * 1000)
    pg = eng.run(sql, w.schema, cap_ms)
    row = {"shape": shape, "sql": sql, "postgres_s": s.cap_s if pg.timed_out else pg.runtime_s}
    row["postgres_capped"] = pg.timed_out
    t0 = time.time()
    ch = MeasuredChooser(
        eng, w.schema, timeout_ms=cap_ms, check_schema=w.check_schema, budget_s=s.budget_s,
        reference=lambda q: duck(q, w.schema), reference_label=FULL_DATA,
    )  # fmt: skip
    d = ch.rewrite(sql)
    row.update(decide_s=round(time.time() - t0, 2), rewrites=list(d.applied))
    row.update(checked_on=d.checked_on, reason=d.reason[:300])
    row.update(s=row["postgres_s"], capped=pg.timed_out, wrong=False)
    if d.applied:
        r = eng.run(d.sql, w.schema, cap_ms, d.settings)
        row.update(s=s.cap_s if r.timed_out else r.runtime_s, capped=r.timed_out)
        if not r.timed_out:
            ordered = has_order_by(sql)
            if not pg.timed_out:
                row["wrong"] = not same_rows(pg.rows or [], r.rows or [], ordered=ordered)
            else:
                try:
                    row["wrong"] = (
                        reference_rows_match(r.rows or [], duck(sql, w.schema), ordered) is False
                    )
                except Exception as e:  # noqa: BLE001 - DuckDB cannot run it: not re-checked
                    row["recheck"] = f"DuckDB: {str(e)[:200]}"
    return row


def summary(rows: list[dict], slow_s: float) -> dict:
    slow = [r for r in rows if r["postgres_s"] >= slow_s]
    fixed = [r for r in slow if r["rewrites"] and r["postgres_s"] >= 2 * r["s"] and not r["wrong"]]
    pg, new = sum(r["postgres_s"] for r in rows), sum(r["s"] for r in rows)
    return {
        "queries": len(rows),
        "slow": len(slow),
        "slow_fixed_2x": len(fixed),
        "slow_fixed_share": len(fixed) / len(slow) if slow else None,
        "rewritten": sum(bool(r["rewrites"]) for r in rows),
        "wrong": sum(r["wrong"] for r in rows),
        "slower_10pct": sum(r["s"] > 1.1 * r["postgres_s"] + 0.01 for r in rows),
        "at_cap_postgres": sum(r["postgres_capped"] for r in rows),
        "at_cap": sum(r["capped"] for r in rows),
        "total_postgres_s": pg,
        "total_s": new,
        "total_speedup": pg / max(new, 1e-9),
        "by_checked_on": {k: sum(r["checked_on"] == k for r in rows) for k in {r["checked_on"] for r in rows if r["checked_on"]}},
    }  # fmt: skip


def plot(ctx, rows: list[dict], stem: str, title: str):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shapes = sorted({r["shape"] for r in rows})
    fig, ax = plt.subplots(figsize=(9, 4))
    for i, sh in enumerate(shapes):
        ys = [r["postgres_s"] / max(r["s"], 1e-6) for r in rows if r["shape"] == sh]
        ax.scatter([i] * len(ys), ys, s=12, alpha=0.7)
    ax.axhline(1.0, color="k", lw=0.6)
    ax.set_yscale("log")
    ax.set_xticks(range(len(shapes)), shapes, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("speed-up over PostgreSQL's plan (log)")
    ax.set_title(title)
    return ctx.save_plot(stem, fig)


def run(ctx) -> int:
    from rlsuite.apps.queryopt.duckref import duckdb_on_postgres
    from rlsuite.apps.queryopt.spaces import space_of
    from rlsuite.apps.queryopt.workloads.shapes import generate, planned_by
    from rlsuite.apps.queryopt.workloads.tpcds import TpcdsWorkload

    s = ctx.settings
    w = TpcdsWorkload(scale=s.scale)
    done = {r["sql"]: r for r in ctx.load(s.out).get("rows", [])}
    rows = []
    with space_of("postgres").session(s.dsn or None, say=ctx.say) as eng:
        eng.ensure_workload(w)

        qs = generate(s.n, s.seed, accept=planned_by(eng, w.schema))
        with duckdb_on_postgres(eng.dsn, timeout_s=max(60.0, s.cap_s)) as duck:
            for i, (shape, sql) in enumerate(qs):
                row = done.get(sql) or _query(eng, w, shape, sql, s, duck)
                rows.append(row)
                ctx.say(
                    f"[dim]{i + 1}/{len(qs)} {shape}: {row['postgres_s']:.2f} s -> {row['s']:.2f} s "
                    f"{'+'.join(row['rewrites']) or 'original'} ({row['checked_on'] or '-'})[/]"
                )
                ctx.save(s.out, {"settings_note": "partial", "rows": rows})  # resumable
    summ = summary(rows, s.slow_s)
    share = summ["slow_fixed_share"]
    checks = {
        f">= 90% of the queries >= {s.slow_s:g} s natively get a verified rewrite >= 2x faster "
        f"({summ['slow_fixed_2x']} of {summ['slow']})": share is not None and share >= 0.9,
        f"0 wrong results ({summ['wrong']})": summ["wrong"] == 0,
        f"none > 10% slower ({summ['slower_10pct']})": summ["slower_10pct"] == 0,
        f"none at the cap after rewriting ({summ['at_cap']})": summ["at_cap"] == 0,
    }
    title = (
        f"{len(rows)} generated queries, TPC-DS SF {s.scale:g}, seed {s.seed}: "
        f"{summ['total_speedup']:.1f}x total, {summ['wrong']} wrong"
    )
    png = plot(ctx, rows, s.out, title)
    ctx.table([{k: v for k, v in summ.items() if k != "by_checked_on"}], title)
    ctx.save(s.out, {"summary": summ, "checks": checks, "png": str(png), "rows": rows})
    return ctx.verdict(checks)


BENCHMARK = Benchmark(
    claim="The default command fixes the slow generated subquery shapes: of the queries >= 10 s "
    "natively, >= 90% get a verified rewrite >= 2x faster; 0 wrong, none > 10% slower, none at "
    "the cap.",
    run=run,
    settings=Settings,
    quick=dict(scale=0.01, n=9, cap_s=10.0, budget_s=5.0, slow_s=0.05),
    resume=True,
    rows=(
        Row(
            "queryopt",
            "45 generated subquery queries (seed 2027, the first 45 of the 200), TPC-DS SF 1, "
            "PostgreSQL 15, 30 s cap, 30 s budget",
            "share of the queries >= 10 s natively (12, all past the cap) that the default "
            "command makes >= 2x faster, verified (0 wrong, none slower)",
            "queryopt_generated_sf1.json",
            Value(("summary", "slow_fixed_share")),
            pub("target (200 queries, 300 s cap): >= 90%", 0.9),
            "rlsuite bench run queryopt_generated --scale 1 --n 45 --cap-s 30 --budget-s 30 "
            "--slow-s 10 --out queryopt_generated_sf1",
            fmt="{:.0%}",
        ),
    ),
)
