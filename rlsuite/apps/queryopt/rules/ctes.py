"""CTE and derived-table rules: materialisation control and predicate pushdown.

PostgreSQL 12+ decides a CTE's fate by its references: a CTE read once is inlined
(planned as a subquery, with the outer predicates pushed in), one read more than once
is computed once into a work table (``CTE Scan``), which the planner cannot push
predicates into and estimates blindly. ``AS [NOT] MATERIALIZED`` overrides that per CTE.
Marking a CTE with what PostgreSQL does anyway changes no plan, so the two rules here
each flip the default:

- :func:`cte_not_materialized`: every CTE read more than once becomes ``NOT
  MATERIALIZED``: each reference is planned on its own, with its own predicates pushed
  in (TPC-DS Q4, Q11 and Q74 filter each reference of their ``year_total`` by one
  channel and one year);
- :func:`cte_materialized`: every CTE read once becomes ``MATERIALIZED``, an
  optimisation fence (computed once as written, as before PostgreSQL 12).

:func:`pushdown_predicates` is sqlglot's predicate pushdown into derived tables and CTEs
read once (``WHERE`` conjuncts over one source move into it, and into ``JOIN ... ON``); it
counts as applicable only when a predicate moves into a derived table or CTE. PostgreSQL
pushes such predicates down itself wherever it may (not into a materialised CTE, nor
through ``LIMIT``, window functions or ``GROUP BY`` on non-grouped columns), so on
PostgreSQL this mostly changes the SQL, not the plan; sqlglot skips the same cases.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp
from sqlglot.optimizer.pushdown_predicates import pushdown_predicates as _sqlglot_pushdown

from rlsuite.apps.queryopt.rules.base import (
    DIALECT,
    Catalog,
    NotApplicable,
    explicit_cross_joins,
    volatile_call,
)


def cte_references(e: exp.Expression) -> dict[str, int]:
    """How often each CTE of ``e`` is read (``FROM name``), by CTE name (lower case)."""
    counts: dict[str, int] = {}
    for w in e.find_all(exp.With):
        for cte in w.expressions:
            counts.setdefault(cte.alias_or_name.lower(), 0)
    for t in e.find_all(exp.Table):
        name = t.name.lower()
        if name in counts and not t.args.get("db"):
            counts[name] += 1
    return counts


def _ctes(e: exp.Expression, what: str) -> list[exp.CTE]:
    withs = list(e.find_all(exp.With))
    if not withs:
        raise NotApplicable("the query has no WITH clause")
    if any(w.args.get("recursive") for w in withs):
        raise NotApplicable(f"{what} does not handle WITH RECURSIVE")
    return [c for w in withs for c in w.expressions]


def _unmarked(e: exp.Expression, what: str, reads: Callable[[int], bool]) -> list[exp.CTE]:
    """The CTEs of ``e`` marked neither way whose number of references passes ``reads``."""
    ctes = _ctes(e, what)
    refs = cte_references(e)
    return [
        c
        for c in ctes
        if reads(refs.get(c.alias_or_name.lower(), 0)) and c.args.get("materialized") is None
    ]


def cte_not_materialized(e: exp.Expression, catalog: Catalog) -> exp.Expression:
    """Mark each CTE read more than once NOT MATERIALIZED: each reference planned on its own."""
    ctes = _unmarked(e, "CTE inlining", lambda n: n >= 2)
    if not ctes:
        raise NotApplicable("no CTE is read more than once (PostgreSQL inlines the others)")
    for cte in ctes:
        if (f := volatile_call(cte.this)) is not None:
            raise NotApplicable(
                f"CTE {cte.alias_or_name} calls {f}, which may differ per evaluation; "
                "inlining it could change the rows"
            )
        cte.set("materialized", False)
    return e


def cte_materialized(e: exp.Expression, catalog: Catalog) -> exp.Expression:
    """Mark each CTE read once MATERIALIZED: computed once as written, an optimisation fence."""
    ctes = _unmarked(e, "CTE materialisation", lambda n: n == 1)
    if not ctes:
        raise NotApplicable("no CTE is read exactly once (PostgreSQL materialises the others)")
    for cte in ctes:
        cte.set("materialized", True)
    return e


def pushdown_predicates(e: exp.Expression, catalog: Catalog) -> exp.Expression:
    """Push WHERE predicates into derived tables, CTEs read once and JOIN ON (sqlglot's pass)."""
    if not any(True for _ in e.find_all(exp.Subquery, exp.CTE, exp.Join)):
        raise NotApplicable("the query has no derived table, CTE or join to push predicates into")
    # a predicate moved into ``JOIN .. ON`` must reach every table before it (as in unnest)
    for sel in list(e.find_all(exp.Select)):
        explicit_cross_joins(sel)
    before = _bodies(e)
    out = _sqlglot_pushdown(e, dialect=DIALECT)
    # sqlglot leaves ``WHERE TRUE`` (and ``AND TRUE``) where a predicate moved out
    for w in list(out.find_all(exp.Where)):
        cond = w.this
        kept = [c for c in _flat_and(cond) if not (isinstance(c, exp.Boolean) and c.this)]
        if not kept:
            w.pop()
        elif len(kept) < len(_flat_and(cond)):
            w.set("this", exp.and_(*kept) if len(kept) > 1 else kept[0])
    if _bodies(out) == before:  # moving a predicate into JOIN .. ON alone changes no plan
        raise NotApplicable("no predicate can be pushed into a derived table or CTE")
    return out


def _bodies(e: exp.Expression) -> list[str]:
    """The SQL of each derived table and CTE body of ``e``."""
    return [
        s.this.sql(dialect=DIALECT)
        for s in e.find_all(exp.Subquery, exp.CTE)
        if isinstance(s, exp.CTE) or isinstance(s.parent, exp.From | exp.Join)
    ]


def _flat_and(cond: exp.Expression) -> list[exp.Expression]:
    return list(cond.flatten()) if isinstance(cond, exp.And) else [cond]
