"""Query rewriting as an MDP on a real engine (the seed's "State: query plan; Action: xform").

Each episode takes one query of a workload and rewrites it for up to ``max_steps``
steps; the episode's reward comes from running the final query on the engine
(PostgreSQL or Spark SQL, ``engine=``). What differs between engines (actions,
featurizer, row checks) is the engine's :class:`~rlsuite.apps.queryopt.spaces.RewriteSpace`;
the episode is the same. ``rlsuite/QueryRewrite-v0`` is this env on PostgreSQL,
``rlsuite/SparkQueryRewrite-v0`` on Spark.

States
    A float vector: the query's shape from sqlglot (tables, join predicates, filters,
    group keys, aggregates, subqueries, UDF calls), the engine's plan of the current
    query (PostgreSQL's ``EXPLAIN (FORMAT JSON)``: log cost, log estimated rows,
    node-type counts, :class:`~rlsuite.apps.queryopt.featurizer.Featurizer`; Spark's
    ``EXPLAIN COST``: log estimated size and rows, physical operator counts,
    :class:`~rlsuite.apps.queryopt.spark_rules.SparkFeaturizer`), which actions apply now,
    which were applied, the step, and the workload's UDF cost.

Actions
    ``Discrete(len(actions) + 1)``: apply action ``i`` of the engine's table, or STOP
    (the last action). PostgreSQL's are the rules of
    :data:`rlsuite.apps.queryopt.rules.RULES` (or a model's own list of rules, ``rules=``,
    which its checkpoint records); Spark's are
    :data:`rlsuite.apps.queryopt.spark_rules.ACTIONS` (the logical rules, a join hint on
    one relation, or an adaptive-execution switch). An action that does not apply leaves
    the query unchanged and costs ``invalid_action_penalty``.

Rewards
    0 until the episode ends; then ``-runtime`` in seconds of the final query, capped by
    ``timeout_ms`` (``reward="runtime"``, PostgreSQL's default), that runtime over the
    engine's own plan's (``reward="relative"``, Spark's default: every query weighs the
    same), or, on PostgreSQL, ``-cost * cost_scale`` from its estimate without running it
    (``reward="cost"``: DQ's bootstrap). A runtime is the fastest of ``repeat`` runs
    (1 on PostgreSQL, 2 on Spark), cached per (query, settings) in the env. On Spark a
    final query that fails or returns rows other than the original's (compared as
    multisets) gets the timeout's reward, so the policy learns never to choose it.

Termination
    STOP, or the ``max_steps``-th rewrite, terminates (the limit is part of the MDP, so
    nothing is bootstrapped past it); the final query is measured then.

Each env owns its own engine session (a Spark process shares one Spark session; the
last user stops it) and closes it in :meth:`close`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from rlsuite.apps.queryopt import rules as R
from rlsuite.apps.queryopt.envs import step_action
from rlsuite.apps.queryopt.spaces import space_of
from rlsuite.apps.queryopt.verify import same_rows


class QueryRewriteEnv(gym.Env):
    """Rewrite one query of a workload per episode on ``engine``; reward = -(relative) runtime."""

    metadata = {"render_modes": []}

    def __init__(
        self,
        *,
        engine: str = "postgres",
        dsn: str | None = None,
        master: str | None = None,
        spark_dir: str | None = None,
        workload: str = "joins",
        workload_config: Mapping[str, Any] | None = None,
        split: str = "train",
        num_queries: int | None = None,
        query_seed: int = 0,
        queries: Sequence[str] | None = None,
        max_steps: int = 3,
        timeout_ms: int | None = None,
        reward: str | None = None,
        repeat: int | None = None,
        cost_scale: float = 1e-5,
        invalid_action_penalty: float = 0.01,
        measure_baseline: bool = False,
        rules: Sequence[str] | None = None,
        worker_index: int = 0,
        vector_index: int = 0,
    ):
        """``dsn`` is PostgreSQL's (default: the embedded server); ``master`` and
        ``spark_dir`` are Spark's. ``num_queries``, ``timeout_ms``, ``reward`` and
        ``repeat`` left out are the engine's defaults (PostgreSQL: 50, 1000, runtime, 1;
        Spark: 20, 10000, relative, 2). ``rules`` (PostgreSQL): the actions, by rule name,
        when a model has its own set (default: :data:`~rlsuite.apps.queryopt.rules.RULES`)."""
        from rlsuite.apps.queryopt import workloads

        self.space = space_of(engine)
        d = self.space.defaults
        reward = d["reward"] if reward is None else reward
        if reward not in self.space.rewards:
            kinds = " or ".join(repr(k) for k in self.space.rewards)
            raise ValueError(f"reward must be {kinds} on {self.space.label}, got {reward!r}")
        num_queries = d["num_queries"] if num_queries is None else num_queries
        timeout_ms = d["timeout_ms"] if timeout_ms is None else timeout_ms
        repeat = d["repeat"] if repeat is None else repeat
        for k, v in (("max_steps", max_steps), ("timeout_ms", timeout_ms), ("repeat", repeat)):
            if int(v) < 1:
                raise ValueError(f"{k} must be >= 1, got {v}")
        self.workload = workloads.get(workload, **dict(workload_config or {}))
        self.schema = self.workload.schema
        self.options = {"dsn": dsn, "master": master, "spark_dir": spark_dir}
        self.split, self.num_queries, self.query_seed = split, int(num_queries), int(query_seed)
        self._queries = list(queries) if queries else None
        self.max_steps, self.timeout_ms = int(max_steps), int(timeout_ms)
        self.reward_kind, self.cost_scale, self.repeat = reward, float(cost_scale), int(repeat)
        self.invalid_action_penalty = float(invalid_action_penalty)
        self.measure_baseline = bool(measure_baseline)
        self.action_names = self.space.actions(rules)
        self._own = None if self.action_names == tuple(self.space.names) else self.action_names
        self.stop_action = len(self.action_names)
        self.featurizer = self.space.featurizer(self.max_steps, self._own)
        self.observation_space = gym.spaces.Box(0.0, 100.0, (self.featurizer.size,), np.float32)
        self.action_space = gym.spaces.Discrete(self.stop_action + 1)
        self._db = None
        self._runtime: dict[str, float] = {}
        self._rows: dict[str, list | None] = {}
        self._plans: dict[str, dict] = {}
        self._parsed: dict[str, R.Query] = {}
        self._unsupported: dict[str, str] = {}
        self._applicable_cache: dict[str, dict[str, R.Query | str]] = {}
        self._obs_cache: dict[tuple[str, int], np.ndarray] = {}
        self.query: R.Query | None = None
        self.original: R.Query | None = None
        self._last: dict[str, float] = {}

    # ------------------------------------------------------------- plumbing
    @property
    def db(self):
        """This env's engine session (opened on first use)."""
        if self._db is None:
            self._db = self.space.open(**self.options)
        return self._db

    @property
    def queries(self) -> list[str]:
        if self._queries is None:
            self._queries = self.space.queries(
                self.workload, self.split, self.num_queries, self.query_seed
            )
        return self._queries

    @property
    def settings(self) -> dict[str, str]:
        return dict(self.workload.settings())

    def _run_settings(self, q: R.Query) -> dict[str, str]:
        return {**self.settings, **q.settings_dict}

    def plan(self, q: R.Query) -> dict:
        k = self.space.key(q)
        if k not in self._plans:
            self._plans[k] = self.space.plan(self.db, q, self.schema, self._run_settings(q))
        return self._plans[k]

    def measure(self, q: R.Query) -> tuple[float, list | None]:
        """Fastest of ``repeat`` runs (capped by the timeout; a failure counts as the
        timeout) and its rows (None: failed or timed out)."""
        k = self.space.key(q)
        if k not in self._runtime:
            best, rows = self.timeout_ms / 1000.0, None
            for _ in range(self.repeat):
                try:
                    res = self.db.run(
                        self.space.sql(q), self.schema, self.timeout_ms, self._run_settings(q)
                    )
                except Exception:  # noqa: BLE001 - a failing rewrite is as bad as the timeout
                    break
                if res.timed_out:
                    break
                if res.runtime_s <= best:
                    best, rows = res.runtime_s, res.rows
            self._runtime[k], self._rows[k] = best, rows
        return self._runtime[k], self._rows[k]

    def runtime(self, q: R.Query) -> float:
        """Seconds to run ``q`` (:meth:`measure`)."""
        return self.measure(q)[0]

    def _parse(self, sql: str) -> R.Query:
        if sql not in self._parsed:
            self._parsed[sql] = self.space.parse(self.db, self.schema, sql)
        return self._parsed[sql]

    def _obs(self) -> np.ndarray:
        assert self.query is not None
        k = self.space.key(self.query)
        if k not in self._applicable_cache:
            self._applicable_cache[k] = self.space.applicable(self.query, self._own)
        self._applicable = self._applicable_cache[k]
        ok = (k, self.steps)
        if ok not in self._obs_cache:
            v = self.featurizer(
                self.query, self.plan(self.query), self._applicable, self.steps, self.settings
            )
            self._obs_cache[ok] = np.clip(v, 0.0, 100.0)
        return self._obs_cache[ok].copy()

    # ------------------------------------------------------------- episode
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """A query of the workload (``options={"sql": ...}``: that one); queries the
        actions cannot parse are skipped for the rest of this env's life."""
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
                except R.UnsupportedQuery as e:
                    self._unsupported[sql] = str(e)
                    usable.remove(sql)
        self.original = self._parsed[sql]
        self.query = self.original
        self.steps = 0
        self._last = {}
        return self._obs(), {"sql": sql}

    def step(self, action: int):
        a = step_action(action, self.stop_action, self.query is not None)
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

    def advance(self, q: R.Query) -> np.ndarray:
        """Take the rewrite ``q`` (one of ``_applicable``'s) as the next step without
        measuring anything; the new state."""
        self.query, self.steps = q, self.steps + 1
        return self._obs()

    def _final_reward(self) -> float:
        q = self.query
        assert q is not None and self.original is not None
        if self.reward_kind == "cost":
            cost = float(self.db.estimated_cost(self.plan(q)))
            self._last = {"cost": cost}
            return -cost * self.cost_scale
        if self.space.check_rows:
            base, base_rows = self.measure(self.original)
        t, rows = self.measure(q)
        self._last = {"runtime_s": t}
        if self.space.check_rows:
            same = q is self.original or (
                rows is not None and base_rows is not None and same_rows(base_rows, rows)
            )
            if not same:
                t = self.timeout_ms / 1000.0
            self._last = {
                "runtime_s": t,
                "baseline_runtime_s": base,
                "speedup": base / max(t, 1e-6),
                "rows_match": float(same),
            }
        elif self.measure_baseline or self.reward_kind == "relative":
            base = self.runtime(self.original)
            self._last.update(baseline_runtime_s=base, speedup=base / max(t, 1e-6))
        if self.reward_kind == "relative":
            return -t / max(base, 1e-4)
        return -t

    def observe(self, sql: str, applied: Sequence[str]) -> list[np.ndarray]:
        """The states along the actions ``applied`` to ``sql``: before each and after the
        last (plans only, nothing runs); stops early at an action that does not apply."""
        obs, _ = self.reset(seed=0, options={"sql": sql})
        out = [obs]
        for name in applied:
            nxt = self._applicable.get(name)
            if not isinstance(nxt, R.Query):
                break
            out.append(self.advance(nxt))
        return out

    def episode_metrics(self) -> dict[str, float]:
        """Runtime of the final query (and, when measured, the engine's own plan's and the
        speed-up; on Spark whether the rows matched)."""
        out = {k: float(v) for k, v in self._last.items()}
        out["rewrites"] = float(len(self.query.applied)) if self.query else math.nan
        return out

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
