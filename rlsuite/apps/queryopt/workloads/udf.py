"""The seed's UDF workload: an expensive CPU-bound predicate with GROUP BY.

``R(a, b, c)`` has 1k rows and ``distinct_b`` values of ``b``. ``udf(x)`` is a
PL/pgSQL predicate that spins ``qopt.udf_cost`` iterations per call (a session
setting, so the cost can drift while the data stays), declared ``COST 1`` so
PostgreSQL's cost model ignores it, as cost models often do with UDFs.
PostgreSQL evaluates it once per row (``gamma(sigma(R))``); evaluating it once
per group after aggregating (``sigma(gamma(R))``) calls it ``distinct_b`` times.
"""

from __future__ import annotations

import hashlib
import io

import numpy as np

from rlsuite.apps.queryopt.engines.postgres import Database
from rlsuite.apps.queryopt.workloads.base import Workload

SEED_QUERY = "SELECT count(1) FROM R WHERE udf(R.b) GROUP BY R.b"
"""The seed's UDF query."""

UDF_SQL = """
CREATE FUNCTION udf(x integer) RETURNS boolean
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE COST 1 AS $$
DECLARE
  n integer := coalesce(nullif(current_setting('qopt.udf_cost', true), ''), '100')::integer;
  acc bigint := x;
BEGIN
  FOR i IN 1..n LOOP
    acc := (acc * 1103515245 + 12345) % 2147483648;
  END LOOP;
  RETURN x % 3 <> 0 OR acc < 0;
END $$
"""


class UdfWorkload(Workload):
    """R 1k rows; ``udf`` costs ``udf_cost`` loop iterations per call (the drift knob)."""

    name = "udf"

    def __init__(self, r_rows: int = 1000, distinct_b: int = 100, udf_cost: int = 1000):
        if r_rows < 1 or distinct_b < 1:
            raise ValueError("r_rows and distinct_b must be >= 1")
        if udf_cost < 0:
            raise ValueError(f"udf_cost must be >= 0, got {udf_cost}")
        self.r_rows, self.distinct_b, self.udf_cost = r_rows, distinct_b, int(udf_cost)

    def tables(self) -> tuple[str, ...]:
        return ("r",)

    def settings(self) -> dict[str, str]:
        return {"qopt.udf_cost": str(self.udf_cost)}

    def columns(self, seed: int = 0) -> dict[str, dict[str, np.ndarray]]:
        """The generated data, ``{table: {column: int32 array}}`` (what every engine loads)."""
        rng = np.random.default_rng(seed)
        r = {
            "a": np.arange(1, self.r_rows + 1),
            "b": rng.integers(0, self.distinct_b, self.r_rows),
            "c": rng.integers(0, 10, self.r_rows),
        }
        return {"r": {k: v.astype(np.int32) for k, v in r.items()}}

    def setup(self, db: Database, seed: int = 0) -> dict:
        r = np.column_stack(list(self.columns(seed)["r"].values()))
        buf = io.StringIO("\n".join("\t".join(str(int(x)) for x in row) for row in r) + "\n")
        db.load(
            self.schema,
            ["CREATE TABLE r (a integer, b integer, c integer)", UDF_SQL],
            copy={"r": buf},
            comment=self.data_key(seed),
        )
        return {"r": len(r)}

    def data_config(self) -> dict:
        udf = hashlib.sha1(UDF_SQL.encode()).hexdigest()[:12]
        return {"r_rows": self.r_rows, "distinct_b": self.distinct_b, "udf_sql": udf}

    def sample(self, rng: np.random.Generator, i: int) -> str:
        agg = rng.choice(["count(1)", "count(*)", "sum(R.a)", "max(R.c)", "min(R.a)"])
        where = ["udf(R.b)"]
        if rng.random() < 0.6:
            where.append(f"R.a <= {int(rng.integers(200, 1001))}")
        if rng.random() < 0.3:
            where.append(f"R.c <> {int(rng.integers(0, 10))}")
        rng.shuffle(where)
        sel = f"R.b, {agg}" if rng.random() < 0.5 else str(agg)
        return f"SELECT {sel} FROM R WHERE {' AND '.join(where)} GROUP BY R.b"


def udf_python(x: int, cost: int) -> bool:
    """The UDF in Python, for engines that run Python UDFs (Spark): the same loop and answer."""
    acc = int(x)
    for _ in range(int(cost)):
        acc = (acc * 1103515245 + 12345) % 2147483648
    return int(x) % 3 != 0 or acc < 0
