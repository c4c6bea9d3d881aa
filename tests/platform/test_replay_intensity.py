"""The replay plan's ``training_intensity`` is the ratio it learns at: transitions replayed
per env step sampled, whatever the sampling layout."""

import pytest

from rlsuite.platform import optimizers, resources
from tests._plans import replay


def _replayed_per_sampled(plan) -> float:
    """Replayed / sampled transitions per RLlib's DQN round (its own weights function)."""
    from ray.rllib.algorithms.dqn.dqn import calculate_rr_weights

    config = optimizers.to_rllib(plan, resources.resolve(plan, log=False))
    samples_per_round, updates_per_round = calculate_rr_weights(config)
    sampled = samples_per_round * (
        config.get_rollout_fragment_length()
        * config.num_envs_per_env_runner
        * max(config.num_env_runners, 1)
    )
    return updates_per_round * config.train_batch_size_per_learner / sampled


@pytest.mark.parametrize(
    "runners, envs, fragment, intensity",
    [(0, 32, 4, 1.0), (1, 2, 4, 2.0), (2, 32, 4, 32 / 3), (2, 1, 4, 8.0), (3, 4, 2, 4.0)],
)
def test_training_intensity_is_the_replay_ratio_for_any_runner_count(
    runners, envs, fragment, intensity
):
    # RLlib's DQN counts num_env_runners + 1 samplers (its old stack's local runner sampled
    # too); only the remote ones sample, so unscaled it replayed (n + 1) / n times the ratio
    plan = optimizers.make_plan(
        "replay",
        env="CartPole-v1",
        num_env_runners=runners,
        num_envs_per_env_runner=envs,
        rollout_fragment_length=fragment,
        training_intensity=intensity,
        seed=0,
    )
    assert _replayed_per_sampled(plan) == pytest.approx(intensity, rel=0.02)


def test_remote_runners_learn_at_the_asked_ratio(ray_local):
    """Real Ray, one remote runner of 2 envs, fragments of 4 (8 env steps per round),
    batches of 8, ratio 2: every round replays 16 transitions, so after two iterations the
    learner has trained on twice the env steps sampled (RLlib's count unscaled: 4x)."""
    fragments = dict(num_envs_per_env_runner=2, rollout_fragment_length=4)
    plan = replay(
        "CartPole-v1", 8, 32, 1, training_intensity=2.0, hidden=(16,), seed=0, **fragments
    )
    algo = optimizers.to_rllib(plan, resources.resolve(plan, log=False)).build_algo()
    try:
        for _ in range(2):
            result = algo.train()
    finally:
        algo.stop()
    sampled = result["env_runners"]["num_env_steps_sampled_lifetime"]
    trained = result["learners"]["default_policy"]["num_module_steps_trained_lifetime"]
    # 8 rounds of 8 env steps (RLlib's lifetime count reads 65 here: one more than its
    # rounds sampled, a count of its own), 16 transitions replayed in each
    assert 64 <= sampled <= 65
    assert trained == 2 * 64
