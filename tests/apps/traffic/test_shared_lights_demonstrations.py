"""Demonstrations on a network of several lights that share one policy and one replay
buffer (``rlsuite/SignalsShared-v0``, the lights one vector env of one SUMO simulation):
each light's steps are recorded as an episode of its own and reach the ``replay`` plan's
buffer, on real SUMO."""

from __future__ import annotations

import numpy as np
import pytest

from rlsuite.platform import demo_sources, optimizers, training

ENV_ID = "rlsuite/SignalsShared-v0"
SMALL = {"network": "cologne3", "num_seconds": 50}
"""RESCO's cologne3 (3 lights), the first 50 s of its window: 5 decisions a light."""
MAXPRESSURE = "rlsuite.apps.traffic.demonstrators:maxpressure"


def test_each_light_of_a_shared_network_is_recorded_as_its_own_episode(tmp_path):
    path = str(tmp_path / "demos.parquet")
    info = demo_sources.record(
        demo_sources.controller(MAXPRESSURE, ENV_ID, SMALL, 0), ENV_ID, 2, path,
        env_config=SMALL, seed=5,
    )  # fmt: skip
    data = demo_sources.load(path)
    assert info["episodes"] == 6 and info["transitions"] == 30  # 2 episodes x 3 lights x 5
    assert np.bincount(data["episode"]).tolist() == [5] * 6
    assert data["truncateds"].sum() == 6  # every light's episode ends at the window's end
    assert data["obs"].shape[0] == 30 and data["actions"].min() >= 0


@pytest.mark.slow
def test_the_lights_demonstrations_reach_the_one_replay_buffer(ray_local, tmp_path):
    plan = optimizers.make_plan(
        "replay", env=ENV_ID, env_config=SMALL, seed=0, num_envs_per_env_runner=3,
        demonstrations=f"{MAXPRESSURE}:2", demo_ratio=0.5, num_env_runners=0,
        learning_starts=6, env_steps_per_iteration=15, training_intensity=4.0,
        train_batch_size=16, hidden=[16],
    )  # fmt: skip
    row = training.train(plan, 1, str(tmp_path / "run"), progress=False).metrics[-1]
    assert row["demo_transitions"] == 30  # 2 episodes x 3 lights x 5 decisions
    assert 0 < row["demo_share"] < 1  # the learner's batches held demonstrated elements
