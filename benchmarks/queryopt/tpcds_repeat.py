"""TPC-DS on PostgreSQL: the runtime chooser's wins (``queryopt_tpcds``'s results) rerun
alternately, original and rewrite, with the verdicts under the medians
(rlsuite.apps.queryopt.repeat). The summary recomputes the chooser's workload total with the
medians in place of the single runs. Target: >= 20 of the 99 queries >= 2x faster."""

import time
from dataclasses import dataclass

from rlsuite.bench import Benchmark, Row, Value, pub


@dataclass(frozen=True)
class Settings:
    scale: float = 1.0
    """TPC-DS scale factor (the originals' file must be at it)"""
    repeat: int = 3
    """alternating runs of each plan"""
    warmup: int = 1
    """warm-up runs of each plan"""
    warmup_capped: bool = False
    """also warm up originals past the cap in the originals' file"""
    queries: str = ""
    """comma-separated subset of the wins, run in this order"""
    pair: tuple[str, ...] = ()
    """Q:RULE,RULE: a third plan for query Q (e.g. 4:cte_not_materialized,arm_no_nestloop)"""
    originals: str = "queryopt_tpcds"
    """results name (in benchmarks/results/queryopt) or path of queryopt_tpcds's JSON"""
    out_name: str = "queryopt_tpcds_repeat"
    """results name"""
    stop_at: float = 0.0
    """a Unix time: skip a query whose estimated runs would end after it (0: none)"""
    dsn: str = ""
    """libpq DSN (default: the embedded server)"""


def plot(ctx, entries, title):
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    es = sorted(entries, key=lambda e: e["query"])
    x, sp = list(range(len(es))), [e["speedup_median"] for e in es]
    err = [[s - e["speedup_min"] for s, e in zip(sp, es)], [e["speedup_max"] - s for s, e in zip(sp, es)]]  # fmt: skip
    fig, ax = plt.subplots(figsize=(max(7, 0.4 * len(es) + 2), 4.2))
    colors = ["tab:orange" if e["lower_bound"] else "tab:blue" for e in es]
    ax.bar(x, sp, 0.6, color=colors, yerr=err, capsize=3, ecolor="k")
    for i, e in enumerate(es):
        if "speedup_median" in e.get("pair", {}):
            ax.plot(i, e["pair"]["speedup_median"], "k^", ms=6)
    ax.axhline(1.0, color="k", lw=0.6)
    ax.axhline(2.0, color="gray", lw=0.6, ls="--")
    ax.set_yscale("log")
    ax.set_xticks(x, [f"Q{e['query']}" for e in es], fontsize=7, rotation=90)
    ax.set_ylabel("median speed-up (log), bars: min-max")
    ax.set_title(title, fontsize=9)
    ax.legend(handles=[Patch(color="tab:blue", label="original finishes"), Patch(color="tab:orange", label="original at the cap (lower bound)")], fontsize=7)  # fmt: skip
    ctx.save_plot(ctx.settings.out_name, fig)


def run(ctx) -> int:
    import json
    from pathlib import Path

    from rlsuite.apps.queryopt import repeat as P
    from rlsuite.apps.queryopt.benchmarking import database, prewarm
    from rlsuite.apps.queryopt.workloads.tpcds import TpcdsWorkload, queries
    from rlsuite.bench.declare import results_root

    s = ctx.settings
    if s.repeat < 1 or s.warmup < 0:
        raise ValueError("--repeat must be >= 1 and --warmup >= 0")
    pairs = P.parse_pairs(s.pair)
    src = Path(s.originals if s.originals.endswith(".json") else results_root() / "queryopt" / f"{s.originals}.json")  # fmt: skip
    prev = json.loads(src.read_text())
    if prev["scale"] != s.scale:
        raise ValueError(f"{src} is at scale {prev['scale']}, this run {s.scale}")
    todo = P.wins(prev["queries"])
    if s.queries:
        order = [int(x) for x in s.queries.split(",")]
        todo = sorted((r for r in todo if r["query"] in order), key=lambda r: order.index(r["query"]))  # fmt: skip
    old = ctx.load(s.out_name)
    if old and (old["repeat"] != s.repeat or old["cap_s"] != prev["cap_s"]):
        raise ValueError(f"{s.out_name}.json has repeat={old['repeat']}, cap_s={old['cap_s']}")
    entries = list(old.get("queries", []))
    done = {e["query"] for e in entries}
    w, qs, cap_ms = TpcdsWorkload(s.scale), queries(), int(prev["cap_s"] * 1000)
    payload = dict(scale=s.scale, cap_s=prev["cap_s"], repeat=s.repeat, warmup=s.warmup, warmup_capped=s.warmup_capped)  # fmt: skip
    payload.update(results_of=f"{src.name} ({prev.get('time')})", capped_counts_at_cap=True, skipped_stop_at=[])  # fmt: skip

    def save():
        payload["summary"] = P.summarise(entries, prev["queries"], prev["cap_s"])
        payload["queries"] = sorted(entries, key=lambda e: e["query"])
        ctx.save(s.out_name, payload)

    with database(s.dsn) as db:
        w.ensure(db)
        payload["prewarm"] = prewarm(db, (w.schema,))
        for r in (r for r in todo if r["query"] not in done):
            est = P.estimate_s(r, s.repeat, s.warmup, s.warmup_capped, r["query"] in pairs)
            if s.stop_at and time.time() + est > s.stop_at:
                payload["skipped_stop_at"].append(r["query"])
                continue
            e = P.measure(db, w, r, qs[r["query"]], s.repeat, cap_ms, s.warmup, s.warmup_capped, pairs.get(r["query"]))  # fmt: skip
            entries.append(e)
            ctx.say(f"[dim]Q{e['query']:<3d} O {e['runs']['O']['s']} R {e['runs']['R']['s']} -> {e['speedup_median']:.2f}x ({e['verdict']})[/]")  # fmt: skip
            save()  # after every query: a run cut short keeps its rows
    save()
    plot(ctx, entries, f"TPC-DS SF {s.scale:g}: the runtime chooser's wins, {s.repeat} alternating runs each, {prev['cap_s']:g} s cap")  # fmt: skip
    cols = ("query", "rules", "original_median_s", "rewrite_median_s", "speedup_median", "verdict")
    ctx.table([{k: e[k] for k in cols} for e in payload["queries"]], f"{s.repeat} alternating runs each (medians)")  # fmt: skip
    ctx.say(payload["summary"])
    return 0


# fmt: off
BENCHMARK = Benchmark(run=run, settings=Settings, quick=dict(scale=0.01, repeat=1, warmup=0, queries="10", originals="queryopt_tpcds_sf0_01"), resume=True, rows=(
    Row("queryopt", "TPC-DS SF 1, PostgreSQL 15, the earlier runtime chooser's wins (not the default measured chooser), 3 alternating runs each",
        "queries >= 2x faster under the medians (Q4, Q11: single runs), 300 s cap, 0 wrong",
        "queryopt_tpcds_cap300_repeat.json", Value(("summary", "workload_at_least_2x")),
        pub("target: >= 20 of the 99", 20),
        "rlsuite bench run queryopt_tpcds_repeat --scale 1 --repeat 3 --originals queryopt_tpcds_cap300 "
        "--out-name queryopt_tpcds_cap300_repeat --queries 27,10,16,60,29,87,38,39,54,78,17,25,31,30,"
        "14,95,81,6,74,1,7,21",
        "-", fmt="{:.0f}"),
))
# fmt: on
