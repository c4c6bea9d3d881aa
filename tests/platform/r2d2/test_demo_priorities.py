"""Prioritised replay with R2D3's demonstrations mixed in (the ``replay`` plan): RLlib's
step updates the agent buffer's priorities, from its own elements' TD errors only."""

from __future__ import annotations

import numpy as np
import pytest

from rlsuite.platform import optimizers
from rlsuite.platform.r2d2 import demo_replay


class Echo:
    """The Matching game's optimum, for every agent: its observed bit."""

    def act(self, obs):
        return {agent: int(np.argmax(o)) for agent, o in obs.items()}


def _episode(value: float, steps: int):
    from ray.rllib.env.single_agent_episode import SingleAgentEpisode

    return SingleAgentEpisode(
        observations=[np.full(2, value, np.float32)] * (steps + 1), actions=[0] * steps,
        rewards=[0.0] * steps, terminated=True, len_lookback_buffer=0,
    )  # fmt: skip


def _priorities(buffer) -> np.ndarray:
    """The agent buffer's priority of each stored transition (its sum tree's leaves)."""
    if hasattr(buffer, "_module_to_sum_segment"):
        return np.concatenate(
            [[t[i] for i in range(t.capacity) if t[i] > 0] for t in
             buffer._module_to_sum_segment.values()]
        )  # fmt: skip
    t = buffer._sum_segment
    return np.array([t[i] for i in range(t.capacity) if t[i] > 0])


def test_rllibs_update_reaches_the_agent_buffer_for_its_own_elements_only():
    from ray.rllib.utils.replay_buffers import EpisodeReplayBuffer, PrioritizedEpisodeReplayBuffer
    from ray.rllib.utils.replay_buffers.utils import update_priorities_in_episode_replay_buffer

    agent = PrioritizedEpisodeReplayBuffer(capacity=100, alpha=1.0)
    agent.add([_episode(-1.0, 10)])
    demos = demo_replay.buffers([_episode(1.0, 10)], per_module=False)
    mixing = demo_replay.mixing_buffer(agent, demos, 0.5, 0)
    assert isinstance(mixing, PrioritizedEpisodeReplayBuffer)  # RLlib's step updates it
    uniform = demo_replay.mixing_buffer(EpisodeReplayBuffer(capacity=100), demos, 0.5, 0)
    assert not isinstance(uniform, PrioritizedEpisodeReplayBuffer)
    batch = mixing.sample(num_items=8, n_step=1, gamma=0.99, sample_episodes=True)
    n = sum(float(e.get_observations(0)[0]) == -1.0 for e in batch)
    k = len(batch) - n
    assert n == 8 and k > 0
    sampled = list(agent._last_sampled_indices)
    errors = np.r_[np.arange(2.0, 2.0 + n), np.full(k, 100.0)]  # the demonstrations' last
    update_priorities_in_episode_replay_buffer(
        replay_buffer=mixing, td_errors={"default_policy": {"td_error": errors}}
    )
    expected = dict(zip(sampled, errors[:n]))  # drawn with replacement: the last one stays
    assert {i: agent._sum_segment[i] for i in expected} == expected  # alpha 1: the TD errors
    assert agent._max_priority == max(expected.values()) < 100  # no demonstration's error
    assert len(_priorities(agent)) == 10 and demos.get_num_timesteps() == 10


def _trained_buffer(**fields):
    plan = optimizers.make_plan(
        "replay", prioritized=True, demo_ratio=0.25, num_env_runners=0, learning_starts=20,
        env_steps_per_iteration=40, training_intensity=4.0, train_batch_size=16, hidden=[16],
        seed=0, **fields,
    )  # fmt: skip
    algo = optimizers.to_rllib(plan).build_algo()
    try:
        algo.train()
        result = algo.train()
        return algo.local_replay_buffer, result["rlsuite"]
    finally:
        algo.stop()


@pytest.mark.parametrize(
    "fields",
    [
        dict(env="rlsuite-test/Identity-v0", demonstrations="random:3"),  # 60 steps
        dict(
            env="rlsuite-test/Matching-v0",
            demonstrations=f"{__name__}:Echo:3",
            policies="per_agent",
        ),  # 3 x 10 steps x 2 agents
    ],
    ids=["single_agent", "per_agent"],
)
def test_training_moves_the_agent_buffers_priorities(ray_local, fields):
    buffer, extra = _trained_buffer(**fields)
    priorities = _priorities(buffer.agent)
    # new transitions enter at the buffer's max priority, 1 until the first update
    agent = buffer.agent
    steps = getattr(agent, "get_num_agent_timesteps", agent.get_num_timesteps)()
    assert len(priorities) == steps  # the agent's own steps, no demonstration rows
    assert np.mean(priorities != 1.0) > 0.5, priorities
    assert 0 < extra["demo_share"] < 1
    demos = buffer.demos.values() if isinstance(buffer.demos, dict) else [buffer.demos]
    assert sum(d.get_num_timesteps() for d in demos) == extra["demo_transitions"] == 60
