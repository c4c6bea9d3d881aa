"""The ``apex`` plan: Ape-X's asynchronous prioritised replay (Horgan et al. 2018).

Example::

    >>> from rlsuite.platform.optimizers import make_plan
    >>> plan = make_plan("apex", env="CartPole-v1", num_env_runners=3, num_replay_shards=2)
    >>> [round(e, 4) for e in plan.runner_epsilons()]
    [0.4, 0.0162, 0.0007]
    >>> make_plan("apex", env="CartPole-v1", replay_shards=2)
    Traceback (most recent call last):
    ...
    ValueError: unknown key for plan 'apex': 'replay_shards' (did you mean 'num_replay_shards'?). ...
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rlsuite.platform.plans import check as _check
from rlsuite.platform.rllib_plans import QPlan


@dataclass(frozen=True)
class ApexPlan(QPlan):
    """``apex``: runners act with their own epsilon and push n-step transitions, with
    priorities from their own Q-values, straight to ``num_replay_shards`` replay actors;
    the learner (RLlib's DQN learner and loss) samples the shards in the background,
    sends each batch's new priorities back to the shard that holds it, and gives each
    runner weights at most ``broadcast_every`` updates old when it starts a sample call.
    Sampling and learning never wait for each other (:mod:`rlsuite.platform.apex.algorithm`)."""

    name: ClassVar[str] = "apex"

    num_env_runners: int = 2
    """Actors: remote sampling processes, each with its own epsilon (``epsilon``)."""
    n_step: int = 3
    """n-step returns, computed on the runners (Ape-X uses 3)."""
    rollout_fragment_length: int | str = 50
    """Steps per env per sample call: one push to a replay shard (Ape-X's local buffer
    of 50 transitions); ``"auto"`` is 50."""
    num_replay_shards: int = 2
    """Prioritised replay actors; each runner push goes to the next shard in turn and
    each holds ``buffer_size / num_replay_shards`` transitions."""
    epsilon: float = 0.4
    """Ape-X's exploration base: runner ``i`` of ``N`` acts with
    ``epsilon ** (1 + epsilon_alpha * i / (N - 1))`` (a single runner: ``epsilon``)."""
    epsilon_alpha: float = 7.0
    """The exponent's spread across the runners (Ape-X: 7)."""
    broadcast_every: int = 10
    """The most learner updates a runner's weights may lag when it starts a sample call:
    the learner broadcasts its weights when a runner is about to start one and its last
    broadcast is this many updates old (Ape-X's actors fetch weights every 400 steps)."""
    prefetch_batches: int = 32
    """Sample requests kept in flight to the shards, so that an update never waits for
    a batch."""
    training_intensity: float | None = None
    """Replayed / sampled transitions ratio the learner may reach at most; the runners
    wait when it is reached (``train_batch_size`` transitions per update). ``None``: no
    limit, the learner updates as fast as it can (Ape-X)."""
    min_time_s_per_iteration: float = 2.0
    """An iteration (a metrics row, a checkpoint) lasts at least this long."""
    env_steps_per_iteration: int = 1000
    """...and samples at least this many env steps."""

    def validate(self) -> None:
        super().validate()
        _check(
            self.num_env_runners >= 1,
            "the apex plan samples in remote runners; it needs num_env_runners >= 1",
        )
        _check(
            isinstance(self.num_replay_shards, int) and self.num_replay_shards >= 1,
            f"num_replay_shards must be an int >= 1, got {self.num_replay_shards!r}",
        )
        per_shard = self.buffer_size // self.num_replay_shards
        _check(
            per_shard >= self.train_batch_size,
            f"each of the {self.num_replay_shards} replay shards holds buffer_size / "
            f"num_replay_shards = {per_shard} transitions, fewer than one batch "
            f"({self.train_batch_size}); raise buffer_size or lower num_replay_shards",
        )
        _check(0 < self.epsilon <= 1, f"epsilon must be in (0, 1], got {self.epsilon}")
        _check(self.epsilon_alpha >= 0, f"epsilon_alpha must be >= 0, got {self.epsilon_alpha}")
        _check(self.broadcast_every >= 1, "broadcast_every must be >= 1")
        _check(self.prefetch_batches >= 1, "prefetch_batches must be >= 1")
        _check(
            self.training_intensity is None or self.training_intensity > 0,
            f"training_intensity must be > 0 (or None: no limit), got {self.training_intensity}",
        )
        _check(self.min_time_s_per_iteration >= 0, "min_time_s_per_iteration must be >= 0")
        _check(self.env_steps_per_iteration >= 1, "env_steps_per_iteration must be >= 1")
        from rlsuite.platform import envs as env_registry

        _check(
            not env_registry.spec(self.env).multi_agent,
            f"the apex plan runs single-agent envs; {self.env!r} is multi-agent (use 'replay')",
        )

    @property
    def fragment_length(self) -> int:
        """The resolved ``rollout_fragment_length``."""
        return 50 if self.rollout_fragment_length == "auto" else int(self.rollout_fragment_length)

    def runner_epsilons(self) -> list[float]:
        """Each runner's exploration rate, runner 0 first (Ape-X's schedule)."""
        n = self.num_env_runners
        return [runner_epsilon(self.epsilon, self.epsilon_alpha, i, n) for i in range(n)]


def runner_epsilon(epsilon: float, alpha: float, i: int, n: int) -> float:
    """Ape-X's epsilon of runner ``i`` (0-based) of ``n``: ``epsilon ** (1 + alpha i/(n-1))``."""
    return epsilon if n <= 1 else float(epsilon ** (1 + alpha * i / (n - 1)))
