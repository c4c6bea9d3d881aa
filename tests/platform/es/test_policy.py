"""The ES policy and its numerics: centred ranks, actions per space, the torch twin."""

import gymnasium as gym
import numpy as np
import pytest

from rlsuite.platform.es import ESPolicy, centered_ranks


def test_centered_ranks_are_ranks_in_half_interval():
    x = np.array([[10.0, -3.0], [7.0, 7.0]])
    r = centered_ranks(x)
    np.testing.assert_allclose(r, [[0.5, -0.5], [-1 / 6, 1 / 6]])
    assert centered_ranks(np.array([1e9, 1.0])).tolist() == [0.5, -0.5]  # scale-free


@pytest.mark.parametrize(
    "action_space",
    [
        gym.spaces.Discrete(3, start=1),
        gym.spaces.Box(-2.0, 2.0, (2,), np.float32),
        gym.spaces.MultiDiscrete([2, 3]),
        gym.spaces.MultiBinary(3),
    ],
    ids=["discrete", "box", "multidiscrete", "multibinary"],
)
def test_policy_actions_are_valid_and_match_torch(action_space):
    import torch

    obs_space = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
    pol = ESPolicy(obs_space, action_space, (8, 5), "tanh")
    theta = pol.init_params(np.random.default_rng(0)) + np.float32(0.3)
    pol.set_params(theta)
    net = pol.to_torch(theta)
    rng = np.random.default_rng(1)
    for _ in range(20):
        x = rng.uniform(-1, 1, 4).astype(np.float32)
        out = pol.forward(x)
        with torch.no_grad():
            ref = net(torch.from_numpy(x)).numpy()
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)
        assert action_space.contains(pol.action(out))
    assert pol.num_params == sum(p.numel() for p in net.parameters())


def test_unsupported_action_space_is_a_clear_error():
    with pytest.raises(ValueError, match="supports Discrete, Box, MultiDiscrete and MultiBinary"):
        ESPolicy(gym.spaces.Box(-1, 1, (2,)), gym.spaces.Tuple([gym.spaces.Discrete(2)]), (4,))


@pytest.mark.parametrize("recurrent", ["", "gru"], ids=["feed-forward", "gru"])
def test_batched_step_matches_one_agent_at_a_time(recurrent):
    """Multi-agent workers act for all agents in one batched pass; it must equal acting
    for each agent alone, recurrent state included, over several steps."""
    from rlsuite.platform.es.policy import RunningStat

    obs_space = gym.spaces.Box(-1.0, 1.0, (5,), np.float32)
    pol = ESPolicy(obs_space, gym.spaces.Box(-3.0, 3.0, (1,), np.float32), (8, 6), "tanh",
                   recurrent, 4)  # fmt: skip
    pol.set_params(pol.init_params(np.random.default_rng(0)) + np.float32(0.2))
    rng = np.random.default_rng(2)
    hs = np.stack([pol.initial_state()] * 3) if recurrent else None
    hs_one = list(hs) if recurrent else [None] * 3
    for _ in range(6):
        xs = rng.uniform(-1, 1, (3, 5)).astype(np.float32)
        out, hs = pol.step_many(xs, hs)
        for i in range(3):
            o, hs_one[i] = pol.step(xs[i], hs_one[i])
            np.testing.assert_allclose(out[i], o, rtol=1e-5, atol=1e-6)
            if recurrent:
                np.testing.assert_allclose(hs[i], hs_one[i], rtol=1e-5, atol=1e-6)
    a, b = RunningStat(5), RunningStat(5)
    a.push_many(xs)
    for x in xs:
        b.push(x)
    assert a.count == b.count == 3
    np.testing.assert_allclose(a.sum, b.sum)
    np.testing.assert_allclose(a.sumsq, b.sumsq)


def test_clip_head_is_the_raw_output_clipped_to_the_bounds():
    """ARS's linear policy: ``hidden=()`` with ``action_head="clip"`` acts ``W x + b``
    inside the bounds and the bound outside them (the tanh head would squash both)."""
    box = gym.spaces.Box(np.array([-1.0, -2.0]), np.array([1.0, 0.5]), dtype=np.float32)
    obs_space = gym.spaces.Box(-np.inf, np.inf, (3,), np.float32)
    pol = ESPolicy(obs_space, box, (), "tanh", action_head="clip")
    assert pol.num_params == 2 * 3 + 2 and pol.architecture()["action_head"] == "clip"
    out = np.array([0.8, -5.0])
    np.testing.assert_allclose(pol.action(out), [0.8, -2.0])
    np.testing.assert_allclose(pol.action(np.array([7.0, 0.2])), [1.0, 0.2])
    tanh = ESPolicy(obs_space, box, (), "tanh")
    assert "action_head" not in tanh.architecture()  # default layout: old checkpoints load
    assert abs(tanh.action(out)[0] - 0.8) > 0.1
    with pytest.raises(ValueError, match="action_head='clip' clips actions to a bounded Box"):
        ESPolicy(obs_space, gym.spaces.Discrete(2), (), action_head="clip")


def test_ascent_direction_ranks_and_ars_top_directions():
    from rlsuite.platform.es.trainer import ascent_direction

    noise = np.random.default_rng(0).standard_normal(100).astype(np.float32)
    offsets = np.array([0, 10, 20])
    eps = [noise[o : o + 4] for o in offsets]
    returns = np.array([[3.0, 1.0], [0.0, 10.0], [2.0, 2.5]])
    # centred ranks over all six returns: (0.3, -0.3), (-0.5, 0.5), (-0.1, 0.1)
    ranks = ascent_direction(returns, offsets, noise, 4, sigma=0.1)
    want = (0.6 * eps[0] - 1.0 * eps[1] - 0.2 * eps[2]) / (2 * 3 * 0.1)
    np.testing.assert_allclose(ranks, want, rtol=1e-5)
    # ARS, top 2 pairs by their better return (pairs 1 and 0), raw differences over the
    # std of those four returns
    ars = ascent_direction(returns, offsets, noise, 4, 0.1, "return_std", top_pairs=2)
    std = np.std([3.0, 1.0, 0.0, 10.0])
    np.testing.assert_allclose(ars, (2.0 * eps[0] - 10.0 * eps[1]) / (2 * std), rtol=1e-5)
    # one pair (ARS on Swimmer: N = b = 1): a step of 2 eps towards the better side
    one = ascent_direction(returns[:1], offsets[:1], noise, 4, 0.1, "return_std")
    np.testing.assert_allclose(one, 2.0 * eps[0], rtol=1e-5)
    flat = ascent_direction(np.ones((2, 2)), offsets[:2], noise, 4, 0.1, "return_std")
    assert not flat.any()  # equal returns: no step (not a division by zero)
