"""Query rewriting as an MDP on Spark SQL: the PostgreSQL env's shape, Spark's actions and plans.

Each episode takes one query of a workload and rewrites it for up to ``max_steps``
steps; the final query runs on Spark and its runtime is compared with Spark's own plan
of the original (Catalyst and adaptive execution on, Spark's defaults).

States
    A float vector (:class:`~rlsuite.apps.queryopt.spark_rules.SparkFeaturizer`): the
    query's shape from sqlglot, Spark's ``EXPLAIN COST`` of the current query (log
    estimated size and rows, physical operator counts), which actions apply now, which
    were applied, the step, and the workload's UDF cost.

Actions
    ``Discrete(len(ACTIONS) + 1)``: action ``i`` of
    :data:`rlsuite.apps.queryopt.spark_rules.ACTIONS` (a logical rule, a join hint on
    one relation, or an adaptive-execution switch), or STOP (the last action). An
    action that does not apply leaves the query unchanged and costs
    ``invalid_action_penalty``.

Rewards
    0 until the episode ends; then minus the final query's runtime over the original's
    (``reward="relative"``, the default: every query weighs the same) or minus its
    seconds (``reward="runtime"``). Runtimes are capped by ``timeout_ms`` and are the
    fastest of ``repeat`` runs, cached per (query, settings). A final query that fails
    or returns rows other than the original's (compared as multisets) gets the
    timeout's reward, so the policy learns never to choose it.

Termination
    STOP, or the ``max_steps``-th rewrite.

Each env owns its own :class:`~rlsuite.apps.queryopt.engines.spark.SparkEngine` (a process
shares one Spark session; the last user stops it) and closes it in :meth:`close`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from rlsuite.apps.queryopt import rules as R
from rlsuite.apps.queryopt import spark_rules as S
from rlsuite.apps.queryopt.envs.rewrite import RewriteEpisode
from rlsuite.apps.queryopt.verify import same_rows


class SparkRewriteEnv(RewriteEpisode, gym.Env):
    """Rewrite one query of a workload per episode on Spark; reward = -relative runtime."""

    metadata = {"render_modes": []}
    action_names = S.ACTION_NAMES
    stop_action = S.STOP

    def __init__(
        self,
        *,
        master: str = "local[*]",
        spark_dir: str | None = None,
        workload: str = "joins",
        workload_config: Mapping[str, Any] | None = None,
        split: str = "train",
        num_queries: int = 20,
        query_seed: int = 0,
        queries: Sequence[str] | None = None,
        max_steps: int = 3,
        timeout_ms: int = 10_000,
        reward: str = "relative",
        repeat: int = 2,
        invalid_action_penalty: float = 0.01,
        worker_index: int = 0,
        vector_index: int = 0,
    ):
        from rlsuite.apps.queryopt import workloads

        if reward not in ("runtime", "relative"):
            raise ValueError(f"reward must be 'runtime' or 'relative', got {reward!r}")
        for k, v in (("max_steps", max_steps), ("timeout_ms", timeout_ms), ("repeat", repeat)):
            if int(v) < 1:
                raise ValueError(f"{k} must be >= 1, got {v}")
        self.workload = workloads.get(workload, **dict(workload_config or {}))
        self.schema = self.workload.schema
        self.master, self.spark_dir = master, spark_dir
        self.split, self.num_queries, self.query_seed = split, int(num_queries), int(query_seed)
        self._queries = list(queries) if queries else None
        self.max_steps, self.timeout_ms = int(max_steps), int(timeout_ms)
        self.reward_kind, self.repeat = reward, int(repeat)
        self.invalid_action_penalty = float(invalid_action_penalty)
        self.featurizer = S.SparkFeaturizer(max_steps=self.max_steps)
        self.observation_space = gym.spaces.Box(0.0, 100.0, (self.featurizer.size,), np.float32)
        self.action_space = gym.spaces.Discrete(len(S.ACTIONS) + 1)
        self._engine = None
        self._runtime: dict[str, float] = {}
        self._rows: dict[str, list | None] = {}
        self._plans: dict[str, dict] = {}
        self._parsed: dict[str, R.Query] = {}
        self._unsupported: dict[str, str] = {}
        self._applicable_cache: dict[str, dict[str, R.Query | str]] = {}
        self.query: R.Query | None = None
        self.original: R.Query | None = None
        self._last: dict[str, float] = {}

    # ------------------------------------------------------------- plumbing
    @property
    def engine(self):
        if self._engine is None:
            from rlsuite.apps.queryopt.engines import open_engine

            self._engine = open_engine("spark", master=self.master, home=self.spark_dir)
        return self._engine

    @property
    def queries(self) -> list[str]:
        if self._queries is None:
            self._queries = S.spark_queries(
                self.workload, self.split, self.num_queries, self.query_seed
            )
        return self._queries

    @property
    def settings(self) -> dict[str, str]:
        return dict(self.workload.settings())

    def _run_settings(self, q: R.Query) -> dict[str, str]:
        return {**self.settings, **q.settings_dict}

    def plan(self, q: R.Query) -> dict:
        k = S.key(q)
        if k not in self._plans:
            try:
                self._plans[k] = self.engine.explain(
                    S.spark_sql(q), self.schema, self._run_settings(q)
                )
            except Exception:  # noqa: BLE001 - a rewrite Spark cannot plan: featurized as empty
                self._plans[k] = {}
        return self._plans[k]

    def measure(self, q: R.Query) -> tuple[float, list | None]:
        """Fastest of ``repeat`` runs (capped by the timeout) and the rows (None: failed)."""
        k = S.key(q)
        if k not in self._runtime:
            best, rows = self.timeout_ms / 1000.0, None
            for _ in range(self.repeat):
                try:
                    res = self.engine.run(
                        S.spark_sql(q), self.schema, self.timeout_ms, self._run_settings(q)
                    )
                except Exception:  # noqa: BLE001 - a failing rewrite is as bad as the timeout
                    break
                if res.timed_out:
                    break
                if res.runtime_s <= best:
                    best, rows = res.runtime_s, res.rows
            self._runtime[k], self._rows[k] = best, rows
        return self._runtime[k], self._rows[k]

    def _parse(self, sql: str) -> R.Query:
        if sql not in self._parsed:
            self._parsed[sql] = S.parse(sql, S.spark_catalog(self.engine, self.schema))
        return self._parsed[sql]

    def _obs(self) -> np.ndarray:
        assert self.query is not None
        k = S.key(self.query)
        if k not in self._applicable_cache:
            self._applicable_cache[k] = S.applicable(self.query)
        self._applicable = self._applicable_cache[k]
        return self.featurizer(
            self.query, self.plan(self.query), self._applicable, self.steps, self.settings
        )

    def _final_reward(self) -> float:
        assert self.query is not None and self.original is not None
        base, base_rows = self.measure(self.original)
        t, rows = self.measure(self.query)
        cap = self.timeout_ms / 1000.0
        same = self.query is self.original or (
            rows is not None and base_rows is not None and same_rows(base_rows, rows)
        )
        if not same:
            t = cap
        self._last = {
            "runtime_s": t,
            "baseline_runtime_s": base,
            "speedup": base / max(t, 1e-6),
            "rows_match": float(same),
        }
        if self.reward_kind == "relative":
            return -t / max(base, 1e-4)
        return -t

    def episode_metrics(self) -> dict[str, float]:
        out = {k: float(v) for k, v in self._last.items()}
        out["rewrites"] = float(len(self.query.applied)) if self.query else math.nan
        return out

    def close(self) -> None:
        if self._engine is not None:
            self._engine.close()
            self._engine = None
