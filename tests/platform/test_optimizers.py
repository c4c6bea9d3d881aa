"""Plans: validation and the one adapter to RLlib (no Ray needed)."""

import pytest
from ray.rllib.algorithms.dqn import DQNConfig

from rlsuite.platform import envs, optimizers


def test_unknown_key_is_rejected_with_a_suggestion():
    with pytest.raises(
        ValueError, match=r"unknown key for plan 'sync': 'learning_rate' \(did you mean 'lr'\?\)"
    ):
        optimizers.make_plan("sync", env="CartPole-v1", learning_rate=1e-3)


def test_unknown_plan_and_missing_env():
    with pytest.raises(ValueError, match="unknown plan 'fast'.*sync, async, replay, imitation, es"):
        optimizers.make_plan("fast", env="CartPole-v1")
    with pytest.raises(ValueError, match="needs env="):
        optimizers.make_plan("sync")


@pytest.mark.parametrize(
    "plan,kwargs,match",
    [
        ("sync", {"minibatch_size": 5000}, "minibatch_size must be in"),
        ("sync", {"gamma": 1.5}, "gamma"),
        ("sync", {"hidden": [0]}, "hidden"),
        ("async", {"num_env_runners": 0}, "needs num_env_runners >= 1"),
        ("replay", {"env": "Pendulum-v1"}, "needs a Discrete action space"),
        ("replay", {"buffer_size": 8}, "must hold at least one batch"),
        ("imitation", {}, "needs data="),
        ("imitation", {"data": "/nonexistent/x.parquet"}, "does not exist"),
        (
            "sync",
            {"env": "rlsuite-test/Matching-v0", "num_envs_per_env_runner": 4},
            "one env per runner",
        ),
        ("sync", {"policies": "each"}, "policies must be"),
    ],
)
def test_bad_values_and_combinations_say_what_is_wrong(plan, kwargs, match):
    kwargs = {"env": "CartPole-v1", **kwargs}
    with pytest.raises(ValueError, match=match):
        optimizers.make_plan(plan, **kwargs)


def test_plans_are_frozen_and_replace_revalidates():
    p = optimizers.make_plan("sync", env="CartPole-v1")
    with pytest.raises(AttributeError):
        p.lr = 1.0  # type: ignore[misc]
    q = p.replace(lr=1e-2)
    assert q.lr == 1e-2 and p.lr == 3e-4
    with pytest.raises(ValueError):
        p.replace(num_epochs=0)


def test_env_limit_per_process_caps_the_default():
    envs.register(
        "rlsuite-test/Solo-v0", "tests.platform._fakes:IdentityEnv", max_envs_per_process=1
    )
    assert optimizers.make_plan("sync", env="rlsuite-test/Solo-v0").envs_per_runner == 1
    assert (
        optimizers.make_plan("sync", env="CartPole-v1").envs_per_runner
        == optimizers.DEFAULT_ENVS_PER_RUNNER
    )
    with pytest.raises(ValueError, match="allows 1 per process"):
        optimizers.make_plan("sync", env="rlsuite-test/Solo-v0", num_envs_per_env_runner=2)


def test_sync_adapter_sets_what_the_plan_says():
    cfg = optimizers.to_rllib(
        optimizers.make_plan(
            "sync",
            env="CartPole-v1",
            lr=1e-3,
            num_epochs=7,
            minibatch_size=256,
            num_env_runners=3,
            hidden=(32, 16),
            seed=5,
        )
    )
    assert type(cfg).__name__ == "PPOConfig"
    assert cfg.lr == 1e-3 and cfg.num_epochs == 7 and cfg.minibatch_size == 256
    assert cfg.num_env_runners == 3
    assert cfg.num_envs_per_env_runner == optimizers.DEFAULT_ENVS_PER_RUNNER
    assert cfg.seed == 5 and cfg.restart_failed_env_runners is True
    assert cfg.model_config["fcnet_hiddens"] == [32, 16]
    assert cfg.enable_rl_module_and_learner and cfg.enable_env_runner_and_connector_v2


def test_sync_overlap_is_opt_in_and_builds_the_overlapped_ppo():
    plain = optimizers.to_rllib(optimizers.make_plan("sync", env="CartPole-v1"))
    assert type(plain).__name__ == "PPOConfig" and plain.algo_class.__name__ == "PPO"
    assert plain.learner_config_dict["check_finite_gradients"] is True  # the check stays on
    cfg = optimizers.to_rllib(
        optimizers.make_plan(
            "sync", env="CartPole-v1", overlap=True, check_finite_gradients=False, lr=1e-3
        )
    )
    assert cfg.algo_class.__name__ == "OverlappedPPO"
    assert cfg.lr == 1e-3 and cfg.num_epochs == 10  # PPO's settings pass through unchanged
    assert cfg.torch_skip_nan_gradients is True
    # the overlapped step syncs the runners itself, with each sample request
    assert cfg._dont_auto_sync_env_runner_states is True
    with pytest.raises(ValueError, match="overlap=true .* needs num_env_runners >= 1"):
        optimizers.make_plan("sync", env="CartPole-v1", overlap=True, num_env_runners=0)
    # as the CLIs set it: --set overlap=true (rlsuite), --plan-set overlap=true (apps)
    from rlsuite.cli_common import parse_sets

    plan = optimizers.make_plan("sync", env="CartPole-v1", **parse_sets(["overlap=true"]))
    assert plan.overlap is True


@pytest.mark.parametrize("free", [True, False])
def test_free_log_std_makes_the_action_std_one_parameter_not_a_per_state_output(free):
    import gymnasium as gym
    import torch

    cfg = optimizers.to_rllib(optimizers.make_plan("sync", env="Pendulum-v1", free_log_std=free))
    module = cfg.get_rl_module_spec(env=gym.make("Pendulum-v1")).build()
    names = [n for n, _ in module.named_parameters() if "log_std" in n]
    torch.manual_seed(0)
    out = module.forward_inference({"obs": torch.randn(8, 3)})["action_dist_inputs"]
    assert out.shape == (8, 2)  # mean and log-std of the one action dimension
    log_std = out[:, 1]
    if free:
        assert names and torch.allclose(log_std, log_std[0].expand(8))
    else:
        assert not names and log_std.std() > 1e-4


@pytest.mark.parametrize("plan_name", ["sync", "async"])
@pytest.mark.parametrize("shared", [False, True])
def test_vf_share_layers_gives_the_value_head_the_policys_encoder(plan_name, shared):
    import gymnasium as gym

    from rlsuite.platform import resources

    plan = optimizers.make_plan(
        plan_name, env="CartPole-v1", hidden=(32, 16), vf_share_layers=shared
    )
    assert plan.shares_encoder is shared
    module = optimizers.to_rllib(plan).get_rl_module_spec(env=gym.make("CartPole-v1")).build()
    got = sum(p.numel() for p in module.parameters())
    # the learner's work estimate counts the same parameters: one encoder or two
    assert got == resources.module_params(4, 2, (32, 16), 0, shared)
    one_encoder = resources.mlp_params(4, (32,), 16)
    assert got == (1 if shared else 2) * one_encoder + 17 * 2 + 17


def test_replay_adapter_is_apex_shaped():
    cfg = optimizers.to_rllib(
        optimizers.make_plan("replay", env="CartPole-v1", n_step=3, num_env_runners=2)
    )
    assert isinstance(cfg, DQNConfig)  # RLlib's DQN, with the in-place local weight sync
    assert cfg.double_q and cfg.dueling and cfg.n_step == 3
    assert cfg.replay_buffer_config["type"] == "PrioritizedEpisodeReplayBuffer"
    assert cfg.replay_buffer_config["alpha"] == 0.6
    assert cfg.num_env_runners == 2
    uniform = optimizers.to_rllib(
        optimizers.make_plan("replay", env="CartPole-v1", prioritized=False)
    )
    assert uniform.replay_buffer_config["type"] == "EpisodeReplayBuffer"
    assert cfg.min_sample_timesteps_per_iteration == 1000  # RLlib's DQN default, kept
    few = optimizers.make_plan("replay", env="CartPole-v1", env_steps_per_iteration=50)
    assert optimizers.to_rllib(few).min_sample_timesteps_per_iteration == 50
    with pytest.raises(ValueError, match="env_steps_per_iteration"):
        optimizers.make_plan("replay", env="CartPole-v1", env_steps_per_iteration=0)


def test_async_adapter_is_appo():
    cfg = optimizers.to_rllib(optimizers.make_plan("async", env="CartPole-v1"))
    assert type(cfg).__name__ == "APPOConfig" and cfg.vtrace
    assert cfg.min_time_s_per_iteration == 2.0


def test_multi_agent_shared_and_per_agent_policies():
    shared = optimizers.to_rllib(optimizers.make_plan("sync", env="rlsuite-test/Matching-v0"))
    assert set(shared.policies) == {"shared"}
    assert shared.policy_mapping_fn("a1") == "shared"
    per = optimizers.to_rllib(
        optimizers.make_plan("sync", env="rlsuite-test/Matching-v0", policies="per_agent")
    )
    assert set(per.policies) == {"a0", "a1"}
    assert per.policy_mapping_fn("a1") == "a1"


def test_to_dict_round_trips():
    p = optimizers.make_plan("replay", env="CartPole-v1", hidden=(128, 128), n_step=3)
    d = p.to_dict()
    assert d["plan"] == "replay" and d["hidden"] == [128, 128]
    assert optimizers.make_plan("replay", **d) == p
