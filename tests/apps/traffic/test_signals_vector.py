"""RESCO's lights as one vector env (SignalsVectorEnv, ``rlsuite/SignalsShared-v0``) on real
SUMO: light by light the multi-agent env's observations and rewards, the platform's
coupling of num_envs_per_env_runner to the lights, and an RLlib runner sampling through it."""

from __future__ import annotations

import numpy as np
import pytest

from rlsuite.apps.traffic.envs.signals_resco import RescoSignalsEnv
from rlsuite.apps.traffic.envs.signals_vector import SignalsVectorEnv, num_lights
from rlsuite.platform import envs, optimizers

ID = "rlsuite/SignalsShared-v0"
SHORT = {"network": "cologne3", "num_seconds": 60}  # 6 decisions of 10 s


def test_light_i_is_the_multi_agent_envs_light_i():
    """Same seed and actions: the same padded observations (cologne3 mixes 3 and 4 green
    phases) and rewards, per light and step, the same window end and the same delay; then
    the step after the end restarts with the next seed and zero reward."""
    vec = envs.make_vector(ID, 3, SHORT)
    ma = RescoSignalsEnv(backend="traci", **SHORT)  # libsumo holds the vector env's simulation
    actions = np.random.default_rng(0).integers(4, size=(6, 3))
    try:
        assert isinstance(vec, SignalsVectorEnv) and vec.lights == ma.possible_agents
        assert vec.single_action_space.n == 4 and vec.observation_space.shape == (3, 40)
        vobs, _ = vec.reset(seed=7)
        mobs, _ = ma.reset(seed=7)
        assert vec.observation_space.contains(vobs)
        np.testing.assert_array_equal(vobs, np.stack([mobs[x] for x in vec.lights]))
        rewards = []
        for t, a in enumerate(actions):
            vobs, vrew, vterm, vtrunc, _ = vec.step(a)
            mobs, mrew, _, mtrunc, _ = ma.step(dict(zip(vec.lights, a.tolist(), strict=True)))
            np.testing.assert_array_equal(vobs, np.stack([mobs[x] for x in vec.lights]))
            np.testing.assert_array_equal(vrew, [mrew[x] for x in vec.lights])
            assert not vterm.any()
            assert vtrunc.tolist() == [mtrunc[x] for x in vec.lights] == [t == 5] * 3
            rewards.append(vrew)
        assert np.min(rewards) < 0  # vehicles waited: the comparison saw non-zero rewards
        assert vec.episode_metrics()["delay"] == ma.episode_metrics()["delay"]
        obs, r, term, trunc, _ = vec.step(actions[0])  # next-step autoreset
        assert vec.env._seed == 8 and not r.any() and not term.any() and not trunc.any()
        assert vec.observation_space.contains(obs)
        with pytest.raises(ValueError, match="one seed"):
            vec.reset(seed=[1, 2, 3])
    finally:
        vec.close()
        ma.close()


def test_the_plan_couples_envs_per_runner_to_the_lights():
    assert num_lights(**SHORT) == 3 and num_lights(network="cologne8") == 8
    plan = optimizers.make_plan("replay", env=ID, env_config=SHORT, num_env_runners=1)
    assert plan.envs_per_runner == 3
    config = optimizers.to_rllib(plan)
    assert config.gym_env_vectorize_mode == "vector_entry_point"
    assert config.num_envs_per_env_runner == 3 and not config.is_multi_agent
    with pytest.raises(ValueError, match="num_envs_per_env_runner must be 3 or unset, got 4"):
        optimizers.make_plan("replay", env=ID, env_config=SHORT, num_envs_per_env_runner=4)
    with pytest.raises(ValueError, match="must be 3, got 2"):
        SignalsVectorEnv(num_envs=2, **SHORT)
    with pytest.raises(ValueError, match="rlsuite/Signals-v0"):
        num_lights(network="grid2x2")
    with pytest.raises(ValueError, match="program='rl'"):
        SignalsVectorEnv(program="fixed", **SHORT)
    obs_space, act_space = envs.spaces(ID, SHORT)[None]
    assert obs_space.shape == (40,) and act_space.n == 4


def test_one_light_network_is_a_gymnasium_env_and_more_are_refused():
    envs.check(ID, {"network": "cologne1", "num_seconds": 30})
    with pytest.raises(ValueError, match="one vector env of 3"):
        envs.make(ID, SHORT)


def test_an_rllib_runner_samples_every_light_through_it(ray_local):
    """RLlib's single-agent runner of the replay plan, in the driver: one episode per light,
    each of the window's 6 decisions, with rewards from the env."""
    plan = optimizers.make_plan(
        "replay", env=ID, env_config={**SHORT, "num_seconds": 30}, num_env_runners=0
    )
    algo = optimizers.to_rllib(plan).build_algo()
    try:
        runner = algo.env_runner_group.local_env_runner
        assert runner.num_envs == 3
        episodes = runner.sample(num_episodes=3, random_actions=False, force_reset=True)
    finally:
        algo.stop()
    done = [e for e in episodes if e.is_done]
    assert len(done) >= 3 and all(len(e) == 3 for e in done)
    assert all(e.get_observations(-1).shape == (40,) for e in done)
