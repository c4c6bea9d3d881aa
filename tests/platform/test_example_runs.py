"""RLlib's DQN+LSTM example run in pieces: a cut piece saves its checkpoint and replay
buffer, the next piece goes on from it with the counts carried over (real Ray, tiny runs)."""

from __future__ import annotations

import math
import os
import pickle

import pytest

pytestmark = pytest.mark.slow


def _config():
    """The example's config, small: 1 runner, 20-step fragments, learning from 40 steps,
    iterations of 100 env steps."""
    from rlsuite.platform.benchmarking.rllib_examples import dqn_lstm_stateless_cartpole

    return (
        dqn_lstm_stateless_cartpole()
        .env_runners(num_env_runners=1, rollout_fragment_length=20)
        .training(num_steps_sampled_before_learning_starts=40)
        .reporting(min_sample_timesteps_per_iteration=100, metrics_num_episodes_for_smoothing=5)
        .learners(num_gpus_per_learner=0)
        .debugging(seed=0)
    )


def test_a_cut_piece_resumes_from_its_checkpoint_and_buffer_with_its_counts(ray_local, tmp_path):
    from rlsuite.platform.benchmarking.example_runs import (
        BUFFER,
        ExampleBackend,
        finished,
        run_piece,
    )

    ckpt = str(tmp_path / "seed0")
    # an iteration or a few, then the wall budget cuts it: a checkpoint with the replay buffer
    first = run_piece(_config, ckpt, math.inf, 10_000, 0.5, command="first")
    assert not first["reached"] and first["checkpoint"] == os.path.abspath(ckpt)
    assert (
        first["env_steps_run"] >= 100 and first["curve"][-1]["env_steps"] == first["env_steps_run"]
    )
    assert not finished(first, 10_000) and finished(first, first["env_steps_run"])
    with open(os.path.join(ckpt, BUFFER), "rb") as f:
        saved = pickle.load(f)
    assert saved["_num_timesteps_added"] == first["env_steps_run"]

    # a restore brings the buffer and the env-step count back
    backend = ExampleBackend(_config())
    try:
        backend.restore(ckpt)
        assert backend.algo.local_replay_buffer.get_added_timesteps() == first["env_steps_run"]
        assert backend.algo.local_replay_buffer.get_num_timesteps() == saved["_num_timesteps"]
        steps = backend.algo.metrics.peek(("env_runners", "num_env_steps_sampled_lifetime"))
        assert steps == first["env_steps_run"]
    finally:
        backend.stop()

    # the next piece goes on from there and, at the target, drops the checkpoint
    second = run_piece(_config, ckpt, -math.inf, 10_000, 60.0, before=first, command="second")
    assert second["reached"] and second["checkpoint"] is None and not os.path.exists(ckpt)
    assert second["env_steps"] == second["env_steps_run"] > first["env_steps_run"]
    assert second["wall_s_run"] >= first["wall_s_run"]
    assert second["curve"][: len(first["curve"])] == first["curve"]
    assert [p["command"] for p in second["pieces"]] == ["first", "second"]
    assert [p["resumed"] for p in second["pieces"]] == [False, True]
    assert sum(p["env_steps"] for p in second["pieces"]) == second["env_steps_run"]
