"""The best rewrite sequence of a query found by running it: a runtime cache and a search.

:class:`RuntimeCache` times each distinct plan (rewritten SQL plus planner settings,
:meth:`~rlsuite.apps.queryopt.rules.Query.key`) at most once under a bound, and a plan
that becomes the fastest of its query once more (the second time is the one kept), so
a search and a learner that trains on the same measurements share every run.
:func:`search` walks the sequences of at most ``depth`` rewrites of one query: every
applicable action at the first step, then (``beam`` None) every extension of a sequence
that changed the query, or (``beam`` k) only the extensions of the k fastest sequences
of the step before. Each plan runs under the bound ``1.05 x`` the fastest time seen so
far (``+ 50 ms``), so a slower plan costs no more than the best one; its time is then a
lower bound (``censored``). With a beam the result is a lower bound on the true oracle's
gain. :func:`experience_rows` turns the search into rows of the model server's
experience store (censored times left out: a lower bound is not a runtime), so the
platform's DQN (``rlsuite/QueryRewriteReplay-v0``) trains on the measured runtimes
without running a query.

Example::

    >>> cache = RuntimeCache("runtimes.json")                          # doctest: +SKIP
    >>> res = search(db, "qopt_tpcds_sf1", sql, cache, orig_s=6.8, cap_ms=30_000)  # doctest: +SKIP
    >>> res.best, res.best_s                                           # doctest: +SKIP
    (('arm_no_nestloop',), 0.56)
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rlsuite.apps.queryopt import rules as R

SLACK = 1.05
"""A candidate runs under this factor of the fastest time seen so far (plus 50 ms)."""


class RuntimeCache:
    """Measured runtimes keyed by (rewritten SQL, settings); a JSON file when ``path``.

    An entry holds ``runs`` (seconds, oldest first) and ``censored`` (the last run hit
    its bound, so the true time is at least ``runs[-1]``); :meth:`seconds` is the last
    run. ``timings`` counts the runs made through this object (not those loaded)."""

    def __init__(self, path: str | None = None):
        self.path = path
        self.entries: dict[str, dict[str, Any]] = {}
        self.rows: dict[str, list | None] = {}
        self.timings = 0
        self.timed_s = 0.0
        if path and os.path.exists(path):
            with open(path) as f:
                self.entries = json.load(f)

    def save(self) -> None:
        if self.path:
            tmp = f"{self.path}.tmp"
            with open(tmp, "w") as f:
                json.dump(self.entries, f)
            os.replace(tmp, self.path)

    def get(self, q: R.Query) -> dict[str, Any] | None:
        return self.entries.get(q.key())

    def seconds(self, q: R.Query) -> float | None:
        e = self.get(q)
        return None if e is None else e["runs"][-1]

    def time(
        self, db, schema: str, q: R.Query, bound_ms: int, again: bool = False
    ) -> tuple[float, bool]:
        """``q``'s seconds and whether censored. Runs it when it has no entry, when its
        entry was censored under a lower bound than ``bound_ms``, or when ``again`` and
        it ran only once (the rerun of a new fastest plan)."""
        k = q.key()
        e = self.entries.get(k)
        need = (
            e is None
            or (e["censored"] and e["runs"][-1] * 1000 < bound_ms - 1)
            or (again and len(e["runs"]) < 2 and not e["censored"])
        )
        if need:
            from rlsuite.apps.queryopt.engines.base import DatabaseError

            try:
                r = db.run(q.sql(), schema, int(bound_ms), q.settings_dict)
                s, cens = (bound_ms / 1000.0, True) if r.timed_out else (r.runtime_s, False)
                self.rows[k] = None if r.timed_out else r.rows
            except DatabaseError:  # a rewrite PostgreSQL rejects never finishes
                s, cens = bound_ms / 1000.0, True
            except Exception:  # noqa: BLE001 - a cancel racing the rollback: at the bound
                with contextlib.suppress(Exception):
                    db.conn.rollback()
                s, cens = bound_ms / 1000.0, True
            self.timings += 1
            self.timed_s += s
            e = self.entries.setdefault(k, {"runs": [], "censored": False})
            e["runs"] = [*e["runs"], round(s, 4)] if not e["censored"] else [round(s, 4)]
            e["censored"] = cens
            self.save()
        return e["runs"][-1], bool(e["censored"])


@dataclass
class SearchResult:
    """What :func:`search` measured for one query."""

    orig_s: float
    """The original's seconds (given, or measured)."""
    best: tuple[str, ...] = ()
    """The fastest sequence (``()``: the original)."""
    best_s: float = 0.0
    times: dict[tuple[str, ...], tuple[float, bool]] = field(default_factory=dict)
    """Seconds and censored of every visited sequence (same plan, same entry)."""
    distinct_plans: int = 0


def search(
    db,
    schema: str,
    sql: str,
    cache: RuntimeCache,
    orig_s: float,
    cap_ms: int,
    depth: int = 3,
    beam: int | None = None,
    first: tuple[str, ...] = (),
    rules: tuple[str, ...] = (),
) -> SearchResult:
    """The fastest sequence of at most ``depth`` applicable rewrites of ``sql`` (module
    doc). ``orig_s`` is the original's measured seconds (the starting bound); ``first``
    names a sequence to time first (it only tightens the bound sooner); ``rules``: the
    actions searched, in order (default: the MDP's :data:`~.rules.RULES`)."""
    from rlsuite.apps.queryopt.rewriter import catalog

    q0 = R.Query.parse(sql, catalog(db, schema))
    res = SearchResult(orig_s=orig_s, best_s=orig_s)
    res.times[()] = (orig_s, False)
    seen = {q0.key()}
    level: list[tuple[tuple[str, ...], R.Query]] = [((), q0)]

    def bound() -> int:
        return int(min(cap_ms, res.best_s * 1000 * SLACK + 50))

    def visit(seq: tuple[str, ...], q: R.Query) -> None:
        s, cens = cache.time(db, schema, q, bound())
        if not cens and s < res.best_s:  # a new fastest plan: rerun, keep the second time
            s, cens = cache.time(db, schema, q, bound(), again=True)
        res.times[seq] = (s, cens)
        if not cens and s < res.best_s:
            res.best, res.best_s = seq, s

    for d in range(depth):
        nxt: list[tuple[tuple[str, ...], R.Query]] = []
        children = []
        for seq, q in level:
            for name, child in R.applicable(q, R.named(rules) if rules else R.RULES).items():
                if isinstance(child, R.Query) and name not in seq:
                    children.append(((*seq, name), child))
        if d == 0 and first:
            children.sort(key=lambda c: c[0] != first[:1])
        for seq, child in children:
            k = child.key()
            if k in seen:  # the same plan as another sequence: no new run
                e = cache.entries.get(k)
                if e is not None:
                    res.times[seq] = (e["runs"][-1], bool(e["censored"]))
                continue
            seen.add(k)
            visit(seq, child)
            nxt.append((seq, child))
        if beam is not None:
            nxt.sort(key=lambda c: res.times[c[0]][0])
            nxt = nxt[:beam]
        level = nxt
    res.distinct_plans = len(seen) - 1
    return res


def experience_rows(
    env,
    shape: str,
    sql: str,
    res: SearchResult,
    schema: str = "qopt_tpcds",
    censored: bool = False,
) -> list[Any]:
    """The search as experience rows (``kind`` ``explore``; the original ``standard``)
    with the env's observations along each sequence (``env.observe``: plans only).

    A censored time is only a lower bound (the plan was stopped at 1.05x the fastest time
    seen so far), not its runtime: such a sequence is left out unless ``censored``, so the
    replay env scores it as never measured (a little worse than the original) instead of
    as nearly as fast as the best plan."""
    from rlsuite.apps.queryopt.plugin.experience import Experience

    out = []
    for seq, (s, cens) in sorted(res.times.items(), key=lambda kv: len(kv[0])):
        if cens and seq and not censored:
            continue
        try:
            states = env.observe(sql, seq)
        except Exception:  # noqa: BLE001 - a sequence the engine cannot plan is not logged
            continue
        if len(states) != len(seq) + 1:
            continue
        out.append(
            Experience(
                schema=schema,
                shape=shape,
                applied=tuple(seq),
                ms=1000.0 * s,
                kind="explore" if seq else "standard",
                features=tuple(tuple(float(x) for x in v) for v in states),
            )
        )
    return out


def result_dict(res: SearchResult) -> Mapping[str, Any]:
    """JSON-able form of a :class:`SearchResult`."""
    return {
        "orig_s": res.orig_s,
        "best": list(res.best),
        "best_s": res.best_s,
        "distinct_plans": res.distinct_plans,
        "times": {",".join(k): [round(v[0], 4), v[1]] for k, v in res.times.items()},
    }
