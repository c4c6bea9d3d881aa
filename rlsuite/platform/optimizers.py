"""Policy optimizers as named execution plans over RLlib's new API stack.

The RLlib paper's policy optimizers (synchronous sampling, asynchronous
sampling, distributed replay, imitation) are *plans* here: a frozen, documented
config dataclass each (:class:`rlsuite.platform.plans.Plan`, in
:mod:`rlsuite.platform.rllib_plans`), turned into an RLlib
``AlgorithmConfig`` by one adapter, :func:`to_rllib`. RLlib does the work (EnvRunners
sample, the Learner holds the loss); the plans only choose the algorithm and its
resources (``apex``'s training step is rlsuite's own, :mod:`rlsuite.platform.apex`).
This module is also the catalogue of every plan, :data:`PLANS` (``make_plan``,
``plan_names``), the ``es`` plan of :mod:`rlsuite.platform.es` included.

======== ============================ ===========================================
plan     RLlib algorithm              shape
======== ============================ ===========================================
sync     PPO                          all runners sample, then one synchronous update
                                      (overlap=true: the next batch is sampled during it)
async    APPO (IMPALA + V-trace)      runners sample continuously; the learner
                                      consumes batches as they arrive
replay   DQN (double Q, dueling,      several runners feed one prioritised replay
         prioritised replay, n-step)  buffer; the learner samples from it, in turn
apex     DQN's learner and module     Ape-X: runners push prioritised experience to
         (rlsuite.platform.apex)      replay shards while the learner samples them
imitation BC                          supervised learning on recorded episodes
es       none (rlsuite.platform.es)   evolution strategies on Ray actors
async_grad none (rlsuite.platform     runners push gradients (A3C, GORILA's DQN) to a
         .async_grad)                 sharded parameter server, no barrier
qt_opt   none (rlsuite.platform     Q-learning for continuous actions, argmax by CEM;
         .qtopt)                      runner and Bellman-updater actors (QT-Opt)
r2d2     DQN's LSTM module and        R2D2: apex with an LSTM Q-network, replaying
         learner (rlsuite.platform    prioritised sequences with stored state and
         .r2d2)                       burn-in, rescaled n-step targets
======== ============================ ===========================================

Example::

    >>> from rlsuite.platform.optimizers import make_plan
    >>> plan = make_plan("sync", env="CartPole-v1", lr=1e-3)
    >>> plan.name, plan.lr
    ('sync', 0.001)
    >>> make_plan("sync", env="CartPole-v1", learning_rate=1e-3)
    Traceback (most recent call last):
    ...
    ValueError: unknown key for plan 'sync': 'learning_rate' (did you mean 'lr'?). ...
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

from rlsuite.platform import envs as env_registry
from rlsuite.platform import resources, runners
from rlsuite.platform.apex.plan import ApexPlan
from rlsuite.platform.async_grad.plan import AsyncGradPlan
from rlsuite.platform.es.plan import ESPlan
from rlsuite.platform.plans import Plan
from rlsuite.platform.qtopt.plan import QTOptPlan
from rlsuite.platform.r2d2.plan import R2D2Plan
from rlsuite.platform.rllib_plans import (
    DEFAULT_ENVS_PER_RUNNER,
    OBSERVATION_FILTERS,
    AsyncPlan,
    ImitationPlan,
    QPlan,
    RecurrentCapablePlan,
    ReplayPlan,
    RLlibPlan,
    SyncPlan,
)

__all__ = [
    "DEFAULT_ENVS_PER_RUNNER",
    "OBSERVATION_FILTERS",
    "PLANS",
    "ApexPlan",
    "AsyncPlan",
    "ImitationPlan",
    "QPlan",
    "R2D2Plan",
    "RLlibPlan",
    "RecurrentCapablePlan",
    "ReplayPlan",
    "SyncPlan",
    "describe",
    "make_plan",
    "plan_class",
    "plan_names",
    "to_rllib",
]
# The plan classes live in rlsuite.platform.rllib_plans; they are re-exported here so that
# pickles (checkpoints, Tune's trial configs) that name them in this module still load.


PLANS: dict[str, type[Plan]] = {
    p.name: p
    for p in (
        SyncPlan,
        AsyncPlan,
        ReplayPlan,
        ImitationPlan,
        ESPlan,
        AsyncGradPlan,
        ApexPlan,
        QTOptPlan,
        R2D2Plan,
    )
}
"""Every plan by name, in the order ``--help`` lists them."""


def plan_class(name: str) -> type[Plan]:
    """The config class of plan ``name``."""
    if name not in PLANS:
        raise ValueError(f"unknown plan {name!r}; choose one of {', '.join(plan_names())}")
    return PLANS[name]


def plan_names() -> list[str]:
    return list(PLANS)


def make_plan(name: str, **values: Any) -> Any:
    """Build and validate plan ``name``; unknown keys are an error, never ignored."""
    return plan_class(name).from_dict({"plan": name, **values})


def _policy_mapping(plan: RLlibPlan) -> tuple[list[str], Any]:
    if plan.policies == "shared":
        return ["shared"], _SharedMapping()
    return list(env_registry.spaces(plan.env, plan.env_config)), _PerAgentMapping()


class _SharedMapping:
    def __call__(self, agent_id: Any, *args: Any, **kwargs: Any) -> str:
        return "shared"


class _PerAgentMapping:
    def __call__(self, agent_id: Any, *args: Any, **kwargs: Any) -> str:
        return str(agent_id)


def to_rllib(plan: RLlibPlan, res: resources.Resources | None = None):
    """The one adapter: a validated plan -> RLlib ``AlgorithmConfig`` (new API stack).

    ``res``: the learner's device and the runners' CPUs, as :func:`resources.resolve`
    chose them for this machine (resolved here when not given; it raises on GPUs asked
    for that are not there, before anything waits on Ray)."""
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

    from rlsuite.platform import connectors

    plan.validate()
    res = res or resources.resolve(plan)
    spec = env_registry.spec(plan.env)
    rllib_checks_gradients = plan.check_finite_gradients
    common_model = dict(fcnet_hiddens=list(plan.hidden), fcnet_activation=plan.activation)

    if isinstance(plan, SyncPlan):
        from ray.rllib.algorithms.ppo import PPOConfig

        from rlsuite.platform import learners
        from rlsuite.platform.overlap import OverlappedPPOConfig

        config = (OverlappedPPOConfig if plan.overlap else PPOConfig)().training(
            lr=[[0, plan.lr], [plan.lr_anneal_steps, 0.0]] if plan.lr_anneal_steps else plan.lr,
            gamma=plan.gamma,
            train_batch_size_per_learner=plan.train_batch_size,
            minibatch_size=plan.minibatch_size,
            num_epochs=plan.num_epochs,
            clip_param=plan.clip_param,
            lambda_=plan.lambda_,
            entropy_coeff=plan.entropy_coeff,
            vf_loss_coeff=plan.vf_loss_coeff,
            vf_clip_param=plan.vf_clip_param,
            kl_coeff=plan.kl_coeff,
            use_kl_loss=plan.kl_coeff > 0,
            grad_clip=plan.grad_clip,
        )
        model = plan.model_config(free_log_std=plan.free_log_std)
        # RLlib's PPO learner with fused Adam and one finite-gradient test per minibatch
        # (it replaces RLlib's per-tensor test, turned off below); with overlap, the
        # decoupled clip for the one update of policy lag.
        config = config.learners(
            **learners.learner_settings(
                check_finite_gradients=plan.check_finite_gradients, decoupled_clip=plan.overlap
            )
        )
        rllib_checks_gradients = False
        if plan.observation_filter == "meanstd":
            config = config.env_runners(
                env_to_module_connector=functools.partial(
                    connectors.mean_std_filter, multi_agent=spec.multi_agent
                )
            )
    elif isinstance(plan, AsyncPlan):
        from ray.rllib.algorithms.appo import APPOConfig

        config = (
            APPOConfig()
            .training(
                lr=plan.lr,
                gamma=plan.gamma,
                train_batch_size_per_learner=plan.train_batch_size,
                clip_param=plan.clip_param,
                entropy_coeff=plan.entropy_coeff,
                vf_loss_coeff=plan.vf_loss_coeff,
                use_kl_loss=plan.use_kl_loss,
                grad_clip=plan.grad_clip,
                target_network_update_freq=plan.target_network_update_freq,
                circular_buffer_num_batches=plan.circular_buffer_num_batches,
                circular_buffer_iterations_per_batch=plan.circular_buffer_iterations_per_batch,
            )
            .reporting(min_time_s_per_iteration=plan.min_time_s_per_iteration)
        )
        model = plan.model_config()
    elif isinstance(plan, ReplayPlan):
        from rlsuite.platform.r2d2 import demo_replay

        buffer: dict[str, Any] = {"capacity": plan.buffer_size}
        if plan.prioritized:
            buffer.update(
                type="PrioritizedEpisodeReplayBuffer",
                alpha=plan.priority_alpha,
                beta=plan.priority_beta,
            )
        else:
            buffer.update(type="EpisodeReplayBuffer")
        if spec.multi_agent:
            buffer["type"] = "MultiAgent" + buffer["type"]
        # RLlib's DQN; its weight sync copies tensors in place when nothing is remote
        # (and R2D3's demonstrations mixed into its replay samples)
        config = (
            demo_replay.config_class(plan)()
            .training(
                **plan.dqn_training(),
                replay_buffer_config=buffer,
                epsilon=[(0, 1.0), (plan.epsilon_timesteps, plan.final_epsilon)],
                training_intensity=rllib_training_intensity(plan),
            )
            .reporting(min_sample_timesteps_per_iteration=plan.env_steps_per_iteration)
        )
        config = demo_replay.with_demonstrations(config, plan)
        model = DefaultModelConfig(**common_model)
    elif isinstance(plan, R2D2Plan):
        from rlsuite.platform.r2d2.algorithm import r2d2_config

        # apex's training step on sequences; RLlib's DQN module with its LSTM (R2D3's
        # demonstration sequences mixed in)
        config = r2d2_config(plan)
        model = None  # the module's spec: _module_spec
    elif isinstance(plan, ApexPlan):
        from rlsuite.platform.apex.algorithm import apex_config
        from rlsuite.platform.r2d2.demo_apex import with_demonstrations

        # RLlib's DQN learner and module, Ape-X's training step (R2D3's demonstrations mixed in)
        config = with_demonstrations(apex_config(plan), plan)
        model = DefaultModelConfig(**common_model)
    elif isinstance(plan, ImitationPlan):
        import os

        from ray.rllib.algorithms.bc import BCConfig

        from rlsuite.platform import offline

        config = (
            BCConfig()
            .training(lr=plan.lr, train_batch_size_per_learner=plan.train_batch_size)
            .offline_data(
                input_=[os.path.abspath(plan.data)],
                dataset_num_iters_per_learner=plan.updates_per_iteration,
                # the rows mapped once in the driver, a run of steps at a time, instead of
                # by a Ray Data actor pool one row at a time (rlsuite.platform.offline)
                offline_data_class=offline.DriverMappedOfflineData,
                prelearner_class=offline.EpisodeRunsPreLearner,
            )
            .evaluation(
                evaluation_interval=1,
                evaluation_duration=plan.eval_episodes,
                evaluation_duration_unit="episodes",
                evaluation_num_env_runners=plan.num_env_runners,
            )
        )
        model = DefaultModelConfig(**common_model)
    else:  # pragma: no cover - every plan class is handled above
        raise TypeError(f"no RLlib adapter for {type(plan).__name__}")

    config = (
        config.environment(
            env=env_registry.rllib_env(plan.env),
            env_config=dict(plan.env_config),
            normalize_actions=plan.normalize_actions,
        )
        .env_runners(
            # RLlib's runner classes, seeded without importing torch's compiler
            env_runner_cls=runners.runner_class(spec.multi_agent),
            num_env_runners=plan.num_env_runners,
            num_envs_per_env_runner=plan.envs_per_runner,
            rollout_fragment_length=plan.rollout_fragment_length,
            sample_timeout_s=plan.sample_timeout_s,
            num_cpus_per_env_runner=res.runners.cpus_per_env_runner,
            # An env with a vector entry point builds all of a runner's copies as one
            # VectorEnv; RLlib's own SyncVectorEnv otherwise.
            gym_env_vectorize_mode=(
                "vector_entry_point" if spec.vector_entry_point and not spec.multi_agent else "sync"
            ),
            # RLlib's default module-to-env pipeline with the actions' unsquash/clip done
            # for all envs in one numpy operation (rlsuite.platform.connectors)
            module_to_env_connector=functools.partial(
                connectors.module_to_env_pieces,
                normalize_actions=plan.normalize_actions,
                clip_actions=bool(config.clip_actions),
                multi_agent=spec.multi_agent,
            ),
            add_default_connectors_to_module_to_env_pipeline=False,
        )
        .learners(
            num_learners=plan.num_learners,
            num_gpus_per_learner=res.learner.num_gpus_per_learner,
            num_cpus_per_learner=res.runners.cpus_per_learner if plan.num_learners else "auto",
        )
        .fault_tolerance(
            restart_failed_env_runners=plan.restart_failed_env_runners,
            max_num_env_runner_restarts=1000,
        )
        .framework(torch_skip_nan_gradients=not rllib_checks_gradients)
        .debugging(seed=plan.seed, log_level="ERROR")
        # no full-heap GC pauses in the runners (rlsuite.platform.runners)
        .callbacks(on_environment_created=runners.freeze_startup_objects)
        .reporting(metrics_num_episodes_for_smoothing=20)
    )
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    module = _module_spec(plan, model)
    if spec.multi_agent:
        from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec

        module_ids, mapping = _policy_mapping(plan)
        config = config.multi_agent(policies=set(module_ids), policy_mapping_fn=mapping)
        config = config.rl_module(
            rl_module_spec=MultiRLModuleSpec(
                rl_module_specs={m: RLModuleSpec(**module) for m in module_ids}
            )
        )
    elif "module_class" in module:
        config = config.rl_module(rl_module_spec=RLModuleSpec(**module))
    else:
        config = config.rl_module(model_config=model)
    return config


def _module_spec(plan: RLlibPlan, model: Any) -> dict[str, Any]:
    """The ``RLModuleSpec`` fields of the plan's module: RLlib's default module with
    ``model``, or with ``action_mask_offset`` set, the masked one of
    :mod:`rlsuite.platform.masking` with the offset in its model config."""
    if isinstance(plan, R2D2Plan):
        from rlsuite.platform.r2d2.algorithm import R2D2Module, model_config

        return {"module_class": R2D2Module, "model_config": model_config(plan)}
    if plan.action_mask_offset < 0:
        return {"model_config": model}
    import dataclasses

    from rlsuite.platform import masking

    cls = (
        masking.MaskedPPOTorchRLModule
        if isinstance(plan, SyncPlan)
        else masking.MaskedDQNTorchRLModule
    )
    return {
        "module_class": cls,
        "model_config": {**dataclasses.asdict(model), masking.KEY: plan.action_mask_offset},
    }


def rllib_training_intensity(plan: ReplayPlan) -> float | None:
    """RLlib's ``training_intensity`` that gives the plan's replayed / sampled ratio.

    RLlib 2.60's DQN sizes its updates per sample call from a "native ratio" that counts
    ``num_env_runners + 1`` runners (the old stack's local runner sampled too); on the new
    stack only the remote runners sample, so with ``n`` of them it replays ``(n + 1) / n``
    times the asked ratio (1.5x with 2). The value is scaled by ``n / (n + 1)`` to undo
    that; without remote runners RLlib's count is already right."""
    if plan.training_intensity is None:
        return None
    n = plan.num_env_runners
    return plan.training_intensity * n / (n + 1) if n >= 1 else plan.training_intensity


def describe(plan: Any) -> str:
    """One line per field: ``name = value  # docstring``."""
    out = [f"plan {plan.name}"]
    for f in dataclasses.fields(plan):
        out.append(f"  {f.name} = {getattr(plan, f.name)!r}")
    return "\n".join(out)
