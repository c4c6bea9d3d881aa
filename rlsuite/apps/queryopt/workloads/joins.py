"""The seed's join workload: R(a, b, c) 1k rows, S(b, d) 10k, T(c, e) 10k, no indexes.

S has few distinct ``b`` and T few distinct ``c`` (55 each by default), so joining R
with S and T multiplies rows (1k x 182 x 182 = 33M join rows) while the answer has
at most as many groups as R has rows. The default is calibrated to the seed's own
measurement of the seed query on PostgreSQL 15 on this 2-core machine (2.9 s; with
100 distinct values it took 0.87 s here, with 60 2.4 s, with 50 3.5 s). Aggregating S
by ``b`` and T by ``c`` before the join (eager aggregation) is the seed's learned plan.

The generator samples join / group-by / filter queries over the three tables:
which tables join, which R columns group, which aggregate, and range filters on
R, S or T. Train and test queries come from disjoint seeded streams and a test
query never repeats a training query's text.
"""

from __future__ import annotations

import io

import numpy as np

from rlsuite.apps.queryopt.engines.postgres import Database
from rlsuite.apps.queryopt.workloads.base import Workload

SEED_QUERY = (
    "SELECT R.b, R.c, count(1) FROM R, S, T WHERE R.b = S.b AND R.c = T.c GROUP BY R.b, R.c"
)
"""The seed's test query (its ``GROUP BY b, c`` qualified)."""


class JoinsWorkload(Workload):
    """R 1k, S 10k with ``distinct_b`` values of b, T 10k with ``distinct_c`` values of c."""

    name = "joins"

    def __init__(
        self,
        r_rows: int = 1000,
        s_rows: int = 10_000,
        t_rows: int = 10_000,
        distinct_b: int = 55,
        distinct_c: int = 55,
    ):
        for k, v in dict(
            r_rows=r_rows,
            s_rows=s_rows,
            t_rows=t_rows,
            distinct_b=distinct_b,
            distinct_c=distinct_c,
        ).items():
            if int(v) < 1:
                raise ValueError(f"{k} must be >= 1, got {v}")
        self.r_rows, self.s_rows, self.t_rows = r_rows, s_rows, t_rows
        self.distinct_b, self.distinct_c = distinct_b, distinct_c

    def data_config(self) -> dict:
        return {
            "r_rows": self.r_rows,
            "s_rows": self.s_rows,
            "t_rows": self.t_rows,
            "distinct_b": self.distinct_b,
            "distinct_c": self.distinct_c,
        }

    def tables(self) -> tuple[str, ...]:
        return ("r", "s", "t")

    def columns(self, seed: int = 0) -> dict[str, dict[str, np.ndarray]]:
        """The generated data, ``{table: {column: int32 array}}`` (what every engine loads)."""
        rng = np.random.default_rng(seed)
        r = {
            "a": np.arange(1, self.r_rows + 1),
            "b": rng.integers(0, self.distinct_b, self.r_rows),
            "c": rng.integers(0, self.distinct_c, self.r_rows),
        }
        s = {
            "b": rng.integers(0, self.distinct_b, self.s_rows),
            "d": rng.integers(0, 1000, self.s_rows),
        }
        t = {
            "c": rng.integers(0, self.distinct_c, self.t_rows),
            "e": rng.integers(0, 1000, self.t_rows),
        }
        return {
            name: {k: v.astype(np.int32) for k, v in cols.items()}
            for name, cols in (("r", r), ("s", s), ("t", t))
        }

    def setup(self, db: Database, seed: int = 0) -> dict:
        data = {
            name: np.column_stack(list(cols.values())) for name, cols in self.columns(seed).items()
        }
        r, s, t = data["r"], data["s"], data["t"]

        def tsv(a: np.ndarray) -> io.StringIO:
            return io.StringIO("\n".join("\t".join(str(int(x)) for x in row) for row in a) + "\n")

        db.load(
            self.schema,
            [
                "CREATE TABLE r (a integer, b integer, c integer)",
                "CREATE TABLE s (b integer, d integer)",
                "CREATE TABLE t (c integer, e integer)",
            ],
            copy={"r": tsv(r), "s": tsv(s), "t": tsv(t)},
            comment=self.data_key(seed),
        )
        return {"r": len(r), "s": len(s), "t": len(t)}

    def sample(self, rng: np.random.Generator, i: int) -> str:
        return self._sample(rng)

    def _sample(self, rng: np.random.Generator) -> str:
        tables = (
            ["R", "S", "T"]
            if rng.random() < 0.8
            else (["R", "S"] if rng.random() < 0.5 else ["R", "T"])
        )
        keys_pool = ["R.b", "R.c", "R.a"]
        k = int(rng.integers(1, 3))
        keys = sorted(rng.choice(keys_pool, size=k, replace=False).tolist())
        agg = rng.choice(
            ["count(1)", "count(*)", "sum(R.a)", "min(R.a)", "max(R.a)"],
            p=[0.4, 0.15, 0.15, 0.15, 0.15],
        )
        where = []
        if "S" in tables:
            where.append("R.b = S.b")
        if "T" in tables:
            where.append("R.c = T.c")
        if rng.random() < 0.5:
            where.append(f"R.a <= {int(rng.integers(300, 1001))}")
        if "S" in tables and rng.random() < 0.3:
            where.append(f"S.d < {int(rng.integers(200, 1000))}")
        if "T" in tables and rng.random() < 0.3:
            where.append(f"T.e < {int(rng.integers(200, 1000))}")
        sel = ", ".join(keys)
        return (
            f"SELECT {sel}, {agg} FROM {', '.join(tables)} WHERE {' AND '.join(where)} "
            f"GROUP BY {sel}"
        )
