"""pg_qopt with the default decision (the measured chooser) on TPC-DS at SF 0.01, through psql:
a statement too slow to run whole gets the standard plan on its first run while the server
measures and verifies its rewrite, and the rewrite from its next run on; a rewrite that
cannot be verified is never served, and EXPLAIN says why."""

from __future__ import annotations

import time

import pytest

from rlsuite.apps.queryopt.choosers import FullDataReference
from rlsuite.apps.queryopt.plugin.decider import MeasuredDecider
from rlsuite.apps.queryopt.plugin.modelserver import ModelServer
from rlsuite.apps.queryopt.verify import same_rows
from rlsuite.apps.queryopt.workloads.tpcds import TpcdsWorkload

from .conftest import pgoptions, psql

SMALL = TpcdsWorkload(scale=0.01)
SLOW = (
    "SELECT ss_item_sk, ss_ticket_number FROM store_sales s WHERE s.ss_net_paid > "
    "(SELECT 2 * avg(s2.ss_net_paid) FROM store_sales s2 WHERE s2.ss_item_sk = s.ss_item_sk)"
)
"""Correlated on the item: PostgreSQL's plan runs the subquery per outer row, a scan of the
28,810 sales each time (about 17 s on an idle machine); decorrelated it runs in 0.08 s."""
PAST_MS = 1500
"""The statement timeout and the server's timeout: the original never finishes within it."""


@pytest.fixture(scope="module")
def tpcds(db):
    SMALL.ensure(db)
    return db


def _serve(sock_dir, dsn, name: str, full_data: bool) -> ModelServer:
    d = MeasuredDecider(
        dsn,
        "tpcds",
        {"scale": 0.01},
        budget_s=30,
        timeout_ms=PAST_MS,
        rules=["decorrelate_scalar"],
        full_data=full_data,
    )
    srv = ModelServer(str(sock_dir / name), d, wait_ms=20)
    srv.start()
    return srv


def _explain_until(dsn: str, opts: str, word: str, sql: str = SLOW) -> str:
    """EXPLAIN of ``sql`` through pg_qopt, asked again until its note holds ``word`` (the
    decision is made in the background; a minute at most)."""
    deadline = time.time() + 120
    while True:
        rc, plan, err = psql(dsn, f"EXPLAIN {sql}", pgoptions=opts)
        assert rc == 0, err
        note = next(x for x in plan.splitlines() if "Query Optimizer" in x)
        if word in note or time.time() > deadline:
            return note
        time.sleep(0.5)


def _rows(out: str) -> list[tuple]:
    return [tuple(int(x) for x in line.split("|")) for line in out.strip().splitlines() if line]


def test_a_statement_too_slow_to_run_is_served_rewritten_from_its_next_run_on(
    tpcds, sock_dir, dsn, plugin_lib
):
    srv = _serve(sock_dir, dsn, "measured.sock", full_data=True)
    opts = pgoptions(srv.address, 5000, f"-c search_path={SMALL.schema}")
    try:
        # the first run: the standard plan while the decision is made; past the timeout
        rc, _, err = psql(dsn, f"SET statement_timeout = {PAST_MS}; {SLOW}", pgoptions=opts)
        assert rc != 0 and "statement timeout" in err
        note = _explain_until(dsn, opts, "rewritten")
        assert "rewritten: decorrelate_scalar" in note, note
        assert "equal on the full data" in note  # DuckDB answered the original on its tables
        rc, out, err = psql(dsn, f"SET statement_timeout = {PAST_MS}; {SLOW}", pgoptions=opts)
        assert rc == 0, err
        # too slow to run whole: the shape is never explored (a standard-plan run would take
        # the client past its timeout), and a new literal of it is not run whole again on the
        # server's one worker: its rewrite is compared with DuckDB's answer at once
        assert any(st.no_explore for st in srv.book.shapes.values())
        other = SLOW.replace("2 * avg", "1.5 * avg")
        note = _explain_until(dsn, opts, "rewritten", other)
        assert "rules of a known shape" in note and "equal on the full data" in note, note
    finally:
        srv.close()
    full = FullDataReference(dsn, SMALL.schema, timeout_s=60)
    try:
        assert same_rows(_rows(out), full(SLOW))
    finally:
        full.close()


def test_a_rewrite_that_cannot_be_verified_keeps_the_standard_plan_and_explain_says_why(
    tpcds, sock_dir, dsn, plugin_lib
):
    # no DuckDB and no smaller copy than SF 0.01 itself: the rows cannot be compared
    srv = _serve(sock_dir, dsn, "unverified.sock", full_data=False)
    opts = pgoptions(srv.address, 5000, f"-c search_path={SMALL.schema}")
    try:
        note = _explain_until(dsn, opts, "no rewrite:")
    finally:
        srv.close()
    assert "standard plan" in note and "rewritten" not in note, note
    assert "no faster candidate could be verified" in note and "cannot check rows" in note, note


def test_fixed_rules_too_verify_a_too_slow_statement_on_the_full_data(
    tpcds, sock_dir, dsn, plugin_lib
):
    # serve --rules R: the server's own row check runs the original past its timeout, then
    # compares the rewrite's rows with DuckDB's answer on the same tables
    from rlsuite.apps.queryopt.plugin.decider import RulesDecider

    d = RulesDecider(dsn, "tpcds", ["decorrelate_scalar"], {"scale": 0.01})
    srv = ModelServer(str(sock_dir / "rules.sock"), d, wait_ms=20, check_timeout_ms=PAST_MS)
    srv.start()
    try:
        note = _explain_until(
            dsn, pgoptions(srv.address, 5000, f"-c search_path={SMALL.schema}"), "rewritten"
        )
    finally:
        srv.close()
    assert "rewritten: decorrelate_scalar" in note and "equal on the full data" in note, note
