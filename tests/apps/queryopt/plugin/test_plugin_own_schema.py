"""pg_qopt on a user's own schema: the model server reads ``shop`` as a read-only role.

``qopt-bench serve --schema shop --rules ...`` serves the workload ``schema:shop``; here the
same server runs in this process, connected as ``qopt_reader`` (USAGE and SELECT only), and
a plain psql session with ``search_path=shop`` gets its query rewritten and the right rows.
"""

from __future__ import annotations

import pytest

from rlsuite.apps.queryopt.engines.postgres import Database
from rlsuite.apps.queryopt.verify import same_rows

from .conftest import psql, rules_server

QUERY = "SELECT R.c, count(1) FROM R, T WHERE R.c = T.c GROUP BY R.c"
"""The joins seed's shape on two tables: eager aggregation applies, ~20 ms."""


def _opts(sock, schema: str) -> str:
    return (
        f"-c session_preload_libraries=pg_qopt -c qopt.enabled=on -c qopt.server={sock} "
        f"-c qopt.timeout_ms=20000 -c search_path={schema},public"
    )


@pytest.fixture(scope="module")
def shop_server(sock_dir, reader_dsn, plugin_lib):
    with rules_server(sock_dir / "shop.sock", reader_dsn, "schema:shop") as srv:
        yield srv


def test_a_users_schema_is_served_by_a_read_only_server(dsn, reader_dsn, shop_server):
    assert shop_server.decider.schema == "shop"
    rc, plan, err = psql(dsn, f"EXPLAIN {QUERY}", pgoptions=_opts(shop_server.address, "shop"))
    assert rc == 0, err
    assert "Query Optimizer: rewritten: eager_aggregation" in plan
    # T is aggregated below the join, so the plan has two aggregates where it had one
    assert plan.count("HashAggregate") + plan.count("GroupAggregate") >= 2

    rc, out, err = psql(dsn, QUERY, pgoptions=_opts(shop_server.address, "shop"))
    assert rc == 0, err
    assert "WARNING" not in err
    got = [tuple(int(x) for x in line.split("|")) for line in out.split()]
    with Database(reader_dsn) as rd:
        assert same_rows(got, rd.run(QUERY, "shop").rows)
    assert any(d["applied"] == ["eager_aggregation"] for d in shop_server.decisions.values())


def test_another_schema_passes_through_untouched(dsn, shop_server):
    """The server knows ``shop`` only: the same query over the app's joins schema is left as
    it is (the standard plan, no note)."""
    rc, plan, err = psql(
        dsn, f"EXPLAIN {QUERY}", pgoptions=_opts(shop_server.address, "qopt_joins")
    )
    assert rc == 0, err
    assert "Query Optimizer: rewritten" not in plan
    assert plan.count("HashAggregate") + plan.count("GroupAggregate") == 1
