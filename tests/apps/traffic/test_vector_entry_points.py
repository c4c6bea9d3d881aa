"""The traffic envs that step N copies in one SUMO simulation are what RLlib's runners
build through the env's ``vector_entry_point``, on real SUMO."""

from __future__ import annotations

import pytest

from rlsuite.apps.traffic.envs.merge_vector import MergeVectorEnv
from rlsuite.apps.traffic.envs.ring_2lane_vector import Ring2LaneVectorEnv
from rlsuite.apps.traffic.envs.ring_vector import RingVectorEnv
from rlsuite.platform import envs, optimizers


@pytest.mark.parametrize(
    "env_id, cls, num_envs, config, per_runner",
    [
        ("rlsuite/Ring-v0", RingVectorEnv, 5, {"warmup_steps": 60, "horizon": 40}, 16),
        ("rlsuite/Ring2Lane-v0", Ring2LaneVectorEnv, 4, {"warmup_steps": 20, "horizon": 25}, 16),
        ("rlsuite/Merge-v0", MergeVectorEnv, 3, {"horizon": 40}, 8),
    ],
)
def test_platform_builds_it_for_rllibs_vector_entry_point(
    env_id, cls, num_envs, config, per_runner
):
    spec = envs.spec(env_id)
    assert spec.vector_entry_point
    vec = envs.EnvCreator(spec)({"num_envs": num_envs, **config})
    try:
        assert isinstance(vec, cls) and vec.num_envs == num_envs
    finally:
        vec.close()
    plan = optimizers.make_plan(
        "sync", env=env_id, num_env_runners=1, num_envs_per_env_runner=per_runner
    )  # more than max_envs_per_process=1: the vector env is one simulation
    assert optimizers.to_rllib(plan).gym_env_vectorize_mode == "vector_entry_point"
