"""Repeated, alternating runs of the runtime chooser's wins on TPC-DS
(``rlsuite bench run queryopt_tpcds_repeat``).

One pair of runs per query (``queryopt_tpcds``) can be load or cache. Here, for every query
the runtime chooser served faster, the original (O) and the chosen rewrite (R) run
alternately: warm-up runs of each, then O, R, O, R, ... A run past the cap counts at the cap
(so a speed-up over it is a lower bound); the warm-up of an original that was past the cap
is skipped unless asked for. A pair ``Q:RULE,RULE`` adds a third plan (P) to query Q's
alternation. Per query: each plan's median, the median speed-up, the per-round speed-ups'
min and max, and the verdicts under the medians (``>= 2x``; ``not slower``: median R at
most 10% above median O).
"""

from __future__ import annotations

import statistics

from rlsuite.apps.queryopt import benchmarking as T

SLOWER = 1.10
"""A rewrite is "slower" when its median is more than 10% above the original's."""


def alternate(db, schema, plans, repeat, cap_ms, warmup=1, no_warmup=()):
    """Run ``plans`` (label -> (sql, settings)) in turn: ``warmup`` rounds of each label
    not in ``no_warmup``, then ``repeat`` rounds of every label in order. A run past
    ``cap_ms`` counts at the cap. Returns ``{"order": [labels run, warm-up first],
    label: {"s", "capped", "warmup_s"}}`` and the rows of each label's last finished run
    (``None`` if it never finished)."""
    out = {"order": []}
    rows = {}
    for label in plans:
        out[label] = {"s": [], "capped": [], "warmup_s": []}
        rows[label] = None
    for _ in range(warmup):
        for label, (sql, settings) in plans.items():
            if label in no_warmup:
                continue
            s, _to, r = T.try_rewrite(db, schema, sql, settings, cap_ms)
            out[label]["warmup_s"].append(round(s, 4))
            out["order"].append(f"{label}*")
            rows[label] = r if r is not None else rows[label]
    for _ in range(repeat):
        for label, (sql, settings) in plans.items():
            s, to, r = T.try_rewrite(db, schema, sql, settings, cap_ms)
            out[label]["s"].append(round(s, 4))
            out[label]["capped"].append(bool(to))
            out["order"].append(label)
            rows[label] = r if r is not None else rows[label]
    return out, rows


def verdict(o, r):
    """Medians, the median speed-up, the per-round speed-ups' min and max, and the
    verdicts under the medians, of original timings ``o`` and rewrite timings ``r``
    (one per round, a capped run at the cap)."""
    mo, mr = statistics.median(o), statistics.median(r)
    ratios = [a / max(b, 1e-6) for a, b in zip(o, r, strict=True)]
    sp = mo / max(mr, 1e-6)
    return {
        "original_median_s": round(mo, 4),
        "rewrite_median_s": round(mr, 4),
        "speedup_median": round(sp, 3),
        "speedup_min": round(min(ratios), 3),
        "speedup_max": round(max(ratios), 3),
        "at_least_2x": sp >= 2.0,
        "not_slower": mr <= SLOWER * mo,
        "verdict": _word(sp, mr <= SLOWER * mo),
    }


def _word(speedup, not_slower):
    if speedup >= 2.0:
        return ">= 2x"
    if speedup > 1.0:
        return "faster"
    return "not slower" if not_slower else "slower"


def wins(prev_rows):
    """The results file's queries the runtime chooser served faster than the original."""
    return [r for r in prev_rows if r["measured"]["rules"] and r["measured"]["s"] < r["postgres_s"]]


def measure(db, w, prev, sql, repeat, cap_ms, warmup, warmup_capped, pair=None):
    """One query's alternating runs (see the module doc) and their verdicts."""
    from rlsuite.apps.queryopt import rules as R
    from rlsuite.apps.queryopt.rewriter import apply_rules, catalog
    from rlsuite.apps.queryopt.verify import has_order_by, same_rows

    q0 = R.Query.parse(sql, catalog(db, w.schema))
    rules = prev["measured"]["rules"]
    q, reasons = apply_rules(q0, rules)
    plans = {"O": (sql, {}), "R": (q.sql(), q.settings_dict)}
    e = {"query": prev["query"], "rules": rules, "not_applied": reasons}
    if pair:
        p, preasons = apply_rules(q0, pair)
        plans["P"] = (p.sql(), p.settings_dict)
        e["pair"] = {"rules": list(pair), "not_applied": preasons}
    no_warm = () if warmup_capped or not prev["postgres_capped"] else ("O",)
    e["warmup_skipped"] = list(no_warm)
    runs, rows = alternate(db, w.schema, plans, repeat, cap_ms, warmup, no_warm)
    e["runs"] = runs
    e["single_run"] = {
        "postgres_s": prev["postgres_s"],
        "postgres_capped": prev["postgres_capped"],
        "rewrite_s": prev["measured"]["s"],
        "speedup": round(prev["postgres_s"] / max(prev["measured"]["s"], 1e-6), 3),
    }
    e["original_capped_runs"] = sum(runs["O"]["capped"])
    e["rewrite_capped_runs"] = sum(runs["R"]["capped"])
    e.update(verdict(runs["O"]["s"], runs["R"]["s"]))
    e["lower_bound"] = e["original_capped_runs"] > 0
    ordered = has_order_by(sql)
    if rows["O"] is not None and rows["R"] is not None:
        e["same_rows"], e["rows_vs"] = same_rows(rows["O"], rows["R"], ordered=ordered), "O"
    else:
        e["same_rows"], e["rows_vs"] = None, prev["measured"].get("checked_on")
    if pair:
        ref, on = (rows["O"], "O") if rows["O"] is not None else (rows["R"], "R")
        pv = verdict(runs["O"]["s"], runs["P"]["s"])
        e["pair"].update(
            median_s=pv["rewrite_median_s"],
            speedup_median=pv["speedup_median"],
            speedup_min=pv["speedup_min"],
            speedup_max=pv["speedup_max"],
            vs_rewrite_median=round(e["rewrite_median_s"] / max(pv["rewrite_median_s"], 1e-6), 3),
            same_rows=None
            if ref is None or rows["P"] is None
            else same_rows(ref, rows["P"], ordered=ordered),
            rows_vs=on,
            capped_runs=sum(runs["P"]["capped"]),
        )
    return e


def summarise(entries, prev_rows, cap_s):
    """Counts under the medians and the chooser's workload total with the medians in place
    of the single runs of the repeated queries (the others keep their single runs)."""
    by_q = {e["query"]: e for e in entries}
    pg = sum(
        by_q[r["query"]]["original_median_s"] if r["query"] in by_q else r["postgres_s"]
        for r in prev_rows
    )
    ch = sum(
        by_q[r["query"]]["rewrite_median_s"] if r["query"] in by_q else r["measured"]["s"]
        for r in prev_rows
    )
    single = [e for e in entries if e["single_run"]["speedup"] >= 2.0]
    return {
        "queries": len(entries),
        "at_least_2x": sum(e["at_least_2x"] for e in entries),
        "single_run_at_least_2x": len(single),
        "single_run_2x_still_2x": sum(e["at_least_2x"] for e in single),
        "not_slower": sum(e["not_slower"] for e in entries),
        "faster": sum(e["speedup_median"] > 1.0 for e in entries),
        "wrong": sum(e["same_rows"] is False for e in entries),
        "workload_queries": len(prev_rows),
        "workload_total_postgres_s": round(pg, 2),
        "workload_total_chooser_s": round(ch, 2),
        "workload_total_speedup": round(pg / max(ch, 1e-9), 3),
        "workload_at_least_2x": sum(
            (
                by_q[r["query"]]["at_least_2x"]
                if r["query"] in by_q
                else r["postgres_s"] >= 2.0 * r["measured"]["s"]
            )
            for r in prev_rows
        ),
        "cap_s": cap_s,
    }


def estimate_s(prev, repeat, warmup, warmup_capped, pair):
    """Seconds a query's alternating runs should take, from the results file's times (a
    pair counted as the rewrite)."""
    o_runs = repeat + (warmup if warmup_capped or not prev["postgres_capped"] else 0)
    r_runs = (repeat + warmup) * (2 if pair else 1)
    return o_runs * prev["postgres_s"] + r_runs * prev["measured"]["s"] + 1.0


def parse_pairs(items):
    """``["4:a,b", ...]`` -> ``{4: ("a", "b")}``."""
    out = {}
    for it in items or []:
        q, _, rules = it.partition(":")
        if not rules:
            raise ValueError(f"--pair {it!r}: expected Q:RULE,RULE")
        out[int(q)] = tuple(r for r in rules.split(",") if r)
    return out
