"""The swap guard of online learning: a new model against the current one, on the shapes
seen recently, in predicted runtime relative to the standard plan.

Pure functions over replayed experience and a model's Q-values. The retrain process runs
the guard on its candidate; the online learner, which starts that process, only reads the
verdict. Kept in a module of its own so that neither of the two imports the other.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

Applied = tuple[str, ...]
"""The rewrite rules a decision applied, in order (``()``: the standard plan)."""


def walk(
    values: Callable[[Any], Any],
    states: Mapping[Applied, Any],
    max_steps: int,
    actions: Sequence[str] = (),
) -> tuple[Applied, float]:
    """A model's greedy decision over the stored states of one shape, and its Q-value
    of the last action (the model's own prediction, minus the relative runtime).
    ``actions``: the model's rules, in order (empty: the MDP's
    :data:`~rlsuite.apps.queryopt.rules.RULES`); STOP comes after the last."""
    from rlsuite.apps.queryopt import rules as R

    names = tuple(actions) or R.RULE_NAMES
    stop = len(names)
    applied: Applied = ()
    q_last = math.nan
    for _ in range(max_steps):
        q = values(states[applied])
        if len(q) != stop + 1:
            raise ValueError(
                f"the model gives {len(q)} action values, but its actions are {stop} rules and STOP"
            )
        a = int(max(range(len(q)), key=lambda i: q[i]))
        q_last = float(q[a])
        if not math.isfinite(q_last):
            raise FloatingPointError(f"the model's Q-values are not finite: {list(q)}")
        if a == stop:
            break
        if names[a] in applied:  # not applicable again; the stored states do not say which
            # others apply (the rewriter takes its best applicable one), so the walk stops here
            break
        nxt = (*applied, names[a])
        if nxt not in states:
            return nxt, q_last
        applied = nxt
    return applied, q_last


def guard(
    shapes: Mapping[str, Any],
    weights: Mapping[str, float],
    current: Mapping[str, Applied],
    new_values: Callable[[Any], Any],
    max_steps: int,
    margin: float,
    max_ratio: float = 10.0,
    actions: Sequence[str] = (),
) -> dict[str, Any]:
    """Compare a new model with the current one on recently seen shapes.

    ``shapes``: :class:`~rlsuite.apps.queryopt.envs.replay.ShapeExperience` per shape;
    ``current``: the current model's served decision per shape; ``new_values``: the new
    model's Q-values of a state, over ``actions`` (its rules, in order; empty: the MDP's
    default). Predicted runtime (in standard-plan units) of a decision:
    its measured ratio on the shape, else (new model only) its own Q-value, else 1.
    """
    rows, cur_total, new_total = [], 0.0, 0.0
    for shp, sx in shapes.items():
        if () not in sx.states or not sx.ms.get(()):
            continue
        w = float(weights.get(shp, 1.0))
        cur = tuple(current.get(shp, ()))
        new, q = walk(new_values, sx.states, max_steps, actions)
        p_cur = sx.ratio(cur, max_ratio)
        p_cur = 1.0 if p_cur is None else p_cur
        p_new = sx.ratio(new, max_ratio)
        if p_new is None:
            p_new = min(max_ratio, max(0.0, -q)) if math.isfinite(q) else 1.0
        cur_total += w * p_cur
        new_total += w * p_new
        rows.append(
            {
                "shape": shp,
                "current": list(cur),
                "new": list(new),
                "current_pred": p_cur,
                "new_pred": p_new,
            }
        )
    passed = bool(rows) and new_total <= (1.0 + margin) * cur_total
    return {
        "passed": passed,
        "shapes": len(rows),
        "current_predicted": cur_total,
        "new_predicted": new_total,
        "margin": margin,
        "rows": rows,
    }
