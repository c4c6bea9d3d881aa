"""TPC-DS on PostgreSQL: repeated, alternating runs of the runtime chooser's wins.

``queryopt_tpcds.py`` times each original and each chosen rewrite once or twice, in
sequence; a 2.0x from one pair of runs can be load or cache. Here, for every query the
runtime chooser served faster (``measured.s < postgres_s`` in the results file), the
original (O) and the chosen rewrite (R) run alternately: one warm-up run of each, then
O, R, O, R, ... ``--repeat`` times each, every timing recorded. An original past the cap
counts at the cap (as in ``queryopt_tpcds.py``), so its speed-up is a lower bound; the
warm-up of an original that was past the cap in the results file is skipped (a 30 s run
that warms nothing the rewrite's warm-up does not), unless ``--warmup-capped``.

``--pair Q:RULE,RULE`` adds a third plan (P) to query Q's alternation (O, R, P, O, R,
P, ...), e.g. ``4:cte_not_materialized,arm_no_nestloop``, a query-shape rule with a
planner arm, a pair the chooser's candidates did not hold. Its rows are compared with the
original's, or, where the original is past the cap, with the served rewrite's (whose
rows were checked as the results file says).

Per query: the median of each plan's timings, the median speed-up (median O / median R),
the min and max of the per-round speed-ups (O_i / R_i), and the verdicts under the
medians: ``>= 2x``, and ``not slower`` (median R at most 10% above median O, the
issue's "no query more than 10% slower"). The summary recomputes the chooser's workload
total with the medians in place of the single runs (the other queries keep theirs).

Usage:
    RLSUITE_PG_DIR=... flock /tmp/rlsuite-heavy.lock nice -n 15 .venv/bin/python \
        benchmarks/queryopt_tpcds_repeat.py --scale 1 --repeat 3 \
        [--queries 7,27] [--pair 4:cte_not_materialized,arm_no_nestloop] [--resume]

Reads benchmarks/results/queryopt/queryopt_tpcds.json (``--from``); writes
queryopt_tpcds_repeat.json and .png (``--out-name``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

from rlsuite.apps.queryopt import benchmarking as T
from rlsuite.apps.queryopt import benchmarking as common  # noqa: E402

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


def plot(entries, path, title):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    es = sorted(entries, key=lambda e: e["query"])
    x = list(range(len(es)))
    sp = [e["speedup_median"] for e in es]
    lo = [s - e["speedup_min"] for s, e in zip(sp, es, strict=True)]
    hi = [e["speedup_max"] - s for s, e in zip(sp, es, strict=True)]
    colors = ["tab:orange" if e["lower_bound"] else "tab:blue" for e in es]
    fig, ax = plt.subplots(figsize=(max(7, 0.4 * len(es) + 2), 4.2))
    ax.bar(x, sp, 0.6, color=colors, yerr=[lo, hi], capsize=3, ecolor="k")
    for i, e in enumerate(es):
        if "pair" in e and "speedup_median" in e["pair"]:
            ax.plot(i, e["pair"]["speedup_median"], "k^", ms=6)
    ax.axhline(1.0, color="k", lw=0.6)
    ax.axhline(2.0, color="gray", lw=0.6, ls="--")
    ax.set_yscale("log")
    ax.set_xticks(x, [f"Q{e['query']}" for e in es], fontsize=7, rotation=90)
    ax.set_ylabel("median speed-up (log), bars: min-max")
    ax.set_title(title, fontsize=9)
    from matplotlib.patches import Patch

    handles = [
        Patch(color="tab:blue", label="original finishes"),
        Patch(color="tab:orange", label="original at the cap (lower bound)"),
    ]
    if any("pair" in e for e in es):
        handles.append(plt.Line2D([], [], color="k", marker="^", ls="", label="pair (P)"))
    ax.legend(handles=handles, fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


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
            raise SystemExit(f"--pair {it!r}: expected Q:RULE,RULE")
        out[int(q)] = tuple(r for r in rules.split(",") if r)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--repeat", type=int, default=3, help="alternating runs of each plan")
    ap.add_argument("--warmup", type=int, default=1, help="warm-up runs of each plan")
    ap.add_argument(
        "--warmup-capped",
        action="store_true",
        help="also warm up originals past the cap in the results file",
    )
    ap.add_argument(
        "--queries", default=None, help="comma-separated subset of the wins, run in this order"
    )
    ap.add_argument("--pair", action="append", help="Q:RULE,RULE, a third plan for Q")
    ap.add_argument(
        "--from",
        dest="src",
        default="queryopt_tpcds",
        help="results name or path of queryopt_tpcds.py's JSON",
    )
    ap.add_argument("--out-name", default="queryopt_tpcds_repeat")
    ap.add_argument("--results-dir", default=common.RESULTS)
    ap.add_argument("--resume", action="store_true", help="keep the queries already measured")
    ap.add_argument(
        "--stop-at",
        type=float,
        default=None,
        help="a Unix time: skip a query whose estimated runs (from the results file's times) "
        "would end after it; the skipped are listed in the JSON",
    )
    ap.add_argument("--dsn", default=None)
    args = ap.parse_args(argv)
    if args.repeat < 1 or args.warmup < 0:
        raise SystemExit("--repeat must be >= 1 and --warmup >= 0")
    pairs = parse_pairs(args.pair)

    from rich.console import Console
    from rich.table import Table

    from rlsuite.apps.queryopt.workloads.tpcds import TpcdsWorkload, queries

    console = Console()
    src = (
        args.src if args.src.endswith(".json") else os.path.join(common.RESULTS, f"{args.src}.json")
    )
    prev = json.load(open(src))
    if prev["scale"] != args.scale:
        raise SystemExit(f"{src} is at scale {prev['scale']}, this run {args.scale}")
    todo = wins(prev["queries"])
    if args.queries:
        order = [int(x) for x in args.queries.split(",")]  # run in this order
        todo = sorted(
            (r for r in todo if r["query"] in order), key=lambda r: order.index(r["query"])
        )
    out_path = os.path.join(args.results_dir, f"{args.out_name}.json")
    entries = []
    if args.resume and os.path.exists(out_path):
        old = json.load(open(out_path))
        if old["repeat"] != args.repeat or old["cap_s"] != prev["cap_s"]:
            raise SystemExit(f"{out_path} has repeat={old['repeat']}, cap_s={old['cap_s']}")
        entries = list(old["queries"])
    done = {e["query"] for e in entries}
    w = TpcdsWorkload(args.scale)
    qs = queries()
    cap_ms = int(prev["cap_s"] * 1000)
    payload = {
        "machine": common.MACHINE,
        "scale": args.scale,
        "cap_s": prev["cap_s"],
        "repeat": args.repeat,
        "warmup": args.warmup,
        "warmup_capped": args.warmup_capped,
        "results_of": f"{os.path.basename(src)} ({prev.get('time')})",
        "capped_counts_at_cap": True,
        "argv": sys.argv[1:] if argv is None else list(argv),
    }

    def write():
        payload["time"] = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
        payload["summary"] = summarise(entries, prev["queries"], prev["cap_s"])
        payload["queries"] = sorted(entries, key=lambda e: e["query"])
        os.makedirs(args.results_dir, exist_ok=True)
        with open(out_path, "w") as f:
            json.dump(payload, f, indent=2)

    with common.database(args.dsn) as db:
        w.ensure(db)
        payload["prewarm"] = T.prewarm(db, (w.schema,))
        payload["skipped_stop_at"] = []
        for r in todo:
            if r["query"] in done:
                continue
            est = estimate_s(r, args.repeat, args.warmup, args.warmup_capped, r["query"] in pairs)
            if args.stop_at is not None and time.time() + est > args.stop_at:
                payload["skipped_stop_at"].append(r["query"])
                continue
            e = measure(
                db,
                w,
                r,
                qs[r["query"]],
                args.repeat,
                cap_ms,
                args.warmup,
                args.warmup_capped,
                pairs.get(r["query"]),
            )
            entries.append(e)
            console.print(
                f"[dim]Q{e['query']:<3d} O {e['runs']['O']['s']} R {e['runs']['R']['s']} "
                f"-> {e['speedup_median']:.2f}x ({e['verdict']})"
                + (f" P {e['runs']['P']['s']}" if "P" in e["runs"] else "")
                + "[/]"
            )
            write()  # after every query: a run cut short keeps its rows
    write()
    plot(
        entries,
        os.path.join(args.results_dir, f"{args.out_name}.png"),
        f"TPC-DS SF {args.scale:g}: the runtime chooser's wins, {args.repeat} alternating runs "
        f"each, {prev['cap_s']:g} s cap",
    )
    t = Table(title=f"{args.repeat} alternating runs each (medians; cap {prev['cap_s']:g} s)")
    for c in ("query", "rules", "orig s", "rewrite s", "x median", "min-max", "single", "verdict"):
        t.add_column(c, justify="right")
    for e in payload["queries"]:
        t.add_row(
            f"Q{e['query']}",
            ",".join(e["rules"]),
            f"{e['original_median_s']:.3f}{'+' if e['lower_bound'] else ''}",
            f"{e['rewrite_median_s']:.3f}",
            f"{e['speedup_median']:.2f}",
            f"{e['speedup_min']:.2f}-{e['speedup_max']:.2f}",
            f"{e['single_run']['speedup']:.2f}",
            e["verdict"],
        )
    console.print(t)
    console.print(payload["summary"])
    console.print(f"wrote {out_path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
