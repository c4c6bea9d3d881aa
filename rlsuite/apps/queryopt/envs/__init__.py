"""Register the queryopt envs (nothing else happens at import: no server starts)."""

from typing import Any

from rlsuite.platform import envs

ENVS = {
    "rlsuite/QueryRewrite-v0": {
        "entry_point": ".rewrite:QueryRewriteEnv",
        "default_config": {"workload": "joins"},
        "description": "rewrite SQL queries on PostgreSQL with semantics-preserving rules; "
        "reward -runtime",
    },
    "rlsuite/QueryRewriteReplay-v0": {
        "entry_point": ".replay:ReplayRewriteEnv",
        "default_config": {"workload": "joins"},
        "description": "rewrite decisions replayed from pg_qopt's experience store; "
        "reward -relative runtime",
    },
    "rlsuite/SparkQueryRewrite-v0": {
        "entry_point": ".rewrite:QueryRewriteEnv",
        "default_config": {"workload": "joins", "engine": "spark"},
        "description": "rewrite SQL queries on Spark SQL (rules, join hints, AQE switches); "
        "reward -relative runtime",
    },
}
"""The queryopt envs, by id (the keywords of :func:`rlsuite.platform.envs.register`)."""

envs.register_table(__name__, ENVS)


def step_action(action: Any, stop: int, started: bool) -> int:
    """A step's ``action`` as an index in ``[0, stop]`` (``stop``: the STOP action);
    raises when the episode has not ``started`` or the action is out of range."""
    if not started:
        raise RuntimeError("call reset() before step()")
    a = int(action)
    if not 0 <= a <= stop:
        raise ValueError(f"action must be in [0, {stop}], got {action}")
    return a
