"""Disjunction rules: an ``OR`` in the WHERE clause as a ``UNION ALL`` of its branches.

PostgreSQL plans an ``OR`` whose branches name columns of several tables, or hold
subqueries, as one filter over the whole join: no branch's predicates reach a scan or a
join of their own. :func:`or_to_union_all` gives each branch its own query block, so each
is planned with its own selective predicates (OR expansion, as Oracle's optimizer does it).
"""

from __future__ import annotations

from sqlglot import exp

from rlsuite.apps.queryopt.rules.base import (
    DIALECT,
    Catalog,
    NotApplicable,
    and_all,
    conjuncts,
    has_subquery,
    sources,
    tables_of,
    volatile_call,
)

UNION_ALIAS = "qopt_or"
"""The derived table that holds the ``UNION ALL`` of the branches."""
MAX_BRANCHES = 8
"""More branches than this are left alone: each one repeats the whole join."""
_OUTER_PARTS = ("expressions", "group", "having", "order", "qualify", "windows", "distinct")
_REFUSED_PARTS = {
    "laterals": "LATERAL",
    "pivots": "PIVOT",
    "connect": "CONNECT BY",
    "match": "MATCH_RECOGNIZE",
    "prewhere": "PREWHERE",
    "into": "SELECT INTO",
    "locks": "FOR UPDATE / FOR SHARE",
}


def disjuncts(cond: exp.Expression) -> list[exp.Expression]:
    if isinstance(cond, exp.Or):
        return disjuncts(cond.left) + disjuncts(cond.right)
    if isinstance(cond, exp.Paren):
        return disjuncts(cond.this)
    return [cond]


def _outside_subqueries(e: exp.Expression) -> exp.Expression:
    """``e`` without its subqueries (their columns are another scope's)."""
    e = e.copy()
    for s in list(e.find_all(exp.Subquery, exp.Exists)):
        s.replace(exp.null())
    return e


def _worth_splitting(cond: exp.Expression) -> str | None:
    """Why the OR conjunct ``cond`` is left alone, or None to split it."""
    parts = disjuncts(cond)
    if len(parts) > MAX_BRANCHES:
        return f"an OR of {len(parts)} branches (more than {MAX_BRANCHES})"
    if (f := volatile_call(cond)) is not None:
        return f"an OR that calls {f}, which may differ per evaluation"
    if not has_subquery(cond) and len(tables_of(_outside_subqueries(cond))) < 2:
        return "an OR over one table's columns (PostgreSQL plans it as a BitmapOr or a filter)"
    return None


def _outer_nodes(e: exp.Select) -> list[exp.Expression]:
    """The parts of ``e`` outside FROM and WHERE that read its columns."""
    out = []
    for part in _OUTER_PARTS:
        v = e.args.get(part)
        out += v if isinstance(v, list) else [v] if v is not None else []
    return out


def or_to_union_all(e: exp.Expression, catalog: Catalog) -> exp.Expression:
    """Split an OR of the WHERE clause (over several tables, or with subqueries) into a UNION ALL
    of one query block per branch.

    ``SELECT .. FROM F WHERE P AND (D1 OR D2 OR ..)`` becomes ``SELECT .. FROM (SELECT cols
    FROM F WHERE P AND D1 UNION ALL SELECT cols FROM F WHERE P AND D2 AND NOT COALESCE(D1,
    FALSE) UNION ALL ..) AS qopt_or``, where ``cols`` are the columns the rest of the query
    reads (select list, GROUP BY, HAVING, ORDER BY, windows), renamed ``<table>_<column>``.

    Exact on multisets: a row of ``F`` that passes the WHERE clause has a first branch ``Di``
    that is TRUE, and lands in that branch only, because every earlier branch is FALSE or
    NULL there and ``NOT COALESCE(.., FALSE)`` lets it through. Grouping, DISTINCT, windows,
    ORDER BY and LIMIT then run over the same rows. Refused: a set operation or a query
    without FROM at the top, subqueries outside the WHERE clause (they would read columns
    that moved into the branches), volatile or user functions in the OR (the branches
    evaluate it more often), more than 8 branches, and an OR over one table's columns alone.
    Only the top-level query is rewritten, the first OR that qualifies, once.
    """
    if not isinstance(e, exp.Select):
        raise NotApplicable(f"OR expansion needs a SELECT at the top, got {e.key.upper()}")
    if e.args.get("from_") is None or e.args.get("where") is None:
        raise NotApplicable("the query has no FROM ... WHERE to split")
    for part, what in _REFUSED_PARTS.items():
        if e.args.get(part):
            raise NotApplicable(f"OR expansion does not handle {what}")
    conds = conjuncts(e.args["where"].this)
    ors = [c for c in conds if isinstance(c, exp.Or)]
    if not ors:
        raise NotApplicable("the WHERE clause has no OR among its conjuncts")
    reasons = [_worth_splitting(c) for c in ors]
    if all(reasons):
        raise NotApplicable(f"no OR to split: {reasons[0]}")
    target = ors[reasons.index(None)]
    outer = _outer_nodes(e)
    if any(has_subquery(n) for n in outer):
        raise NotApplicable(
            "a subquery outside the WHERE clause would read columns that move into the branches"
        )
    aliases = {s.alias_or_name for s in sources(e)}
    moved: dict[tuple[str, str], str] = {}  # (table, column) -> its name in qopt_or
    outer_columns = [c for n in outer for c in n.find_all(exp.Column) if c.table in aliases]
    for c in outer_columns:
        key = (c.table, c.name)
        if key not in moved:
            name, i = f"{c.table}_{c.name}".lower(), 2
            while name in moved.values():
                name, i = f"{c.table}_{c.name}_{i}".lower(), i + 1
            moved[key] = name
    if not moved:  # e.g. SELECT count(*): one column keeps each branch a valid query
        source = sources(e)[0]
        first = source.alias_or_name
        col = next(iter(catalog.columns.get(source.name.lower(), {})), None)
        if col is None:
            raise NotApplicable(f"no column of {first} is known to carry the rows")
        moved[(first, col)] = f"{first}_{col}".lower()

    rest = [c for c in conds if c is not target]
    parts = disjuncts(target)
    branches = []
    for i, d in enumerate(parts):
        b = e.copy()
        for key in ("with_", "group", "having", "order", "limit", "offset", "qualify", "windows"):
            b.set(key, None)
        b.set("distinct", None)
        b.set(
            "expressions",
            [exp.column(col, table=t).as_(name) for (t, col), name in moved.items()],
        )
        where = [*rest, d]
        if i:
            earlier = exp.or_(*[p.copy() for p in parts[:i]])
            where.append(exp.not_(exp.func("COALESCE", earlier, exp.false(), dialect=DIALECT)))
        b.set("where", exp.Where(this=and_all(where)))
        branches.append(b)
    union = branches[0]
    for b in branches[1:]:
        union = exp.union(union, b, distinct=False)

    for c in outer_columns:
        c.replace(exp.column(moved[(c.table, c.name)], table=UNION_ALIAS))
    e.set("joins", None)
    e.set("where", None)
    e.set(
        "from_",
        exp.From(
            this=exp.Subquery(this=union, alias=exp.TableAlias(this=exp.to_identifier(UNION_ALIAS)))
        ),
    )
    return e
