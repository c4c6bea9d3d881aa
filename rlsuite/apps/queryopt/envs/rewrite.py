"""Query rewriting as an MDP on a real PostgreSQL (the seed's "State: query plan; Action: xform").

Each episode takes one query of a workload and rewrites it for up to
``max_steps`` steps; the episode's reward is minus the runtime of the final
query on PostgreSQL.

States
    A float vector (:class:`~rlsuite.apps.queryopt.featurizer.Featurizer`): the
    query's shape from sqlglot (tables, join predicates, filters, group keys,
    aggregates, subqueries, UDF calls), PostgreSQL's ``EXPLAIN (FORMAT JSON)``
    of the current query (log cost, log estimated rows, node-type counts), which
    rules apply now, which were applied, the step, and the workload's UDF cost.

Actions
    ``Discrete(len(RULES) + 1)``: apply rule ``i`` of
    :data:`rlsuite.apps.queryopt.rules.RULES`, or STOP (the last action). A rule
    that does not apply leaves the query unchanged and costs
    ``invalid_action_penalty``.

Rewards
    0 until the episode ends; then ``-runtime`` in seconds of the final query,
    capped by ``timeout_ms`` (``reward="runtime"``), that runtime over PostgreSQL's own
    (``reward="relative"``: every query weighs the same), or ``-cost * cost_scale``
    from PostgreSQL's estimate without running it (``reward="cost"``: DQ's
    bootstrap). Runtimes are cached per (query, settings) in the env.

Termination
    STOP, or the ``max_steps``-th rewrite, terminates (the limit is part of the
    MDP, so nothing is bootstrapped past it); the final query is measured then.

Each env owns its own database session and closes it in :meth:`close`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from rlsuite.apps.queryopt import rules as R
from rlsuite.apps.queryopt.featurizer import Featurizer
from rlsuite.apps.queryopt.rewriter import catalog


class RewriteEpisode:
    """An episode of rewrites, shared by the query-rewrite envs of every engine: reset
    picks a query (skipping those the rules cannot parse), each step applies one action
    of the env's table (``action_names``, ``stop_action``) or stops, and the final
    query's reward comes from the env's ``_final_reward``."""

    action_names: tuple[str, ...]
    stop_action: int

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        if options and "sql" in options:
            sql = options["sql"]
            self._parse(sql)  # an unsupported query given explicitly is the caller's error
        else:
            usable = [q for q in self.queries if q not in self._unsupported]
            while True:
                if not usable:
                    raise ValueError(
                        f"none of the {len(self.queries)} queries can be rewritten: "
                        f"{next(iter(self._unsupported.values()), '')}"
                    )
                sql = usable[int(self.np_random.integers(len(usable)))]
                try:
                    self._parse(sql)
                    break
                except R.UnsupportedQuery as e:  # skipped for the rest of this env's life
                    self._unsupported[sql] = str(e)
                    usable.remove(sql)
        self.original = self._parsed[sql]
        self.query = self.original
        self.steps = 0
        self._last = {}
        return self._obs(), {"sql": sql}

    def step(self, action: int):
        if self.query is None:
            raise RuntimeError("call reset() before step()")
        a = int(action)
        if not 0 <= a <= self.stop_action:
            raise ValueError(f"action must be in [0, {self.stop_action}], got {action}")
        reward, info = 0.0, {}
        terminated = a == self.stop_action
        if not terminated:
            nxt = self._applicable.get(self.action_names[a])
            if isinstance(nxt, R.Query):
                self.query = nxt
            else:
                reward -= self.invalid_action_penalty
                info["invalid"] = nxt
        self.steps += 1
        # The step limit is part of the MDP (the step counter is in the state) and the final
        # query's runtime is the whole return: reaching it terminates, so DQN does not
        # bootstrap a value past the end (truncation would add gamma * Q(next) to rewrites).
        terminated = terminated or self.steps >= self.max_steps
        truncated = False
        if terminated:
            reward += self._final_reward()
            info.update(self._last)
        return self._obs(), float(reward), terminated, truncated, info


class QueryRewriteEnv(RewriteEpisode, gym.Env):
    """Rewrite one query of a workload per episode; reward = -runtime of the result."""

    metadata = {"render_modes": []}
    action_names = R.RULE_NAMES
    stop_action = R.STOP

    def __init__(
        self,
        *,
        dsn: str | None = None,
        workload: str = "joins",
        workload_config: Mapping[str, Any] | None = None,
        split: str = "train",
        num_queries: int = 50,
        query_seed: int = 0,
        queries: Sequence[str] | None = None,
        max_steps: int = 3,
        timeout_ms: int = 1000,
        reward: str = "runtime",
        cost_scale: float = 1e-5,
        invalid_action_penalty: float = 0.01,
        measure_baseline: bool = False,
        worker_index: int = 0,
        vector_index: int = 0,
    ):
        from rlsuite.apps.queryopt import workloads

        if reward not in ("runtime", "relative", "cost"):
            raise ValueError(f"reward must be 'runtime', 'relative' or 'cost', got {reward!r}")
        if max_steps < 1:
            raise ValueError(f"max_steps must be >= 1, got {max_steps}")
        if timeout_ms < 1:
            raise ValueError(f"timeout_ms must be >= 1, got {timeout_ms}")
        self.workload = workloads.get(workload, **dict(workload_config or {}))
        self.schema = self.workload.schema
        self.dsn = dsn
        self.split, self.num_queries, self.query_seed = split, int(num_queries), int(query_seed)
        self._queries = list(queries) if queries else None
        self.max_steps, self.timeout_ms = int(max_steps), int(timeout_ms)
        self.reward_kind, self.cost_scale = reward, float(cost_scale)
        self.invalid_action_penalty = float(invalid_action_penalty)
        self.measure_baseline = bool(measure_baseline)
        self.featurizer = Featurizer(max_steps=self.max_steps)
        self.observation_space = gym.spaces.Box(0.0, 100.0, (self.featurizer.size,), np.float32)
        self.action_space = gym.spaces.Discrete(len(R.RULES) + 1)
        self._db = None
        self._runtime: dict[str, float] = {}
        self._plans: dict[str, dict] = {}
        self._parsed: dict[str, R.Query] = {}
        self._unsupported: dict[str, str] = {}
        self._applicable_cache: dict[str, dict[str, R.Query | str]] = {}
        self._obs_cache: dict[tuple[str, int], np.ndarray] = {}
        self.query: R.Query | None = None
        self._last: dict[str, float] = {}

    # ------------------------------------------------------------- plumbing
    @property
    def db(self):
        if self._db is None:
            from rlsuite.apps.queryopt.engines import open_engine
            from rlsuite.apps.queryopt.server import EmbeddedServer

            self._db = open_engine("postgres", dsn=self.dsn or EmbeddedServer().dsn)
        return self._db

    @property
    def queries(self) -> list[str]:
        if self._queries is None:
            self._queries = self.workload.queries(self.split, self.num_queries, self.query_seed)
        return self._queries

    @property
    def settings(self) -> dict[str, str]:
        return dict(self.workload.settings())

    def _run_settings(self, q: R.Query) -> dict[str, str]:
        return {**self.settings, **q.settings_dict}

    def plan(self, q: R.Query) -> dict:
        k = q.key()
        if k not in self._plans:
            self._plans[k] = self.db.explain(q.sql(), self.schema, self._run_settings(q))
        return self._plans[k]

    def runtime(self, q: R.Query) -> float:
        """Seconds to run ``q`` (capped by the timeout; failures count as the timeout)."""
        k = q.key()
        if k not in self._runtime:
            try:
                res = self.db.run(q.sql(), self.schema, self.timeout_ms, self._run_settings(q))
                self._runtime[k] = min(res.runtime_s, self.timeout_ms / 1000.0)
            except Exception:  # noqa: BLE001 - a failing rewrite is as bad as the timeout
                self._runtime[k] = self.timeout_ms / 1000.0
        return self._runtime[k]

    def _parse(self, sql: str) -> R.Query:
        if sql not in self._parsed:
            self._parsed[sql] = R.Query.parse(sql, catalog(self.db, self.schema))
        return self._parsed[sql]

    def _obs(self) -> np.ndarray:
        assert self.query is not None
        k = self.query.key()
        if k not in self._applicable_cache:
            self._applicable_cache[k] = R.applicable(self.query)
        self._applicable = self._applicable_cache[k]
        ok = (k, self.steps)
        if ok not in self._obs_cache:
            v = self.featurizer(
                self.query, self.plan(self.query), self._applicable, self.steps, self.settings
            )
            self._obs_cache[ok] = np.clip(v, 0.0, 100.0)
        return self._obs_cache[ok].copy()

    def _final_reward(self) -> float:
        q = self.query
        assert q is not None
        if self.reward_kind == "cost":
            cost = float(self.plan(q)["Plan"]["Total Cost"])
            self._last = {"cost": cost}
            return -cost * self.cost_scale
        t = self.runtime(q)
        self._last = {"runtime_s": t}
        if self.measure_baseline or self.reward_kind == "relative":
            base = self.runtime(self.original)
            self._last.update(baseline_runtime_s=base, speedup=base / max(t, 1e-6))
            if self.reward_kind == "relative":
                return -t / max(base, 1e-4)
        return -t

    def observe(self, sql: str, applied: Sequence[str]) -> list[np.ndarray]:
        """The states along the rules ``applied`` to ``sql``: before each rule and after the
        last (plans only, nothing runs); stops early at a rule that does not apply."""
        obs, _ = self.reset(seed=0, options={"sql": sql})
        out = [obs]
        for name in applied:
            nxt = self._applicable.get(name)
            if not isinstance(nxt, R.Query):
                break
            self.query, self.steps = nxt, self.steps + 1
            out.append(self._obs())
        return out

    def episode_metrics(self) -> dict[str, float]:
        """Runtime of the final query (and, with ``measure_baseline``, PostgreSQL's and the speed-up)."""
        out = {k: float(v) for k, v in self._last.items()}
        out["rewrites"] = float(len(self.query.applied)) if self.query else math.nan
        return out

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
