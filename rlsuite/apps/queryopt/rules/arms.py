"""Planner arms (Bao's): the query unchanged, run with one ``enable_*`` switch off."""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from rlsuite.apps.queryopt.rules.base import Catalog


def arm(name: str, settings: dict[str, str]) -> Callable:
    def fn(e: exp.Expression, catalog: Catalog):
        return e, dict(settings)

    fn.__name__ = name
    return fn


# The registry: an action's number is its index here; STOP is len(RULES).
