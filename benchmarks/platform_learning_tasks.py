"""The learning table's rows: RLlib's tuned examples, as their files build them, and the
platform plan with each example's hyperparameters (see ``platform_learning.py``).

Each ``_rllib_*`` function builds the example's ``AlgorithmConfig`` as its file does.
The offline row (BC) learns from data this module records (``record_cartpole_expert``):
RLlib's ``tests/data/cartpole/cartpole-v1_large`` is not in the pip wheel.
The driver registers this module with Ray's cloudpickle by value, so remote env runners
get its functions (the Pendulum example's filter factory) without importing it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# -- RLlib's tuned examples, as their files build them ---------------------------------


def _rllib_ppo_cartpole() -> Any:
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

    return (
        PPOConfig()
        .environment("CartPole-v1")
        .training(lr=0.0003, num_epochs=6, vf_loss_coeff=0.01)
        .rl_module(
            model_config=DefaultModelConfig(
                fcnet_hiddens=[32], fcnet_activation="linear", vf_share_layers=True
            )
        )
    )


def _rllib_dqn_cartpole() -> Any:
    from ray.rllib.algorithms.dqn import DQNConfig
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

    return (
        DQNConfig()
        .environment(env="CartPole-v1")
        .training(
            lr=0.0005,
            train_batch_size_per_learner=32,
            replay_buffer_config={
                "type": "PrioritizedEpisodeReplayBuffer",
                "capacity": 50_000,
                "alpha": 0.6,
                "beta": 0.4,
            },
            n_step=(2, 5),
            double_q=True,
            dueling=True,
            epsilon=[(0, 1.0), (10_000, 0.02)],
        )
        .rl_module(
            model_config=DefaultModelConfig(
                fcnet_hiddens=[256],
                fcnet_activation="tanh",
                fcnet_bias_initializer="zeros_",
                head_fcnet_hiddens=[256],
                head_fcnet_bias_initializer="zeros_",
            )
        )
    )


def _rllib_ppo_pendulum() -> Any:
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.connectors.env_to_module import MeanStdFilter
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

    return (
        PPOConfig()
        .environment("Pendulum-v1")
        .env_runners(
            num_env_runners=2,
            num_envs_per_env_runner=20,
            env_to_module_connector=lambda env, spaces, device: MeanStdFilter(),
        )
        .training(
            train_batch_size_per_learner=1024,
            minibatch_size=128,
            lr=0.0002,  # 0.0002 * (num_learners or 1) ** 0.5
            gamma=0.95,
            lambda_=0.5,
        )
        .rl_module(model_config=DefaultModelConfig(fcnet_activation="relu"))
    )


def _rllib_appo_cartpole() -> Any:
    from ray.rllib.algorithms.appo import APPOConfig
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

    return (
        APPOConfig()
        .environment("CartPole-v1")
        .training(circular_buffer_iterations_per_batch=2, vf_loss_coeff=0.05, entropy_coeff=0.0)
        .rl_module(model_config=DefaultModelConfig(vf_share_layers=True))
    )


def _rllib_bc_cartpole() -> Any:
    from ray.rllib.algorithms.bc import BCConfig
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

    # the example's data_path is "local://" + its tests/data/cartpole/cartpole-v1_large;
    # the same prefix on our recording (RLlib's data is not in the wheel)
    return (
        BCConfig()
        .environment("CartPole-v1")
        .offline_data(
            input_=["local://" + BC_DATA],
            map_batches_kwargs={"concurrency": 2, "num_cpus": 1},
            iter_batches_kwargs={"prefetch_batches": 1},
            dataset_num_iters_per_learner=5,
        )
        .training(train_batch_size_per_learner=1024, lr=0.0008)  # 0.0008 * 1 learner ** 0.5
        .rl_module(model_config=DefaultModelConfig(fcnet_hiddens=[256, 256]))
        .evaluation(
            evaluation_interval=3,
            evaluation_num_env_runners=1,
            evaluation_duration=5,
            evaluation_parallel_to_training=True,
        )
    )


def _rllib_ppo_mujoco() -> Any:
    """``mujoco_ppo.py`` with ``--env=HalfCheetah-v5`` (its default is Humanoid-v4)."""
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.connectors.env_to_module.mean_std_filter import MeanStdFilter
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig
    from torch.nn.init import orthogonal_

    return (
        PPOConfig()
        .environment(env="HalfCheetah-v5")
        .env_runners(
            num_env_runners=4,
            num_envs_per_env_runner=16,
            rollout_fragment_length=32,
            env_to_module_connector=lambda env, spaces=None, device=None: MeanStdFilter(),
        )
        .learners(num_learners=1)
        .training(
            train_batch_size_per_learner=2048,
            minibatch_size=512,
            num_epochs=10,
            lr=0.0003,
            vf_loss_coeff=1.0,
            entropy_coeff=[[0, 0.01], [2_000_000, 0.0]],
            gamma=0.99,
            lambda_=0.95,
            kl_coeff=0.5,
            clip_param=0.2,
            vf_clip_param=10.0,
            grad_clip=50.0,
            grad_clip_by="global_norm",
        )
        .rl_module(
            model_config=DefaultModelConfig(
                vf_share_layers=False,
                fcnet_hiddens=[256, 256],
                fcnet_kernel_initializer=orthogonal_,
                fcnet_activation="tanh",
                head_fcnet_hiddens=[256],
                head_fcnet_activation=None,
                free_log_std=True,
            )
        )
    )


# -- the offline row's data -------------------------------------------------------------

BC_DATA = os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "results", "tmp", "cartpole_pd_expert"
)
"""The BC row's demonstrations (git-ignored; recorded again when missing)."""
BC_FILES, BC_EPISODES_PER_FILE = 200, 2


class CartPolePD:
    """A hand-written CartPole controller: 500 (the maximum) on every seed recorded.
    The same rule as the imitation test's expert (``tests/platform/_fakes.py``)."""

    name = "pd-expert"

    def act(self, obs: Any) -> int:
        return int(obs[2] + 0.5 * obs[3] + 0.01 * obs[1] > 0)


def record_cartpole_expert(path: str = BC_DATA) -> dict[str, Any]:
    """The BC row's data: the PD expert's episodes (env seeds 0..399), 2 per parquet file,
    200 files of 1,000 rows, the layout RLlib's ``cartpole_recording.py`` writes
    (``output_max_rows_per_file=1000``). Recorded once; kept while the files are there."""
    import pyarrow.parquet as pq

    from rlsuite.platform.demonstrations import record_episodes

    files = [os.path.join(path, f"part-{i:03d}.parquet") for i in range(BC_FILES)]
    returns = []
    for i, f in enumerate(files):
        if not os.path.exists(f):
            s = record_episodes(
                CartPolePD(), "CartPole-v1", BC_EPISODES_PER_FILE, f, seed=BC_EPISODES_PER_FILE * i
            )
            returns.append(s["return_mean"])
    tables = [pq.read_table(f, columns=["eps_id", "rewards"]) for f in files]
    rewards = [sum(t.column("rewards").to_pylist()) for t in tables]
    episodes = sum(len(set(t.column("eps_id").to_pylist())) for t in tables)
    return {
        "path": os.path.relpath(path, os.path.dirname(os.path.dirname(BC_DATA))),
        "expert": "CartPolePD (hand-written rule in platform_learning_tasks.py), not RLlib's data",
        "files": len(files),
        "transitions": sum(t.num_rows for t in tables),
        "episodes": episodes,
        "return_mean": sum(rewards) / episodes,
        "env_seeds": f"0..{BC_FILES * BC_EPISODES_PER_FILE - 1}",
    }


@dataclass(frozen=True)
class Task:
    """One row of the table: RLlib's example and our plan with its hyperparameters."""

    plan: str
    env: str
    threshold: float
    budget_steps: int
    rllib_config: Callable[[], Any]
    source: str
    """RLlib's example file and the commit of the copy read."""
    ours: dict[str, Any]
    """The plan's values: the example's hyperparameters in the plan's fields."""
    differences: tuple[str, ...] = ()
    """What the example sets that the plan cannot express (and what ours uses instead)."""
    variants: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Further ``ours`` impls: name -> plan overrides."""
    max_iterations: int = 200
    metric: tuple[str, ...] = ("env_runners", "episode_return_mean")
    """Where the stop metric is in ``algo.train()``'s result."""
    updates_per_iteration: int | None = None
    """Offline rows: steps are learner updates, this many per iteration (both sides);
    None: steps are ``env_runners/num_env_steps_sampled_lifetime``."""
    num_cpus: int = 2
    """Logical CPUs given to Ray (``ray.init``), both sides; the machine has 2 cores."""
    prepare: Callable[[], dict[str, Any]] | None = None
    """Run by the driver before the row's cells (records the offline row's data); what it
    returns is saved in the JSON."""
    anchor: str = ""
    """A published result the row is also held to (its source and number); ``""``: the
    row is held to RLlib's example alone."""
    run_to_budget: bool = False
    """Train to the budget even after the threshold is reached: the row's number is the
    return *at* the budget (as the anchor reports it), not the steps to the threshold."""
    final_episodes: int = 0
    """Score the mean return of the last this many training episodes at the end (the
    anchor's metric); 0: none."""
    eval_episodes: int = 0
    """Score the final policy deterministically on this many held-out env seeds, through
    the platform's checkpoint and controller (``ours`` cells); 0: none."""

    @property
    def step_unit(self) -> str:
        return "env steps" if self.updates_per_iteration is None else "updates"


TASKS: dict[str, Task] = {
    "sync-cartpole": Task(
        plan="sync",
        env="CartPole-v1",
        threshold=450.0,
        budget_steps=300_000,
        rllib_config=_rllib_ppo_cartpole,
        source="rllib/examples/algorithms/ppo/cartpole_ppo.py @ 4d5432002e1d "
        "(default_reward=450, default_timesteps=300000; PPOConfig defaults otherwise: "
        "2 env runners x 1 env, batch 4000, minibatch 128, lambda 1.0, clip 0.3, "
        "KL loss 0.2, no grad clip)",
        ours=dict(
            env="CartPole-v1",
            num_env_runners=2,
            num_envs_per_env_runner=1,
            lr=3e-4,
            num_epochs=6,
            vf_loss_coeff=0.01,
            hidden=(32,),
            activation="tanh",
            train_batch_size=4000,
            minibatch_size=128,
            lambda_=1.0,
            clip_param=0.3,
            kl_coeff=0.2,
            vf_clip_param=10.0,
            grad_clip=None,
            entropy_coeff=0.0,
            gamma=0.99,
        ),
        differences=(
            "fcnet_activation='linear': the plan allows tanh or relu; ours uses tanh",
            "vf_share_layers=True: the plan's policy and value nets are separate",
        ),
        # ours_32envs: the same learning settings with the platform's default 32 envs per
        # runner, where the platform's sampling speed comes from (the example samples one)
        variants={
            "ours_overlap": {"overlap": True},
            "ours_32envs": {"num_envs_per_env_runner": 32},
        },
    ),
    "replay-cartpole": Task(
        plan="replay",
        env="CartPole-v1",
        threshold=450.0,
        budget_steps=200_000,
        rllib_config=_rllib_dqn_cartpole,
        source="rllib/examples/algorithms/dqn/cartpole_dqn.py @ 7156122e3068 "
        "(default_reward=450, default_timesteps=200000; DQNConfig defaults otherwise: "
        "sampling in the driver, target sync every 500 steps, learning from 1000 steps)",
        ours=dict(
            env="CartPole-v1",
            num_env_runners=0,
            num_envs_per_env_runner=1,
            rollout_fragment_length="auto",
            lr=5e-4,
            train_batch_size=32,
            buffer_size=50_000,
            prioritized=True,
            priority_alpha=0.6,
            priority_beta=0.4,
            double_q=True,
            dueling=True,
            n_step=3,
            target_update_freq=500,
            learning_starts=1000,
            epsilon_timesteps=10_000,
            final_epsilon=0.02,
            hidden=(256,),
            activation="tanh",
            env_steps_per_iteration=1000,
            gamma=0.99,
        ),
        differences=(
            "n_step=(2, 5) (drawn per sample): the plan takes one n; ours uses 3",
            "head_fcnet_hiddens=[256] and zero bias init: the plan has no head layers; "
            "ours uses RLlib's default head",
        ),
        # ours_32envs: the platform's default sampling layout (2 remote runners x 32 envs,
        # fragments of 4: 256 env steps per sample call) with the example's learning
        # settings, updates per env step included. RLlib's DQN samples n_step steps per
        # call under rollout_fragment_length="auto" and learns one batch of 32 per call:
        # with n_step=3 that is 32 transitions replayed per 3 sampled, training_intensity
        # 32/3 (85 updates per call of 256). An earlier run of this row asked for one update
        # per 32 steps (training_intensity 2/3 of RLlib's count, 8 updates per call), a
        # tenth of the example's updates, with the target synced every 16 updates instead
        # of ~170: 0/3 seeds learned (best 20-49 in 200k steps).
        # ours_frag5: the example's updates per env step. Its n_step=(2, 5) makes RLlib
        # sample 5 steps per call under "auto" (one update of 32 per 5 steps); the plan's
        # n_step=3 makes it 3, so "ours" runs 334 of RLlib's training steps (sample, add,
        # replay, update, weight sync) per 1000 env steps to the example's 200, and each
        # costs the same on both sides: side by side on one machine, 7.4 s per 1000 env
        # steps for ours, 5.0-5.3 for the example, 5.05 for this variant
        # (results/platform/platform_learning_replay_device.json). Fragments of 5 give the
        # example's count with n-step 3.
        variants={
            "ours_frag5": {"rollout_fragment_length": 5},
            "ours_32envs": {
                "num_env_runners": 2,
                "num_envs_per_env_runner": 32,
                "rollout_fragment_length": 4,
                "training_intensity": 32 / 3,
            },
        },
    ),
    "sync-pendulum": Task(
        plan="sync",
        env="Pendulum-v1",
        threshold=-300.0,
        budget_steps=400_000,
        rllib_config=_rllib_ppo_pendulum,
        source="rllib/examples/algorithms/ppo/pendulum_ppo.py @ 8c7aec54334b "
        "(default_reward=-300, default_timesteps=400000; PPOConfig defaults otherwise: "
        "30 epochs, clip 0.3, vf_loss_coeff 1.0, KL loss 0.2, no grad clip; "
        "DefaultModelConfig: [256, 256], vf_share_layers=True)",
        ours=dict(
            env="Pendulum-v1",
            num_env_runners=2,
            num_envs_per_env_runner=20,
            lr=2e-4,
            gamma=0.95,
            lambda_=0.5,
            num_epochs=30,
            train_batch_size=1024,
            minibatch_size=128,
            clip_param=0.3,
            vf_loss_coeff=1.0,
            vf_clip_param=10.0,
            kl_coeff=0.2,
            grad_clip=None,
            entropy_coeff=0.0,
            hidden=(256, 256),
            activation="relu",
            vf_share_layers=True,
        ),
        differences=(
            "MeanStdFilter (running mean/std of observations): ours runs without it "
            "(observation_filter='none', measured before the plan had the filter) and "
            "sees raw observations (cos, sin in [-1, 1], angular velocity in [-8, 8])",
        ),
        # ours_32envs: the platform's default 32 envs per runner (64 in all: fragments of
        # 16, so all episodes end together every 12.5 iterations instead of 7.7); measured
        # with separate value layers, before the plan had vf_share_layers, and kept so
        # ours_overlap: the example's settings with the next batch sampled during the update
        # ours_local: the example's 40 envs and learning settings, sampled in the driver (no
        # remote runner: no runner processes to start, no weights to send each iteration)
        variants={
            "ours_32envs": {"num_envs_per_env_runner": 32, "vf_share_layers": False},
            "ours_overlap": {"overlap": True},
            "ours_local": {"num_env_runners": 0, "num_envs_per_env_runner": 40},
        },
    ),
    "async-cartpole": Task(
        plan="async",
        env="CartPole-v1",
        threshold=450.0,
        budget_steps=2_000_000,
        rllib_config=_rllib_appo_cartpole,
        source="rllib/examples/algorithms/appo/cartpole_appo.py @ 95213c5f5aad "
        "(default_reward=450, default_timesteps=2000000; APPOConfig defaults otherwise: "
        "2 env runners x 1 env, fragments of 50, batch 500, lr 5e-4, clip 0.4, circular "
        "buffer of 8 batches, at least 10 s per iteration; [256, 256] tanh). A later copy "
        "(0c994fb87bd6) asks for 5 runners x 16 envs and 50 within 1M.",
        ours=dict(
            env="CartPole-v1",
            num_env_runners=2,
            num_envs_per_env_runner=1,
            rollout_fragment_length=50,
            train_batch_size=500,
            lr=5e-4,
            clip_param=0.4,
            entropy_coeff=0.0,
            vf_loss_coeff=0.05,
            grad_clip=40.0,
            target_network_update_freq=2,
            circular_buffer_num_batches=8,
            circular_buffer_iterations_per_batch=2,
            min_time_s_per_iteration=10.0,
            hidden=(256, 256),
            activation="tanh",
            gamma=0.99,
        ),
        differences=("vf_share_layers=True: the plan's policy and value nets are separate",),
        # ours_32envs: the platform's default 32 envs per runner (the learning settings and
        # the 10 s iterations unchanged), as the sync rows' variant
        variants={"ours_32envs": {"num_envs_per_env_runner": 32}},
        # RLlib 2.60's APPO builds its learner as a Ray Train worker (an actor of 1
        # CPU) even with num_learners=0; with both logical CPUs held by the 2 runners it
        # is never scheduled and build_algo() waits forever (tried: 12 min at 0% CPU,
        # the stack in LearnerGroup -> worker_group.add_workers). 3 logical CPUs on the
        # same 2 cores, both sides.
        num_cpus=3,
    ),
}

TASKS["imitation-cartpole"] = Task(
    plan="imitation",
    env="CartPole-v1",
    threshold=350.0,
    budget_steps=1750,  # updates: 350 iterations x 5
    max_iterations=350,
    metric=("evaluation", "env_runners", "episode_return_mean"),
    updates_per_iteration=5,
    # RLlib's example asks for 1 evaluation runner + 2 data actors of 1 CPU each, and Ray
    # Data's read tasks need one more: on 2 logical CPUs it waits forever for the second
    # actor (tried). 4 logical CPUs on the same 2 cores, both sides.
    num_cpus=4,
    prepare=record_cartpole_expert,
    rllib_config=_rllib_bc_cartpole,
    source="rllib/examples/algorithms/bc/cartpole_bc.py @ 0f2d5bd4349b (stop: "
    "evaluation/env_runners/episode_return_mean >= 350 or 350 iterations; BCConfig "
    "defaults otherwise: the local learner, no env runners for training). Its data, "
    "tests/data/cartpole/cartpole-v1_large (PPO's training episodes, recorded by "
    "cartpole_recording.py), is not in the wheel: both sides read the PD expert's "
    "200,000 transitions instead (record_cartpole_expert)",
    ours=dict(
        env="CartPole-v1",
        data=BC_DATA,
        lr=8e-4,
        train_batch_size=1024,
        updates_per_iteration=5,
        hidden=(256, 256),
        activation="tanh",
        num_env_runners=1,
        eval_episodes=5,
    ),
    differences=(
        "evaluation_interval=3, evaluation_parallel_to_training=True: the plan evaluates "
        "after every iteration, on its runner, after the update; ours scores 3x as often "
        "(it can stop up to 2 iterations earlier, and pays for the extra evaluations)",
        "map_batches_kwargs concurrency 2, iter_batches prefetch 1: the plan maps the rows "
        "once in the driver, a run of steps at a time (rlsuite.platform.offline), not in a "
        "Ray Data actor pool; the same batches (tested), no actors to start",
    ),
)

TASKS["ppo-halfcheetah"] = Task(
    plan="sync",
    env="HalfCheetah-v5",
    threshold=1442.0,
    budget_steps=1_000_000,
    max_iterations=1000,  # 489 iterations of 2048 steps reach the budget
    run_to_budget=True,
    final_episodes=100,
    eval_episodes=10,
    anchor="cleanrl ppo_continuous_action.py on HalfCheetah-v4, 1M steps: 1442.64 +- 46.03 "
    "(3 seeds; docs/benchmark/ppo_continuous_action.md @ 09f7a7f2f803, openrlbenchmark "
    "tag pr-424), the training episodes' return",
    rllib_config=_rllib_ppo_mujoco,
    source="rllib/examples/algorithms/ppo/mujoco_ppo.py @ 151e6f88fa3f with "
    "--env=HalfCheetah-v5 (default_reward=300, default_timesteps=1000000; 4 runners x 16 "
    "envs, 1 remote learner: more than 2 CPUs)",
    # cleanrl's Args (cleanrl/ppo_continuous_action.py @ 016ca33aa70f) in the plan's fields
    ours=dict(
        env="HalfCheetah-v5",
        num_env_runners=1,
        num_envs_per_env_runner=1,  # num_envs=1
        train_batch_size=2048,  # num_steps=2048 x 1 env
        minibatch_size=64,  # 32 minibatches
        num_epochs=10,
        lr=3e-4,
        lr_anneal_steps=1_000_000,  # anneal_lr=True over total_timesteps
        gamma=0.99,
        lambda_=0.95,
        clip_param=0.2,
        entropy_coeff=0.0,
        vf_loss_coeff=0.5,
        vf_clip_param=1e6,
        kl_coeff=0.0,
        grad_clip=0.5,  # max_grad_norm
        hidden=(64, 64),
        activation="tanh",
        free_log_std=True,  # actor_logstd: one parameter per action dimension
        observation_filter="meanstd",  # NormalizeObservation + clip to +-10
    ),
    # ours_e8_overlap: the same learning settings, sampled 8 envs x 256 steps at a time
    # (cleanrl: 1 env x 2048) with the next batch sampled during the update (overlap=true:
    # one update of policy lag, decoupled clip). On 2 cores 0.56 s per iteration against
    # 1.87 s for the one-env layout (8 iterations each, same run).
    variants={"ours_e8_overlap": {"num_envs_per_env_runner": 8, "overlap": True}},
    differences=(
        "env: gymnasium's HalfCheetah-v5 (MuJoCo 3+ bindings); cleanrl ran HalfCheetah-v4. "
        "Same body, reward terms and 1000-step episodes; v5 changes defaults elsewhere "
        "(e.g. the reset noise scale is a parameter), so returns are close, not identical",
        "NormalizeReward(gamma) + clip to +-10: RLlib 2.60 has no reward-normalising "
        "connector; ours learns from raw rewards (so the value loss is on raw returns: "
        "vf_clip_param=1e6 turns RLlib's squared-error clamp off)",
        "clip_vloss (the value prediction clipped to +-0.2 around the old one): RLlib "
        "clamps the squared value error instead; ours turns that clamp off (above)",
        "orthogonal init (policy head std 0.01, value head 1.0) and Adam eps 1e-5: ours "
        "keeps RLlib's default init and Adam eps 1e-8",
        "advantages: cleanrl normalises them per minibatch, RLlib's GAE per train batch",
        "the return cleanrl reports is RecordEpisodeStatistics' raw return of the training "
        "episodes, as here (RLlib's episode return before any normalisation)",
    ),
)

SKIPPED: dict[str, str] = {}
