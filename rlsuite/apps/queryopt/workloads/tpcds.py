"""TPC-DS: DuckDB's ``dsdgen`` data at a scale factor, and the 99 queries unmodified.

Data and queries come from DuckDB's ``tpcds`` extension, shipped in the PyPI
wheel ``duckdb-extension-tpcds`` and loaded from that wheel with DuckDB's
autoinstall off (as the TPC-H workload loads ``tpch``). The tables are copied
into PostgreSQL with the primary keys DuckDB's ``dsdgen(keys=true)`` declares
(the surrogate keys: ``d_date_sk``; ``(ss_item_sk, ss_ticket_number)`` ...),
created after the data is in, and no other index. Spark gets the same tables as
Parquet (:meth:`TpcdsWorkload.columns`, ``qopt-bench setup --engine spark
--workload tpcds``), with no keys: Parquet declares none.

Each scale has its own schema (``qopt_tpcds_sf1``, ``qopt_tpcds_sf0_01``), so
the small copy that checks rewrites of queries too slow to finish on the big
one (:attr:`TpcdsWorkload.check_schema`) lives beside it.

The queries are ``tpcds_queries()``: one variant each of Q14, Q23, Q24 and Q39,
with date intervals precomputed, so all 99 plan on PostgreSQL 15 as they are.
The odd-numbered queries are the ``train`` split and the even-numbered ones the
``test`` split.

Example::

    >>> w = TpcdsWorkload(scale=0.01)
    >>> w.schema, w.check_schema
    ('qopt_tpcds_sf0_01', 'qopt_tpcds_sf0_01')
    >>> len(queries())  # doctest: +SKIP
    99
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Iterator
from typing import Any

import numpy as np

from rlsuite.apps.queryopt.engines.postgres import Database
from rlsuite.apps.queryopt.workloads.base import Workload, check_split
from rlsuite.apps.queryopt.workloads.tpch import (
    _pg_type,
    copy_to_postgres,
    duckdb_columns,
    duckdb_with_extension,
)

HOW_TO_INSTALL = (
    "the tpcds workload generates its data with DuckDB's tpcds extension: "
    "pip install 'duckdb==1.5.*' 'duckdb-extension-tpcds==1.5.*'"
)
SHIPPED = "queryopt_tpcds_odd_dqn"
"""The shipped TPC-DS model the measured chooser asks (under ``benchmarks/policies/``)."""
CHECK_SCALE = 0.01
"""The scale of the small copy that rewrites of too-slow queries are checked on."""


@contextlib.contextmanager
def duckdb_tpcds(scale: float | None = None) -> Iterator[Any]:
    """A DuckDB connection with the tpcds extension loaded (and, given ``scale``, the data)."""
    with duckdb_with_extension("tpcds", HOW_TO_INSTALL) as con:
        if scale is not None:
            con.execute(f"CALL dsdgen(sf={float(scale)}, keys=true)")
        yield con


@contextlib.contextmanager
def duckdb_reference(scale: float) -> Iterator[Any]:
    """``reference(sql) -> rows``: DuckDB's answer to ``sql`` on the data of the same
    ``dsdgen`` at ``scale`` (the reference of
    :func:`~rlsuite.apps.queryopt.verify.check_rewrite` for a query too slow to finish on
    PostgreSQL)."""
    with duckdb_tpcds(scale) as con:
        yield lambda sql: con.execute(sql).fetchall()


@functools.cache
def _queries() -> tuple[tuple[int, str], ...]:
    with duckdb_tpcds() as con:
        rows = con.execute("SELECT query_nr, query FROM tpcds_queries() ORDER BY 1").fetchall()
    return tuple((int(n), q.strip().rstrip(";").strip()) for n, q in rows)


def queries() -> dict[int, str]:
    """The 99 TPC-DS queries of DuckDB's ``tpcds_queries()``, by number."""
    return dict(_queries())


def schema_for(scale: float) -> str:
    return "qopt_tpcds_sf" + f"{float(scale):g}".replace(".", "_")


class TpcdsWorkload(Workload):
    """TPC-DS tables at ``scale`` (default 1) and its 99 queries."""

    name = "tpcds"

    def __init__(self, scale: float = 1.0):
        if not 0 < scale <= 100:
            raise ValueError(f"scale must be in (0, 100], got {scale}")
        self.scale = float(scale)

    @property
    def schema(self) -> str:
        return schema_for(self.scale)

    @property
    def check_schema(self) -> str:
        """The small copy (SF 0.01) where rewrites are row-checked when the original is too slow."""
        return schema_for(CHECK_SCALE)

    def data_config(self) -> dict:
        return {"scale": self.scale}

    @property
    def shipped_model(self) -> str | None:
        """``benchmarks/policies/queryopt_tpcds_odd_dqn`` of a source checkout (trained on the
        odd-numbered queries at SF 1), when it is there."""
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
        path = os.path.join(os.path.dirname(root), "benchmarks", "policies", SHIPPED)
        return path if os.path.isdir(path) else None

    def tables(self) -> tuple[str, ...]:
        return TABLES

    def columns(self, seed: int = 0) -> dict[str, Any]:
        """The same dsdgen tables as Arrow tables (what engines other than PostgreSQL load,
        e.g. Spark's Parquet)."""
        with duckdb_tpcds(self.scale) as con:
            return {t: con.execute(f"SELECT * FROM {t}").to_arrow_table() for t in TABLES}

    def setup(self, db: Database, seed: int = 0) -> dict:
        """Generate with dsdgen, COPY into PostgreSQL, then add the primary keys and ANALYZE."""
        with duckdb_tpcds(self.scale) as con:
            keys = {
                t: cols
                for t, cols in con.execute(
                    "SELECT table_name, constraint_column_names FROM duckdb_constraints() "
                    "WHERE constraint_type = 'PRIMARY KEY'"
                ).fetchall()
            }
            ddl, after = {}, []
            for t in TABLES:
                cols = duckdb_columns(con, t)
                pk = set(keys.get(t, ()))
                ddl[t] = (
                    f"CREATE TABLE {t} ("
                    + ", ".join(
                        f"{c} {_pg_type(ty)}" + (" NOT NULL" if c in pk else "") for c, ty in cols
                    )
                    + ")"
                )
                if pk:
                    after.append(f"ALTER TABLE {t} ADD PRIMARY KEY ({', '.join(keys[t])})")
            return copy_to_postgres(con, db, self.schema, ddl, self.data_key(seed), after)

    def ensure(self, db: Database, seed: int = 0) -> None:
        """Load this scale, and the small copy the row checks of too-slow queries use."""
        super().ensure(db, seed)
        if self.check_schema != self.schema:
            TpcdsWorkload(CHECK_SCALE).ensure(db, seed)

    def sample(self, rng: np.random.Generator, i: int) -> str:
        qs = _queries()
        return qs[int(rng.integers(len(qs)))][1]

    def queries(self, split: str, n: int, seed: int = 0) -> list[str]:
        """The first ``n`` queries of ``split`` (odd numbers train, even numbers test)."""
        check_split(split)
        parity = 1 if split == "train" else 0
        return [q for k, q in _queries() if k % 2 == parity][:n]


TABLES = (
    "call_center",
    "catalog_page",
    "catalog_returns",
    "catalog_sales",
    "customer",
    "customer_address",
    "customer_demographics",
    "date_dim",
    "household_demographics",
    "income_band",
    "inventory",
    "item",
    "promotion",
    "reason",
    "ship_mode",
    "store",
    "store_returns",
    "store_sales",
    "time_dim",
    "warehouse",
    "web_page",
    "web_returns",
    "web_sales",
    "web_site",
)
