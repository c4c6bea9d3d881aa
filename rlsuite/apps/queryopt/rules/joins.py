"""Join-order rules: explicit JOINs in a chosen order, fixed by ``join_collapse_limit = 1``."""

from __future__ import annotations

from sqlglot import exp

from rlsuite.apps.queryopt.rules.base import (
    Catalog,
    NotApplicable,
    and_all,
    flatten_from,
    has_subquery,
    plain_select,
    tables_of,
)


def _join_order(
    e: exp.Expression, catalog: Catalog, largest_first: bool
) -> tuple[exp.Expression, dict]:
    what = "join ordering"
    sel = plain_select(e, what)
    tables, conds = flatten_from(sel, what)
    if len(tables) < 3:
        raise NotApplicable("join ordering needs at least three tables")
    if any(has_subquery(c) for c in conds):
        raise NotApplicable("join ordering does not handle subqueries in predicates")
    by_alias = {t.alias_or_name: t for t in tables}

    def size(a: str) -> float:
        return float(catalog.rows.get(by_alias[a].name, 1000.0))

    remaining = sorted(by_alias, key=lambda a: (-size(a) if largest_first else size(a), a))
    edges = [(c, tables_of(c)) for c in conds]
    order = [remaining.pop(0)]
    while remaining:
        connected = [a for a in remaining if any(a in ts and ts & set(order) for _, ts in edges)]
        nxt = (connected or remaining)[0]
        remaining.remove(nxt)
        order.append(nxt)
    placed: set[str] = set()
    used: set[int] = set()
    new = sel.copy()
    new.set("joins", None)
    new.set("where", None)
    new = new.from_(by_alias[order[0]].copy(), copy=False)
    placed.add(order[0])
    where: list[exp.Expression] = []
    for a in order[1:]:
        placed.add(a)
        on = []
        for i, (c, ts) in enumerate(edges):
            if i not in used and a in ts and ts <= placed and len(ts) > 1:
                on.append(c)
                used.add(i)
        j = (
            exp.Join(this=by_alias[a].copy(), kind="CROSS")
            if not on
            else exp.Join(this=by_alias[a].copy(), on=and_all(on))
        )
        new.append("joins", j)
    where = [c for i, (c, _) in enumerate(edges) if i not in used]
    new.set("where", exp.Where(this=and_all(where)) if where else None)
    return new, {"join_collapse_limit": "1"}


def join_order_small_first(e: exp.Expression, catalog: Catalog):
    """Explicit JOINs from the smallest table up (connected first), fixed by ``join_collapse_limit = 1``."""
    return _join_order(e, catalog, largest_first=False)


def join_order_large_first(e: exp.Expression, catalog: Catalog):
    """Explicit JOINs from the largest table down (connected first), fixed by ``join_collapse_limit = 1``."""
    return _join_order(e, catalog, largest_first=True)
