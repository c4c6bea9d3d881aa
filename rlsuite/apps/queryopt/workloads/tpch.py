"""TPC-H at scale 0.1 (by default), generated offline, with the 22 query templates.

Data comes from DuckDB's ``tpch`` extension (``dbgen``), shipped in the PyPI
wheel ``duckdb-extension-tpch`` (``pip install 'duckdb==1.5.*'
'duckdb-extension-tpch==1.5.*'``), and is copied into PostgreSQL with primary
keys only (no secondary indexes). The 22 templates (``tpch_queries.json``: the
TPC-H queries with their validation parameters) are instantiated with sampled
substitution parameters: dates shifted by whole months, regions, nations,
brands, containers, types, colours, segments, ship modes, quantities and
country codes, in the ranges of the TPC-H specification.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import json
import os
import re
import tempfile
from collections.abc import Callable, Iterator, Sequence
from importlib import resources
from typing import Any

import numpy as np

from rlsuite.apps.queryopt.engines.postgres import Database
from rlsuite.apps.queryopt.workloads.base import Workload

TABLES = ("region", "nation", "supplier", "customer", "part", "partsupp", "orders", "lineitem")
PRIMARY_KEYS = {
    "region": "r_regionkey",
    "nation": "n_nationkey",
    "supplier": "s_suppkey",
    "customer": "c_custkey",
    "part": "p_partkey",
    "partsupp": "ps_partkey, ps_suppkey",
    "orders": "o_orderkey",
    "lineitem": "l_orderkey, l_linenumber",
}
HOW_TO_INSTALL = (
    "the tpch workload generates its data with DuckDB's tpch extension: "
    "pip install 'duckdb==1.5.*' 'duckdb-extension-tpch==1.5.*'"
)

REGIONS = ["AFRICA", "AMERICA", "ASIA", "EUROPE", "MIDDLE EAST"]
NATIONS = [
    "ALGERIA",
    "ARGENTINA",
    "BRAZIL",
    "CANADA",
    "EGYPT",
    "ETHIOPIA",
    "FRANCE",
    "GERMANY",
    "INDIA",
    "INDONESIA",
    "IRAN",
    "IRAQ",
    "JAPAN",
    "JORDAN",
    "KENYA",
    "MOROCCO",
    "MOZAMBIQUE",
    "PERU",
    "CHINA",
    "ROMANIA",
    "SAUDI ARABIA",
    "VIETNAM",
    "RUSSIA",
    "UNITED KINGDOM",
    "UNITED STATES",
]
SEGMENTS = ["AUTOMOBILE", "BUILDING", "FURNITURE", "MACHINERY", "HOUSEHOLD"]
TYPE1 = ["STANDARD", "SMALL", "MEDIUM", "LARGE", "ECONOMY", "PROMO"]
TYPE2 = ["ANODIZED", "BURNISHED", "PLATED", "POLISHED", "BRUSHED"]
TYPE3 = ["TIN", "NICKEL", "BRASS", "STEEL", "COPPER"]
CONT1 = ["SM", "LG", "MED", "JUMBO", "WRAP"]
CONT2 = ["CASE", "BOX", "BAG", "JAR", "PKG", "PACK", "CAN", "DRUM"]
COLORS = [
    "almond",
    "antique",
    "aquamarine",
    "azure",
    "beige",
    "bisque",
    "black",
    "blanched",
    "blue",
    "blush",
    "brown",
    "burlywood",
    "burnished",
    "chartreuse",
    "chiffon",
    "chocolate",
    "coral",
    "cornflower",
    "cornsilk",
    "cream",
    "cyan",
    "dark",
    "deep",
    "dim",
    "dodger",
    "drab",
    "firebrick",
    "floral",
    "forest",
    "frosted",
    "gainsboro",
    "ghost",
    "goldenrod",
    "green",
    "grey",
    "honeydew",
    "hot",
    "indian",
    "ivory",
    "khaki",
    "lace",
    "lavender",
    "lawn",
    "lemon",
    "light",
    "lime",
    "linen",
    "magenta",
    "maroon",
    "medium",
    "metallic",
    "midnight",
    "mint",
    "misty",
    "moccasin",
    "navajo",
    "navy",
    "olive",
    "orange",
    "orchid",
    "pale",
    "papaya",
    "peach",
    "peru",
    "pink",
    "plum",
    "powder",
    "puff",
    "purple",
    "red",
    "rose",
    "rosy",
    "royal",
    "saddle",
    "salmon",
    "sandy",
    "seashell",
    "sienna",
    "sky",
    "slate",
    "smoke",
    "snow",
    "spring",
    "steel",
    "tan",
    "thistle",
    "tomato",
    "turquoise",
    "violet",
    "wheat",
    "white",
    "yellow",
]
SHIPMODES = ["REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB"]
DATE_RE = re.compile(r"(CAST\('|date ')(\d{4}-\d{2}-\d{2})('( AS date\))?)")
FIRST, LAST = dt.date(1992, 1, 1), dt.date(1998, 12, 31)


def templates() -> dict[int, str]:
    """The 22 TPC-H queries (validation parameters), by number."""
    return dict(_templates())


@functools.cache
def _templates() -> dict[int, str]:
    text = (
        resources.files("rlsuite.apps.queryopt.workloads").joinpath("tpch_queries.json").read_text()
    )
    return {int(k): v for k, v in json.loads(text).items()}


def _brand(rng) -> str:
    return f"Brand#{rng.integers(1, 6)}{rng.integers(1, 6)}"


def _pick(rng, xs):
    return xs[int(rng.integers(len(xs)))]


def _q(s: str) -> str:
    return "'" + s + "'"


def _subs(n: int, rng: np.random.Generator) -> list[tuple[str, str]]:
    """(old literal, new literal) pairs of template ``n``."""
    p: dict[int, Callable[[], list[tuple[str, str]]]] = {
        2: lambda: [
            ("'%BRASS'", _q("%" + _pick(rng, TYPE3))),
            ("'EUROPE'", _q(_pick(rng, REGIONS))),
            ("p_size = 15", f"p_size = {rng.integers(1, 51)}"),
        ],
        3: lambda: [("'BUILDING'", _q(_pick(rng, SEGMENTS)))],
        5: lambda: [("'ASIA'", _q(_pick(rng, REGIONS)))],
        7: lambda: (lambda a, b: [("'FRANCE'", _q(a)), ("'GERMANY'", _q(b))])(
            *rng.choice(NATIONS, 2, replace=False).tolist()
        ),
        8: lambda: [
            ("'BRAZIL'", _q(_pick(rng, NATIONS))),
            ("'AMERICA'", _q(_pick(rng, REGIONS))),
            (
                "'ECONOMY ANODIZED STEEL'",
                _q(f"{_pick(rng, TYPE1)} {_pick(rng, TYPE2)} {_pick(rng, TYPE3)}"),
            ),
        ],
        9: lambda: [("'%green%'", _q(f"%{_pick(rng, COLORS)}%"))],
        11: lambda: [("'GERMANY'", _q(_pick(rng, NATIONS)))],
        12: lambda: (lambda a, b: [("('MAIL', 'SHIP')", f"('{a}', '{b}')")])(
            *rng.choice(SHIPMODES, 2, replace=False).tolist()
        ),
        13: lambda: [
            (
                "'%special%requests%'",
                _q(
                    f"%{_pick(rng, ['special', 'pending', 'unusual', 'express'])}%"
                    f"{_pick(rng, ['packages', 'requests', 'accounts', 'deposits'])}%"
                ),
            )
        ],
        16: lambda: [
            ("'Brand#45'", _q(_brand(rng))),
            ("'MEDIUM POLISHED%'", _q(f"{_pick(rng, TYPE1)} {_pick(rng, TYPE2)}%")),
        ],
        17: lambda: [
            ("'Brand#23'", _q(_brand(rng))),
            ("'MED BOX'", _q(f"{_pick(rng, CONT1)} {_pick(rng, CONT2)}")),
        ],
        18: lambda: [("> 300", f"> {rng.integers(312, 316)}")],
        19: lambda: [
            ("'Brand#12'", _q(_brand(rng))),
            ("'Brand#23'", _q(_brand(rng))),
            ("'Brand#34'", _q(_brand(rng))),
        ],
        20: lambda: [
            ("'forest%'", _q(_pick(rng, COLORS) + "%")),
            ("'CANADA'", _q(_pick(rng, NATIONS))),
        ],
        21: lambda: [("'SAUDI ARABIA'", _q(_pick(rng, NATIONS)))],
        22: lambda: [
            (
                "('13', '31', '23', '29', '30', '18', '17')",
                "("
                + ", ".join(f"'{c}'" for c in rng.choice(np.arange(10, 35), 7, replace=False))
                + ")",
            )
        ],
    }
    return p.get(n, lambda: [])()


def _shift_months(d: dt.date, months: int) -> dt.date:
    m = d.month - 1 + months
    y, m = d.year + m // 12, m % 12 + 1
    day = min(d.day, [31, 29 if y % 4 == 0 else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][m - 1])
    return dt.date(y, m, day)


def instantiate(n: int, rng: np.random.Generator, template: str | None = None) -> str:
    """Template ``n`` with sampled parameters."""
    sql = template or templates()[n]
    for old, new in _subs(n, rng):
        if old not in sql:
            raise RuntimeError(f"TPC-H template {n} has no {old!r} to substitute")
        sql = sql.replace(old, new)
    dates = [dt.date.fromisoformat(m.group(2)) for m in DATE_RE.finditer(sql)]
    if dates:
        ok = [k for k in range(-24, 25) if all(FIRST <= _shift_months(d, k) <= LAST for d in dates)]
        k = int(_pick(rng, ok)) if ok else 0
        sql = DATE_RE.sub(
            lambda m: (
                f"{m.group(1)}{_shift_months(dt.date.fromisoformat(m.group(2)), k)}{m.group(3)}"
            ),
            sql,
        )
    return sql


class TpchWorkload(Workload):
    """TPC-H tables at ``scale`` and instances of the 22 templates."""

    name = "tpch"

    def __init__(self, scale: float = 0.1, templates_used: tuple[int, ...] = tuple(range(1, 23))):
        if not 0 < scale <= 10:
            raise ValueError(f"scale must be in (0, 10], got {scale}")
        bad = [t for t in templates_used if not 1 <= int(t) <= 22]
        if bad:
            raise ValueError(f"TPC-H templates are numbered 1..22, got {bad}")
        self.scale, self.templates_used = float(scale), tuple(int(t) for t in templates_used)

    def data_config(self) -> dict:
        return {"scale": self.scale}

    def tables(self) -> tuple[str, ...]:
        return TABLES

    @contextlib.contextmanager
    def _dbgen(self) -> Iterator[Any]:
        """A DuckDB connection holding the generated tables (closed afterwards)."""
        with duckdb_with_extension("tpch", HOW_TO_INSTALL) as con:
            con.execute(f"CALL dbgen(sf={self.scale})")
            yield con

    def columns(self, seed: int = 0) -> dict[str, Any]:
        """The generated tables as Arrow tables (what engines other than PostgreSQL load)."""
        with self._dbgen() as con:
            return {t: con.execute(f"SELECT * FROM {t}").to_arrow_table() for t in TABLES}

    def setup(self, db: Database, seed: int = 0) -> dict:
        with self._dbgen() as con:
            ddl = {}
            for t in TABLES:
                cols = duckdb_columns(con, t)
                coldefs = ", ".join(f"{c} {_pg_type(ty)} NOT NULL" for c, ty in cols)
                ddl[t] = f"CREATE TABLE {t} ({coldefs}, PRIMARY KEY ({PRIMARY_KEYS[t]}))"
            return copy_to_postgres(con, db, self.schema, ddl, self.data_key(seed))

    def sample(self, rng: np.random.Generator, i: int) -> str:
        """An instance of template ``templates_used[i % len]`` (so the templates take turns)."""
        num = self.templates_used[i % len(self.templates_used)]
        return instantiate(num, rng, _templates()[num])


def _pg_type(duck: str) -> str:
    d = duck.upper()
    if d.startswith("DECIMAL"):
        return d.replace("DECIMAL", "numeric")
    return {
        "BIGINT": "bigint",
        "INTEGER": "integer",
        "VARCHAR": "text",
        "DATE": "date",
        "DOUBLE": "double precision",
    }.get(d, "text")


def copy_to_postgres(
    con: Any,
    db: Database,
    schema: str,
    ddl: dict[str, str],
    comment: str,
    after: Sequence[str] = (),
) -> dict[str, int]:
    """Create the tables of ``ddl`` (``{table: CREATE TABLE ...}``) in ``schema``, fill each
    from DuckDB connection ``con``'s table of that name (through pipe-separated CSV files),
    then run ``after`` (:meth:`Database.load`); the tables' row counts."""
    counts, files = {}, {}
    with tempfile.TemporaryDirectory(prefix="qopt-duckdb-") as tmp:
        for t in ddl:
            path = os.path.join(tmp, f"{t}.csv")
            con.execute(f"COPY {t} TO '{path}' (HEADER false, DELIMITER '|')")
            files[t] = path
            counts[t] = con.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
        with contextlib.ExitStack() as stack:
            copies = {t: stack.enter_context(open(p)) for t, p in files.items()}
            db.load(
                schema,
                list(ddl.values()),
                copy=copies,
                copy_options="(FORMAT csv, DELIMITER '|')",
                comment=comment,
                after=after,
            )
    return counts


@contextlib.contextmanager
def duckdb_with_extension(name: str, how_to_install: str) -> Iterator[Any]:
    """A DuckDB connection with extension ``name`` loaded from its PyPI wheel
    (``duckdb-extension-<name>``): nothing is fetched at run time. Closed afterwards."""
    import importlib

    try:
        import duckdb

        wheel = importlib.import_module(f"duckdb_extension_{name}")
    except ImportError as e:
        raise RuntimeError(how_to_install) from e
    root = os.path.join(os.path.dirname(wheel.__file__), "extensions")
    found = [
        os.path.join(r, f)
        for r, _, fs in os.walk(root)
        for f in fs
        if f == f"{name}.duckdb_extension"
    ]
    if not found:
        raise RuntimeError(f"no {name}.duckdb_extension under {root}; {how_to_install}")
    con = duckdb.connect(
        config={"autoinstall_known_extensions": False, "autoload_known_extensions": False}
    )
    try:
        con.execute(f"LOAD '{found[0]}'")
        yield con
    finally:
        con.close()


def duckdb_columns(con: Any, table: str) -> list[tuple[str, str]]:
    """``(column, DuckDB type)`` of ``table`` in a DuckDB connection, in table order."""
    return con.execute(
        "SELECT column_name, data_type FROM information_schema.columns "
        "WHERE table_name = ? ORDER BY ordinal_position",
        [table],
    ).fetchall()
