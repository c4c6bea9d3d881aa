"""The ``async_grad`` plan: asynchronous gradients on a sharded parameter server.

A :class:`rlsuite.platform.plans.Plan` whose ``backend`` is ``async_grad``, so
:class:`rlsuite.platform.async_grad.trainer.AsyncGradBackend` runs it (see
:mod:`rlsuite.platform.async_grad`).

Example::

    >>> from rlsuite.platform.async_grad.plan import AsyncGradPlan
    >>> plan = AsyncGradPlan(env="CartPole-v1", gamma=0.95, num_runners=1)
    >>> plan.name, plan.backend, plan.loss
    ('async_grad', 'async_grad', 'a3c')
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import ClassVar

from rlsuite.platform import envs as env_registry
from rlsuite.platform.plans import Plan
from rlsuite.platform.plans import check as _check

LOSSES = ("a3c", "dqn")
"""The runners' losses: A3C's n-step actor-critic, GORILA's Q-learning."""
OPTIMIZERS = ("adam", "rmsprop")
"""The optimisers a shard can apply to its slice."""


@dataclass(frozen=True)
class AsyncGradPlan(Plan):
    """``async_grad``: runners compute gradients on their own batches, with no barrier, and
    a parameter server of ``num_shards`` actors applies them (the RLlib paper's
    AsyncGradients optimizer: A3C, GORILA)."""

    name: ClassVar[str] = "async_grad"
    backend: ClassVar[str] = "async_grad"

    hidden: tuple[int, ...] = (256, 256)
    """Hidden layer sizes of the policy and value MLPs (RLlib's default model; A3C's
    tuned CartPole example used it)."""
    loss: str = "a3c"
    """What a runner's gradient is of. ``a3c``: n-step advantage actor-critic with an
    entropy bonus on the ``rollout_length`` steps it just sampled (Mnih et al. 2016).
    ``dqn``: GORILA's Q-learning (Nair et al. 2015) on a batch from the runner's own
    replay, against a target network; discrete actions only."""
    num_runners: int = 2
    """Ray actors that sample and compute gradients, each on its own."""
    cpus_per_runner: float = 1.0
    """CPUs Ray reserves for each runner."""
    envs_per_runner: int = 1
    """Envs each runner steps as one batch (one forward pass for all)."""
    rollout_length: int = 10
    """Env steps per env between two gradients of a runner (A3C's ``t_max``; RLlib's
    ``rollout_fragment_length`` 10)."""
    num_shards: int = 1
    """Parameter-server shards (Ray actors); each owns a contiguous slice of the flat
    parameter vector and applies the optimiser to it. At most the number of parameters."""
    cpus_per_shard: float = 0.5
    """CPUs Ray reserves for each shard."""
    optimizer: str = "adam"
    """The shards' optimiser: ``adam`` or ``rmsprop`` (A3C's shared RMSProp)."""
    lr: float = 1e-4
    """Learning rate of the shards' optimiser (RLlib's A3C: 1e-4)."""
    grad_clip: float | None = 40.0
    """A runner clips its gradient to this global norm before pushing it (RLlib's A3C:
    40); ``None``: no clipping."""
    gamma: float = 0.99
    """Discount factor."""
    lambda_: float = 1.0
    """A3C: GAE's lambda; 1.0 gives the n-step return bootstrapped from the value at the
    rollout's end (A3C's advantage; RLlib's default)."""
    vf_loss_coeff: float = 0.5
    """A3C: weight of the value loss."""
    entropy_coeff: float = 0.01
    """A3C: weight of the entropy bonus."""
    max_staleness: int | None = None
    """Drop a gradient computed on weights this many or more updates older than the
    shard's (counted in ``dropped_gradients``); ``None``: apply every gradient. Each shard
    judges the slice it owns by its own update count."""
    gradients_per_update: int = 1
    """DPPO's rule (Heess et al. 2017): a shard averages gradients and applies them once
    this many have arrived. With ``max_staleness=0`` only gradients computed on the
    current weights count, and the later ones are dropped, as DPPO does; 1: apply each
    gradient as it comes (A3C, GORILA)."""
    gradients_per_call: int = 8
    """Gradients a runner computes per call from the driver (the driver is never on the
    gradients' path; this only sets how often it hears from a runner)."""
    env_steps_per_iteration: int = 4000
    """Env steps (all runners together) in one training iteration (one metrics row)."""
    # -- dqn ------------------------------------------------------------------------
    buffer_size: int = 50_000
    """DQN: transitions in each runner's own replay buffer."""
    train_batch_size: int = 32
    """DQN: transitions per gradient, drawn from the runner's replay."""
    learning_starts: int = 1000
    """DQN: env steps a runner samples before its first gradient."""
    target_update_freq: int = 500
    """DQN: parameter-server updates between copies of the weights into a runner's
    target network."""
    double_q: bool = True
    """DQN: double Q-learning's target."""
    dueling: bool = True
    """DQN: a dueling head."""
    epsilon_timesteps: int = 10_000
    """DQN: env steps (of each runner) over which epsilon falls from 1 to ``final_epsilon``."""
    final_epsilon: float = 0.02
    """DQN: the exploration rate after ``epsilon_timesteps``."""
    # -- faults ---------------------------------------------------------------------
    max_runner_restarts: int = 100
    """Runner deaths the run replaces (a new actor) before it stops with an error."""
    max_shard_restarts: int = 10
    """Shard deaths the run survives: every shard goes back to the last checkpoint's
    state (the updates since are rolled back and counted in ``updates_rolled_back``)
    before the run stops with an error."""

    # -- validation -----------------------------------------------------------------
    def validate(self) -> None:
        """Raise ``ValueError`` saying what is wrong and what to use instead."""
        super().validate()
        _check(self.loss in LOSSES, f"loss must be one of {', '.join(LOSSES)}, got {self.loss!r}")
        _check(len(self.hidden) >= 1, f"hidden must list at least one layer, got {self.hidden!r}")
        for name in POSITIVE_INTS:
            _int_at_least(name, getattr(self, name), 1)
        for name in COUNTS:
            _int_at_least(name, getattr(self, name), 0)
        if self.max_staleness is not None:
            _int_at_least("max_staleness", self.max_staleness, 0)
        _check(self.cpus_per_runner > 0, f"cpus_per_runner must be > 0, got {self.cpus_per_runner}")
        _check(self.cpus_per_shard >= 0, f"cpus_per_shard must be >= 0, got {self.cpus_per_shard}")
        _check(
            self.optimizer in OPTIMIZERS,
            f"optimizer must be one of {', '.join(OPTIMIZERS)}, got {self.optimizer!r}",
        )
        _check(self.lr > 0, f"lr must be > 0, got {self.lr}")
        _check(
            self.grad_clip is None or self.grad_clip > 0,
            f"grad_clip must be > 0 or None, got {self.grad_clip}",
        )
        _check(0.0 < self.gamma <= 1.0, f"gamma must be in (0, 1], got {self.gamma}")
        _check(0.0 <= self.lambda_ <= 1.0, f"lambda_ must be in [0, 1], got {self.lambda_}")
        _check(self.vf_loss_coeff >= 0, f"vf_loss_coeff must be >= 0, got {self.vf_loss_coeff}")
        _check(self.entropy_coeff >= 0, f"entropy_coeff must be >= 0, got {self.entropy_coeff}")
        _check(
            0.0 <= self.final_epsilon <= 1.0,
            f"final_epsilon must be in [0, 1], got {self.final_epsilon}",
        )
        if self.loss == "dqn":
            _check(
                self.train_batch_size <= self.buffer_size,
                f"train_batch_size ({self.train_batch_size}) must fit in buffer_size "
                f"({self.buffer_size})",
            )
        spec = env_registry.spec(self.env)
        if spec.multi_agent:
            raise ValueError(
                f"plan 'async_grad' trains single-agent envs, and {self.env!r} is multi-agent; "
                "use the sync, async or replay plan for it"
            )
        self._check_spaces()
        if self.num_shards > 1:  # one shard always fits; more need the parameter count
            from rlsuite.platform.async_grad.model import num_params

            n = num_params(self)
            _check(
                self.num_shards <= n,
                f"num_shards={self.num_shards} is more than the network's {n} parameters, "
                f"so some shard would own nothing; use num_shards <= {n}",
            )

    def _check_spaces(self) -> None:
        import gymnasium as gym

        (obs_space, act_space), *_ = env_registry.spaces(self.env, self.env_config).values()
        if not isinstance(obs_space, gym.spaces.Box) or len(obs_space.shape) != 1:
            raise ValueError(
                f"plan 'async_grad' needs flat Box observations; {self.env!r} observes "
                f"{obs_space}. Wrap the env to flatten them (gymnasium's FlattenObservation)"
            )
        if self.loss == "dqn" and not isinstance(act_space, gym.spaces.Discrete):
            raise ValueError(
                f"loss='dqn' needs Discrete actions (one Q-value per action), and "
                f"{self.env!r} acts in {act_space}; use loss='a3c' for it"
            )
        if not isinstance(act_space, gym.spaces.Discrete | gym.spaces.Box):
            raise ValueError(
                f"plan 'async_grad' supports Discrete and Box actions, not {act_space}"
            )

    def placement_bundles(self) -> list[dict[str, float]]:
        """Resources of one run: the driver (one CPU), one bundle per runner and one per
        shard (a shard with ``cpus_per_shard=0`` has none)."""
        shards = (
            [{"CPU": float(self.cpus_per_shard)}] * self.num_shards if self.cpus_per_shard else []
        )
        return [{"CPU": 1.0}] + [{"CPU": float(self.cpus_per_runner)}] * self.num_runners + shards


POSITIVE_INTS = (
    "num_runners", "envs_per_runner", "rollout_length", "num_shards", "gradients_per_update",
    "gradients_per_call", "env_steps_per_iteration", "buffer_size", "train_batch_size",
    "target_update_freq",
)  # fmt: skip
"""The plan's fields that must be ints >= 1."""
COUNTS = ("max_runner_restarts", "max_shard_restarts", "learning_starts", "epsilon_timesteps")
"""The plan's fields that must be ints >= 0 (``max_staleness`` too, unless None)."""


def _int_at_least(name: str, value: object, low: int) -> None:
    _check(
        isinstance(value, numbers.Integral) and not isinstance(value, bool) and value >= low,
        f"{name} must be an int >= {low}, got {value!r}",
    )
