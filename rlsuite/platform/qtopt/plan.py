"""The ``qt_opt`` plan: the config of QT-Opt on Ray actors (see :mod:`rlsuite.platform.qtopt`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rlsuite.platform import envs as env_registry
from rlsuite.platform.plans import Plan
from rlsuite.platform.plans import check as _check


@dataclass(frozen=True)
class QTOptPlan(Plan):
    """``qt_opt``: Q-learning for continuous actions, the argmax by CEM (QT-Opt)."""

    name: ClassVar[str] = "qt_opt"
    backend: ClassVar[str] = "qt_opt"

    hidden: tuple[int, ...] = (64, 64)
    """Hidden layer sizes of the Q-network's MLP over (observation, action). Every Bellman
    target runs the network on ``cem_samples x cem_iterations`` actions per transition, so
    its cost grows with the square of the width: (256, 256) is ~7x slower per update."""
    activation: str = "relu"
    """Hidden activation: ``relu`` or ``tanh``."""
    lr: float = 1e-3
    """Adam's step size on the Q-network (the paper's 1e-3)."""
    gamma: float = 0.99
    """Discount factor. The grasping papers use 0.9 on 8-step grasps; long-horizon
    control (Pendulum's 200 steps) needs ~0.99."""
    train_batch_size: int = 128
    """Transitions per gradient step."""
    buffer_size: int = 200_000
    """Replay capacity in transitions (the dataset's included; the oldest go first)."""
    cem_samples: int = 64
    """Actions CEM samples per state and iteration (the paper's 64)."""
    cem_elites: int = 10
    """Best samples CEM refits its Gaussian to (the paper's 10)."""
    cem_iterations: int = 3
    """CEM iterations (the paper's 3)."""
    target_tau: float = 0.005
    """Polyak rate of the first target network towards the Q-network, per update."""
    target2_lag: int = 1000
    """Learner updates between copies of the first target network into the second, older
    one. The Bellman target takes the minimum of the two (clipped double Q)."""
    grad_clip: float | None = 10.0
    """Global-norm gradient clip; ``None`` for none."""
    num_runners: int = 2
    """Ray actors that act with CEM on their own envs and send transitions to replay;
    they keep sampling while the learner updates. 0 samples in the driver."""
    num_envs_per_runner: int = 1
    """Envs each runner steps as one CEM batch."""
    cpus_per_runner: float = 1.0
    """CPUs Ray reserves for each runner."""
    rollout_fragment_length: int = 50
    """Steps per env per sample call of a runner (it then gets fresh weights)."""
    num_bellman_updaters: int = 0
    """Ray actors that compute the Bellman targets (CEM over the target networks) for the
    learner's batches, as the paper's Bellman updater jobs do; the learner then only
    takes gradient steps. 0: the learner computes them itself."""
    cpus_per_updater: float = 1.0
    """CPUs Ray reserves for each Bellman updater."""
    updater_sync_every: int = 10
    """Learner updates between the target weights sent to the Bellman updaters."""
    exploration_noise: float = 0.1
    """Standard deviation of the Gaussian noise added to CEM's action (in [-1, 1] units)."""
    random_action_prob: float = 0.0
    """Probability of a uniform random action instead (the paper's epsilon-greedy)."""
    dataset: str = ""
    """The fixed off-policy dataset learned from first: recorded transitions (parquet of
    :func:`rlsuite.platform.demonstrations.record_episodes`) or ``CONTROLLER:N``, e.g.
    ``random:10000`` for 10,000 episodes of random actions (the grasping papers' random
    grasps; :mod:`rlsuite.platform.demo_sources`). It stays in replay once online.
    ``""``: no dataset, online from the start."""
    offline_updates: int = 0
    """Learner updates on the dataset alone before the runners start (needs ``dataset``)."""
    updates_per_iteration: int = 500
    """Learner updates per ``train()`` iteration in the offline phase."""
    updates_per_env_step: float = 0.25
    """Online: learner updates per env step sampled (batches of ``train_batch_size``)."""
    learning_starts: int = 1000
    """Transitions in replay before the first update."""
    env_steps_per_iteration: int = 1000
    """Online: env steps sampled (at least) per ``train()`` iteration, i.e. per metrics row."""

    # -- validation -----------------------------------------------------------------
    def validate(self) -> None:
        """Raise ``ValueError`` saying what is wrong and what to use instead."""
        super().validate()
        import gymnasium as gym

        spec = env_registry.spec(self.env)
        _check(
            not spec.multi_agent,
            f"the qt_opt plan is for single-agent envs; {self.env!r} is multi-agent",
        )
        obs_space, act_space = env_registry.spaces(self.env, self.env_config)[None]
        if not isinstance(act_space, gym.spaces.Box):
            raise ValueError(
                f"the qt_opt plan maximises Q over continuous actions by CEM; {self.env!r} has "
                f"{act_space}. Use 'replay' (DQN) for discrete actions."
            )
        _check(
            isinstance(obs_space, gym.spaces.Box),
            f"the qt_opt plan needs a Box observation; {self.env!r} observes {obs_space}",
        )
        _check(self.lr > 0, f"lr must be > 0, got {self.lr}")
        _check(0 < self.gamma <= 1, f"gamma must be in (0, 1], got {self.gamma}")
        _check(self.train_batch_size >= 1, "train_batch_size must be >= 1")
        _check(
            self.buffer_size >= self.train_batch_size,
            f"buffer_size ({self.buffer_size}) must hold a batch ({self.train_batch_size})",
        )
        _check(
            self.cem_samples >= 2 and 1 <= self.cem_elites < self.cem_samples,
            f"CEM needs cem_samples >= 2 and 1 <= cem_elites < cem_samples, got "
            f"{self.cem_samples} samples and {self.cem_elites} elites",
        )
        _check(self.cem_iterations >= 1, "cem_iterations must be >= 1")
        _check(0 < self.target_tau <= 1, f"target_tau must be in (0, 1], got {self.target_tau}")
        _check(self.target2_lag >= 1, "target2_lag must be >= 1")
        _check(self.grad_clip is None or self.grad_clip > 0, "grad_clip must be > 0 or None")
        _check(self.num_runners >= 0, "num_runners must be >= 0")
        _check(self.num_envs_per_runner >= 1, "num_envs_per_runner must be >= 1")
        _check(self.cpus_per_runner > 0 and self.cpus_per_updater > 0, "CPUs must be > 0")
        _check(self.rollout_fragment_length >= 1, "rollout_fragment_length must be >= 1")
        _check(self.num_bellman_updaters >= 0, "num_bellman_updaters must be >= 0")
        _check(self.updater_sync_every >= 1, "updater_sync_every must be >= 1")
        _check(self.exploration_noise >= 0, "exploration_noise must be >= 0")
        _check(0 <= self.random_action_prob <= 1, "random_action_prob must be in [0, 1]")
        _check(self.offline_updates >= 0, "offline_updates must be >= 0")
        _check(
            not self.offline_updates or self.dataset,
            "offline_updates learn from the dataset alone: set dataset= (a file or random:N)",
        )
        _check(self.updates_per_iteration >= 1, "updates_per_iteration must be >= 1")
        _check(self.updates_per_env_step > 0, "updates_per_env_step must be > 0")
        _check(self.learning_starts >= 0, "learning_starts must be >= 0")
        _check(self.env_steps_per_iteration >= 1, "env_steps_per_iteration must be >= 1")
        if self.dataset:
            from rlsuite.platform import demo_sources

            demo_sources.check_source(self.dataset, self.env, self.env_config, "dataset")

    def placement_bundles(self) -> list[dict[str, float]]:
        """The driver (the learner), one bundle per runner and one per Bellman updater."""
        return (
            [{"CPU": 1.0}]
            + [{"CPU": float(self.cpus_per_runner)}] * self.num_runners
            + [{"CPU": float(self.cpus_per_updater)}] * self.num_bellman_updaters
        )
