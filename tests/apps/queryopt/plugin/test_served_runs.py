"""pg_qopt's run-after-run benchmark logic: psql's text rows against typed rows, one
statement's runs (the first one standard, the next ones served), and the totals."""

import datetime
import decimal

from rlsuite.apps.queryopt.plugin.served_runs import (
    SEP,
    answered,
    canonical_rows,
    checks,
    psql_rows,
    serve_statement,
    summary,
)
from rlsuite.apps.queryopt.verify import same_rows as rows_equal


def test_psql_text_compares_with_typed_rows_as_the_row_check_does():
    lines = [SEP.join(["AAAAB", "12", "3.333333333333333333", "", "2000-01-02", "t"])]
    typed = [("AAAAB  ", 12, 3.3333333333, None, datetime.date(2000, 1, 2), True)]
    assert rows_equal(psql_rows(lines), canonical_rows(typed), ordered=False)
    other = [("AAAAB", decimal.Decimal("12.5"), 3.3333333333, None, datetime.date(2000, 1, 2), True)]  # fmt: skip
    assert not rows_equal(psql_rows(lines), canonical_rows(other), ordered=False)
    two = psql_rows(["1", "2"])
    assert rows_equal(two, two[::-1], ordered=False) and not rows_equal(two, two[::-1], True)
    # how the server answered between two of its stats, over all shapes
    before = {"shapes": [{"by_kind": {"model": 2}}]}
    after = {"shapes": [{"by_kind": {"model": 2, "standard": 1}}, {"by_kind": {"model": 1}}]}
    assert answered(before, after) == {"standard": 1, "model": 1}


def _statement(outputs, notes, reference_rows):
    stats = {"not_ready": 0}
    runs = iter(outputs)

    def run_psql(_sql):
        dt, lines = next(runs)
        if stats.get("fresh", True):
            stats["not_ready"] += 1
            stats["fresh"] = False
        return (dt, lines, "ERROR:  canceling statement due to statement timeout" if lines is None else "")  # fmt: skip

    return serve_statement(
        "SELECT a FROM t", {"s": 30.0, "capped": True, "lines": None}, len(outputs), 30.0,
        run_psql=run_psql, note_of=lambda: notes.pop(0) if len(notes) > 1 else notes[0],
        stats=lambda: dict(stats), reference=lambda: reference_rows, wait_s=5.0,
    )  # fmt: skip


def test_a_statement_capped_first_then_served_rewritten_and_checked_against_duckdb():
    notes = ["standard plan: the model chose no change: deciding", "rewritten: decorrelate_scalar"]
    row = _statement([(30.2, None), (0.4, ["1", "2"]), (0.3, ["2", "1"])], notes, [(1,), (2,)])
    assert [r["served"] for r in row["runs"]] == ["standard", "rewritten", "rewritten"]
    assert row["runs"][0]["capped"] and row["runs"][0]["s"] == 30.0
    assert [r.get("rows_match") for r in row["runs"]] == [None, True, True]
    assert row["rewritten_from_second_run"] and not row["wrong"]
    assert row["expected_from"] == "DuckDB on the same tables"
    wrong = _statement([(30.2, None), (0.4, ["1"])], ["rewritten: x"], [(1,), (2,)])
    assert wrong["wrong"]
    summ = summary([row, wrong])
    assert summ["total_postgres_s"] == 150.0 and summ["total_postgres_from_second_s"] == 90.0
    assert abs(summ["total_plugin_from_second_s"] - 1.1) < 1e-9
    assert list(checks(summ).values()) == [False, True, True]
    # a first run cut by a timeout lower than the native time counts that native time
    longer = {**row, "native_s": 300.0}
    assert summary([longer])["total_plugin_s"] == 300.0 + 0.4 + 0.3
