"""Generated subquery shapes split into those the DQN trains on and those held out
(``rlsuite bench run queryopt_generated_learn``): the split's queries, the oracle's searches
of them, the held-out results by shape, and the figure against greedy and the oracle."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def names(shapes: str) -> list[str]:
    """The shapes named in a comma-separated list, checked."""
    from rlsuite.apps.queryopt.workloads.shapes import check_shapes

    return check_shapes([x.strip() for x in shapes.split(",") if x.strip()])


HELD_BASE = 1000
"""The held-out queries are numbered from here (the training ones from 0), so each query
keeps its number when ``--n`` grows under ``--resume`` (the generator is prefix-stable)."""


def split_queries(db, w, s: Any) -> dict[int, tuple[str, str]]:
    """Query id -> (shape, sql): the training shapes' queries (seed ``s.query_seed``, ids
    from 0), then the held-out ones' (seed ``s.query_seed + 1``, ids from :data:`HELD_BASE`)."""
    from rlsuite.apps.queryopt.workloads.shapes import generate, planned_by

    plans = planned_by(db, w.schema)
    out: dict[int, tuple[str, str]] = {}
    for i, shapes in enumerate((s.train_shapes, s.held_shapes)):
        qs = generate(s.n, s.query_seed + i, names(shapes), accept=plans)
        if len(qs) > HELD_BASE:
            raise ValueError(f"at most {HELD_BASE} queries per split, got {len(qs)}")
        out.update({i * HELD_BASE + k: q for k, q in enumerate(qs)})
    return out


def still_valid(old: dict, qs: dict[int, tuple[str, str]]) -> dict:
    """The searches and fast notes of an earlier payload ``old`` whose query (by id) has
    the same SQL now, so a resumed run never reuses one made for another query."""
    same = {str(n) for n, (_, sql) in qs.items() if old.get("queries", {}).get(str(n), {}).get("sql") == sql}  # fmt: skip
    return {k: {n: v for n, v in old.get(k, {}).items() if n in same} for k in ("searches", "fast")}


def search_split(s: Any, db, w, qs, cache, payload: dict, save: Callable[[dict], Any], say: Callable[[str], None]) -> None:  # fmt: skip
    """The oracle's search of each query not yet searched, ``payload`` saved after each. A
    query faster natively than ``s.min_s`` (held out) or ``s.min_train_s`` (training) is
    only noted in ``payload["fast"]`` (and measured again only if the bound rises)."""
    from rlsuite.apps.queryopt.heldout import rule_list
    from rlsuite.apps.queryopt.oracle import result_dict, search

    cap_ms = int(s.cap_s * 1000)
    train = names(s.train_shapes)
    for n, (shape, sql) in qs.items():
        lo = s.min_train_s if shape in train else s.min_s
        if str(n) in payload["searches"] or payload["fast"].get(str(n), lo) < lo:
            continue
        a = db.run(sql, w.schema, cap_ms)
        if not a.timed_out:
            a = db.run(sql, w.schema, cap_ms)  # the second run counts
        o = s.cap_s if a.timed_out else a.runtime_s
        if o < lo:  # held out: no gain to share; training: too fast to teach (min_train_s)
            payload["fast"][str(n)] = round(o, 4)
            save(payload)
            continue
        t = time.time()
        res = search(
            db, w.schema, sql, cache, o, cap_ms, s.depth, s.beam or None, rules=rule_list(s)
        )
        payload["searches"][str(n)] = dict(result_dict(res), shape=shape, orig_capped=a.timed_out)
        save(payload)
        say(f"[dim]{n:3d} {shape:18s} {o:7.3f} s -> oracle {res.best_s:7.3f} s {list(res.best)} ({time.time() - t:.0f} s)[/]")  # fmt: skip


def on_searched(db, w, rw, src_path: Path, cache_path: Path, resume: bool, say: Callable[[str], None]) -> dict:  # fmt: skip
    """The DQN ``rw`` on TPC-DS's own queries that a ``queryopt_tpcds_learn`` run searched
    (its results ``src_path``), none of them trained on: each query's oracle is that search's
    best, its original's seconds and cap stand, and every time goes through a copy of that
    run's runtime cache (``cache_path``, seeded from ``<src>_cache.json`` unless resuming), so
    a plan is timed again only when no chooser ran it there (the DQN's own new plans)."""
    import json

    from rlsuite.apps.queryopt import heldout as H
    from rlsuite.apps.queryopt.oracle import RuntimeCache
    from rlsuite.apps.queryopt.workloads.tpcds import queries

    src_cache = src_path.with_name(f"{src_path.stem}_cache.json")
    if not (src_path.exists() and src_cache.exists()):
        raise FileNotFoundError(f"{src_path} and its runtime cache: not both there; run `rlsuite bench run queryopt_tpcds_learn` first")  # fmt: skip
    src = json.loads(src_path.read_text())
    if float(src["scale"]) != float(w.scale):
        raise ValueError(f"the searched TPC-DS queries are at SF {src['scale']:g}, this run at SF {w.scale:g}; give --scale {src['scale']:g}")  # fmt: skip
    if not (resume and cache_path.exists()):
        shutil.copyfile(src_cache, cache_path)
    cache, cap_ms = RuntimeCache(str(cache_path)), int(float(src["cap_s"]) * 1000)
    searched = {int(n): v for n, v in src["searches"].items()}
    check = H.RowChecker(db, w, cache, cap_ms)
    try:
        held = H.held_out(db, w, cache, check, rw, searched, queries(), (), cap_ms, say)
    finally:
        check.close()
    timings = {"runs": cache.timings, "timed_s": round(cache.timed_s, 1)}
    return {"cap_s": src["cap_s"], "held_out": held, "summary": H.split_summary(held), "timings": timings}  # fmt: skip


def by_shape(held: list[dict], qs) -> dict:
    """Per shape: queries and the total seconds of PostgreSQL, the DQN and the oracle."""
    out: dict[str, dict] = {}
    for r in held:
        e = out.setdefault(qs[r["query"]][0], {"queries": 0, "postgres_s": 0.0, "dqn_s": 0.0, "oracle_s": 0.0})  # fmt: skip
        e["queries"] += 1
        e["postgres_s"] += r["orig_s"]
        e["dqn_s"] += r["dqn"]["s"]
        e["oracle_s"] += r["oracle"]["s"]
    return {k: {c: round(v, 3) for c, v in e.items()} for k, e in out.items()}


def figure(held: list[dict], summ: dict, qs, scale: float, what: str = "held-out shapes"):
    """Each held-out query's speed-up under greedy, the DQN and the oracle (log), labelled
    by ``qs[n][0]`` (its shape)."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(max(6, 0.3 * len(held) + 2), 4))
    speedup_bars(ax, held, [qs[r["query"]][0] for r in held], f"{what}, TPC-DS SF {scale:g}: DQN gain {summ['dqn_gain_s']:.2f} s of the oracle's {summ['oracle_gain_s']:.2f} s ({summ['dqn_over_oracle']:.0%})", fontsize=6)  # fmt: skip
    fig.tight_layout()
    return fig


def speedup_bars(ax, held: list[dict], labels: list[str], title: str, xlabel: str = "", fontsize: int = 7) -> None:  # fmt: skip
    """Bars on ``ax``: each held-out query's speed-up over PostgreSQL (``orig_s`` over its
    seconds) under greedy, the DQN and the oracle, on a log scale, labelled ``labels``."""
    for off, key in ((-0.27, "greedy"), (0.0, "dqn"), (0.27, "oracle")):
        ax.bar([i + off for i in range(len(held))], [r["orig_s"] / max(r[key]["s"], 1e-6) for r in held], 0.27, label=key)  # fmt: skip
    ax.axhline(1.0, color="k", lw=0.6)
    ax.set_yscale("log")
    ax.set_xticks(range(len(held)), labels, fontsize=fontsize, rotation=90)
    ax.set_title(title, fontsize=9)
    ax.set(xlabel=xlabel, ylabel="speed-up over PostgreSQL (log)")
    ax.legend(fontsize=7)
