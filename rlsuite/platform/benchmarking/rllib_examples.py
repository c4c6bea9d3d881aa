"""RLlib's tuned examples, each ``AlgorithmConfig`` built as the example's file builds it
(the learning table's ``rllib`` side); each function's docstring names the file, the commit
of the copy read and its stop, as the results JSON records it."""

from __future__ import annotations

from typing import Any


def _model(**values: Any) -> Any:
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

    return DefaultModelConfig(**values)


def _dqn_model(**extra: Any) -> Any:
    """The DQN examples' Q-network: [256] tanh, a dueling head of [256], zero biases."""
    return _model(
        fcnet_hiddens=[256],
        fcnet_activation="tanh",
        fcnet_bias_initializer="zeros_",
        head_fcnet_hiddens=[256],
        head_fcnet_bias_initializer="zeros_",
        **extra,
    )


def _mean_std_filter(env: Any = None, spaces: Any = None, device: Any = None) -> Any:
    from ray.rllib.connectors.env_to_module import MeanStdFilter

    return MeanStdFilter()


def ppo_cartpole() -> Any:
    """rllib/examples/algorithms/ppo/cartpole_ppo.py @ 4d5432002e1d (default_reward=450,
    default_timesteps=300000; PPOConfig defaults otherwise: 2 env runners x 1 env, batch
    4000, minibatch 128, lambda 1.0, clip 0.3, KL loss 0.2, no grad clip)"""
    from ray.rllib.algorithms.ppo import PPOConfig

    return (
        PPOConfig()
        .environment("CartPole-v1")
        .training(lr=0.0003, num_epochs=6, vf_loss_coeff=0.01)
        .rl_module(
            model_config=_model(fcnet_hiddens=[32], fcnet_activation="linear", vf_share_layers=True)
        )
    )


def dqn_cartpole() -> Any:
    """rllib/examples/algorithms/dqn/cartpole_dqn.py @ 7156122e3068 (default_reward=450,
    default_timesteps=200000; DQNConfig defaults otherwise: sampling in the driver,
    target sync every 500 steps, learning from 1000 steps)"""
    from ray.rllib.algorithms.dqn import DQNConfig

    replay = {
        "type": "PrioritizedEpisodeReplayBuffer",
        "capacity": 50_000,
        "alpha": 0.6,
        "beta": 0.4,
    }
    return (
        DQNConfig()
        .environment(env="CartPole-v1")
        .training(
            lr=0.0005,
            train_batch_size_per_learner=32,
            replay_buffer_config=replay,
            n_step=(2, 5),
            double_q=True,
            dueling=True,
            epsilon=[(0, 1.0), (10_000, 0.02)],
        )
        .rl_module(model_config=_dqn_model())
    )


def ppo_pendulum() -> Any:
    """rllib/examples/algorithms/ppo/pendulum_ppo.py @ 8c7aec54334b
    (default_reward=-300, default_timesteps=400000; PPOConfig defaults otherwise: 30
    epochs, clip 0.3, vf_loss_coeff 1.0, KL loss 0.2, no grad clip; DefaultModelConfig:
    [256, 256], vf_share_layers=True)"""
    from ray.rllib.algorithms.ppo import PPOConfig

    return (
        PPOConfig()
        .environment("Pendulum-v1")
        .env_runners(
            num_env_runners=2, num_envs_per_env_runner=20, env_to_module_connector=_mean_std_filter
        )
        # lr: 0.0002 * (num_learners or 1) ** 0.5
        .training(
            train_batch_size_per_learner=1024,
            minibatch_size=128,
            lr=0.0002,
            gamma=0.95,
            lambda_=0.5,
        )
        .rl_module(model_config=_model(fcnet_activation="relu"))
    )


def appo_cartpole() -> Any:
    """rllib/examples/algorithms/appo/cartpole_appo.py @ 95213c5f5aad
    (default_reward=450, default_timesteps=2000000; APPOConfig defaults otherwise: 2 env
    runners x 1 env, fragments of 50, batch 500, lr 5e-4, clip 0.4, circular buffer of 8
    batches, at least 10 s per iteration; [256, 256] tanh). A later copy (0c994fb87bd6)
    asks for 5 runners x 16 envs and 50 within 1M."""
    from ray.rllib.algorithms.appo import APPOConfig

    return (
        APPOConfig()
        .environment("CartPole-v1")
        .training(circular_buffer_iterations_per_batch=2, vf_loss_coeff=0.05, entropy_coeff=0.0)
        .rl_module(model_config=_model(vf_share_layers=True))
    )


def bc_cartpole(data: str) -> Any:
    """rllib/examples/algorithms/bc/cartpole_bc.py @ 0f2d5bd4349b (stop:
    evaluation/env_runners/episode_return_mean >= 350 or 350 iterations; BCConfig
    defaults otherwise: the local learner, no env runners for training). Its data,
    tests/data/cartpole/cartpole-v1_large (PPO's training episodes, recorded by
    cartpole_recording.py), is not in the wheel: both sides read the PD expert's 200,000
    transitions instead (record_cartpole_expert)"""
    from ray.rllib.algorithms.bc import BCConfig

    # the example's input is "local://" + its data folder: the same prefix on ``data``

    return (
        BCConfig()
        .environment("CartPole-v1")
        .offline_data(
            input_=["local://" + data],
            map_batches_kwargs={"concurrency": 2, "num_cpus": 1},
            iter_batches_kwargs={"prefetch_batches": 1},
            dataset_num_iters_per_learner=5,
        )
        .training(train_batch_size_per_learner=1024, lr=0.0008)  # 0.0008 * 1 learner ** 0.5
        .rl_module(model_config=_model(fcnet_hiddens=[256, 256]))
        .evaluation(
            evaluation_interval=3,
            evaluation_num_env_runners=1,
            evaluation_duration=5,
            evaluation_parallel_to_training=True,
        )
    )


def ppo_mujoco() -> Any:
    """rllib/examples/algorithms/ppo/mujoco_ppo.py @ 151e6f88fa3f with
    --env=HalfCheetah-v5 (default_reward=300, default_timesteps=1000000; 4 runners x 16
    envs, 1 remote learner: more than 2 CPUs)"""
    from ray.rllib.algorithms.ppo import PPOConfig
    from torch.nn.init import orthogonal_

    return (
        PPOConfig()
        .environment(env="HalfCheetah-v5")
        .env_runners(
            num_env_runners=4,
            num_envs_per_env_runner=16,
            rollout_fragment_length=32,
            env_to_module_connector=_mean_std_filter,
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
            model_config=_model(
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


def dqn_lstm_stateless_cartpole(env: str = "rlsuite/StatelessCartPole-v1") -> Any:
    """rllib/examples/algorithms/dqn/stateless_cartpole_dqn_with_lstm.py @ 2022e885a384
    (default_reward=350, default_timesteps=200000, num_env_runners=3; DQNConfig defaults
    otherwise: target sync every 500 steps, learning from 1000 steps). The wheel does not
    ship it; this is that copy's config. A later copy (7156122e3068) adds a MeanStdFilter and
    asks for 1,000,000 steps. ``env``: the example passes RLlib's ``StatelessCartPole``
    class, which has no time limit; the default is the platform's id for that class with
    CartPole-v1's 500-step limit (registered with Ray here), so both sides play one env."""
    from ray.rllib.algorithms.dqn import DQNConfig

    from rlsuite.platform.envs import rllib_env

    return (
        DQNConfig()
        .environment(rllib_env(env))
        .env_runners(num_env_runners=3)  # the script's parser default
        .training(
            lr=0.0005,
            train_batch_size_per_learner=32,
            replay_buffer_config={"type": "EpisodeReplayBuffer", "capacity": 100000},
            n_step=1,
            double_q=True,
            dueling=True,
            num_atoms=1,
            epsilon=[(0, 1.0), (20000, 0.02)],
            burn_in_len=8,
        )
        .rl_module(
            model_config=_dqn_model(
                use_lstm=True, max_seq_len=20, lstm_kernel_initializer="xavier_uniform_"
            )
        )
    )
