"""The config dataclasses of the plans RLlib runs: ``sync``, ``async``, ``replay``, ``imitation``
(and :class:`QPlan`, the fields ``replay`` shares with ``apex``).

Each is a frozen, documented :class:`rlsuite.platform.plans.Plan` that validates itself
and sizes its Ray placement; :func:`rlsuite.platform.optimizers.to_rllib` turns one into
an RLlib ``AlgorithmConfig``, and :mod:`rlsuite.platform.optimizers` is the catalogue
that names them (it re-exports these classes, so a pickle that names them there loads).

Example::

    >>> from rlsuite.platform.rllib_plans import SyncPlan
    >>> plan = SyncPlan(env="CartPole-v1", lr=1e-3)
    >>> plan.name, plan.lr
    ('sync', 0.001)
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Any, ClassVar

from rlsuite.platform import envs as env_registry
from rlsuite.platform import resources
from rlsuite.platform.plans import Plan
from rlsuite.platform.plans import check as _check

DEFAULT_ENVS_PER_RUNNER = 32
"""Envs per runner when the plan does not say and the env allows it: batches the
policy's forward pass over several envs, the main lever on RLlib's sampling speed
(see benchmarks/RESULTS.md)."""


@dataclass(frozen=True)
class RLlibPlan(Plan):
    """Fields every plan that RLlib runs has."""

    backend: ClassVar[str] = "rllib"
    shares_encoder: ClassVar[bool] = False
    """Whether the module's policy and value heads share one encoder (DQN) or each has
    its own (PPO, APPO): part of the learner's size (:func:`resources.learner_work`)."""
    supports_action_mask: ClassVar[bool] = False
    """Whether ``action_mask_offset`` applies (its module is in :mod:`rlsuite.platform.masking`)."""

    num_env_runners: int = 2
    """Remote sampling processes (Ray actors). 0 samples in the driver."""
    num_envs_per_env_runner: int | None = None
    """Envs each runner steps as one batch; ``None``: 32, or fewer where the env
    allows fewer per process (libsumo: 1). An env registered with a
    ``vector_entry_point`` builds them as ONE vector env (e.g. N rings in one SUMO
    simulation), which ``max_envs_per_process`` does not limit; one whose ``vector_size``
    fixes the number (a network's traffic lights) gets that number, and no other."""
    rollout_fragment_length: int | str = "auto"
    """Steps per env per sample call; ``"auto"`` fits the train batch."""
    gamma: float = 0.99
    """Discount factor."""
    lr: float = 3e-4
    """Learning rate of the learner's optimiser."""
    train_batch_size: int = 4000
    """Env steps per learner update (per learner)."""
    policies: str = "shared"
    """Multi-agent envs only: ``shared`` (one policy for every agent) or
    ``per_agent`` (one policy per agent id)."""
    num_learners: int = 0
    """Remote learner actors; 0 learns in the driver. Several learners split each
    batch and average their gradients (RLlib's data-parallel learners: one per GPU on
    a multi-GPU machine, or CPU processes)."""
    num_gpus_per_learner: float | str = "auto"
    """GPUs per learner (the driver's when ``num_learners`` is 0). ``"auto"``: one GPU per
    learner when the GPUs are there and the update is large enough to gain (parameters
    x minibatch >= 2e7; the measured rule is in :mod:`rlsuite.platform.resources`),
    else the CPU; a checkpoint's ``rlsuite.json`` records the choice (``resources``).
    A number > 0 the machine cannot give is an error, not a wait."""
    normalize_actions: bool = True
    """Continuous actions: the policy acts in [-1, 1] and RLlib rescales (and clips) each
    env's action to its Box bounds, per env and step. False hands the policy's raw sample
    to the env, which must clip it itself; it saves that per-item connector work (~15% of
    sampling time with many cheap envs per runner). No effect on discrete actions."""
    restart_failed_env_runners: bool = True
    """Replace a crashed env runner and keep training (fault tolerance)."""
    sample_timeout_s: float = 600.0
    """How long to wait for a runner's samples before treating it as failed."""
    action_mask_offset: int = -1
    """Discrete actions and a flat observation only (``sync`` and ``replay``): the index
    in the observation where the env's 0/1 mask over the ``n`` actions starts; the policy
    then never picks an action whose entry is 0 (:mod:`rlsuite.platform.masking`). -1:
    every action is always available."""
    check_finite_gradients: bool = True
    """Check the gradients for NaN/inf before each optimiser step and repair a
    non-finite one (NaN to zero, with a warning). RLlib's torch learner tests every
    gradient tensor (two ``isfinite`` passes over every parameter per minibatch); the
    ``sync`` plan's learner (:mod:`rlsuite.platform.learners`) tests one norm over all of
    them and repairs tensor by tensor only when that fails, the same check for a
    fraction of the cost. False skips the check (RLlib's ``torch_skip_nan_gradients``):
    a little faster, but a NaN or inf gradient then goes into Adam unchanged and
    corrupts the weights."""

    # -- validation -------------------------------------------------------------------
    def validate(self) -> None:
        """Raise ``ValueError`` on a bad value or a bad combination."""
        super().validate()
        s = env_registry.spec(self.env)
        _check(self.num_env_runners >= 0, "num_env_runners must be >= 0")
        if self.num_envs_per_env_runner is not None:
            _check(self.num_envs_per_env_runner >= 1, "num_envs_per_env_runner must be >= 1")
            if (
                s.max_envs_per_process
                and s.vector_entry_point is None
                and self.num_envs_per_env_runner > s.max_envs_per_process
            ):
                raise ValueError(
                    f"env {self.env!r} allows {s.max_envs_per_process} per process, but "
                    f"num_envs_per_env_runner={self.num_envs_per_env_runner}; raise "
                    "num_env_runners instead to run more copies in parallel"
                )
            if s.multi_agent and self.num_envs_per_env_runner > 1:
                raise ValueError("multi-agent envs run one env per runner (RLlib's limit)")
            env_registry.check_num_envs(s, self.env_config, self.num_envs_per_env_runner)
        if isinstance(self.rollout_fragment_length, str):
            _check(self.rollout_fragment_length == "auto", "rollout_fragment_length: int or 'auto'")
        else:
            _check(self.rollout_fragment_length >= 1, "rollout_fragment_length must be >= 1")
        _check(len(self.hidden) >= 1, f"hidden must list at least one layer, got {self.hidden!r}")
        _check(0.0 < self.gamma <= 1.0, f"gamma must be in (0, 1], got {self.gamma}")
        _check(self.lr > 0, f"lr must be > 0, got {self.lr}")
        _check(self.train_batch_size >= 1, "train_batch_size must be >= 1")
        _check(
            self.policies in ("shared", "per_agent"),
            f"policies must be 'shared' or 'per_agent', got {self.policies!r}",
        )
        _check(
            isinstance(self.num_learners, numbers.Integral) and self.num_learners >= 0,
            f"num_learners must be an int >= 0, got {self.num_learners!r}",
        )
        resources.check_gpus_requested(self.num_gpus_per_learner)
        _check(self.sample_timeout_s > 0, "sample_timeout_s must be > 0")
        if self.action_mask_offset != -1:
            _check(
                self.supports_action_mask,
                f"action_mask_offset is for the sync and replay plans, not {self.name!r}",
            )
            _check(
                isinstance(self.action_mask_offset, numbers.Integral)
                and self.action_mask_offset >= 0,
                f"action_mask_offset must be an int >= 0 (or -1: no mask), "
                f"got {self.action_mask_offset!r}",
            )

    @property
    def envs_per_runner(self) -> int:
        """The resolved ``num_envs_per_env_runner``."""
        if self.num_envs_per_env_runner is not None:
            return self.num_envs_per_env_runner
        s = env_registry.spec(self.env)
        if s.multi_agent:
            return 1
        if s.vector_entry_point is not None:  # one vector env: max_envs_per_process is moot
            return env_registry.vector_size(s, self.env_config) or DEFAULT_ENVS_PER_RUNNER
        return min(DEFAULT_ENVS_PER_RUNNER, s.max_envs_per_process or DEFAULT_ENVS_PER_RUNNER)

    @property
    def learner_minibatch_size(self) -> int:
        """Samples in one gradient step of the learner (its work, with the net's size)."""
        return self.train_batch_size

    def placement_bundles(self) -> list[dict[str, float]]:
        """The driver (it hosts a local learner, with its GPU), one bundle per env
        runner and one per remote learner, sized by :func:`resources.resolve`."""
        res = resources.resolve(self, log=False, driver_bundle=True)
        g, r = res.learner.num_gpus_per_learner, res.runners
        driver = {"CPU": 1.0, **({"GPU": g} if g and self.num_learners == 0 else {})}
        learner = {k: v for k, v in {"CPU": r.cpus_per_learner, "GPU": g}.items() if v}
        return (
            [driver]
            + [{"CPU": r.cpus_per_env_runner}] * self.num_env_runners
            + [learner] * self.num_learners
        )


@dataclass(frozen=True)
class RecurrentCapablePlan(RLlibPlan):
    """RLlib plans that can train a recurrent policy (``recurrent="lstm"``): their
    env runners carry the LSTM's state from step to step and their learner trains on
    sequences of ``max_seq_len`` steps."""

    supports_recurrent: ClassVar[bool] = True
    recurrent_cells: ClassVar[tuple[str, ...]] = ("lstm",)

    cell_size: int = 64
    """Size of the LSTM's cell and hidden state (with ``recurrent="lstm"``)."""
    max_seq_len: int = 20
    """Steps per training sequence of a recurrent policy: how far back through time
    the gradient flows (its state is carried over the whole episode when it acts)."""
    vf_share_layers: bool = False
    """The value head on the policy's encoder (RLlib's ``DefaultModelConfig`` default,
    and its tuned examples' setting) instead of an encoder of its own: one encoder to
    train instead of two, the value loss then shaping the policy's features."""

    @property
    def shares_encoder(self) -> bool:  # type: ignore[override]
        """Whether the value head shares the policy's encoder (``vf_share_layers``)."""
        return self.vf_share_layers

    def validate(self) -> None:
        super().validate()
        _check(self.cell_size >= 1, f"cell_size must be >= 1, got {self.cell_size}")
        _check(self.max_seq_len >= 1, f"max_seq_len must be >= 1, got {self.max_seq_len}")

    def model_config(self, **extra: Any) -> Any:
        """RLlib's ``DefaultModelConfig`` for this plan: its MLP, and the LSTM if any."""
        from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

        lstm = (
            dict(use_lstm=True, lstm_cell_size=self.cell_size, max_seq_len=self.max_seq_len)
            if self.recurrent == "lstm"
            else {}
        )
        return DefaultModelConfig(
            fcnet_hiddens=list(self.hidden),
            fcnet_activation=self.activation,
            vf_share_layers=self.vf_share_layers,
            **lstm,
            **extra,
        )


OBSERVATION_FILTERS = ("none", "meanstd")
"""The ``sync`` plan's ``observation_filter`` values."""


@dataclass(frozen=True)
class SyncPlan(RecurrentCapablePlan):
    """``sync``: synchronous sampling, then SGD over the batch (PPO)."""

    name: ClassVar[str] = "sync"
    supports_action_mask: ClassVar[bool] = True
    demonstrations_warm_start: ClassVar[bool] = True
    """Its ``demonstrations`` warm-start the policy before RL (on ``apex`` they are
    replayed beside the agent's experience instead)."""

    num_epochs: int = 10
    """Passes of SGD over each train batch."""
    minibatch_size: int = 500
    """SGD minibatch size."""
    clip_param: float = 0.2
    """PPO's surrogate clip."""
    lambda_: float = 0.95
    """GAE lambda."""
    entropy_coeff: float = 0.0
    """Entropy bonus."""
    vf_loss_coeff: float = 0.5
    """Weight of the value loss."""
    vf_clip_param: float = 10.0
    """Clip of the value loss. RLlib clamps each *squared* value error at this, so an
    error above sqrt(vf_clip_param) gives the value function no gradient at all: with
    returns in the hundreds (the traffic ring: ~800 per episode) the critic never
    learns and PPO runs on raw returns. Raise it (e.g. 1e6) for such rewards."""
    kl_coeff: float = 0.2
    """Initial KL penalty coefficient (0 turns the KL term off)."""
    grad_clip: float | None = 0.5
    """Global-norm gradient clip; ``None`` for none."""
    free_log_std: bool = False
    """Continuous actions: the Gaussian's log-std is one learned parameter per action
    dimension instead of a network output per state (as in SB3 and the PPO paper); the
    exploration noise then shrinks smoothly instead of jumping from state to state."""
    observation_filter: str = "none"
    """``meanstd``: each observation is normalised by the running mean and std of every
    observation sampled so far and clipped to +-10 before the policy sees it (RLlib's
    ``MeanStdFilter`` connector; the runners' statistics are merged after every
    iteration), as cleanrl's ``NormalizeObservation`` and SB3's ``VecNormalize`` do for
    MuJoCo, where raw observations mix angles and velocities of very different scales.
    The statistics are part of the checkpoint and its controller applies them. ``none``:
    raw observations."""
    lr_anneal_steps: int = 0
    """Decay ``lr`` linearly to 0 over this many env steps sampled (cleanrl's
    ``anneal_lr`` over its whole run; RLlib's ``lr`` schedule); 0: a constant ``lr``."""
    demonstrations: str = ""
    """Parquet of recorded transitions
    (:func:`rlsuite.platform.demonstrations.record_episodes`) to warm-start from: before the first PPO iteration the policy is cloned from them by maximum
    likelihood and the critic fitted to their discounted returns; RL then goes on from
    the demonstrator (as DAPG and DQfD do). On a multi-agent env (recorded there, one
    episode per agent) each agent's steps train the module it is mapped to: the shared
    one, or with ``policies=per_agent`` its own. ``""``: start from random weights. A
    resumed run restores its checkpoint instead."""
    demo_epochs: int = 30
    """Passes over the demonstrations for that warm start."""
    overlap: bool = False
    """Sample the next batch while the learner updates on this one
    (:mod:`rlsuite.platform.overlap`): the runners and the learner work at the same
    time instead of in turn, at the price of one update of policy lag. Each batch
    after the first is sampled with the weights from before the previous update. PPO's
    clip is then centred on the learner's policy at the start of the update, and each
    sample weighted by that policy's probability over the behaviour policy's (the
    decoupled clip of :class:`rlsuite.platform.learners.DecoupledClip`), so an update
    moves as far as an on-policy one would. The runners sample at a lower CPU priority than
    the learner, whose update is then what each iteration waits for. Needs
    ``num_env_runners >= 1``. Off: RLlib's PPO, sampling strictly on-policy."""

    @property
    def learner_minibatch_size(self) -> int:
        return self.minibatch_size

    def validate(self) -> None:
        super().validate()
        _check(self.num_epochs >= 1, "num_epochs must be >= 1")
        _check(self.demo_epochs >= 1, "demo_epochs must be >= 1")
        _check(
            self.observation_filter in OBSERVATION_FILTERS,
            f"observation_filter must be one of {', '.join(OBSERVATION_FILTERS)}, "
            f"got {self.observation_filter!r}",
        )
        _check(self.lr_anneal_steps >= 0, "lr_anneal_steps must be >= 0 (0: constant lr)")
        _check(
            self.action_mask_offset < 0 or self.observation_filter == "none",
            "observation_filter='meanstd' would rescale the action mask the policy reads from "
            "the observation; drop observation_filter= or action_mask_offset=",
        )
        if self.demonstrations:
            import os

            _check(
                not self.recurrent,
                "the demonstrations warm start clones a feed-forward policy step by step; "
                "drop recurrent= or demonstrations=",
            )
            _check(
                self.observation_filter == "none",
                "the demonstrations warm start clones the policy on raw observations; "
                "drop observation_filter= or demonstrations=",
            )
            if not os.path.exists(self.demonstrations):
                raise ValueError(
                    f"demonstrations {self.demonstrations!r} do not exist; record them "
                    "first with rlsuite.platform.demonstrations.record_episodes"
                )
        _check(
            1 <= self.minibatch_size <= self.train_batch_size,
            f"minibatch_size must be in [1, train_batch_size={self.train_batch_size}], "
            f"got {self.minibatch_size}",
        )
        _check(0 < self.clip_param < 1, "clip_param must be in (0, 1)")
        _check(0 <= self.lambda_ <= 1, "lambda_ must be in [0, 1]")
        _check(
            not self.overlap or self.num_env_runners >= 1,
            "overlap=true samples in remote runners while the learner updates; it needs "
            "num_env_runners >= 1",
        )


@dataclass(frozen=True)
class AsyncPlan(RecurrentCapablePlan):
    """``async``: runners sample continuously, the learner applies V-trace-corrected
    updates as batches arrive (APPO, IMPALA's architecture with PPO's clipped loss)."""

    name: ClassVar[str] = "async"

    lr: float = 5e-4
    """Learning rate."""
    train_batch_size: int = 500
    """Env steps per learner update."""
    rollout_fragment_length: int | str = 50
    """Steps per env per sample call (IMPALA-style short fragments)."""
    clip_param: float = 0.4
    """APPO's surrogate clip."""
    entropy_coeff: float = 0.0
    """Entropy bonus."""
    vf_loss_coeff: float = 0.5
    """Weight of the value loss."""
    use_kl_loss: bool = False
    """Add a KL term against the target network."""
    grad_clip: float | None = 40.0
    """Global-norm gradient clip; ``None`` for none."""
    target_network_update_freq: int = 2
    """Learner updates between target-network syncs (APPO's old policy)."""
    circular_buffer_num_batches: int = 4
    """Batches kept in the learner's circular buffer (sample reuse)."""
    circular_buffer_iterations_per_batch: int = 2
    """Times each batch is replayed from that buffer."""
    min_time_s_per_iteration: float = 2.0
    """An iteration reports after at least this long (RLlib's default is 10 s)."""

    def validate(self) -> None:
        super().validate()
        _check(
            self.num_env_runners >= 1,
            "the async plan needs num_env_runners >= 1 (it "
            "samples asynchronously in remote runners); use 'sync' for local sampling",
        )
        _check(
            self.circular_buffer_num_batches >= 1
            and self.circular_buffer_iterations_per_batch >= 1,
            "circular buffer sizes must be >= 1",
        )


@dataclass(frozen=True)
class QPlan(RLlibPlan):
    """Fields of the plans that learn RLlib's DQN module from prioritised replay
    (``replay``, and ``apex`` of :mod:`rlsuite.platform.apex`): the Q-learning loss and
    the replay buffer's priorities."""

    shares_encoder: ClassVar[bool] = True

    lr: float = 5e-4
    """Learning rate."""
    train_batch_size: int = 32
    """Transitions per learner update."""
    buffer_size: int = 50_000
    """Replay capacity in transitions."""
    priority_alpha: float = 0.6
    """How strongly priorities skew sampling (0: uniform)."""
    priority_beta: float = 0.4
    """Importance-sampling correction."""
    double_q: bool = True
    """Double Q-learning targets."""
    dueling: bool = True
    """Dueling value/advantage head."""
    n_step: int = 1
    """n-step returns (Ape-X uses 3)."""
    target_update_freq: int = 500
    """Env steps between target-network syncs."""
    learning_starts: int = 1000
    """Env steps sampled before the first update."""

    demonstrations: str = ""
    """R2D3's demonstrations inside replay: recorded episodes (parquet of
    :func:`rlsuite.platform.demonstrations.record_episodes`) or ``CONTROLLER:N`` (``random``
    or ``package.module:Factory``, recorded on N seeded episodes); each learner batch
    element is one of them with probability ``demo_ratio`` (``replay``:
    :mod:`rlsuite.platform.r2d2.demo_replay`; ``apex``: :mod:`rlsuite.platform.r2d2.demo_apex`).
    Single-agent envs, and vector envs whose sub-envs share the one buffer (a network's
    lights on ``rlsuite/SignalsShared-v0``: each light's steps recorded as its own
    episodes); on ``replay`` also multi-agent envs, each policy replaying its own agents'
    demonstrations (with ``policies=per_agent``, each agent its own). ``""``: none."""
    demo_ratio: float = 0.25
    """The probability that an element of a learner batch is a demonstration (R2D3's
    rho: 1/256 on its hard 3-D tasks; DI-engine's LunarLander setup: 1/4)."""
    large_margin_coeff: float = 0.0
    """DQfD's large-margin loss on demonstrated steps, its weight in the loss
    (:mod:`rlsuite.platform.r2d2.margin_learner`); with ``demonstrations`` only.
    0: off (R2D3 has none)."""
    large_margin: float = 0.8
    """DQfD's margin: how far the demonstrated action's Q-value must lead the others'."""

    def validate(self) -> None:
        super().validate()
        from rlsuite.platform import demo_sources
        from rlsuite.platform.r2d2.demos import check_demo_ratio

        check_demo_ratio(self.demo_ratio)
        _check(
            self.large_margin_coeff >= 0 and self.large_margin >= 0,
            "large_margin_coeff and large_margin must be >= 0",
        )
        if self.large_margin_coeff:
            _check(
                bool(self.demonstrations),
                f"large_margin_coeff is DQfD's loss on demonstrated steps: it needs "
                f"demonstrations= (plan {self.name!r} has none)",
            )
        if self.demonstrations:
            _check(
                self.name == "replay" or not env_registry.spec(self.env).multi_agent,
                f"demonstrations in the {self.name} plan are for single-agent envs; {self.env!r} "
                "is multi-agent (the replay plan gives each policy its own agents' "
                "demonstrations)",
            )
            demo_sources.check_source(
                self.demonstrations, self.env, self.env_config, "demonstrations"
            )
        _check(
            self.buffer_size >= self.train_batch_size,
            f"buffer_size ({self.buffer_size}) must hold at least one batch "
            f"({self.train_batch_size})",
        )
        _check(
            0 <= self.priority_alpha <= 1 and 0 <= self.priority_beta <= 1,
            "priority_alpha and priority_beta must be in [0, 1]",
        )
        _check(self.n_step >= 1, "n_step must be >= 1")
        _check(self.target_update_freq >= 1, "target_update_freq must be >= 1")
        _check(self.learning_starts >= 0, "learning_starts must be >= 0")
        if env_registry.spec(self.env).multi_agent:
            return
        space = env_registry.spaces(self.env, self.env_config)[None][1]
        import gymnasium as gym

        if not isinstance(space, gym.spaces.Discrete):
            raise ValueError(
                f"the {self.name} plan (DQN) needs a Discrete action space; {self.env!r} has "
                f"{space}. Use 'sync' or 'async' for continuous actions."
            )

    def dqn_training(self) -> dict[str, Any]:
        """The keyword arguments of RLlib's ``DQNConfig.training`` that these fields set."""
        return dict(
            lr=self.lr,
            gamma=self.gamma,
            train_batch_size_per_learner=self.train_batch_size,
            double_q=self.double_q,
            dueling=self.dueling,
            n_step=self.n_step,
            target_network_update_freq=self.target_update_freq,
            num_steps_sampled_before_learning_starts=self.learning_starts,
        )


@dataclass(frozen=True)
class ReplayPlan(QPlan):
    """``replay``: several runners feed one prioritised replay buffer; the learner
    samples it (RLlib's DQN with double Q and a dueling head), sampling and learning in
    turn. ``apex`` (:mod:`rlsuite.platform.apex`) does both at once, over sharded replay."""

    name: ClassVar[str] = "replay"
    supports_action_mask: ClassVar[bool] = True

    rollout_fragment_length: int | str = 4
    """Steps per env per sample call."""
    prioritized: bool = True
    """Prioritised replay (Schaul et al.); False samples uniformly."""
    epsilon_timesteps: int = 10_000
    """Env steps over which epsilon decays from 1 to ``final_epsilon``."""
    final_epsilon: float = 0.02
    """Exploration rate after the decay."""
    training_intensity: float | None = None
    """Replayed / sampled transitions ratio (transitions learned from per env step
    sampled; ``train_batch_size`` per update); ``None``: RLlib's natural value, one
    update per sample call (``num_env_runners x num_envs_per_env_runner x
    rollout_fragment_length`` env steps; with ``rollout_fragment_length="auto"`` RLlib's
    DQN samples ``n_step`` steps per env per call)."""
    env_steps_per_iteration: int = 1000
    """Env steps sampled (at least) per ``train()`` iteration, i.e. per metrics row and
    checkpoint; RLlib's DQN default is 1000. Envs with slow steps (a query run on a
    database) want fewer, fast ones more."""

    def validate(self) -> None:
        super().validate()
        _check(self.env_steps_per_iteration >= 1, "env_steps_per_iteration must be >= 1")
        _check(0 <= self.final_epsilon <= 1, "final_epsilon must be in [0, 1]")
        _check(self.epsilon_timesteps >= 1, "epsilon_timesteps must be >= 1")


@dataclass(frozen=True)
class ImitationPlan(RLlibPlan):
    """``imitation``: behaviour cloning from recorded episodes (RLlib's BC; the recorded
    rows are mapped to training batches once, in the driver, by
    :mod:`rlsuite.platform.offline`)."""

    name: ClassVar[str] = "imitation"

    data: str = ""
    """Path of recorded transitions (parquet, written by
    :func:`rlsuite.platform.demonstrations.record_episodes`)."""
    lr: float = 1e-3
    """Learning rate."""
    train_batch_size: int = 1024
    """Transitions per update."""
    num_env_runners: int = 0
    """Runners only evaluate here; learning reads ``data``."""
    updates_per_iteration: int = 20
    """Learner updates per training iteration."""
    eval_episodes: int = 5
    """Episodes the cloned policy plays after each iteration (its reported return)."""

    def validate(self) -> None:
        super().validate()
        import os

        if not self.data:
            raise ValueError(
                "the imitation plan needs data=<path of recorded episodes>; "
                "record some with rlsuite.platform.demonstrations.record_episodes"
            )
        if not os.path.exists(self.data):
            raise ValueError(
                f"imitation data {self.data!r} does not exist; record episodes "
                "first with rlsuite.platform.demonstrations.record_episodes"
            )
        _check(self.updates_per_iteration >= 1, "updates_per_iteration must be >= 1")
        _check(self.eval_episodes >= 1, "eval_episodes must be >= 1")
