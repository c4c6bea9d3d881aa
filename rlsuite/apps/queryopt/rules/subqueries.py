"""Subquery rules: unnesting and decorrelation into joins.

What sqlglot's ``unnest_subqueries`` (the ``unnest_subqueries`` rule) decorrelates, and what
the rules here add for the shapes TPC-DS uses:

- scalar comparisons correlated by column equalities (``x > (SELECT 1.2 * avg(..) ..
  WHERE inner.k = outer.k)``, Q1, Q6, Q30, Q32, Q81, Q92; ``count`` comes back through
  ``COALESCE(.., 0)``): sqlglot;
- ``EXISTS`` / ``NOT EXISTS`` correlated by equalities, also under ``OR`` (Q10, Q35, Q69):
  sqlglot, as a join with the grouped keys and ``IS [NOT] NULL``;
- ``EXISTS`` / ``NOT EXISTS`` correlated by equalities and one ``<>`` (Q16, Q94: another
  row of the same order from another warehouse): :func:`decorrelate_exists_inequality`;
- ``IN (SELECT ..)``, uncorrelated (Q14, Q33, Q56, Q58, Q60, Q83, Q95) or correlated:
  sqlglot;
- ``NOT IN (SELECT ..)``: left alone by sqlglot; :func:`not_in_to_not_exists` turns it
  into ``NOT EXISTS`` (an anti-join for PostgreSQL) only when both columns are ``NOT NULL``
  in the catalog: with a NULL on either side ``NOT IN`` is never true where ``NOT EXISTS``
  can be;
- not decorrelated: a subquery whose WHERE has an ``OR`` anywhere (Q41's count of
  matching items; sqlglot refuses it, and taking the common correlation out of the ``OR``
  does not change that).
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.optimizer.unnest_subqueries import unnest_subqueries

from rlsuite.apps.queryopt.rules.base import (
    DIALECT,
    Catalog,
    NotApplicable,
    and_all,
    conjuncts,
    explicit_cross_joins,
    fresh_alias,
    has_subquery,
    left_join_derived,
    not_in_subqueries,
    sources,
    varying_call,
)


def unnest(e: exp.Expression, catalog: Catalog) -> exp.Expression:
    """Unnest and decorrelate subqueries into joins with sqlglot's optimizer (``unnest_subqueries``)."""
    if not any(True for _ in e.find_all(exp.Subquery, exp.Exists, exp.In)):
        raise NotApplicable("the query has no subqueries")
    _check_correlation(e)
    for sel in list(e.find_all(exp.Select)):
        explicit_cross_joins(sel)
    before = e.sql(dialect=DIALECT)
    out = unnest_subqueries(e)
    if out.sql(dialect=DIALECT) == before:
        raise NotApplicable("no subquery here is one sqlglot's unnesting rewrites")
    return out


def _check_correlation(e: exp.Expression) -> None:
    """Refuse correlations sqlglot's unnesting does not preserve (seen: TPC-H Q21's ``<>``).

    Only conjunctive equalities between a subquery's own column and an outer column are
    decorrelated safely; anything else (``<>``, ``<``, OR, a function of both) is refused,
    and so is a correlated subquery that calls a volatile or time function (``random()``,
    ``nextval``, ``now()``).
    """
    from sqlglot.optimizer.scope import traverse_scope

    for scope in traverse_scope(e):
        if scope.is_root or not scope.external_columns:
            continue
        if (v := varying_call(scope.expression)) is not None:
            raise NotApplicable(
                f"a correlated subquery calls {v}, which may give another value per "
                "evaluation; unnesting evaluates it another number of times"
            )
        where = (
            scope.expression.args.get("where") if isinstance(scope.expression, exp.Select) else None
        )
        external = {id(c) for c in scope.external_columns}
        for c in conjuncts(where.this if where else None):
            if not any(id(col) in external for col in c.find_all(exp.Column)):
                continue
            if not (
                isinstance(c, exp.EQ)
                and isinstance(c.left, exp.Column)
                and isinstance(c.right, exp.Column)
            ):
                raise NotApplicable(
                    f"correlated predicate {c.sql(dialect=DIALECT)} is not a column equality; "
                    "unnesting it would change the rows"
                )
        outside_where = [
            col
            for col in scope.external_columns
            if not (where and any(col is x for x in where.find_all(exp.Column)))
        ]
        if outside_where:
            raise NotApplicable(
                f"the subquery uses outer column {outside_where[0].sql(dialect=DIALECT)} outside "
                "its WHERE clause"
            )


# ------------------------------------------------- EXISTS with one inequality
def _aliases(sel: exp.Select) -> set[str]:
    return {s.alias_or_name for s in sources(sel) if s.alias_or_name}


def _in_where_of(node: exp.Expression, sel: exp.Select) -> bool:
    """``node`` sits in ``sel``'s own WHERE clause (not in a nested query's)."""
    where = node.find_ancestor(exp.Where, exp.Select)
    return isinstance(where, exp.Where) and where.parent is sel


def _plain_subquery(sub: exp.Expression, what: str) -> exp.Select:
    if not isinstance(sub, exp.Select):
        raise NotApplicable(f"{what}: the subquery is a {sub.key.upper()}, not a plain SELECT")
    for k in ("group", "having", "order", "limit", "offset", "with_", "with", "qualify"):
        if sub.args.get(k) is not None:
            raise NotApplicable(f"{what}: the subquery has {k.rstrip('_').upper()}")
    if any(True for _ in sub.find_all(exp.Window)) or has_subquery(sub):
        raise NotApplicable(f"{what}: the subquery has window functions or subqueries")
    if (v := varying_call(sub)) is not None:
        raise NotApplicable(
            f"{what}: the subquery calls {v}, which may give another value per evaluation; "
            "the rewrite evaluates it another number of times"
        )
    return sub


def decorrelate_exists_inequality(e: exp.Expression, catalog: Catalog) -> exp.Expression:
    """[NOT] EXISTS correlated by equalities and one <> into a join with per-key MIN/MAX.

    ``EXISTS (SELECT .. FROM t2 WHERE t2.k = t1.k AND t2.w <> t1.w AND p(t2))`` holds
    exactly when the group of ``t2`` rows with key ``t1.k`` (and ``p``) has a non-NULL
    ``w`` other than ``t1.w``, that is when its ``MIN(w)`` or ``MAX(w)`` differs from
    ``t1.w``. The subquery becomes ``LEFT JOIN (SELECT k, MIN(w), MAX(w) .. GROUP BY k)``
    (one row per key, so no outer row is repeated) and the test ``COALESCE(lo <> t1.w OR
    hi <> t1.w, FALSE)``, which is FALSE where EXISTS is (no group, a NULL ``t1.w``), so
    ``NOT EXISTS`` stays right under ``NOT``. TPC-DS Q16 and Q94.
    """
    done, skipped = 0, ""
    for ex in list(e.find_all(exp.Exists)):
        outer = ex.find_ancestor(exp.Select)
        if outer is None or not _in_where_of(ex, outer):
            continue
        try:
            _decorrelate_exists(e, ex, outer)
            done += 1
        except NotApplicable as why:
            skipped = str(why)
    if not done:
        raise NotApplicable(
            skipped or "no EXISTS in a WHERE clause is correlated by equalities and exactly one <>"
        )
    return e


def _decorrelate_exists(e: exp.Expression, ex: exp.Exists, outer: exp.Select) -> None:
    """Rewrite one EXISTS of :func:`decorrelate_exists_inequality` in place, or raise why not."""
    what = "decorrelating EXISTS with <>"
    sub = _plain_subquery(ex.this, what)
    inner, outer_aliases = _aliases(sub), _aliases(outer)
    keys: list[tuple[exp.Column, exp.Column]] = []
    neq: list[tuple[exp.Column, exp.Column]] = []
    local: list[exp.Expression] = []
    where = sub.args.get("where")
    for c in conjuncts(where.this if where else None):
        ext = {col.table for col in c.find_all(exp.Column)} - inner
        if not ext:
            local.append(c)
            continue
        if not ext <= outer_aliases:
            raise NotApplicable(f"{what}: {c.sql(dialect=DIALECT)} reads a query further out")
        pair = _inner_outer(c, inner)
        if pair is None or not isinstance(c, exp.EQ | exp.NEQ):
            raise NotApplicable(
                f"{what}: correlated predicate {c.sql(dialect=DIALECT)} is not an equality "
                "or <> between two columns"
            )
        (keys if isinstance(c, exp.EQ) else neq).append(pair)
    outside = [
        col
        for k in ("expressions", "from_", "from", "joins")
        for node in _as_list(sub.args.get(k))
        for col in node.find_all(exp.Column)
        if col.table not in inner
    ]
    if outside:
        raise NotApplicable(f"{what}: the subquery reads {outside[0].sql()} outside WHERE")
    if len(neq) != 1 or not keys:
        raise NotApplicable(
            f"{what}: needs equalities and exactly one <> to the outer query, found "
            f"{len(keys)} and {len(neq)} (equalities alone are unnest_subqueries' shape)"
        )
    alias = fresh_alias(e, "_d")
    (w_in, w_out) = neq[0]
    d = sub.copy()
    d.set("where", exp.Where(this=and_all(local)) if local else None)
    d.set("expressions", [exp.alias_(k.copy(), f"k{i}") for i, (k, _) in enumerate(keys)])
    d.append("expressions", exp.alias_(exp.Min(this=w_in.copy()), "lo"))
    d.append("expressions", exp.alias_(exp.Max(this=w_in.copy()), "hi"))
    d.set("group", exp.Group(expressions=[k.copy() for k, _ in keys]))
    on = and_all(
        [
            exp.EQ(this=exp.column(f"k{i}", table=alias), expression=o.copy())
            for i, (_, o) in enumerate(keys)
        ]
    )
    left_join_derived(outer, d, alias, on)
    differs = exp.or_(
        exp.NEQ(this=exp.column("lo", table=alias), expression=w_out.copy()),
        exp.NEQ(this=exp.column("hi", table=alias), expression=w_out.copy()),
    )
    ex.replace(exp.func("COALESCE", differs, exp.false()))


def _as_list(v) -> list:
    return [] if v is None else v if isinstance(v, list) else [v]


def _inner_outer(c: exp.Expression, inner: set[str]) -> tuple[exp.Column, exp.Column] | None:
    """(inner column, outer column) of a two-column comparison, else None."""
    a, b = c.args.get("this"), c.args.get("expression")
    if not (isinstance(a, exp.Column) and isinstance(b, exp.Column)):
        return None
    if a.table in inner and b.table not in inner:
        return a, b
    if b.table in inner and a.table not in inner:
        return b, a
    return None


# ----------------------------------------------------------- NOT IN -> NOT EXISTS
def _not_null(col: exp.Expression, sel: exp.Select, catalog: Catalog) -> bool:
    """``col`` is a column of a base table of ``sel`` declared NOT NULL, and ``sel`` has no
    outer join (which could put a NULL there anyway)."""
    if not isinstance(col, exp.Column):
        return False
    if any(j.args.get("side") for j in sel.args.get("joins") or []):
        return False
    for s in sources(sel):
        if isinstance(s, exp.Table) and s.alias_or_name == col.table:
            return col.name.lower() in catalog.not_null.get(s.name.lower(), frozenset())
    return False


def not_in_to_not_exists(e: exp.Expression, catalog: Catalog) -> exp.Expression:
    """x NOT IN (SELECT y ..) into NOT EXISTS (.. AND y = x) where x and y are NOT NULL columns.

    PostgreSQL plans ``NOT EXISTS`` as an anti-join, ``NOT IN`` as a subplan (hashed only
    while it fits ``work_mem``). The two differ when either side can be NULL (then ``NOT IN``
    is never true), so the rewrite is refused unless the catalog declares both columns
    ``NOT NULL`` and no outer join could add a NULL.
    """
    what = "NOT IN to NOT EXISTS"
    done, refused = 0, ""
    for neg, inn in not_in_subqueries(e):
        outer = neg.find_ancestor(exp.Select)
        sub = inn.args["query"].this
        try:
            sub = _plain_subquery(sub, what)
        except NotApplicable as err:
            refused = str(err)
            continue
        if sub.args.get("distinct") is not None and sub.args["distinct"].args.get("on"):
            refused = f"{what}: the subquery has DISTINCT ON"
            continue
        projected = sub.expressions[0].unalias() if len(sub.expressions) == 1 else None
        x = inn.this
        if projected is None or any(True for _ in projected.find_all(exp.AggFunc)):
            refused = f"{what}: the subquery does not select one plain column"
            continue
        if (
            outer is None
            or not _not_null(x, outer, catalog)
            or not _not_null(projected, sub, catalog)
        ):
            refused = (
                f"{x.sql(dialect=DIALECT)} NOT IN (SELECT {projected.sql(dialect=DIALECT)} ..) "
                "is not NOT EXISTS unless both columns are NOT NULL, and the catalog does not "
                "say so: a NULL makes NOT IN never true"
            )
            continue
        new = sub.copy()
        new.set("distinct", None)
        new.set("expressions", [exp.Literal.number(1)])
        new.where(exp.EQ(this=projected.copy(), expression=x.copy()), copy=False)
        neg.replace(exp.Not(this=exp.Exists(this=new)))
        done += 1
    if not done:
        raise NotApplicable(refused or "the query has no NOT IN (SELECT ..)")
    return e
