"""TPC-DS on PostgreSQL: the DQN trained on one half of the templates (by query-number parity)
and tested on the other, both ways round, gets >= 80% of the oracle's total-time gain (the
fastest sequence of at most ``--depth`` rewrites found by running them), none served slower,
0 wrong (rlsuite.apps.queryopt.heldout).

The queries: those whose original took at least ``--min-s`` in ``--originals`` (the runtime
chooser's run, whose original times are used; a capped one counts at the cap). The oracle
searches each under ``--cap-s`` through one runtime cache; the training half's searches
become an experience store the DQN trains on (no query runs while training); on the held-out
half the policy picks from plans only. ``--ship`` exports both models to
``benchmarks/policies/`` when both splits pass."""

import time
from dataclasses import dataclass

from rlsuite.apps.queryopt.benchmarking import TpcdsSettings
from rlsuite.apps.queryopt.heldout import HeldOutSettings
from rlsuite.bench import Benchmark, Row, Value, pub


@dataclass(frozen=True)
class Settings(HeldOutSettings, TpcdsSettings):
    min_s: float = 1.0
    """search the queries at least this slow"""
    originals: str = "queryopt_tpcds"
    """results name of the originals' times"""
    splits: str = "odd,even"
    """odd (train on the odd templates, test on the even ones), even"""
    search_only: bool = False
    """stop after the searches"""
    ship: bool = False
    """export each split's model to benchmarks/policies/ when both splits pass"""
    out_name: str = "queryopt_tpcds_learn"
    """results name"""
    run_dir: str = ""
    """where the models are trained (default runs/bench/queryopt_tpcds_learn)"""
    dsn: str = ""
    """libpq DSN (default: the embedded server)"""


def plot(ctx, splits):
    import matplotlib.pyplot as plt

    from rlsuite.apps.queryopt.shapes_heldout import speedup_bars

    fig, axes = plt.subplots(1, len(splits), figsize=(7 * len(splits), 4), squeeze=False)
    for ax, (name, sp) in zip(axes[0], splits.items(), strict=True):
        rows, s = sp["held_out"], sp["summary"]
        speedup_bars(ax, rows, [str(r["query"]) for r in rows], f"trained on {name}: DQN gain {s['dqn_gain_s']:.1f} s of the oracle's {s['oracle_gain_s']:.1f} s ({s['dqn_over_oracle']:.0%})", "held-out TPC-DS query")  # fmt: skip
    ctx.save_plot(ctx.settings.out_name, fig)


def search_all(ctx, db, w, qs, cache, orig, slow, payload) -> None:
    from rlsuite.apps.queryopt.heldout import rule_list
    from rlsuite.apps.queryopt.oracle import result_dict, search

    s = ctx.settings
    for i, n in enumerate(n for n in slow if str(n) not in payload["searches"]):
        t, o = time.time(), orig[n]["postgres_s"]
        res = search(db, w.schema, qs[n], cache, o, int(s.cap_s * 1000), s.depth, s.beam or None, first=tuple(orig[n]["measured"]["rules"]), rules=rule_list(s))  # fmt: skip
        payload["searches"][str(n)] = dict(result_dict(res), search_s=round(time.time() - t, 1), orig_capped=bool(orig[n]["postgres_capped"]))  # fmt: skip
        ctx.save(s.out_name, payload)
        ctx.say(f"[dim][{i + 1}] Q{n:<3d} {o:7.2f} s -> oracle {res.best_s:7.3f} s {list(res.best)} ({res.distinct_plans} plans, {time.time() - t:.0f} s)[/]")  # fmt: skip


def run(ctx) -> int:
    import json

    from rlsuite.apps.queryopt import heldout as H
    from rlsuite.apps.queryopt.benchmarking import database, prewarm
    from rlsuite.apps.queryopt.oracle import RuntimeCache
    from rlsuite.apps.queryopt.train import LearnedRewriter
    from rlsuite.apps.queryopt.workloads.tpcds import TpcdsWorkload, queries
    from rlsuite.bench.declare import repo_root, results_root

    s = ctx.settings
    splits = s.splits.split(",")
    if set(splits) - set(H.SPLITS):
        raise ValueError(f"--splits: one or both of odd, even; got {s.splits!r}")
    w, qs, cap_ms = TpcdsWorkload(s.scale), queries(), int(s.cap_s * 1000)
    prev = json.loads((results_root() / "queryopt" / f"{s.originals}.json").read_text())
    orig = {r["query"]: r for r in prev["queries"]}
    slow = sorted(n for n, r in orig.items() if r["postgres_s"] >= s.min_s)
    if s.queries:
        slow = [n for n in slow if n in {int(x) for x in s.queries.split(",")}]
    cache_path = ctx.path(f"{s.out_name}_cache")
    if not ctx.resume:
        cache_path.unlink(missing_ok=True)
    cache = RuntimeCache(str(cache_path))
    below = [r["postgres_s"] for r in orig.values() if r["postgres_s"] < s.min_s]
    payload = dict(scale=s.scale, cap_s=s.cap_s, min_s=s.min_s, depth=s.depth, beam=s.beam or None)
    payload.update(originals_from=f"{s.originals}.json ({prev.get('time')})", searched_queries=slow)
    payload.update(below_min_s_total_s=round(sum(below), 2), below_min_s_queries=len(below), searches={}, splits={})  # fmt: skip
    old = ctx.load(s.out_name)
    for k in ("scale", "cap_s", "min_s", "depth", "beam") if old else ():
        if old.get(k) != payload[k]:
            raise ValueError(f"{s.out_name}.json has {k}={old.get(k)}, this run {payload[k]}")
    payload.update({k: old[k] for k in ("searches", "splits", "history") if k in old})
    with database(s.dsn) as db:
        w.ensure(db)
        payload["prewarm"] = prewarm(db, (w.schema, w.check_schema))
        check = H.RowChecker(db, w, cache, cap_ms)
        try:
            search_all(ctx, db, w, qs, cache, orig, slow, payload)
            payload["timings"] = {"runs": cache.timings, "timed_s": round(cache.timed_s, 1)}
            ctx.save(s.out_name, payload)
            if s.search_only:
                return 0
            searched = {int(k): v for k, v in payload["searches"].items()}
            for split in splits:
                run_dir = f"{ctx.run_dir('runs/bench/queryopt_tpcds_learn')}/{split}"
                train_q, tinfo = H.train_split(db, s, split, searched, qs, run_dir)
                rw = LearnedRewriter(run_dir, db.dsn, workload="tpcds", workload_config={"scale": s.scale}, timeout_ms=cap_ms)  # fmt: skip
                held = H.held_out(db, w, cache, check, rw, searched, qs, train_q, cap_ms, ctx.say)
                rw.close()
                if split in payload["splits"]:  # every run stays on record, failed ones too
                    was = payload["splits"][split]
                    payload.setdefault("history", []).append({"split": split, "train": was["train"], "summary": was["summary"]})  # fmt: skip
                payload["splits"][split] = dict(trained_on=train_q, run_dir=run_dir, train={**tinfo, "argv": ctx.argv}, held_out=held, summary=H.split_summary(held))  # fmt: skip
                payload["timings"] = {"runs": cache.timings, "timed_s": round(cache.timed_s, 1)}
                ctx.save(s.out_name, payload)
        finally:
            check.close()
    plot(ctx, payload["splits"])
    if s.ship and not ctx.quick:
        for d in H.ship(payload["splits"], str(repo_root() / "benchmarks" / "policies")):
            ctx.say(f"shipped {d}")
    keys = ("queries", "postgres_s", "greedy_s", "dqn_s", "oracle_s", "dqn_over_oracle", "passed")
    ctx.table([{"trained on": k, **{c: sp["summary"][c] for c in keys}} for k, sp in payload["splits"].items()], f"TPC-DS SF {s.scale:g}, held-out templates ({s.cap_s:g} s cap)")  # fmt: skip
    return 0


# fmt: off
BENCHMARK = Benchmark(run=run, settings=Settings, quick=dict(scale=0.01, queries="4,10,35,59", depth=1, beam=1, iterations=1, steps_per_iteration=50, splits="odd", originals="queryopt_tpcds_sf0_01", min_s=0.0), resume=True, rows=(
    *[
        Row("queryopt", f"TPC-DS SF 1, PostgreSQL 15, DQN on held-out templates (trained on {split}, {held})",
            "share of the oracle's total-time gain, 30 s cap, 0 wrong",
            "queryopt_tpcds_learn.json", Value(("splits", split, "summary", "dqn_over_oracle")),
            pub("target: >= 80% of the oracle's gain", 0.8),
            "rlsuite bench run queryopt_tpcds_learn --depth 3 --beam 1 --iterations 40 --log-reward --splits odd,even "
            "--resume --ship", f"`queryopt_tpcds_{split}_dqn`", fmt="{:.0%}")
        for split, held in (("odd", "17 even held out"), ("even", "22 odd held out"))
    ],
))
# fmt: on
