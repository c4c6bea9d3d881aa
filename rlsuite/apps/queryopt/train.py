"""Train the DQN rewriter through the platform's ``replay`` plan, and use it, on any engine.

:class:`TrainConfig` (frozen, validated; ``engine`` picks PostgreSQL or Spark SQL) ->
:func:`make_plan` (the platform's ``replay`` plan: DQN, 2 hidden layers, env runners,
each env with its own engine session; on Spark the env runs in the driver by default,
as each env runner process would start its own Spark JVM) -> :func:`train` (the
platform's training loop; the checkpoint carries the env config, and ``queryopt.json``
beside it carries the engine and its featurizer). :class:`LearnedRewriter` loads a
checkpoint and rewrites SQL, falling back to the original query whenever anything goes
wrong. What differs between engines is the engine's
:class:`~rlsuite.apps.queryopt.spaces.RewriteSpace`.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from rlsuite.apps.queryopt import rules as R
from rlsuite.apps.queryopt.rewriter import Decision
from rlsuite.apps.queryopt.spaces import space_of
from rlsuite.platform.plans import check_at_least_one

SIDECAR = "queryopt.json"
ENGINE_DEFAULTED = (
    "num_queries",
    "max_steps",
    "timeout_ms",
    "reward",
    "repeat",
    "iterations",
    "num_env_runners",
    "epsilon_timesteps",
    "env_steps_per_iteration",
)
"""The fields that, left None, take the engine's default when the config is made."""


@dataclass(frozen=True)
class TrainConfig:
    """How to train the rewriter. A field left None takes the engine's default (given as
    ``PostgreSQL / Spark``), filled in when the config is made."""

    dsn: str = ""
    """PostgreSQL: libpq DSN of the server holding the workload (each env opens its own
    session). Required there; empty on Spark."""
    engine: str = "postgres"
    """``postgres`` or ``spark``."""
    master: str | None = None
    """Spark: its master, ``local[*]`` (embedded, the default) or ``spark://HOST:PORT``."""
    spark_dir: str | None = None
    """Spark: the private directory of its data and scratch files (default: the engine's)."""
    workload: str = "joins"
    """``joins``, ``udf``, ``tpch`` (and on PostgreSQL ``tpcds``)."""
    workload_config: Mapping[str, Any] = field(default_factory=dict)
    """Keyword arguments of the workload (e.g. ``udf_cost``)."""
    queries: tuple[str, ...] = ()
    """Explicit training queries; empty: ``num_queries`` generated ``train`` queries."""
    num_queries: int | None = None
    """Generated training queries when ``queries`` is empty (50 / 20)."""
    query_seed: int = 0
    """Seed of the query generator."""
    max_steps: int | None = None
    """Rewrites per episode (3 / 2)."""
    timeout_ms: int | None = None
    """Runtime cap while training (1000 / 10000): a query past it is cancelled."""
    reward: str | None = None
    """``runtime`` (-seconds), ``relative`` (-seconds / the engine's own plan's seconds) or,
    on PostgreSQL, ``cost`` (-estimated cost, no execution: DQ's bootstrap) (runtime /
    relative)."""
    repeat: int | None = None
    """Runs per measured query; the fastest counts (1 / 2: Spark's timings are noisy)."""
    iterations: int | None = None
    """Training iterations of the platform's loop (20 / 10)."""
    num_env_runners: int | None = None
    """Env runners, each with its own env and engine session (2 / 0: 0 runs the env in the
    driver, one Spark JVM)."""
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
    epsilon_timesteps: int | None = None
    """Env steps over which exploration decays (1000 / 600)."""
    target_update_freq: int = 100
    """Env steps between target-network syncs."""
    seed: int = 0
    """Seed of RLlib and the envs."""
    experience: str = ""
    """PostgreSQL: an experience store of ``qopt-bench serve --store``: train on the
    decisions it served and their measured runtimes (``rlsuite/QueryRewriteReplay-v0``, no
    query runs) instead of running the workload's queries."""
    env_steps_per_iteration: int | None = None
    """Env steps sampled per training iteration (1000 / 100)."""
    log_reward: bool = False
    """With ``experience``: score the replay env's ratios as ``-log(ratio)`` instead of
    ``-ratio`` (what the plugin's guard reads as a predicted ratio; so offline use only)."""
    prefix_starts: float = 0.0
    """With ``experience``: the share of replayed episodes that start at a logged rewrite
    prefix instead of the query as written (see the replay env's Starts)."""
    rules: tuple[str, ...] = ()
    """PostgreSQL: the DQN's actions, by rule name, in order (empty: the MDP's
    :data:`~rlsuite.apps.queryopt.rules.RULES`; e.g. with ``decorrelate_scalar`` and
    ``not_in_exact`` of :data:`~rlsuite.apps.queryopt.rules.MORE_RULES`). The model's
    featurizer records them, so it acts over them wherever it is loaded."""

    def __post_init__(self) -> None:
        defaults = space_of(self.engine).defaults
        for k in ENGINE_DEFAULTED:
            if getattr(self, k) is None:
                object.__setattr__(self, k, defaults[k])

    def validate(self) -> None:
        space = space_of(self.engine)
        if self.workload not in space.workloads:
            raise ValueError(
                f"workload must be one of {space.workloads} on {space.label}, got {self.workload!r}"
            )
        space.check_options(self.dsn, self.master, self.spark_dir)
        if self.reward not in space.rewards:
            raise ValueError(
                f"reward must be {' or '.join(space.rewards)} on {space.label}, got {self.reward!r}"
            )
        if len(self.hidden) != 2:
            raise ValueError(f"the DQN has 2 hidden layers; hidden={self.hidden!r}")
        check_at_least_one(
            self,
            (
                "num_queries",
                "max_steps",
                "timeout_ms",
                "iterations",
                "train_batch_size",
                "repeat",
                "env_steps_per_iteration",
            ),
        )
        space.actions(self.rules)  # an unknown rule, or another engine's fixed actions
        if self.num_env_runners < 0:
            raise ValueError("num_env_runners must be >= 0")
        if self.experience:
            if space.replay_env_id is None:
                raise ValueError(
                    f"experience stores are PostgreSQL's (pg_qopt); {space.label} trains on "
                    "its queries"
                )
            if not os.path.exists(self.experience):
                raise ValueError(f"experience store {self.experience} does not exist")

    @property
    def env_id(self) -> str:
        space = space_of(self.engine)
        return space.replay_env_id if self.experience else space.env_id

    def env_config(self) -> dict[str, Any]:
        own = {"rules": list(self.rules)} if self.rules else {}
        if self.experience:
            return dict(
                experience=os.path.abspath(self.experience),
                workload=self.workload,
                workload_config=dict(self.workload_config),
                max_steps=self.max_steps,
                **({"log_reward": True} if self.log_reward else {}),
                **({"prefix_starts": self.prefix_starts} if self.prefix_starts else {}),
                **own,
            )
        options = {"dsn": self.dsn, "master": self.master, "spark_dir": self.spark_dir}
        cfg: dict[str, Any] = dict(
            engine=self.engine,
            **{k: v for k, v in options.items() if v},
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
        return {**cfg, **own}


PLAN_FIELDS = (
    "num_env_runners",
    "seed",
    "gamma",
    "lr",
    "train_batch_size",
    "learning_starts",
    "epsilon_timesteps",
    "target_update_freq",
    "env_steps_per_iteration",
)
"""The config's fields that the replay plan takes as they are (same name and meaning)."""
DQN = dict(num_envs_per_env_runner=1, activation="relu", rollout_fragment_length=4, n_step=1)
"""Sampling and update settings of the replay plan that the app fixes (one env per runner,
fragments of 4, 1-step returns, ReLU)."""


def make_plan(cfg: TrainConfig):
    """The platform's ``replay`` plan (DQN) for this config, on any engine."""
    from rlsuite.platform import optimizers

    cfg.validate()
    same = {k: getattr(cfg, k) for k in PLAN_FIELDS}
    return optimizers.make_plan(
        "replay",
        env=cfg.env_id,
        env_config=cfg.env_config(),
        hidden=tuple(cfg.hidden),
        final_epsilon=0.02,
        buffer_size=20_000,
        **DQN,
        **same,
    )


def train(cfg: TrainConfig, run_dir: str, resume: bool = False, progress: bool = True):
    """Train and write ``queryopt.json`` (engine, featurizer, config) next to the checkpoints."""
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
        "engine": cfg.engine,
        "featurizer": space_of(cfg.engine).featurizer(cfg.max_steps, cfg.rules or None).describe(),
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

    The policy chooses rewrites on plans only (nothing runs), at each step its best action
    among STOP and those that apply; the engine's checks then decide whether the rewrite is
    used. On PostgreSQL the rows are compared with
    ``check``. On Spark they always are, and with ``slower_than`` (default 1.0) a rewrite
    that ran slower than Spark's own plan in that check is dropped too; with ``check_runs``
    > 1 the check runs both that many times and keeps the rewrite only when its slowest
    run beats the original's fastest (a gain within the noise of repeated runs keeps the
    original).

    Example::

        >>> lr = LearnedRewriter("runs/qopt", dsn)      # doctest: +SKIP
        >>> lr.rewrite(SEED_QUERY).applied              # doctest: +SKIP
        ('eager_aggregation',)
        >>> LearnedRewriter("runs/spark", engine="spark", master="local[2]")  # doctest: +SKIP
    """

    def __init__(
        self,
        model: str,
        dsn: str | None = None,
        workload: str | None = None,
        workload_config: Mapping[str, Any] | None = None,
        timeout_ms: int = 60_000,
        *,
        engine: str = "postgres",
        master: str | None = None,
        spark_dir: str | None = None,
        slower_than: float | None = 1.0,
        check_runs: int = 1,
    ):
        from rlsuite.apps.queryopt.envs.rewrite import QueryRewriteEnv
        from rlsuite.platform.checkpoints import load_controller, metadata, resolve

        if check_runs < 1:
            raise ValueError(f"check_runs must be >= 1, got {check_runs}")
        self.space = space_of(engine)
        self.checkpoint = resolve(model)
        meta = metadata(self.checkpoint)
        side = _find_sidecar(self.checkpoint, model)
        trained_on = side.get("engine", "postgres")  # sidecars before Spark name no engine
        if trained_on != engine:
            raise ValueError(
                f"{model} was trained on {space_of(trained_on).label}; use it with "
                f"--engine {trained_on}"
            )
        self.featurizer = self.space.featurizer_from(side["featurizer"])
        env_cfg = {  # a model trained on replayed experience featurizes live queries
            k: v for k, v in meta["env_config"].items() if k in _LIVE_ENV_KEYS
        }
        if workload is not None:
            env_cfg["workload"] = workload
        if workload_config is not None:
            env_cfg["workload_config"] = dict(workload_config)
        if tuple(self.featurizer.actions) != tuple(self.space.names):  # the model's own rules
            env_cfg["rules"] = list(self.featurizer.actions)
        env_cfg.update(
            engine=engine,
            dsn=dsn,
            master=master,
            spark_dir=spark_dir,
            timeout_ms=timeout_ms,
            max_steps=self.featurizer.max_steps,
        )
        self.env = QueryRewriteEnv(**env_cfg)
        self.schema = self.env.schema
        self.timeout_ms = timeout_ms
        self.slower_than = slower_than
        self.check_runs = int(check_runs)
        self.policy = load_controller(self.checkpoint)
        self.name = f"{self.space.learned_name} ({os.path.basename(self.checkpoint)})"

    def choose(self, sql: str) -> tuple[R.Query, dict[str, str]]:
        """Run the policy on ``sql`` (plans only): the rewritten query and per-action notes."""
        obs, _ = self.env.reset(seed=0, options={"sql": sql})
        notes: dict[str, str] = {}
        names = self.env.action_names
        for _ in range(self.featurizer.max_steps):
            # the best of STOP and the actions that apply (one that does not is never chosen)
            a = self.space.choose(self.policy, obs, self.env._applicable, names)
            if a == self.env.stop_action:
                break
            nxt = self.env._applicable[names[a]]
            assert isinstance(nxt, R.Query)
            obs = self.env.advance(nxt)
        return self.env.query, notes

    def rewrite(self, sql: str, check: bool = False) -> Decision:
        settings = dict(self.env.settings)
        try:
            q, notes = self.choose(sql)
        except Exception as e:  # noqa: BLE001 - the model must never fail a query
            return Decision(sql, settings, (), {"*": f"model error: {e}"})
        if not q.applied:
            return Decision(sql, settings, (), notes)
        return self.space.validate(
            self.env.db,
            self.schema,
            sql,
            q,
            notes,
            check,
            self.timeout_ms,
            settings,
            slower_than=self.slower_than,
            check_runs=self.check_runs,
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


def model_actions(model: str) -> tuple[str, ...]:
    """The actions a model of ``qopt-bench train`` acts over (its featurizer's rules, in its
    order), read from what its checkpoint records, without loading it or a database."""
    from rlsuite.platform.checkpoints import resolve

    side = _find_sidecar(resolve(model), model)
    featurizer = space_of(side.get("engine", "postgres")).featurizer_from(side["featurizer"])
    return tuple(featurizer.actions)
