"""Train the DQN rewriter through the platform's ``replay`` plan, and use it.

:class:`TrainConfig` (frozen, validated) -> :func:`make_plan` (the platform's
``replay`` plan: DQN, 2 hidden layers, several env runners, each env with its
own database session) -> :func:`train` (the platform's training loop; the
checkpoint carries the env config, and ``queryopt.json`` beside it carries the
featurizer). :class:`LearnedRewriter` loads a checkpoint and rewrites SQL,
falling back to the original query whenever anything goes wrong.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from rlsuite.apps.queryopt import rules as R
from rlsuite.apps.queryopt.rewriter import Decision, validate

ENV_ID = "rlsuite/QueryRewrite-v0"
REPLAY_ENV_ID = "rlsuite/QueryRewriteReplay-v0"
SIDECAR = "queryopt.json"


@dataclass(frozen=True)
class TrainConfig:
    """How to train the rewriter."""

    dsn: str
    """libpq DSN of the server holding the workload (each env opens its own session)."""
    workload: str = "joins"
    """``joins``, ``udf`` or ``tpch``."""
    workload_config: Mapping[str, Any] = field(default_factory=dict)
    """Keyword arguments of the workload (e.g. ``udf_cost``)."""
    queries: tuple[str, ...] = ()
    """Explicit training queries; empty: ``num_queries`` generated ``train`` queries."""
    num_queries: int = 50
    """Generated training queries when ``queries`` is empty."""
    query_seed: int = 0
    """Seed of the query generator."""
    max_steps: int = 3
    """Rewrites per episode."""
    timeout_ms: int = 1000
    """statement_timeout while training: runtimes are capped here."""
    reward: str = "runtime"
    """``runtime`` (-seconds), ``relative`` (-seconds / PostgreSQL's seconds) or ``cost``
    (-estimated cost, no execution: DQ's bootstrap)."""
    iterations: int = 20
    """Training iterations of the platform's loop."""
    num_env_runners: int = 2
    """Env runners (each with its own env and database session)."""
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
    epsilon_timesteps: int = 1000
    """Env steps over which exploration decays."""
    target_update_freq: int = 100
    """Env steps between target-network syncs."""
    seed: int = 0
    """Seed of RLlib and the envs."""
    experience: str = ""
    """An experience store of ``qopt-bench serve --store``: train on the decisions it
    served and their measured runtimes (``rlsuite/QueryRewriteReplay-v0``, no query runs)
    instead of running the workload's queries."""
    env_steps_per_iteration: int = 1000
    """Env steps sampled per training iteration."""

    def validate(self) -> None:
        from rlsuite.apps.queryopt.workloads import WORKLOAD_NAMES

        if self.workload not in WORKLOAD_NAMES:
            raise ValueError(f"workload must be one of {WORKLOAD_NAMES}, got {self.workload!r}")
        if not self.dsn:
            raise ValueError("dsn is required (the embedded server's or --dsn)")
        if self.reward not in ("runtime", "relative", "cost"):
            raise ValueError(f"reward must be runtime, relative or cost, got {self.reward!r}")
        if len(self.hidden) != 2:
            raise ValueError(f"the DQN has 2 hidden layers; hidden={self.hidden!r}")
        for k in ("num_queries", "max_steps", "timeout_ms", "iterations", "train_batch_size"):
            if int(getattr(self, k)) < 1:
                raise ValueError(f"{k} must be >= 1, got {getattr(self, k)}")
        if self.num_env_runners < 0:
            raise ValueError("num_env_runners must be >= 0")
        if self.env_steps_per_iteration < 1:
            raise ValueError("env_steps_per_iteration must be >= 1")
        if self.experience and not os.path.exists(self.experience):
            raise ValueError(f"experience store {self.experience} does not exist")

    @property
    def env_id(self) -> str:
        return REPLAY_ENV_ID if self.experience else ENV_ID

    def env_config(self) -> dict[str, Any]:
        if self.experience:
            return dict(
                experience=os.path.abspath(self.experience),
                workload=self.workload,
                workload_config=dict(self.workload_config),
                max_steps=self.max_steps,
            )
        cfg: dict[str, Any] = dict(
            dsn=self.dsn,
            workload=self.workload,
            workload_config=dict(self.workload_config),
            split="train",
            num_queries=self.num_queries,
            query_seed=self.query_seed,
            max_steps=self.max_steps,
            timeout_ms=self.timeout_ms,
            reward=self.reward,
        )
        if self.queries:
            cfg["queries"] = list(self.queries)
        return cfg


def make_plan(cfg: TrainConfig):
    """The platform's ``replay`` plan (DQN) for this config."""
    cfg.validate()
    return dqn_plan(cfg.env_id, cfg)


def dqn_plan(env_id: str, cfg: Any):
    """The ``replay`` plan (DQN) every query-rewrite env trains with (PostgreSQL, its
    replay of served decisions, Spark): ``cfg`` gives the seed, net and DQN settings."""
    from rlsuite.platform import optimizers

    return optimizers.make_plan(
        "replay",
        env=env_id,
        env_config=cfg.env_config(),
        num_env_runners=cfg.num_env_runners,
        num_envs_per_env_runner=1,
        seed=cfg.seed,
        hidden=tuple(cfg.hidden),
        activation="relu",
        gamma=cfg.gamma,
        lr=cfg.lr,
        train_batch_size=cfg.train_batch_size,
        rollout_fragment_length=4,
        learning_starts=cfg.learning_starts,
        epsilon_timesteps=cfg.epsilon_timesteps,
        final_epsilon=0.02,
        target_update_freq=cfg.target_update_freq,
        buffer_size=20_000,
        n_step=1,
        env_steps_per_iteration=cfg.env_steps_per_iteration,
    )


def train(cfg: TrainConfig, run_dir: str, resume: bool = False, progress: bool = True):
    """Train and write ``queryopt.json`` (featurizer, rules, config) next to the checkpoints."""
    from rlsuite.apps.queryopt.featurizer import Featurizer
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
        "featurizer": Featurizer(max_steps=cfg.max_steps).describe(),
        "train_config": {**asdict(cfg), "dsn": "<not stored>"},
        "time": time.time(),
    }
    for d in {res.checkpoint, os.path.abspath(run_dir)}:
        with open(os.path.join(d, SIDECAR), "w") as f:
            json.dump(sidecar, f, indent=2, default=str)
    return res


class LearnedRewriter:
    """A :class:`~rlsuite.apps.queryopt.rewriter.Rewriter` run by a trained model; any
    failure means the original query.

    Example::

        >>> lr = LearnedRewriter("runs/qopt", dsn)      # doctest: +SKIP
        >>> lr.rewrite(SEED_QUERY).applied              # doctest: +SKIP
        ('eager_aggregation',)
    """

    def __init__(
        self,
        model: str,
        dsn: str,
        workload: str | None = None,
        workload_config: Mapping[str, Any] | None = None,
        timeout_ms: int = 60_000,
    ):
        from rlsuite.apps.queryopt.envs.rewrite import QueryRewriteEnv
        from rlsuite.apps.queryopt.featurizer import Featurizer
        from rlsuite.platform.checkpoints import load_controller, metadata, resolve

        self.checkpoint = resolve(model)
        meta = metadata(self.checkpoint)
        side = _find_sidecar(self.checkpoint, model)
        self.featurizer = Featurizer.from_description(side["featurizer"])
        env_cfg = {  # a model trained on replayed experience featurizes live queries
            k: v for k, v in meta["env_config"].items() if k in _LIVE_ENV_KEYS
        }
        if workload is not None:
            env_cfg["workload"] = workload
        if workload_config is not None:
            env_cfg["workload_config"] = dict(workload_config)
        env_cfg.update(dsn=dsn, timeout_ms=timeout_ms, max_steps=self.featurizer.max_steps)
        env_cfg.pop("queries", None)
        self.env = QueryRewriteEnv(**env_cfg)
        self.schema = self.env.schema
        self.policy = load_controller(self.checkpoint)
        self.name = f"learned ({os.path.basename(self.checkpoint)})"

    def choose(self, sql: str) -> tuple[R.Query, dict[str, str]]:
        """Run the policy on ``sql``: the rewritten query and per-rule notes."""
        obs, _ = self.env.reset(seed=0, options={"sql": sql})
        notes: dict[str, str] = {}
        for _ in range(self.featurizer.max_steps):
            a = int(self.policy.act(obs))
            if a == R.STOP:
                break
            nxt = self.env._applicable.get(R.RULE_NAMES[a])
            if not isinstance(nxt, R.Query):
                notes[R.RULE_NAMES[a]] = f"chosen but not applicable ({nxt}); stopped"
                break
            obs, _, term, trunc, _ = self.env.step(a)
            if term or trunc:
                break
        return self.env.query, notes

    def rewrite(self, sql: str, check: bool = False) -> Decision:
        try:
            q, notes = self.choose(sql)
        except Exception as e:  # noqa: BLE001 - the model must never fail a query
            return Decision(sql, dict(self.env.settings), (), {"*": f"model error: {e}"})
        if not q.applied:
            return Decision(sql, dict(self.env.settings), (), notes)
        return validate(
            self.env.db,
            self.env.schema,
            sql,
            q,
            notes,
            check,
            self.env.timeout_ms,
            dict(self.env.settings),
        )

    def close(self) -> None:
        self.env.close()


_LIVE_ENV_KEYS = frozenset(
    ("workload", "workload_config", "split", "num_queries", "query_seed", "reward")
)


def _find_sidecar(ckpt: str, model: str) -> dict[str, Any]:
    for d in (ckpt, os.path.abspath(model), os.path.dirname(os.path.dirname(ckpt))):
        p = os.path.join(d, SIDECAR)
        if os.path.exists(p):
            with open(p) as f:
                return json.load(f)
    raise FileNotFoundError(f"{ckpt} has no {SIDECAR}: was it trained with qopt-bench train?")
