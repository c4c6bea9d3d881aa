"""An env registered with a ``vector_entry_point`` is stepped by RLlib's env runners as ONE
``gymnasium.vector.VectorEnv`` (e.g. several SUMO rings in one simulation), on real Ray."""

from __future__ import annotations

import os

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from rlsuite.platform import envs, optimizers
from tests._plans import ppo
from tests.platform._fakes import IdentityEnv


class IdentityVectorEnv(gym.vector.VectorEnv):
    """``num_envs`` IdentityEnvs (reward 1 for echoing the observed class) in numpy, with
    gymnasium's next-step autoreset (what RLlib's runners expect). Every observation also
    carries, as ``info["pid"]``, the process that built it."""

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(self, num_envs: int, n: int = 3, horizon: int = 20):
        self.num_envs, self.n, self.horizon = num_envs, n, horizon
        self.single_observation_space = gym.spaces.Box(0.0, 1.0, (n,), np.float32)
        self.single_action_space = gym.spaces.Discrete(n)
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self._rng = np.random.default_rng()
        self._t = np.zeros(num_envs, int)
        self._target = np.zeros(num_envs, int)
        self._done = np.zeros(num_envs, bool)

    def _obs(self):
        o = np.zeros((self.num_envs, self.n), np.float32)
        o[np.arange(self.num_envs), self._target] = 1.0
        return o

    def reset(self, *, seed=None, options=None):
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        self._t[:] = 0
        self._done[:] = False
        self._target = self._rng.integers(self.n, size=self.num_envs)
        return self._obs(), {"pid": np.full(self.num_envs, os.getpid())}

    def step(self, actions):
        actions = np.asarray(actions).reshape(self.num_envs)
        reward = (actions == self._target).astype(np.float64)
        reward[self._done] = 0.0  # an env that ended last step is reset now (next-step mode)
        self._t = np.where(self._done, 0, self._t + 1)
        self._target = self._rng.integers(self.n, size=self.num_envs)
        truncated = (self._t >= self.horizon) & ~self._done
        self._done = truncated.copy()
        terminated = np.zeros(self.num_envs, bool)
        return self._obs(), reward, terminated, truncated, {}


envs.register(
    "rlsuite-test/IdentityVector-v0",
    "tests.platform._fakes:IdentityEnv",
    vector_entry_point="tests.platform.test_vector_env:IdentityVectorEnv",
    default_config={"n": 3, "horizon": 20},
    max_envs_per_process=1,  # binds the scalar path only
)


def test_register_checks_the_vector_entry_point():
    with pytest.raises(ValueError, match="module:Attr"):
        envs.register("rlsuite-test/BadVec-v0", "x.y:Z", vector_entry_point="no_colon")
    with pytest.raises(ValueError, match="single-agent"):
        envs.register(
            "rlsuite-test/BadVecMA-v0", "x.y:Z", multi_agent=True, vector_entry_point="x.y:V"
        )
    with pytest.raises(ValueError, match="no vector_entry_point"):
        envs.make_vector("CartPole-v1", 2)


def test_creator_builds_the_vector_env_only_when_rllib_asks_for_num_envs():
    creator = envs.EnvCreator(envs.spec("rlsuite-test/IdentityVector-v0"))
    vec = creator({"num_envs": 5, "horizon": 7})
    assert isinstance(vec, IdentityVectorEnv) and vec.num_envs == 5 and vec.horizon == 7
    single = creator({"horizon": 7})
    assert isinstance(single, IdentityEnv) and single.horizon == 7


def test_vector_env_is_not_capped_by_max_envs_per_process_and_sets_the_mode():
    plan = optimizers.make_plan(
        "sync", env="rlsuite-test/IdentityVector-v0", num_env_runners=1, minibatch_size=100
    )
    assert plan.envs_per_runner == optimizers.DEFAULT_ENVS_PER_RUNNER  # not the scalar cap of 1
    config = optimizers.to_rllib(plan.replace(num_envs_per_env_runner=6))
    assert config.gym_env_vectorize_mode == "vector_entry_point"
    assert config.num_envs_per_env_runner == 6
    scalar = optimizers.to_rllib(
        optimizers.make_plan("sync", env="CartPole-v1", num_env_runners=1, minibatch_size=100)
    )
    assert scalar.gym_env_vectorize_mode == "sync"


@pytest.mark.slow
def test_sync_plan_samples_and_learns_through_the_vector_entry_point(ray_local):
    plan = ppo(
        "rlsuite-test/IdentityVector-v0",
        1600,
        200,
        6,
        num_env_runners=2,
        num_envs_per_env_runner=8,
        lr=3e-3,
        seed=0,
    )
    from rlsuite.platform.backends.rllib import RLlibBackend

    backend = RLlibBackend(plan)  # one algorithm: probed, then trained
    try:
        group = backend.algo.env_runner_group

        def probe(runner):
            eps = runner.sample(num_episodes=8, random_actions=True, force_reset=True)
            return (
                type(runner.env.unwrapped).__name__,
                runner.env.num_envs,
                os.getpid(),
                [len(e) for e in eps],
                [float(e.get_return()) for e in eps],
            )

        probes = group.foreach_env_runner(probe, local_env_runner=False)
        assert len(probes) == 2
        assert {p[2] for p in probes} != {os.getpid()}  # sampled in the runner processes
        for name, n, _pid, lengths, returns in probes:
            assert (name, n) == ("IdentityVectorEnv", 8)
            assert lengths and set(lengths) == {20}  # episodes end exactly at the horizon
            assert all(0 <= r <= 20 for r in returns)
        returns = []
        for _ in range(8):
            returns.append(backend.train()["episode_return_mean"])
            if returns[-1] >= 16:
                break
    finally:
        backend.stop()
    # Random play scores 20 / 3 ~ 6.7; the optimum is 20.
    assert returns[-1] >= 12, returns
