"""R2D2's and R2D3's pure pieces: value rescaling, sequences, priorities, demonstrations."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from rlsuite.platform import demo_sources, envs
from rlsuite.platform.r2d2 import demos, rescale, sequences


class Alternate:
    """A CartPole controller: left, right, left, ... (a hand-written controller's class)."""

    def __init__(self):
        self.t = 0

    def reset(self, seed=None):
        self.t = 0

    def act(self, obs):
        self.t += 1
        return self.t % 2


def test_value_rescaling_round_trips_in_numpy_and_torch():
    x = np.concatenate([-np.logspace(4, -3, 50), [0.0], np.logspace(-3, 4, 50)])
    np.testing.assert_allclose(rescale.h_inv(rescale.h(x)), x, rtol=1e-6, atol=1e-6)
    t = torch.as_tensor(x)
    assert torch.allclose(rescale.h_inv(rescale.h(t)), t, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(rescale.h(x), rescale.h(t).numpy())
    # h compresses: h(99) = 10 - 1 + 0.099, odd and increasing
    assert rescale.h(np.array(99.0)) == pytest.approx(9.099)
    assert np.all(np.diff(rescale.h(x)) > 0) and np.allclose(rescale.h(-x), -rescale.h(x))


def test_sequences_overlap_by_half_and_carry_burn_in_and_the_stored_state():
    windows = sequences.cut(200, m=80, burn_in=40)
    assert [(w.burn_start, w.start, w.end) for w in windows] == [
        (0, 0, 80),
        (0, 40, 120),
        (40, 80, 160),
        (80, 120, 200),
    ]
    length, m, b = 11, 4, 2
    obs = np.arange(length, dtype=np.float32)[:, None]
    states = np.arange(length, dtype=np.float32)[:, None] * 10 + 5  # state before step t
    out = sequences.pack({"obs": obs}, states, np.zeros(1, np.float32), m, b)
    assert out["obs"].shape == (5, b + m, 1)  # starts 0, 2, 4, 6, 8
    # the third sequence: burn-in steps 2, 3, then steps 4..7 with a loss
    np.testing.assert_array_equal(out["obs"][2, :, 0], [2, 3, 4, 5, 6, 7])
    np.testing.assert_array_equal(out["loss_mask"][2], [0, 0, 1, 1, 1, 1])
    assert out["state"][2, 0] == states[2, 0]  # stored at its first burn-in step
    # the first: no burn-in before the episode's start, the initial state
    np.testing.assert_array_equal(out["mask"][0], [0, 0, 1, 1, 1, 1])
    assert out["state"][0, 0] == 0.0
    # the last: steps 8, 9, 10 with a loss, one padded step
    np.testing.assert_array_equal(out["obs"][4, :, 0], [6, 7, 8, 9, 10, 0])
    np.testing.assert_array_equal(out["loss_mask"][4], [0, 0, 1, 1, 1, 0])


@pytest.mark.parametrize(("m", "b"), [(80, 80), (80, 120), (1, 0), (10, -1)])
def test_a_burn_in_not_shorter_than_the_sequence_is_refused(m, b):
    with pytest.raises(ValueError, match="burn_in|seq_len"):
        sequences.check_lengths(m, b)


def test_sequence_priority_mixes_max_and_mean_over_the_steps_with_a_loss():
    td = np.array([[9.0, -1.0, 3.0, 100.0], [0.0, 0.0, 0.0, 0.0]])
    mask = np.array([[0, 1, 1, 0], [1, 1, 1, 1]], dtype=bool)
    p = sequences.priority(td, mask)
    assert p[0] == pytest.approx(0.9 * 3.0 + 0.1 * 2.0) and p[1] == 0.0
    pt = sequences.priority(torch.as_tensor(td), torch.as_tensor(mask))
    np.testing.assert_allclose(pt.numpy(), p)


def test_demonstration_share_of_batches_is_within_binomial_bounds():
    rng = np.random.default_rng(0)
    rho, n, batches = 0.25, 256, 40

    def agent(k):
        return {"src": np.zeros(k), "obs": rng.normal(size=(k, 3))}

    def demo(k):
        return {"src": np.ones(k), "obs": rng.normal(size=(k, 3))}

    shares = []
    for _ in range(batches):
        b = demos.mixed_batch(n, rho, rng, agent, demo)
        np.testing.assert_array_equal(b["src"], b["is_demo"])  # each from its own buffer
        assert b["obs"].shape == (n, 3)
        shares.append(b["is_demo"].mean())
    total = n * batches
    bound = 4 * np.sqrt(rho * (1 - rho) / total)  # 4 standard deviations
    assert abs(np.mean(shares) - rho) < bound
    assert not demos.mixed_batch(n, 0.0, rng, agent, demo)["is_demo"].any()
    assert demos.mixed_batch(n, 1.0, rng, agent, demo)["is_demo"].all()


@pytest.mark.parametrize("rho", [-0.1, 1.5, True, "0.25", None])
def test_demo_ratio_outside_zero_one_is_refused(rho):
    with pytest.raises(ValueError, match="demo_ratio must be a number in"):
        demos.check_demo_ratio(rho)


def test_large_margin_loss_is_zero_when_the_demonstrated_action_leads_by_the_margin():
    q = torch.tensor([[1.0, 2.0, 0.0], [1.0, 1.5, 0.0], [5.0, 0.0, 0.0]])
    a = torch.tensor([1, 1, 1])
    is_demo = torch.tensor([True, True, False])
    # row 0: max(1.8, 2, 0.8) - 2 = 0; row 1: max(1.8, 1.5, .8) - 1.5 = 0.3; row 2 not a demo
    assert demos.large_margin_loss(q, a, is_demo).item() == pytest.approx(0.15)
    assert demos.large_margin_loss(q, a, torch.zeros(3, dtype=torch.bool)).item() == 0.0


def test_demonstrations_from_a_controller_and_spaces_that_do_not_match_are_refused(tmp_path):
    spec = f"{__name__}:Alternate:2"
    path = demo_sources.materialize(spec, "CartPole-v1", None, 0, str(tmp_path))
    data = demo_sources.load(path)
    assert set(np.unique(data["actions"])) == {0, 1} and data["episode"].max() == 1
    obs_space, act_space = envs.spaces("CartPole-v1")[None]
    demo_sources.check_spaces(data, obs_space, act_space, "these")  # the same env: fine
    obs2, act2 = envs.spaces("rlsuite/StatelessCartPole-v1")[None]
    with pytest.raises(ValueError, match="observations of shape"):
        demo_sources.check_spaces(data, obs2, act2, "CartPole demonstrations")
    data["actions"] = data["actions"] * 2  # actions 0 and 2: not in Discrete(2)
    with pytest.raises(ValueError, match="not in the env's Discrete"):
        demo_sources.check_spaces(data, obs_space, act_space, "CartPole demonstrations")
    with pytest.raises(ValueError, match="neither an existing file"):
        demo_sources.parse("runs/none")


def test_stateless_cartpole_is_registered_and_hides_the_velocities():
    env_id = "rlsuite/StatelessCartPole-v1"
    envs.check(env_id)
    env = envs.make(env_id)
    obs, _ = env.reset(seed=0)
    assert obs.shape == (2,) and env.observation_space.shape == (2,)
    steps, done = 0, False
    while not done:  # an alternating policy keeps it up a while; truncation at 500 at most
        obs, _, term, trunc, _ = env.step(steps % 2)
        steps += 1
        done = term or trunc
    assert steps <= 500
    env.close()
