"""Random queries of the subquery shapes analysts write, over TPC-DS's schema.

``qopt-bench generate --workload tpcds --n 200 --seed S`` writes them: for training, for a
benchmark (``run --queries FILE.sql``) and for property tests of the rules. Each query
comes from one :data:`SHAPES` template filled with a random sales channel (store, catalog
or web sales), the dimension it is correlated on (item, customer; the store for store
sales), and realistic predicates (a year of ``date_dim`` between 1998 and 2002, a month,
an item category, a quantity range, a factor on an average). A query is kept only when
PostgreSQL plans it (``EXPLAIN`` on the workload's schema): none it rejects is written.
The same seed gives the same queries.

Example::

    >>> qs = generate(12, seed=3)
    >>> sorted({s for s, _ in qs}) == sorted(SHAPES)[: len({s for s, _ in qs})]  # doctest: +SKIP
    True
    >>> qs == generate(12, seed=3)
    True
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Channel:
    """A sales fact table and the columns the templates use."""

    table: str
    p: str
    """Column prefix (``ss``)."""
    customer: str
    date: str
    places: tuple[tuple[str, str, str], ...] = ()
    """``(column, dimension table, its key)`` of places to correlate on (the store)."""


CHANNELS = (
    Channel("store_sales", "ss", "ss_customer_sk", "ss_sold_date_sk", (("ss_store_sk", "store", "s_store_sk"),)),
    Channel("catalog_sales", "cs", "cs_bill_customer_sk", "cs_sold_date_sk"),
    Channel("web_sales", "ws", "ws_bill_customer_sk", "ws_sold_date_sk"),
)  # fmt: skip
CATEGORIES = ("Books", "Children", "Electronics", "Home", "Jewelry", "Men", "Music", "Shoes",
              "Sports", "Women")  # fmt: skip
MEASURES = ("net_paid", "sales_price", "ext_sales_price", "quantity")


class _Draw:
    def __init__(self, rng: np.random.Generator):
        self.rng = rng

    def pick(self, xs):
        return xs[int(self.rng.integers(len(xs)))]

    def year(self) -> int:
        return int(self.rng.integers(1998, 2003))

    def factor(self) -> str:
        return self.pick(("1.2", "1.5", "2", "0.8", "3"))

    def channel(self) -> Channel:
        return self.pick(CHANNELS)

    def measure(self, c: Channel) -> str:
        return f"{c.p}_{self.pick(MEASURES)}"


def _corr(d: _Draw, c: Channel) -> tuple[str, str, str, str]:
    """(dimension table, alias, its key, the fact's column) to correlate on."""
    options = [("item", "i", "i_item_sk", f"{c.p}_item_sk")]
    options.append(("customer", "c", "c_customer_sk", c.customer))
    options += [(t, "s", k, col) for col, t, k in c.places]
    return d.pick(options)


def scalar_where(d: _Draw) -> str:
    """Rows of a dimension above a factor of their average sale (correlated, in WHERE)."""
    c = d.channel()
    t, a, k, col = _corr(d, c)
    m = d.measure(c)
    filt = f" AND {a}.i_category = '{d.pick(CATEGORIES)}'" if t == "item" else ""
    return (
        f"SELECT {a}.{k} FROM {t} {a} WHERE {d.factor()} * 100 < (SELECT sum(f.{m}) "
        f"FROM {c.table} f WHERE f.{col} = {a}.{k}){filt}"
    )


def scalar_where_join(d: _Draw) -> str:
    """Sales above a factor of the average of their item's sales in one year (the correlation
    on the fact, the date filter through a join inside the subquery)."""
    c = d.channel()
    m = d.measure(c)
    return (
        f"SELECT f.{c.p}_item_sk, f.{m} FROM {c.table} f JOIN date_dim d ON f.{c.date} = "
        f"d.d_date_sk WHERE d.d_year = {d.year()} AND d.d_moy = {int(d.rng.integers(1, 13))} "
        f"AND f.{m} > (SELECT {d.factor()} * avg(f2.{m}) FROM {c.table} f2 JOIN date_dim d2 ON "
        f"f2.{c.date} = d2.d_date_sk WHERE d2.d_year = {d.year()} AND "
        f"f2.{c.p}_item_sk = f.{c.p}_item_sk)"
    )


def scalar_having(d: _Draw) -> str:
    """Groups whose total exceeds a factor of their returns (correlated on the GROUP BY key)."""
    c = d.channel()
    m = d.measure(c)
    return (
        f"SELECT f.{c.p}_item_sk, sum(f.{m}) AS total FROM {c.table} f GROUP BY f.{c.p}_item_sk "
        f"HAVING sum(f.{m}) > (SELECT {d.factor()} * sum(sr.sr_return_amt) FROM store_returns "
        f"sr WHERE sr.sr_item_sk = f.{c.p}_item_sk)"
    )


def scalar_select(d: _Draw) -> str:
    """A per-row count or sum in the SELECT list."""
    c = d.channel()
    agg = d.pick(("count(*)", f"sum(f.{d.measure(c)})", f"max(f.{d.measure(c)})"))
    q = int(d.rng.integers(50, 100))
    return (
        f"SELECT i.i_item_id, (SELECT {agg} FROM {c.table} f WHERE f.{c.p}_item_sk = "
        f"i.i_item_sk AND f.{c.p}_quantity > {q}) AS n FROM item i WHERE i.i_category = "
        f"'{d.pick(CATEGORIES)}'"
    )


def scalar_two_keys(d: _Draw) -> str:
    """Customers born after the earliest of their month and flag in a state (two columns)."""
    state = d.pick(("TX", "CA", "GA", "OH", "VA", "NY", "IL"))
    return (
        "SELECT c.c_customer_id FROM customer c WHERE c.c_birth_year > (SELECT "
        "coalesce(min(c2.c_birth_year), 0) + 5 FROM customer c2 JOIN customer_address ca ON "
        f"c2.c_current_addr_sk = ca.ca_address_sk WHERE ca.ca_state = '{state}' AND "
        "c2.c_birth_month = c.c_birth_month AND c2.c_preferred_cust_flag = "
        "c.c_preferred_cust_flag)"
    )


def exists(d: _Draw, negated: bool = False) -> str:
    """Customers with (without) a sale in a year."""
    c = d.channel()
    no = "NOT " if negated else ""
    return (
        f"SELECT c.c_customer_sk FROM customer c WHERE c.c_birth_year < {int(d.rng.integers(1940, 1990))} "
        f"AND {no}EXISTS (SELECT 1 FROM {c.table} f JOIN date_dim d ON f.{c.date} = d.d_date_sk "
        f"WHERE f.{c.customer} = c.c_customer_sk AND d.d_year = {d.year()})"
    )


def in_subquery(d: _Draw, negated: bool = False) -> str:
    """Items (not) sold with a quantity range; NOT IN over a column that may be NULL."""
    c = d.channel()
    lo = int(d.rng.integers(1, 90))
    no = "NOT " if negated else ""
    return (
        f"SELECT i.i_item_sk, i.i_current_price FROM item i WHERE i.i_category = "
        f"'{d.pick(CATEGORIES)}' AND i.i_item_sk {no}IN (SELECT f.{c.p}_item_sk FROM {c.table} "
        f"f WHERE f.{c.p}_quantity BETWEEN {lo} AND {lo + 5})"
    )


SHAPES: dict[str, Callable[[_Draw], str]] = {
    "scalar_where": scalar_where,
    "scalar_where_join": scalar_where_join,
    "scalar_having": scalar_having,
    "scalar_select": scalar_select,
    "scalar_two_keys": scalar_two_keys,
    "exists": exists,
    "not_exists": lambda d: exists(d, negated=True),
    "in": in_subquery,
    "not_in": lambda d: in_subquery(d, negated=True),
}
"""The shapes, by name: each a function of a random draw to SQL."""


def check_shapes(names: list[str] | None) -> list[str]:
    """``names`` (all shapes when None), each a shape, else a one-sentence error."""
    if not names:
        return list(SHAPES)
    bad = [n for n in names if n not in SHAPES]
    if bad:
        raise ValueError(f"unknown shape {bad[0]!r}; shapes: {', '.join(SHAPES)}")
    return names


def generate(
    n: int,
    seed: int = 0,
    shapes: list[str] | None = None,
    accept: Callable[[str], bool] | None = None,
    max_tries: int = 20,
) -> list[tuple[str, str]]:
    """``n`` ``(shape, sql)`` pairs, the shapes in turn; ``accept(sql)`` (PostgreSQL plans
    it) keeps a query, else another draw of the same shape is tried (``max_tries`` each)."""
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    names = check_shapes(shapes)
    rng = np.random.default_rng(seed)
    d = _Draw(rng)
    out: list[tuple[str, str]] = []
    for i in range(n):
        shape = names[i % len(names)]
        for _ in range(max_tries):
            sql = SHAPES[shape](d)
            if accept is None or accept(sql):
                out.append((shape, sql))
                break
    return out


def planned_by(eng, schema: str, rejected: list[str] | None = None) -> Callable[[str], bool]:
    """:func:`generate`'s ``accept``: the engine plans the query on ``schema`` (``EXPLAIN``);
    the first line of each refusal goes to ``rejected``."""

    def plans(sql: str) -> bool:
        try:
            eng.explain(sql, schema)
        except Exception as e:  # noqa: BLE001 - the engine rejects it: never written
            if rejected is not None:
                rejected.append(str(e).splitlines()[0])
            return False
        return True

    return plans


def to_file(queries: list[tuple[str, str]]) -> str:
    """The queries as a ``.sql`` file ``run --queries`` reads: ``-- shape`` line, then ``;``."""
    return "".join(f"-- {shape}\n{sql};\n\n" for shape, sql in queries)
