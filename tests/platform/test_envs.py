import gymnasium as gym
import numpy as np
import pytest

from rlsuite.platform import envs


def test_registered_env_is_built_with_defaults_and_overrides():
    env = envs.make("rlsuite-test/Identity-v0")
    assert env.n == 3 and env.horizon == 20
    env = envs.make("rlsuite-test/Identity-v0", {"n": 5})
    assert env.action_space.n == 5 and env.horizon == 20


def test_check_env_passes_for_single_and_multi_agent():
    envs.check("rlsuite-test/Identity-v0")
    envs.check("rlsuite-test/Matching-v0")


def test_gymnasium_ids_keep_their_time_limit():
    env = envs.make("CartPole-v1")
    env.reset(seed=0)
    steps, done = 0, False
    while not done:
        _, _, term, trunc, _ = env.step(int(steps % 2))  # alternate: stays up a while
        steps += 1
        done = term or trunc
    assert steps <= 500
    assert isinstance(env, gym.Wrapper)


def test_unknown_id_lists_what_is_known():
    with pytest.raises(ValueError, match="unknown env id 'nope-v0'.*rlsuite-test/Identity-v0"):
        envs.make("nope-v0")


def test_reregistering_an_id_elsewhere_is_refused():
    with pytest.raises(ValueError, match="already registered"):
        envs.register("rlsuite-test/Identity-v0", "tests.platform._fakes:MatchingGame")
    with pytest.raises(ValueError, match="module:Attr"):
        envs.register("x-v0", "no_colon_here")


def test_rllib_creator_wraps_pettingzoo_and_drops_rllib_keys():
    from ray.rllib.env.multi_agent_env import MultiAgentEnv

    creator = envs.EnvCreator(envs.spec("rlsuite-test/Matching-v0"))
    env = creator({"horizon": 3, "num_envs": 1})
    assert isinstance(env, MultiAgentEnv)
    obs, _ = env.reset(seed=1)
    assert set(obs) == {"a0", "a1"}
    single = envs.EnvCreator(envs.spec("rlsuite-test/Identity-v0"))({"n": 4, "num_envs": 8})
    assert single.action_space.n == 4
    o, _ = single.reset(seed=3)
    assert o.dtype == np.float32


def test_a_mujoco_id_without_mujoco_names_the_extra(monkeypatch, capsys, tmp_path):
    import sys

    from rlsuite import cli

    monkeypatch.setitem(sys.modules, "mujoco", None)  # as if not installed
    with pytest.raises(ValueError, match=r"needs mujoco.*pip install -e '\.\[mujoco\]'"):
        envs.spec("HalfCheetah-v5")
    rc = cli.main(
        ["train", "--plan", "sync", "--env", "Swimmer-v5", "--run-dir", str(tmp_path / "r")]
    )
    err = capsys.readouterr().err.strip()
    assert rc == 2 and "\n" not in err and "pip install -e '.[mujoco]'" in err, err
    assert envs.spec("CartPole-v1").env_id == "CartPole-v1"  # other gymnasium ids unaffected
