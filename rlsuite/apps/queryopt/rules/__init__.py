"""Rewrite rules: pure functions over sqlglot expressions, in an ordered registry.

Each rule takes a :class:`Query` (a qualified sqlglot ``SELECT`` plus the
planner settings it runs with) and a :class:`Catalog`, and returns a new
:class:`Query`, or raises :class:`NotApplicable` with the reason. Rules never
touch the database; :mod:`rlsuite.apps.queryopt.rewriter` runs and checks
their output.

The registry ``RULES`` is ordered; a rule's index is its action number in the
MDP (STOP comes after the last rule). The rules live in one module per family:
:mod:`.aggregation`, :mod:`.joins`, :mod:`.subqueries`, :mod:`.ctes`,
:mod:`.disjunctions`, :mod:`.arms`, :mod:`.decorrelate`; their shared
vocabulary (:class:`Query`, :class:`Catalog`, :class:`Rule`) in :mod:`.base`.

Example::

    >>> q = Query.parse("SELECT R.b, count(1) FROM R, S WHERE R.b = S.b GROUP BY R.b",
    ...                 Catalog({"r": {"a": "int", "b": "int", "c": "int"}, "s": {"b": "int", "d": "int"}}))
    >>> print(apply("eager_aggregation", q).sql())  # doctest: +NORMALIZE_WHITESPACE
    SELECT r.b AS b, CAST(COALESCE(SUM(s.qopt_cnt), 0) AS BIGINT) AS _col_1 FROM r AS r,
    (SELECT s.b AS b, COUNT(*) AS qopt_cnt FROM s AS s GROUP BY s.b) AS s WHERE r.b = s.b GROUP BY r.b
"""

from __future__ import annotations

from dataclasses import replace

from rlsuite.apps.queryopt.rules.aggregation import eager_aggregation, filter_after_aggregation
from rlsuite.apps.queryopt.rules.arms import arm
from rlsuite.apps.queryopt.rules.base import (
    AGGS,
    COUNT_COLUMN,
    DIALECT,
    Catalog,
    NotApplicable,
    Query,
    Rule,
    UnsupportedQuery,
)
from rlsuite.apps.queryopt.rules.ctes import (
    cte_materialized,
    cte_not_materialized,
    pushdown_predicates,
)
from rlsuite.apps.queryopt.rules.decorrelate import decorrelate_scalar, not_in_exact
from rlsuite.apps.queryopt.rules.disjunctions import or_to_union_all
from rlsuite.apps.queryopt.rules.joins import join_order_large_first, join_order_small_first
from rlsuite.apps.queryopt.rules.subqueries import (
    decorrelate_exists_inequality,
    not_in_to_not_exists,
    unnest,
)

__all__ = [
    "AGGS",
    "ALL_NAMES",
    "ALL_RULES",
    "COUNT_COLUMN",
    "MORE_RULES",
    "DIALECT",
    "RULES",
    "RULE_NAMES",
    "STOP",
    "Catalog",
    "NotApplicable",
    "Query",
    "Rule",
    "UnsupportedQuery",
    "applicable",
    "apply",
    "get",
    "named",
    "with_settings",
]

# The registry: an action's number is its index here; STOP is len(RULES).
RULES: tuple[Rule, ...] = (
    Rule("eager_aggregation", eager_aggregation, eager_aggregation.__doc__.splitlines()[0]),
    Rule(
        "filter_after_aggregation",
        filter_after_aggregation,
        filter_after_aggregation.__doc__.splitlines()[0],
    ),
    Rule("join_order_small_first", join_order_small_first, join_order_small_first.__doc__),
    Rule("join_order_large_first", join_order_large_first, join_order_large_first.__doc__),
    Rule("unnest_subqueries", unnest, unnest.__doc__),
    Rule(
        "arm_no_nestloop",
        arm("arm_no_nestloop", {"enable_nestloop": "off"}),
        "Bao arm: enable_nestloop = off",
    ),
    Rule(
        "arm_no_hashjoin",
        arm("arm_no_hashjoin", {"enable_hashjoin": "off"}),
        "Bao arm: enable_hashjoin = off",
    ),
    Rule(
        "arm_no_mergejoin",
        arm("arm_no_mergejoin", {"enable_mergejoin": "off"}),
        "Bao arm: enable_mergejoin = off",
    ),
    Rule(
        "decorrelate_exists_inequality",
        decorrelate_exists_inequality,
        decorrelate_exists_inequality.__doc__.splitlines()[0],
    ),
    Rule(
        "not_in_to_not_exists", not_in_to_not_exists, not_in_to_not_exists.__doc__.splitlines()[0]
    ),
    Rule("cte_not_materialized", cte_not_materialized, cte_not_materialized.__doc__),
    Rule("cte_materialized", cte_materialized, cte_materialized.__doc__),
    Rule("pushdown_predicates", pushdown_predicates, pushdown_predicates.__doc__),
    Rule("or_to_union_all", or_to_union_all, or_to_union_all.__doc__.splitlines()[0]),
)
RULE_NAMES: tuple[str, ...] = tuple(r.name for r in RULES)
STOP = len(RULES)
"""The STOP action's number."""
MORE_RULES: tuple[Rule, ...] = (
    Rule("decorrelate_scalar", decorrelate_scalar, decorrelate_scalar.__doc__.splitlines()[0]),
    Rule("not_in_exact", not_in_exact, not_in_exact.__doc__.splitlines()[0]),
)
"""Rules that are not actions of the MDP by default: the shipped models' action spaces stay
the ones they were trained with. The measured chooser tries them, ``--rules`` applies them;
a model trained with them among its own actions (``TrainConfig.rules``, which its
featurizer records) acts over them."""
ALL_RULES: tuple[Rule, ...] = RULES + MORE_RULES
ALL_NAMES: tuple[str, ...] = tuple(r.name for r in ALL_RULES)


def get(name: str) -> Rule:
    for r in (*RULES, *MORE_RULES):  # looked up per call: a test may patch RULES
        if r.name == name:
            return r
    raise ValueError(f"unknown rule {name!r}; rules: {', '.join(ALL_NAMES)}")


def named(names: tuple[str, ...] | list[str]) -> tuple[Rule, ...]:
    """The rules called ``names``, in that order (a model's own action set); raises on an
    unknown or repeated name."""
    if len(set(names)) != len(names):
        raise ValueError(f"a rule is named twice in {list(names)}")
    return tuple(get(n) for n in names)


def apply(name: str, query: Query) -> Query:
    """Apply the rule called ``name``; raises :class:`NotApplicable` with the reason."""
    rule = get(name)
    if name in query.applied:
        raise NotApplicable(f"{name} was already applied")
    try:
        return rule(query)
    except NotApplicable:
        raise
    except Exception as err:  # noqa: BLE001 - a rule bug must not escape as a crash
        raise NotApplicable(f"{name} failed on this query: {type(err).__name__}: {err}") from err


def applicable(query: Query, rules: tuple[Rule, ...] = RULES) -> dict[str, Query | str]:
    """For each rule (the MDP's actions unless ``rules`` says): the rewritten query, or the
    reason it does not apply."""
    out: dict[str, Query | str] = {}
    for r in rules:
        try:
            out[r.name] = apply(r.name, query)
        except NotApplicable as e:
            out[r.name] = str(e)
    return out


def with_settings(query: Query, **settings: str) -> Query:
    return replace(query, settings=tuple(sorted({**query.settings_dict, **settings}.items())))
