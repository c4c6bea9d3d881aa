"""Train the DQN rewriter on Spark SQL through the platform's ``replay`` plan, and use it.

The same loop as :mod:`rlsuite.apps.queryopt.train` with Spark's env
(``rlsuite/SparkQueryRewrite-v0``): :class:`SparkTrainConfig` (frozen, validated) ->
:func:`make_plan` -> :func:`train` (``queryopt.json`` beside the checkpoint carries the
Spark featurizer). The env runs in the driver by default (``num_env_runners = 0``):
each env runner process would start its own Spark JVM. :class:`LearnedSparkRewriter`
loads a checkpoint and rewrites SQL; every rewrite's rows are compared with the
original's on Spark, and anything that fails falls back to the original query.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from rlsuite.apps.queryopt import rules as R
from rlsuite.apps.queryopt import spark_rules as S
from rlsuite.apps.queryopt.rewriter import Decision

ENV_ID = "rlsuite/SparkQueryRewrite-v0"
SIDECAR = "queryopt.json"


@dataclass(frozen=True)
class SparkTrainConfig:
    """How to train the rewriter on Spark."""

    master: str = "local[*]"
    """Spark master: ``local[*]`` (embedded) or ``spark://HOST:PORT``."""
    spark_dir: str | None = None
    """The private directory of Spark's data and scratch files (default: the engine's)."""
    workload: str = "joins"
    """``joins``, ``udf`` or ``tpch``."""
    workload_config: Mapping[str, Any] = field(default_factory=dict)
    """Keyword arguments of the workload (e.g. ``udf_cost``)."""
    queries: tuple[str, ...] = ()
    """Explicit training queries; empty: ``num_queries`` generated ``train`` queries."""
    num_queries: int = 20
    """Generated training queries when ``queries`` is empty."""
    query_seed: int = 0
    """Seed of the query generator."""
    max_steps: int = 2
    """Rewrites per episode."""
    timeout_ms: int = 10_000
    """Runtime cap while training (a query past it is cancelled)."""
    reward: str = "relative"
    """``relative`` (-runtime / Spark's own plan's runtime) or ``runtime`` (-seconds)."""
    repeat: int = 2
    """Runs per measured query; the fastest counts (Spark's timings are noisy)."""
    iterations: int = 10
    """Training iterations of the platform's loop."""
    env_steps_per_iteration: int = 100
    """Env steps sampled per iteration."""
    num_env_runners: int = 0
    """Env runners; 0 runs the env in the driver (one Spark JVM)."""
    hidden: tuple[int, int] = (64, 64)
    """The DQN's two hidden layers."""
    lr: float = 1e-3
    """Learning rate."""
    gamma: float = 0.9
    """Discount (episodes are a few steps long)."""
    train_batch_size: int = 32
    """Transitions per update."""
    learning_starts: int = 100
    """Env steps before the first update."""
    epsilon_timesteps: int = 600
    """Env steps over which exploration decays."""
    target_update_freq: int = 100
    """Env steps between target-network syncs."""
    seed: int = 0
    """Seed of RLlib and the env."""

    def validate(self) -> None:
        if self.workload not in ("joins", "udf", "tpch"):
            raise ValueError(f"workload must be joins, udf or tpch, got {self.workload!r}")
        if self.reward not in ("runtime", "relative"):
            raise ValueError(f"reward must be runtime or relative, got {self.reward!r}")
        if len(self.hidden) != 2:
            raise ValueError(f"the DQN has 2 hidden layers; hidden={self.hidden!r}")
        for k in (
            "num_queries",
            "max_steps",
            "timeout_ms",
            "iterations",
            "train_batch_size",
            "repeat",
            "env_steps_per_iteration",
        ):
            if int(getattr(self, k)) < 1:
                raise ValueError(f"{k} must be >= 1, got {getattr(self, k)}")
        if self.num_env_runners < 0:
            raise ValueError("num_env_runners must be >= 0")

    def env_config(self) -> dict[str, Any]:
        cfg: dict[str, Any] = dict(
            master=self.master,
            spark_dir=self.spark_dir,
            workload=self.workload,
            workload_config=dict(self.workload_config),
            split="train",
            num_queries=self.num_queries,
            query_seed=self.query_seed,
            max_steps=self.max_steps,
            timeout_ms=self.timeout_ms,
            reward=self.reward,
            repeat=self.repeat,
        )
        if self.queries:
            cfg["queries"] = list(self.queries)
        return cfg


def make_plan(cfg: SparkTrainConfig):
    """The platform's ``replay`` plan (DQN) for this config: the PostgreSQL trainer's."""
    from rlsuite.apps.queryopt.train import dqn_plan

    cfg.validate()
    return dqn_plan(ENV_ID, cfg)


def train(cfg: SparkTrainConfig, run_dir: str, resume: bool = False, progress: bool = True):
    """Train and write ``queryopt.json`` (Spark featurizer, config) next to the checkpoints."""
    from rlsuite.platform import training

    plan = make_plan(cfg)
    res = training.train(
        plan,
        iterations=cfg.iterations,
        run_dir=run_dir,
        resume=resume,
        progress=progress,
        checkpoint_every=max(1, cfg.iterations),
    )
    sidecar = {
        "engine": "spark",
        "featurizer": S.SparkFeaturizer(max_steps=cfg.max_steps).describe(),
        "train_config": asdict(cfg),
        "time": time.time(),
    }
    for d in {res.checkpoint, os.path.abspath(run_dir)}:
        with open(os.path.join(d, SIDECAR), "w") as f:
            json.dump(sidecar, f, indent=2, default=str)
    return res


class LearnedSparkRewriter:
    """A :class:`~rlsuite.apps.queryopt.rewriter.Rewriter` on Spark run by a trained model.

    The chosen rewrite is used only when Spark plans it, it returns the original's
    rows (always compared) and, with ``slower_than`` (default 1.0), it was not slower
    than Spark's own plan in that check; any failure means the original query. With
    ``check_runs`` > 1 the check runs both that many times and keeps the rewrite only
    when its slowest run beats the original's fastest (a gain within the noise of
    repeated runs keeps the original).
    """

    def __init__(
        self,
        model: str,
        master: str = "local[*]",
        spark_dir: str | None = None,
        workload: str | None = None,
        workload_config: Mapping[str, Any] | None = None,
        timeout_ms: int = 60_000,
        slower_than: float | None = 1.0,
        check_runs: int = 1,
    ):
        from rlsuite.apps.queryopt.envs.spark_rewrite import SparkRewriteEnv
        from rlsuite.apps.queryopt.train import _find_sidecar
        from rlsuite.platform.checkpoints import load_controller, metadata, resolve

        self.checkpoint = resolve(model)
        meta = metadata(self.checkpoint)
        side = _find_sidecar(self.checkpoint, model)
        if side.get("engine") != "spark":
            raise ValueError(f"{model} was trained on PostgreSQL; use it without --engine spark")
        self.featurizer = S.SparkFeaturizer.from_description(side["featurizer"])
        env_cfg = {
            k: v
            for k, v in meta["env_config"].items()
            if k in ("workload", "workload_config", "split", "num_queries", "query_seed")
        }
        if workload is not None:
            env_cfg["workload"] = workload
        if workload_config is not None:
            env_cfg["workload_config"] = dict(workload_config)
        env_cfg.update(
            master=master,
            spark_dir=spark_dir,
            timeout_ms=timeout_ms,
            max_steps=self.featurizer.max_steps,
        )
        self.env = SparkRewriteEnv(**env_cfg)
        self.schema = self.env.schema
        self.timeout_ms = timeout_ms
        self.slower_than = slower_than
        if check_runs < 1:
            raise ValueError(f"check_runs must be >= 1, got {check_runs}")
        self.check_runs = int(check_runs)
        self.policy = load_controller(self.checkpoint)
        self.name = f"learned on Spark ({os.path.basename(self.checkpoint)})"

    def choose(self, sql: str) -> tuple[R.Query, dict[str, str]]:
        """Run the policy on ``sql`` (plans only): the rewritten query and per-action notes.

        Each step takes the action with the highest Q-value among those that apply now
        and STOP (actions that would leave the query as it is are never taken).
        """
        obs, _ = self.env.reset(seed=0, options={"sql": sql})
        notes: dict[str, str] = {}
        for _ in range(self.featurizer.max_steps):
            q = np.asarray(self.policy.action_values(obs), dtype=float)
            allowed = [
                i
                for i, n in enumerate(S.ACTION_NAMES)
                if isinstance(self.env._applicable.get(n), R.Query)
            ] + [S.STOP]
            a = max(allowed, key=lambda i: q[i])
            if a == S.STOP:
                break
            self.env.query, self.env.steps = (
                self.env._applicable[S.ACTION_NAMES[a]],
                self.env.steps + 1,
            )
            obs = self.env._obs()
        return self.env.query, notes

    def rewrite(self, sql: str, check: bool = True) -> Decision:
        settings = dict(self.env.settings)
        try:
            q, notes = self.choose(sql)
        except Exception as e:  # noqa: BLE001 - the model must never fail a query
            return Decision(sql, settings, (), {"*": f"model error: {e}"})
        if not q.applied:
            return Decision(sql, settings, (), notes)
        return S.validate(
            self.env.engine,
            self.schema,
            sql,
            q,
            notes,
            self.timeout_ms,
            settings,
            slower_than=self.slower_than,
            check_runs=self.check_runs,
        )

    def close(self) -> None:
        self.env.close()
