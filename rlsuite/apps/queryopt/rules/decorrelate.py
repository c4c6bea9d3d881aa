"""Decorrelation of the subqueries analysts write, as the app's own rules on sqlglot's AST.

:func:`decorrelate_scalar` turns a correlated aggregate subquery into one grouped derived
table joined once (``LEFT JOIN``), wherever it stands in its query: in ``WHERE`` (also under
``OR`` or ``NOT``), in the ``SELECT`` list, in ``HAVING`` or ``ORDER BY`` of a grouped query
whose ``GROUP BY`` holds the correlated columns. Its ``FROM`` may join several tables (the
correlation may sit on any of them) and hold uncorrelated subqueries of its own. It is
exact: each outer row meets at most one group (the derived table has one row per key), a row
with no group gets the aggregate's value on no rows (``count`` 0, the others NULL, through
``CASE`` when the expression is not NULL on NULL), and in a grouped query the joined value is
added to ``GROUP BY``, where it splits no group (it is a function of a ``GROUP BY`` key).

:func:`not_in_exact` turns ``x NOT IN (SELECT y ..)`` (a conjunct of ``WHERE``, so an
unknown answer filters as false does) into anti-joins that keep its NULL semantics whatever
the catalog says about NULLs: true exactly when no ``y`` equals ``x``, no ``y`` is NULL, and
``x`` is not NULL or the subquery is empty.

Refused, with the reason (the rule raises :class:`NotApplicable`):

- a volatile or time function in the subquery (``random()``, ``nextval``, ``now()``, a user
  function): evaluated per outer row in the original and per group after the rewrite;
- ``LIMIT``/``OFFSET``, ``GROUP BY``, ``HAVING``, ``DISTINCT``, window functions in the
  scalar subquery; a subquery that is not an aggregate (it may return several rows, an
  error the rewrite would hide);
- a correlated predicate other than an equality (``<``, ``<>``, ``BETWEEN``) unless the outer
  columns come from one table (then the subquery is grouped over their distinct values), one
  holding an aggregate or a subquery, or one in a ``JOIN .. ON``;
- a column of a query two levels out, unless the subquery in between equates it with one of
  its own columns (then that column is read instead); an outer column in a grouped query's ``SELECT`` list
  or ``HAVING`` that is not in its ``GROUP BY``; ``ROLLUP``/``CUBE``/``GROUPING SETS``;
- ``NOT IN`` under ``OR``/``NOT``/``CASE`` (there an unknown answer is not false), with a
  row on the left (``(a, b) NOT IN ..``), or a volatile subquery or one with ``LIMIT`` (it
  is read three times).
"""

from __future__ import annotations

from sqlglot import exp

from rlsuite.apps.queryopt.rules.base import (
    DIALECT,
    Catalog,
    NotApplicable,
    and_all,
    conjuncts,
    fresh_alias,
    left_join_derived,
    not_in_subqueries,
    sources,
    varying_call,
)

_NOT_STRICT = (exp.Count, exp.Coalesce, exp.Case, exp.If, exp.Nullif, exp.Is, exp.Not, exp.Or)
"""Nodes whose value on NULL input need not be NULL: with one in the aggregate expression,
the value of an outer row with no group is spelled out (``CASE``)."""


def _sql(e: exp.Expression) -> str:
    return e.sql(dialect=DIALECT)


def _volatile(sel: exp.Expression, what: str) -> None:
    v = varying_call(sel)
    if v is not None:
        raise NotApplicable(
            f"{what}: the subquery calls {v}, which may give another value per evaluation; "
            "the rewrite evaluates it another number of times"
        )


def _defined(sel: exp.Select) -> set[str]:
    """Every relation alias defined anywhere inside ``sel``."""
    out = {t.alias_or_name for t in sel.find_all(exp.Table)}
    out |= {s.alias for s in sel.find_all(exp.Subquery) if s.alias}
    out |= {c.alias_or_name for c in sel.find_all(exp.CTE)}
    return out


def _external(sel: exp.Select) -> list[exp.Column]:
    inner = _defined(sel)
    return [c for c in sel.find_all(exp.Column) if c.table and c.table not in inner]


def _clause(node: exp.Expression, outer: exp.Select) -> str:
    """The arg of ``outer`` that ``node`` sits in (``where``, ``expressions``, ``having``...)."""
    child = node
    while child.parent is not outer:
        child = child.parent
    return child.arg_key


def _attached(node: exp.Expression, root: exp.Expression) -> bool:
    while node is not None and node is not root:
        node = node.parent
    return node is root


def _is_scalar_position(sub: exp.Subquery) -> bool:
    p = sub.parent
    if isinstance(p, exp.From | exp.Join | exp.Exists) or sub.args.get("alias"):
        return False
    if isinstance(p, exp.In) and sub.arg_key == "query":
        return False
    return isinstance(sub.this, exp.Select)


# ----------------------------------------------------------------- scalar subqueries
def decorrelate_scalar(e: exp.Expression, catalog: Catalog) -> exp.Expression:
    """Correlated aggregate subqueries (WHERE, SELECT list, HAVING) into one grouped LEFT JOIN each."""
    done, refused = 0, ""
    subs = [s for s in e.find_all(exp.Subquery) if _is_scalar_position(s)]
    for sub in subs:  # outermost first: a pulled column may be pulled again one level down
        _pull_two_levels(sub.this)
    for sub in reversed(subs):  # innermost first: a decorrelated inner one moves with its outer
        if not _attached(sub, e):
            continue
        outer = sub.parent.find_ancestor(exp.Select) if sub.parent else None
        if outer is None:
            continue
        try:
            _decorrelate(e, sub, outer)
            done += 1
        except NotApplicable as why:
            refused = refused or str(why)
    if not done:
        raise NotApplicable(refused or "the query has no correlated scalar subquery")
    return e


def _pull_two_levels(sel: exp.Select) -> None:
    """Correlation two levels deep, brought one level in: where ``sel``'s WHERE has the
    conjunct ``m.c = o.c`` (``m`` its own table, ``o`` the query's around it), a subquery in
    another of its WHERE conjuncts that reads ``o.c`` reads ``m.c`` instead. Exact: where the
    equality is true the two are equal, and where it is not the WHERE is not true anyway."""
    where = sel.args.get("where")
    if not isinstance(sel, exp.Select) or where is None:
        return
    own = {s.alias_or_name for s in sources(sel)}
    inside = _defined(sel)
    eq: dict[str, exp.Column] = {}
    for c in conjuncts(where.this):
        if isinstance(c, exp.EQ) and isinstance(c.this, exp.Column):
            a, b = c.this, c.expression
            if isinstance(b, exp.Column):
                for m, o in ((a, b), (b, a)):
                    if m.table in own and o.table and o.table not in inside:
                        eq.setdefault(_sql(o), m)
    for c in conjuncts(where.this):
        for nested in c.find_all(exp.Select):
            for col in list(nested.find_all(exp.Column)):
                m = eq.get(_sql(col))
                if m is not None and col.table not in inside and m.table not in _defined(nested):
                    col.replace(m.copy())


def _decorrelate(e: exp.Expression, sub: exp.Subquery, outer: exp.Select) -> None:
    what = "decorrelating a scalar subquery"
    sel = sub.this
    ext = _external(sel)
    if not ext:
        raise NotApplicable(f"{what}: it is not correlated (PostgreSQL runs it once)")
    for k, why in (
        ("limit", "LIMIT: which rows it keeps is decided per outer row"),
        ("offset", "OFFSET: which rows it skips is decided per outer row"),
        ("group", "GROUP BY: it may return several rows"),
        ("having", "HAVING"),
        ("distinct", "DISTINCT"),
        ("order", "ORDER BY"),
        ("with_", "WITH"),
        ("qualify", "QUALIFY"),
    ):
        if sel.args.get(k) is not None:
            raise NotApplicable(f"{what}: the subquery has {why}")
    if any(True for _ in sel.find_all(exp.Window)):
        raise NotApplicable(f"{what}: the subquery has window functions")
    _volatile(sel, what)
    if len(sel.expressions) != 1:
        raise NotApplicable(f"{what}: the subquery selects {len(sel.expressions)} columns")
    proj = sel.expressions[0].unalias()
    if not any(True for _ in proj.find_all(exp.AggFunc)) or not all(
        _under_agg(c, proj) for c in proj.find_all(exp.Column)
    ):
        raise NotApplicable(
            f"{what}: {_sql(proj)} is not an aggregate of the subquery's rows, so it may "
            "return several rows (an error the rewrite would hide)"
        )
    outer_aliases = {s.alias_or_name for s in sources(outer)}
    far = [c for c in ext if c.table not in outer_aliases]
    if far:
        raise NotApplicable(f"{what}: {_sql(far[0])} is a column of a query two levels out")
    ext_ids = {id(c) for c in ext}
    where = sel.args.get("where")
    local, keys, others = [], [], []
    used: set[int] = set()
    for c in conjuncts(where.this if where else None):
        cols = list(c.find_all(exp.Column))
        if not any(id(x) in ext_ids for x in cols):
            local.append(c)
            continue
        pair = _key_pair(c, ext_ids)
        if pair is None:
            if any(True for _ in c.find_all(exp.AggFunc, exp.Subquery, exp.Select)):
                raise NotApplicable(
                    f"{what}: correlated predicate {_sql(c)} holds an aggregate or a subquery"
                )
            if not _strict(c):
                raise NotApplicable(
                    f"{what}: correlated predicate {_sql(c)} is not a plain comparison of "
                    "columns, numbers, + - and * (one that may hold for a NULL, or divide or "
                    "cast a value the original never reached, is refused)"
                )
            others.append(c)
        else:
            keys.append(pair)
        used |= {id(x) for x in cols if id(x) in ext_ids}
    if ext_ids - used:
        stray = next(c for c in ext if id(c) not in used)
        raise NotApplicable(
            f"{what}: the subquery uses outer column {_sql(stray)} outside its WHERE "
            "equalities (in a JOIN .. ON, its SELECT list or a nested subquery)"
        )
    clause = _clause(sub, outer)
    if clause not in ("where", "expressions", "having", "order"):
        raise NotApplicable(f"{what}: a subquery in the outer query's {clause.upper()}")
    in_agg = isinstance(sub.find_ancestor(exp.AggFunc, exp.Select), exp.AggFunc)
    group = outer.args.get("group")
    grouped = group is not None or any(
        a.find_ancestor(exp.Select) is outer and _clause(a, outer) in ("expressions", "having")
        for a in outer.find_all(exp.AggFunc)
    )
    regroup = grouped and clause != "where" and not in_agg
    if regroup:
        if group is None:
            raise NotApplicable(f"{what}: the outer query aggregates without GROUP BY")
        if any(isinstance(g, exp.Rollup | exp.Cube | exp.GroupingSets) for g in group.expressions):
            raise NotApplicable(f"{what}: the outer query has ROLLUP, CUBE or GROUPING SETS")
        keys_sql = {_sql(g) for g in group.expressions}
        for col in ext:
            if _sql(col) not in keys_sql:
                raise NotApplicable(
                    f"{what}: outer column {_sql(col)} is not in the outer GROUP BY"
                )
    alias = fresh_alias(e, "_qd")
    if others:  # a correlation other than equalities: through the outer values' distinct set
        d, keys = _magic(sel, outer, ext, proj, what)
    else:
        d = sel.copy()
        d.set("where", exp.Where(this=and_all(local)) if local else None)
        d.set("group", exp.Group(expressions=[i.copy() for i, _ in keys]))
    d.set(
        "expressions",
        [exp.alias_(i.copy(), f"k{n}") for n, (i, _) in enumerate(keys)]
        + [exp.alias_(proj.copy(), "v")],
    )
    on = and_all(
        [
            exp.EQ(this=exp.column(f"k{n}", table=alias), expression=o.copy())
            for n, (_, o) in enumerate(keys)
        ]
    )
    value: exp.Expression = exp.column("v", table=alias)
    extra = [value.copy()]
    if any(True for _ in proj.find_all(*_NOT_STRICT)):
        empty = _on_no_rows(proj.copy())
        marker = exp.column("k0", table=alias)
        value = exp.Case(
            ifs=[exp.If(this=exp.Is(this=marker.copy(), expression=exp.null()), true=empty)],
            default=value,
        )
        extra.append(marker)
    left_join_derived(outer, d, alias, on)
    sub.replace(exp.Paren(this=value))
    if regroup:
        for x in extra:
            group.append("expressions", x)


_STRICT = (
    exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Between, exp.Column, exp.Identifier,
    exp.Literal, exp.Add, exp.Sub, exp.Mul, exp.Paren, exp.Neg,
)  # fmt: skip
"""What a correlated predicate other than an equality may be made of: a comparison that is
never true when an operand is NULL (so an outer row with a NULL there meets no group), and
no division or cast, which could fail on an outer value the original never reached (the
rewrite reads every distinct value of the outer table)."""


def _strict(c: exp.Expression) -> bool:
    return isinstance(
        c, exp.EQ | exp.NEQ | exp.GT | exp.GTE | exp.LT | exp.LTE | exp.Between
    ) and all(isinstance(x, _STRICT) for x in c.walk())


def _magic(
    sel: exp.Select, outer: exp.Select, ext: list[exp.Column], proj: exp.Expression, what: str
) -> tuple[exp.Select, list[tuple[exp.Expression, exp.Expression]]]:
    """The subquery over the distinct values of the outer columns it reads (``<``, ``<>``,
    any predicate): ``FROM .., (SELECT DISTINCT a.c, .. FROM T AS a) AS a WHERE <as it was>
    GROUP BY a.c, ..``. Exact: one group per distinct outer value, holding the rows the
    subquery held for it. Needs the outer columns to come from one base table."""
    aliases = {c.table for c in ext}
    srcs = [x for x in sources(outer) if x.alias_or_name in aliases]
    if len(aliases) != 1 or len(srcs) != 1 or not isinstance(srcs[0], exp.Table):
        raise NotApplicable(
            f"{what}: a correlation other than equalities is decorrelated only when the outer "
            "columns it reads come from one table"
        )
    a = srcs[0].alias_or_name
    names = sorted({c.name for c in ext})
    table = srcs[0].copy()
    magic = exp.select(*[exp.column(n, table=a) for n in names]).distinct().from_(table)
    d = sel.copy()
    d.append(
        "joins",
        exp.Join(
            this=exp.Subquery(this=magic, alias=exp.TableAlias(this=exp.to_identifier(a))),
            kind="CROSS",
        ),
    )
    inner = [exp.column(n, table=a) for n in names]
    d.set("group", exp.Group(expressions=[i.copy() for i in inner]))
    return d, [(i, exp.column(n, table=a)) for i, n in zip(inner, names, strict=True)]


def _under_agg(node: exp.Expression, top: exp.Expression) -> bool:
    """``node`` is inside an aggregate call within ``top``."""
    while node is not None and node is not top:
        node = node.parent
        if isinstance(node, exp.AggFunc):
            return True
    return False


def _key_pair(c: exp.Expression, ext: set[int]) -> tuple[exp.Expression, exp.Expression] | None:
    """(the subquery's side, the outer side) of a correlated equality, else None."""
    if not isinstance(c, exp.EQ):
        return None
    sides = []
    for s in (c.this, c.expression):
        cols = list(s.find_all(exp.Column))
        if not cols or any(True for _ in s.find_all(exp.AggFunc, exp.Subquery, exp.Select)):
            return None
        outer = [id(x) in ext for x in cols]
        if all(outer):
            sides.append("outer")
        elif not any(outer):
            sides.append("inner")
        else:
            return None
    if sides == ["inner", "outer"]:
        return c.this, c.expression
    if sides == ["outer", "inner"]:
        return c.expression, c.this
    return None


def _on_no_rows(proj: exp.Expression) -> exp.Expression:
    """``proj`` on no rows: each ``count`` 0, every other aggregate NULL."""
    for a in list(proj.find_all(exp.AggFunc)):
        if a is proj:
            return exp.Literal.number(0) if isinstance(a, exp.Count) else exp.null()
        a.replace(exp.Literal.number(0) if isinstance(a, exp.Count) else exp.null())
    return proj


# ----------------------------------------------------------------------- NOT IN
def not_in_exact(e: exp.Expression, catalog: Catalog) -> exp.Expression:
    """x NOT IN (SELECT y ..) in WHERE into anti-joins, NULLs exact: no y = x, no NULL y, x not NULL or no rows."""
    what = "NOT IN to anti-joins"
    done, refused = 0, ""
    for neg, inn in not_in_subqueries(e):
        outer = neg.find_ancestor(exp.Select)
        where = neg.find_ancestor(exp.Where, exp.Select)
        if outer is None or not isinstance(where, exp.Where) or where.parent is not outer:
            refused = refused or f"{what}: the NOT IN is not in a WHERE clause"
            continue
        if not any(c is neg for c in conjuncts(where.this)):
            refused = refused or (
                f"{what}: the NOT IN is under OR, NOT or CASE, where its unknown answer (a NULL) "
                "is not false; refused"
            )
            continue
        x = inn.this
        sub = inn.args["query"].this
        if isinstance(x, exp.Tuple) or not isinstance(sub, exp.Query):
            refused = refused or f"{what}: a row on the left of NOT IN"
            continue
        if len(sub.selects) != 1:
            refused = refused or f"{what}: the subquery selects {len(sub.selects)} columns"
            continue
        try:
            _volatile(sub, what)
        except NotApplicable as why:
            refused = refused or str(why)
            continue
        if any(x.args.get("limit") or x.args.get("offset") for x in sub.find_all(exp.Select)):
            refused = refused or (
                f"{what}: the subquery has LIMIT or OFFSET, whose rows may differ between the "
                "three times the rewrite reads it"
            )
            continue
        s = sub.copy()
        if isinstance(s, exp.Select):
            s.set("expressions", [exp.alias_(s.expressions[0].unalias(), "y")])
        else:
            s = exp.select(
                exp.alias_(exp.column(s.selects[0].alias_or_name, table="_u"), "y")
            ).from_(exp.Subquery(this=s, alias=exp.TableAlias(this=exp.to_identifier("_u"))))

        a0, a1, a2 = (fresh_alias(e, "_qn") + suffix for suffix in ("a", "b", "c"))
        y0, y1 = exp.column("y", table=a0), exp.column("y", table=a1)
        no_match = _anti(s, exp.EQ(this=y0, expression=x.copy()), a0)
        no_null = _anti(s, exp.Is(this=y1, expression=exp.null()), a1)
        x_or_empty = exp.Paren(
            this=exp.or_(
                exp.Not(this=exp.Is(this=x.copy(), expression=exp.null())), _anti(s, None, a2)
            )
        )
        neg.replace(exp.and_(no_match, no_null, x_or_empty))
        done += 1
    if not done:
        raise NotApplicable(refused or "the query has no NOT IN (SELECT ..)")
    return e


def _anti(s: exp.Query, cond: exp.Expression | None, alias: str) -> exp.Expression:
    """``NOT EXISTS (SELECT 1 FROM (s) AS alias [WHERE cond])``."""
    inner = exp.select("1").from_(
        exp.Subquery(this=s.copy(), alias=exp.TableAlias(this=exp.to_identifier(alias)))
    )
    if cond is not None:
        inner = inner.where(cond, copy=False)
    return exp.Not(this=exp.Exists(this=inner))
