"""pg_qopt serving slow statements from plain psql clients, run after run (``rlsuite bench
run queryopt_plugin_generated``): the first run gets the standard plan while the model server
decides; from the next run on the verified rewrite should serve. Per statement: each run's
time, how it was served (EXPLAIN's ``Query Optimizer`` line), and its rows against the
native answer (the standard plan's own output when it finished, else DuckDB's answer to the
original on the same tables); then the totals against PostgreSQL alone.

psql prints values as text; :func:`psql_rows` reads them back (NULL is psql's empty field,
numbers compare as the app's row check compares them: to 9 significant digits) so that they
compare with DuckDB's typed rows (:func:`canonical_rows`)."""

from __future__ import annotations

import decimal
import re
import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

SEP = "\x1f"
"""psql's field separator here (``-F``): no TPC-DS value holds it."""
_NUMBER = re.compile(r"-?\d+(\.\d*)?([eE][+-]?\d+)?")


def _text_value(s: str) -> Any:
    from rlsuite.apps.queryopt.verify import _norm_value

    if s == "":
        return None
    if _NUMBER.fullmatch(s):
        return _norm_value(decimal.Decimal(s))
    return s.rstrip()


def _typed_value(v: Any) -> Any:
    from rlsuite.apps.queryopt.verify import _norm_value

    if v is None:
        return None
    if isinstance(v, bool):
        return "t" if v else "f"
    if isinstance(v, int):
        return _norm_value(decimal.Decimal(v))
    if isinstance(v, float | decimal.Decimal):
        return _norm_value(v)
    return _text_value(v.isoformat() if hasattr(v, "isoformat") else str(v))


def psql_rows(lines: Sequence[str]) -> list[tuple]:
    """psql's unaligned output (fields split by :data:`SEP`) as comparable rows."""
    return [tuple(_text_value(x) for x in line.split(SEP)) for line in lines]


def canonical_rows(rows: Sequence[tuple]) -> list[tuple]:
    """Typed rows (DuckDB's, psycopg2's) as :func:`psql_rows` reads psql's text of them."""
    return [tuple(_typed_value(v) for v in r) for r in rows]


def served_as(note: str) -> str:
    """``rewritten``, ``planner arm`` or ``standard`` from EXPLAIN's Query Optimizer line."""
    for kind in ("rewritten", "planner arm"):
        if note.startswith(kind):
            return kind
    return "standard"


def answered(before: dict, after: dict) -> dict[str, int]:
    """The answers the server gave between two of its ``stats``, by kind (``model``,
    ``verified``, ``explore``, ``standard``), over all shapes."""

    def kinds(st: dict) -> Counter:
        return sum((Counter(r.get("by_kind", {})) for r in st.get("shapes", [])), Counter())

    return dict(kinds(after) - kinds(before))


def wait_decided(note_of: Callable[[], str], wait_s: float, poll_s: float = 1.0) -> tuple[str, float]:  # fmt: skip
    """Ask EXPLAIN's note again until the server's decision has landed (the note no longer
    says it is deciding), ``wait_s`` at most: the note and the seconds waited."""
    t0 = time.perf_counter()
    while True:
        note = note_of()
        waited = time.perf_counter() - t0
        if "deciding" not in note or waited >= wait_s:
            return note, waited
        time.sleep(poll_s)


def serve_statement(
    sql: str,
    native: dict,
    runs: int,
    cap_s: float,
    run_psql: Callable[[str], tuple[float, list[str] | None, str]],
    note_of: Callable[[], str],
    stats: Callable[[], dict],
    reference: Callable[[], list[tuple]],
    wait_s: float,
) -> dict:
    """One statement run ``runs`` times through pg_qopt (``run_psql``: psql with the plugin
    on, each run under ``cap_s``). Before the second run, the decision is waited for
    (:func:`wait_decided`). How a run was served: EXPLAIN's note just before it, unless the
    server's counters say that the run itself got the standard plan or an exploration. ``native``: ``{"s", "capped", "lines"}``, PostgreSQL's plan
    alone (``lines`` None when it did not finish or was measured elsewhere);
    ``reference()``: the original's rows by DuckDB on the same tables."""
    from rlsuite.apps.queryopt.verify import has_order_by, same_rows

    ordered = has_order_by(sql)
    expected = None if native.get("lines") is None else psql_rows(native["lines"])
    expected_from = "PostgreSQL's plan" if expected is not None else ""
    row: dict[str, Any] = {"sql": sql, "native_s": native["s"], "native_capped": native["capped"]}
    row["runs"], row["waited_s"] = [], 0.0
    for k in range(runs):
        if k == 1:
            _, row["waited_s"] = wait_decided(note_of, wait_s)
        before = stats()
        note = note_of() if k > 0 else ""  # the first run is the server's first sighting
        dt, lines, err = run_psql(sql)
        after = stats()
        if k == 0:  # how the first run was served, from the server's counters
            fresh = after["not_ready"] - before["not_ready"]
            note = "standard plan: deciding (first sighting)" if fresh else "answered at once"
        capped = lines is None and "statement timeout" in err
        run = {"s": cap_s if capped else dt, "capped": capped, "note": note}
        run["served"], run["answered"] = served_as(note), answered(before, after)
        if set(run["answered"]) & {"standard", "explore"}:  # not as EXPLAIN said just before
            run["served"] = "standard" if "standard" in run["answered"] else "explore"
        run["error"] = "" if lines is not None or capped else err[:300]
        if lines is not None and k == 0 and run["served"] == "standard" and expected is None:
            expected, expected_from = psql_rows(lines), "PostgreSQL's plan (first run)"
        if lines is not None and run["served"] != "standard":
            if expected is None:
                try:
                    expected = canonical_rows(reference())
                    expected_from = "DuckDB on the same tables"
                except Exception as e:  # noqa: BLE001 - DuckDB cannot run it: unchecked
                    row["reference_error"] = f"{type(e).__name__}: {str(e)[:200]}"
            if expected is not None:
                run["rows"], run["rows_match"] = len(lines), same_rows(psql_rows(lines), expected, ordered)  # fmt: skip
        row["runs"].append(run)
    row["expected_from"] = expected_from
    row["expected_rows"] = None if expected is None else len(expected)
    later = row["runs"][1:]
    row["rewritten_from_second_run"] = bool(later) and all(r["served"] != "standard" and not r["capped"] for r in later)  # fmt: skip
    row["wrong"] = any(r.get("rows_match") is False for r in row["runs"])
    row["unchecked"] = sum(r["served"] != "standard" and "rows_match" not in r for r in row["runs"])
    return row


def _cost(run: dict, row: dict) -> float:
    return max(run["s"], row["native_s"]) if run.get("capped") else run["s"]


def summary(rows: list[dict]) -> dict:
    """Totals against PostgreSQL alone (each run of a statement costs its native time there;
    a capped run counts as the cap), over all runs and from the second run on. A run cut by
    the statement timeout counts at least the native time (the same standard plan, which
    took that long, however low the runs' timeout)."""
    native_all = sum(r["native_s"] * len(r["runs"]) for r in rows)
    plugin_all = sum(_cost(x, r) for r in rows for x in r["runs"])
    native_later = sum(r["native_s"] * (len(r["runs"]) - 1) for r in rows)
    plugin_later = sum(_cost(x, r) for r in rows for x in r["runs"][1:])
    return {
        "statements": len(rows),
        "runs": sum(len(r["runs"]) for r in rows),
        "rewritten_from_second_run": sum(r["rewritten_from_second_run"] for r in rows),
        "rewritten_share": sum(r["rewritten_from_second_run"] for r in rows) / len(rows)
        if rows
        else None,  # fmt: skip
        "wrong": sum(r["wrong"] for r in rows),
        "unchecked_runs": sum(r["unchecked"] for r in rows),
        "native_capped": sum(r["native_capped"] for r in rows),
        "total_postgres_s": native_all,
        "total_plugin_s": plugin_all,
        "gain": native_all / max(plugin_all, 1e-9),
        "total_postgres_from_second_s": native_later,
        "total_plugin_from_second_s": plugin_later,
        "gain_from_second_run": native_later / max(plugin_later, 1e-9),
        "max_waited_s": max((r["waited_s"] for r in rows), default=0.0),
    }


def checks(summ: dict) -> dict[str, bool]:
    """0 wrong; every statement served rewritten from its second run on; less time in all."""
    n, k = summ["statements"], summ["rewritten_from_second_run"]
    return {
        f"0 wrong results ({summ['wrong']})": summ["wrong"] == 0,
        f"served rewritten from the second run on: {k} of {n}": n > 0 and k == n,
        f"total {summ['total_postgres_s']:.1f} s on PostgreSQL alone -> "
        f"{summ['total_plugin_s']:.1f} s with pg_qopt, lower": summ["total_plugin_s"]
        < summ["total_postgres_s"],
    }
