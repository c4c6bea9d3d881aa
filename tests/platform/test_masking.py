"""Action masks read from the observation (``action_mask_offset``): the sync (PPO) and
replay (DQN) plans never take an action the env marks unavailable, while sampling, in the
learner's targets and when a checkpoint acts; bad settings get clear errors."""

from __future__ import annotations

import numpy as np
import pytest

from rlsuite.platform import checkpoints, envs, optimizers, training
from tests.platform._fakes import MaskedChoiceEnv

ENV = "rlsuite-test/MaskedChoice-v0"
envs.register(ENV, "tests.platform._fakes:MaskedChoiceEnv")
OFFSET = MaskedChoiceEnv.MASK_OFFSET

PLANS = {
    "sync": dict(train_batch_size=400, minibatch_size=100, num_epochs=1),
    # epsilon stays near 1, so nearly every action is epsilon-greedy's random one
    "replay": dict(env_steps_per_iteration=400, learning_starts=100, epsilon_timesteps=100_000,
                   prioritized=False, buffer_size=1000),
}  # fmt: skip


def _plan(name: str, offset: int):
    return optimizers.make_plan(
        name, env=ENV, num_env_runners=1, num_envs_per_env_runner=2, hidden=(16,), seed=0,
        action_mask_offset=offset, **PLANS[name],
    )  # fmt: skip


def _checkpoint_plays_only_available_actions(checkpoint: str) -> None:
    ctl = checkpoints.load_controller(checkpoint)
    env = MaskedChoiceEnv()
    obs, _ = env.reset(seed=123)
    for _ in range(200):
        a = ctl.act(obs)
        assert obs[OFFSET + a] == 1.0, (obs, a)
        values = ctl.action_values(obs)
        # the masked actions' values are -inf (DQN) or the float minimum (PPO's logits)
        assert np.array_equal(values < -1e30, obs[OFFSET:] == 0), values
        obs, *_ = env.step(a)


@pytest.mark.slow
@pytest.mark.parametrize("plan", ["sync", "replay"])
def test_masked_plan_never_takes_an_unavailable_action(ray_local, tmp_path, plan):
    res = training.train(_plan(plan, OFFSET), iterations=2, run_dir=str(tmp_path / "m"),
                         progress=False)  # fmt: skip
    returns = [m["episode_return_mean"] for m in res.metrics]
    # every sampled action was available (a random one included) and the updates kept it so
    assert returns == [20.0, 20.0], returns
    _checkpoint_plays_only_available_actions(res.checkpoint)

    # the control: the same plan without the mask takes unavailable actions
    res = training.train(_plan(plan, -1), iterations=1, run_dir=str(tmp_path / "u"),
                         progress=False)  # fmt: skip
    assert res.metrics[0]["episode_return_mean"] < 15.0


def test_mask_that_does_not_fit_is_refused_with_the_range():
    from rlsuite.platform import masking

    env = MaskedChoiceEnv()
    assert masking.mask_slice(env.observation_space, env.action_space, 1) == slice(1, 5)
    with pytest.raises(ValueError, match=r"offset must be in \[0, 1\]"):
        masking.mask_slice(env.observation_space, env.action_space, 2)


def test_mask_offset_is_refused_where_it_does_not_apply():
    with pytest.raises(ValueError, match="sync and replay plans, not 'async'"):
        optimizers.make_plan("async", env=ENV, action_mask_offset=1)
    with pytest.raises(ValueError, match="action_mask_offset must be an int >= 0"):
        optimizers.make_plan("sync", env=ENV, action_mask_offset=-2)
    with pytest.raises(ValueError, match="would rescale the action mask"):
        optimizers.make_plan("sync", env=ENV, action_mask_offset=1, observation_filter="meanstd")
