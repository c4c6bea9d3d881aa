"""The MDP's state: a fixed-length vector from the query's shape and PostgreSQL's plan.

:class:`Featurizer` turns a :class:`~rlsuite.apps.queryopt.rules.Query` and its
``EXPLAIN (FORMAT JSON)`` plan into a float vector. Its layout is versioned and
fully described by :meth:`Featurizer.describe` (a JSON-able dict), which the
trained model's checkpoint carries, so inference rebuilds the same features.

Version 2 adds the plan's structure (:data:`STRUCT_KEYS`): correlated subplans (a
subquery PostgreSQL re-runs per outer row, what ``unnest_subqueries`` removes), init
plans (uncorrelated subqueries run once), the most scans of one CTE (a self-joined CTE,
TPC-DS's ``year_total`` shape) and the CTEs scanned.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from rlsuite.apps.queryopt import rules as R
from rlsuite.apps.queryopt.rewriter import query_features

VERSION = 2
QUERY_KEYS = (
    "tables",
    "join_preds",
    "filters",
    "group_keys",
    "aggregates",
    "subqueries",
    "udf_calls",
    "order_by",
    "outer_joins",
)
NODE_TYPES = (
    "Seq Scan",
    "Index Scan",
    "Index Only Scan",
    "Bitmap Heap Scan",
    "Hash Join",
    "Merge Join",
    "Nested Loop",
    "Hash",
    "Sort",
    "Aggregate",
    "Subquery Scan",
    "Materialize",
    "Memoize",
    "Limit",
    "Result",
    "CTE Scan",
)
PLAN_KEYS = ("log_total_cost", "log_plan_rows", "log_max_node_rows", "log_max_join_rows")
STRUCT_KEYS = ("subplans", "initplans", "max_cte_scans", "ctes")
"""Plan structure counts (log1p): correlated subplans, init plans, the most scans of one
CTE, distinct CTEs scanned."""


def _walk(node: Mapping[str, Any]):
    yield node
    for child in node.get("Plans", []) or []:
        yield from _walk(child)


def plan_features(plan: Mapping[str, Any]) -> dict[str, float]:
    """Node-type counts and log-scaled cost / row estimates of an EXPLAIN JSON plan."""
    top = plan["Plan"] if "Plan" in plan else plan
    counts = dict.fromkeys(NODE_TYPES, 0.0)
    max_rows, max_join = 0.0, 0.0
    subplans, initplans = 0.0, 0.0
    cte_scans: dict[str, int] = {}
    for n in _walk(top):
        t = n.get("Node Type", "")
        if t in counts:
            counts[t] += 1
        name = str(n.get("Subplan Name", ""))
        if name.startswith("SubPlan"):
            subplans += 1
        elif name.startswith("InitPlan"):
            initplans += 1
        if t == "CTE Scan":
            c = str(n.get("CTE Name", ""))
            cte_scans[c] = cte_scans.get(c, 0) + 1
        rows = float(n.get("Plan Rows", 0.0))
        max_rows = max(max_rows, rows)
        if t in ("Hash Join", "Merge Join", "Nested Loop"):
            max_join = max(max_join, rows)
    out = {
        "log_total_cost": math.log1p(float(top.get("Total Cost", 0.0))),
        "log_plan_rows": math.log1p(float(top.get("Plan Rows", 0.0))),
        "log_max_node_rows": math.log1p(max_rows),
        "log_max_join_rows": math.log1p(max_join),
    }
    out.update({f"n_{k}": v for k, v in counts.items()})
    out.update(
        subplans=subplans,
        initplans=initplans,
        max_cte_scans=float(max(cte_scans.values(), default=0)),
        ctes=float(len(cte_scans)),
    )
    return out


@dataclass(frozen=True)
class Featurizer:
    """Query shape + plan + plan structure + rule applicability + rules applied + step +
    workload knob."""

    max_steps: int = 3
    """Rewrite steps per episode (the step counter is a feature)."""
    version: int = VERSION
    """Layout version; a checkpoint from another version is refused."""
    rules: tuple[str, ...] = field(default=R.RULE_NAMES)
    """The actions, by rule name (default: the MDP's :data:`~.rules.RULES`; a model may be
    trained over its own set, e.g. with :data:`~.rules.MORE_RULES`, which its checkpoint
    then records)."""

    @property
    def actions(self) -> tuple[str, ...]:
        """The actions whose applicability and use are features (the rewrite rules)."""
        return self.rules

    @property
    def size(self) -> int:
        return (
            len(QUERY_KEYS)
            + len(PLAN_KEYS)
            + len(NODE_TYPES)
            + len(STRUCT_KEYS)
            + 2 * len(self.rules)
            + 2
        )

    def describe(self) -> dict[str, Any]:
        """Everything needed to rebuild this featurizer (goes into checkpoints)."""
        return {
            "version": self.version,
            "max_steps": self.max_steps,
            "rules": list(self.rules),
            "query_keys": list(QUERY_KEYS),
            "plan_keys": list(PLAN_KEYS),
            "node_types": list(NODE_TYPES),
            "struct_keys": list(STRUCT_KEYS),
            "size": self.size,
        }

    @staticmethod
    def from_description(d: Mapping[str, Any]) -> Featurizer:
        """The featurizer a checkpoint recorded, over the rules it was trained with."""
        rules = tuple(d.get("rules", []))
        unknown = [r for r in rules if r not in R.ALL_NAMES]
        if d.get("version") == VERSION and unknown:
            raise ValueError(
                f"the model acts over rule {unknown[0]!r}, which this build of rlsuite does not "
                "know: use it with the rlsuite that trained it, or retrain it over this build's "
                "rules (`qopt-bench rules` lists them)"
            )
        if d.get("version") != VERSION or not rules:
            raise ValueError(
                f"the model was trained with featurizer v{d.get('version')} over rules "
                f"{list(rules)}; this code has v{VERSION} over {list(R.ALL_NAMES)}. Retrain it."
            )
        return Featurizer(max_steps=int(d["max_steps"]), rules=rules)

    bounds: ClassVar[tuple[float, float]] = (-math.inf, math.inf)
    """Every feature is clipped to this range."""

    def plan_vector(self, plan: Mapping[str, Any]) -> list[float]:
        """The plan's part of the vector: costs and rows, node-type counts, structure."""
        pf = plan_features(plan)
        v = [pf[k] / 20.0 for k in PLAN_KEYS]
        v += [math.log1p(pf[f"n_{k}"]) for k in NODE_TYPES]
        return v + [math.log1p(pf[k]) for k in STRUCT_KEYS]

    def __call__(
        self,
        query: R.Query,
        plan: Mapping[str, Any],
        applicable: Mapping[str, Any],
        step: int,
        settings: Mapping[str, str] | None = None,
    ) -> np.ndarray:
        qf = query_features(query.expression)
        v = [math.log1p(float(qf[k])) for k in QUERY_KEYS] + self.plan_vector(plan)
        v += [1.0 if isinstance(applicable.get(n), R.Query) else 0.0 for n in self.actions]
        v += [1.0 if n in query.applied else 0.0 for n in self.actions]
        v.append(step / max(1, self.max_steps))
        knob = float((settings or {}).get("qopt.udf_cost", 0) or 0)
        v.append(math.log1p(knob) / 10.0)
        return np.clip(np.asarray(v, dtype=np.float32), *self.bounds)
