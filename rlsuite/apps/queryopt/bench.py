"""Run a workload's queries with the engine's own plan and with a rewriter, and compare.

Used by ``qopt-bench run``, the demo and the queryopt benchmarks, on any
:class:`~rlsuite.apps.queryopt.engines.base.Engine`. The rewriter
is any :class:`~rlsuite.apps.queryopt.rewriter.Rewriter`: the learned one
(:class:`~rlsuite.apps.queryopt.train.LearnedRewriter`),
:class:`~rlsuite.apps.queryopt.rewriter.FixedRules` or
:class:`~rlsuite.apps.queryopt.rewriter.GreedyByCost`.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from rlsuite.apps.queryopt.rewriter import Rewriter, catalog
from rlsuite.apps.queryopt.verify import same_rows

if TYPE_CHECKING:
    from rlsuite.apps.queryopt.engines.base import Engine

REGRESSION_FACTOR = 1.10
"""A query counts as a regression when the rewrite is more than 10% slower."""


@dataclass
class QueryRow:
    """One query's comparison."""

    sql: str
    postgres_s: float
    rewritten_s: float
    speedup: float
    rewrites: list[str]
    rows_match: bool | None
    postgres_timed_out: bool = False
    rewritten_timed_out: bool = False
    regression: bool = False


@dataclass
class BenchResult:
    """All rows and the summary numbers."""

    workload: str
    rewriter: str
    rows: list[QueryRow] = field(default_factory=list)
    timeout_ms: int = 0
    baseline: str = "PostgreSQL"
    """Whose plan the rewrites are compared with (the engine's own optimizer)."""

    @property
    def geomean_speedup(self) -> float:
        if not self.rows:
            return math.nan
        return math.exp(sum(math.log(r.speedup) for r in self.rows) / len(self.rows))

    @property
    def total_postgres_s(self) -> float:
        return sum(r.postgres_s for r in self.rows)

    @property
    def total_rewritten_s(self) -> float:
        return sum(r.rewritten_s for r in self.rows)

    @property
    def regressions(self) -> int:
        return sum(r.regression for r in self.rows)

    @property
    def wrong_results(self) -> int:
        return sum(r.rows_match is False for r in self.rows)

    def summary(self) -> dict[str, float]:
        return {
            "queries": len(self.rows),
            "geomean_speedup": self.geomean_speedup,
            "total_postgres_s": self.total_postgres_s,
            "total_rewritten_s": self.total_rewritten_s,
            "total_speedup": self.total_postgres_s / max(self.total_rewritten_s, 1e-9),
            "regressions": self.regressions,
            "wrong_results": self.wrong_results,
            "rewritten_queries": sum(bool(r.rewrites) for r in self.rows),
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "workload": self.workload,
            "rewriter": self.rewriter,
            "timeout_ms": self.timeout_ms,
            "baseline": self.baseline,
            "summary": self.summary(),
            "queries": [asdict(r) for r in self.rows],
        }

    def to_json(self, path: str) -> None:
        os.makedirs(os.path.dirname(os.path.abspath(path)) or ".", exist_ok=True)
        with open(path, "w") as f:
            json.dump(self.to_dict(), f, indent=2)

    def table(self, max_rows: int = 30):
        from rich.table import Table

        t = Table(title=f"{self.workload}: {self.baseline} vs {self.rewriter}")
        own = f"{self.baseline.lower()} s"
        for c in ("#", "query", own, "rewritten s", "speed-up", "rewrites", "rows"):
            t.add_column(
                c, justify="right" if c.endswith("s") or c in ("#", "speed-up") else "left"
            )
        for i, r in enumerate(self.rows[:max_rows]):
            q = r.sql if len(r.sql) <= 60 else r.sql[:57] + "..."
            pg = f"{r.postgres_s:.4f}" + (" (timeout)" if r.postgres_timed_out else "")
            t.add_row(
                str(i),
                q,
                pg,
                f"{r.rewritten_s:.4f}",
                f"{r.speedup:.1f}x",
                ", ".join(r.rewrites) or "-",
                {True: "same", False: "DIFFERENT", None: "-"}[r.rows_match],
            )
        s = self.summary()
        t.caption = (
            f"geometric-mean speed-up {s['geomean_speedup']:.1f}x; total "
            f"{s['total_postgres_s']:.2f} s -> {s['total_rewritten_s']:.2f} s; "
            f"regressions {s['regressions']}; wrong results {s['wrong_results']}"
        )
        return t


def _timed(
    db: Engine, schema: str, sql: str, settings: dict[str, str], timeout_ms: int, repeat: int
):
    best, rows, timed_out = math.inf, None, False
    for _ in range(max(1, repeat)):
        r = db.run(sql, schema, timeout_ms, settings)
        if r.timed_out:
            return r.runtime_s, None, True
        if r.runtime_s < best:
            best, rows = r.runtime_s, r.rows
        if r.runtime_s > 1.0:  # long queries are measured once: noise is small next to them
            break
    return best, rows, timed_out


def compare(
    db: Engine,
    workload: Any,
    queries: Sequence[str],
    rewriter: Rewriter,
    timeout_ms: int = 60_000,
    repeat: int = 1,
    check: bool = True,
    progress: Callable[[int, QueryRow], None] | None = None,
    baseline: str | None = None,
) -> BenchResult:
    """Per query: the engine's own time, the rewriter's time, speed-up, rewrites, whether rows
    match. ``baseline`` names the engine's own plan in the table (default: its label)."""
    schema = workload.schema
    base_settings = dict(workload.settings())
    catalog(db, schema, cached=False)
    res = BenchResult(
        workload.name,
        getattr(rewriter, "name", type(rewriter).__name__),
        timeout_ms=timeout_ms,
        baseline=baseline or db.label,
    )
    for i, sql in enumerate(queries):
        pg_s, pg_rows, pg_to = _timed(db, schema, sql, base_settings, timeout_ms, repeat)
        d = rewriter.rewrite(sql, check=False)
        if d.applied:
            new_s, new_rows, new_to = _timed(
                db, schema, d.sql, {**base_settings, **d.settings}, timeout_ms, repeat
            )
            match = None
            if check and pg_rows is not None and new_rows is not None:
                match = same_rows(pg_rows, new_rows)
            if match is False:  # never report a wrong answer as a win: fall back
                new_s = pg_s
        else:
            new_s, new_to, match = pg_s, pg_to, (True if check and pg_rows is not None else None)
        row = QueryRow(
            sql,
            pg_s,
            new_s,
            pg_s / max(new_s, 1e-6),
            list(d.applied),
            match,
            pg_to,
            new_to,
            new_s > REGRESSION_FACTOR * pg_s and new_s - pg_s > 0.001,
        )
        res.rows.append(row)
        if progress is not None:
            progress(i, row)
    return res
