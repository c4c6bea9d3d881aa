"""The row check of a rewrite, including rewrites of queries too slow to finish.

:func:`check_rewrite` runs the original and the rewrite on the query's own
schema under the statement timeout. The rewrite is kept only when both finish,
the rows are the same (multisets; lists under ``ORDER BY``) and the rewrite is
not slower (more than 10% and 10 ms). A rewrite that times out, runs slower or
returns other rows leaves the original in place, with the reason.

**When the original runs past the timeout** (the slow queries that rewriting
matters most for), the rows cannot be compared on the full data. Then:

1. the rewrite must finish on the full data within the timeout (else nothing
   is gained and the original stays);
2. both queries run on ``check_schema``, a small copy with the same tables and
   columns (for ``tpcds`` the SF 0.01 data from the same ``dsdgen``; for a
   user's schema, a copy or sample the user names with ``--check-schema``),
   and their rows must be the same;
3. the original must return at least one row there: equal empty results would
   prove nothing, so such a rewrite is not kept;
4. when the copy cannot decide (the original returns no rows there, or runs
   past the timeout there too, or there is no copy) and a ``reference`` is
   given, the rewrite's rows **on the full data** are compared with the
   reference's rows of the original query: the original's answer computed
   another way on the same data (for ``tpcds`` DuckDB running the query on the
   data of the same ``dsdgen`` at the same scale,
   :func:`~rlsuite.apps.queryopt.workloads.tpcds.duckdb_reference`). The
   reference must return at least one row, for the same reason as in 3.

With ``reference_first`` (what the measured chooser asks,
:mod:`~rlsuite.apps.queryopt.choosers`), step 4 comes before 2 and 3: the reference is DuckDB
reading the very tables of ``schema`` (:mod:`~rlsuite.apps.queryopt.duckref`), so equal
rows, even no rows, are equality on the full data; the small copy decides only when DuckDB
cannot run the query. :func:`guarantee` says in words which of the two held.

5. **When the engines differ.** A reference whose rows of the original differ from the
   rewrite's rows on PostgreSQL refuses the rewrite, unless the reference's own run of the
   rewrite returns its rows of the original (:func:`engines_differ`): then the difference is
   the two engines' (an exact tie of a comparison, where PostgreSQL's ``numeric`` and DuckDB's
   ``double`` round apart, or a type or collation difference), not the rewrite's, and the
   reference cannot decide. The small copy decides then, with its weaker guarantee, and where
   it cannot either, the original stays with that reason.

What this guarantees: the rewritten SQL returns exactly the original's rows on
the small copy (a real execution of both on data of the same schema), it plans
and finishes on the full data, and it is faster there than the original's
timeout. What it does not guarantee: equality on the full data. A rule whose
result differs only for data the copy lacks (a NULL key, duplicates, ties at
a ``LIMIT`` boundary that only large data has) passes this check. The rules
are written to be equivalences; the copy check catches rules that are wrong
on the data the copy holds, not every possible input. A reference check (4)
does compare on the full data, but against another engine's answer to the
original query, so it is as good as that engine's agreement with this one
(for TPC-DS, PostgreSQL's and DuckDB's answers agree wherever PostgreSQL
finishes, see :mod:`rlsuite.apps.queryopt.tpcds_answers`); the verdict's
``checked_on`` names it.

Example::

    >>> v = check_rewrite(db, "qopt_tpcds_sf1", Q1, Q1_UNNESTED, {}, {}, 30_000,
    ...                   check_schema="qopt_tpcds_sf0_01")                      # doctest: +SKIP
    >>> v.keep, v.checked_on                                                     # doctest: +SKIP
    (True, 'qopt_tpcds_sf0_01')
"""

from __future__ import annotations

import decimal
import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import sqlglot

from rlsuite.apps.queryopt import rules as R

if TYPE_CHECKING:
    from rlsuite.apps.queryopt.engines.base import Engine, RunResult


def _norm_value(v: Any) -> Any:
    if isinstance(v, decimal.Decimal | float):
        f = float(v)
        if math.isnan(f):
            return "nan"
        if f == int(f) and abs(f) < 2**53:
            return int(f)
        return float(f"{f:.9g}")
    return v


def same_rows(a: Sequence[tuple], b: Sequence[tuple], ordered: bool = False) -> bool:
    """Rows equal as multisets (as sequences when ``ordered``); numbers compare to 9 digits."""
    na = [tuple(_norm_value(v) for v in r) for r in a]
    nb = [tuple(_norm_value(v) for v in r) for r in b]
    if ordered:
        return na == nb
    return Counter(na) == Counter(nb)


def has_order_by(sql: str) -> bool:
    try:
        e = sqlglot.parse_one(sql, read=R.DIALECT)
    except Exception:  # noqa: BLE001
        return False
    return e.args.get("order") is not None


SLOWER_FACTOR = 1.10
"""A rewrite is slower when it takes more than 10% longer than the original ..."""
SLOWER_MARGIN_S = 0.010
"""... and at least 10 ms longer (one run of a millisecond query is mostly noise)."""


@dataclass(frozen=True)
class Verdict:
    """Whether a rewrite may replace the original, and why not."""

    keep: bool
    reason: str = ""
    """Why the original stays (empty when the rewrite is kept)."""
    rows_match: bool | None = None
    """True/False when rows were compared, None when they could not be."""
    checked_on: str | None = None
    """The schema whose rows were compared."""
    original_s: float | None = None
    rewritten_s: float | None = None


def check_rewrite(
    db: Engine,
    schema: str,
    sql: str,
    new_sql: str,
    settings: Mapping[str, str],
    new_settings: Mapping[str, str],
    timeout_ms: int,
    check_schema: str | None = None,
    reference: Callable[[str], Sequence[tuple]] | None = None,
    reference_label: str = "reference",
    measured: tuple[RunResult, RunResult] | None = None,
    reference_first: bool = False,
) -> Verdict:
    """Run both queries and decide whether ``new_sql`` may replace ``sql`` (see module doc).

    ``reference(sql)``: the original's rows on the same data as ``schema``, computed
    elsewhere (step 4), used only when the original runs past ``timeout_ms`` and the
    small copy cannot decide; ``reference_label`` is the verdict's ``checked_on`` then.
    ``measured``: the original's and the rewrite's runs on ``schema`` (under
    ``timeout_ms``) when the caller has them already; then neither runs again there.
    ``reference_first``: when the original runs past the timeout, ask the reference before
    the small copy, and fall back to the copy when the reference raises. Such a reference
    reads the very tables of ``schema``, so equal rows are equality on the full data even
    when there are none (the rule of 3 is for a copy, other data than the query's)."""

    ordered = has_order_by(sql)
    if measured is not None:
        a, b = measured
    else:
        a = db.run(sql, schema, timeout_ms, settings)
        b = db.run(new_sql, schema, timeout_ms, new_settings)
    if b.timed_out:
        return Verdict(False, f"the rewrite ran past {timeout_ms} ms; kept the original")
    if not a.timed_out:
        if not same_rows(a.rows or [], b.rows or [], ordered=ordered):
            return Verdict(False, "the rewrite returned different rows; kept the original", False)
        if (
            b.runtime_s > SLOWER_FACTOR * a.runtime_s
            and b.runtime_s - a.runtime_s > SLOWER_MARGIN_S
        ):
            return Verdict(
                False,
                f"the rewrite ran slower ({b.runtime_s:.3f} s against {a.runtime_s:.3f} s); "
                "kept the original",
                True,
                schema,
                a.runtime_s,
                b.runtime_s,
            )
        return Verdict(True, "", True, schema, a.runtime_s, b.runtime_s)
    # the original cannot finish here: compare the rows on the full data by the reference
    # (reference_first), else on the small copy
    note = ""  # why the reference, asked first, could not decide
    ref_rows: Sequence[tuple] = []
    if reference_first and reference is not None:
        try:  # the same tables: equal rows, even no rows, are equality on the full data
            ref_rows = reference(sql)
            match = same_rows(ref_rows, b.rows or [], ordered=ordered)
        except Exception:  # noqa: BLE001 - the reference cannot run it: the small copy decides
            match = None
        if match is False and not engines_differ(reference, new_sql, ref_rows, ordered):
            return Verdict(
                False,
                f"the rewrite's rows differ from the original's by the reference "
                f"({reference_label}); kept the original",
                False,
                reference_label,
            )
        if match:
            return Verdict(True, "", True, reference_label, None, b.runtime_s)
        if match is False:
            note = f"; {ENGINES_DIFFER.format(label=reference_label)}"
        reference = None  # asked already
    if not check_schema or check_schema == schema:
        undecided = Verdict(
            False,
            f"cannot check rows: the original ran past {timeout_ms} ms (give a small copy of "
            f"the schema to check on: --check-schema){note}",
        )
        return _against_reference(undecided, b, sql, new_sql, ordered, reference, reference_label)
    ca = db.run(sql, check_schema, timeout_ms, settings)
    cb = db.run(new_sql, check_schema, timeout_ms, new_settings)
    if ca.timed_out or cb.timed_out:
        undecided = Verdict(
            False,
            f"cannot check rows: a query ran past {timeout_ms} ms on {check_schema} too{note}",
        )
        return _against_reference(undecided, b, sql, new_sql, ordered, reference, reference_label)
    if not ca.rows:
        undecided = Verdict(
            False,
            f"cannot check rows: the original ran past {timeout_ms} ms, and on {check_schema} "
            f"it returns no rows, so equal rows there would prove nothing{note}",
        )
        return _against_reference(undecided, b, sql, new_sql, ordered, reference, reference_label)
    if not same_rows(ca.rows, cb.rows or [], ordered=ordered):
        return Verdict(
            False,
            f"the rewrite returned different rows on {check_schema}; kept the original",
            False,
            check_schema,
        )
    return Verdict(True, "", True, check_schema, None, b.runtime_s)


def reference_rows_match(
    new_rows: Sequence[tuple], reference_rows: Sequence[tuple], ordered: bool
) -> bool | None:
    """The rewrite's rows against the reference's rows of the original on the same data:
    True/False, or None when the reference returns no rows (equal empty results prove
    nothing)."""
    if not reference_rows:
        return None
    return same_rows(reference_rows, new_rows, ordered=ordered)


ENGINES_DIFFER = (
    "the reference ({label}) cannot decide: its rows differ from PostgreSQL's, but its own "
    "runs of the original and the rewrite agree, so the engines differ on this query (for "
    "example at an exact tie of a comparison, where PostgreSQL's numeric and DuckDB's double "
    "round apart), not the rewrite"
)
"""Why a reference whose rows differ from the rewrite's does not refuse it (module doc, 5)."""


def engines_differ(
    reference: Callable[[str], Sequence[tuple]],
    new_sql: str,
    reference_rows: Sequence[tuple],
    ordered: bool,
) -> bool:
    """Whether the reference's own run of the rewrite returns its rows of the original
    (``reference_rows``): then the rewrite's other rows on PostgreSQL are the two engines'
    difference, not the rewrite's. False when the reference cannot run the rewrite."""
    try:
        return same_rows(reference_rows, reference(new_sql), ordered=ordered)
    except Exception:  # noqa: BLE001 - no evidence that the engines differ: the rows decide
        return False


def _against_reference(
    undecided: Verdict,
    b: Any,
    sql: str,
    new_sql: str,
    ordered: bool,
    reference: Callable[[str], Sequence[tuple]] | None,
    label: str,
) -> Verdict:
    """Step 4 of the module doc: ``undecided`` unless a reference decides."""
    if reference is None:
        return undecided
    ref_rows = reference(sql)
    match = reference_rows_match(b.rows or [], ref_rows, ordered)
    if match is None:
        return Verdict(
            False,
            f"{undecided.reason}; the reference ({label}) returns no rows either, so equal rows "
            "would prove nothing",
        )
    if not match and engines_differ(reference, new_sql, ref_rows, ordered):
        return Verdict(False, f"{undecided.reason}; {ENGINES_DIFFER.format(label=label)}")
    if not match:
        return Verdict(
            False,
            f"the rewrite's rows differ from the original's by the reference ({label}); "
            "kept the original",
            False,
            label,
        )
    return Verdict(True, "", True, label, None, b.runtime_s)


def guarantee(checked_on: str, schema: str) -> str:
    """What a match on ``checked_on`` guarantees, for a query over ``schema``, in words."""
    if checked_on == schema:
        return f"compared on {schema}: the query's own data"
    if checked_on.startswith("the full data"):
        return f"compared on {checked_on}: equal on the full data, as DuckDB reads it"
    return (
        f"compared on {checked_on}, a small copy: the original ran past the timeout; equal "
        "there, not proven on the full data"
    )
