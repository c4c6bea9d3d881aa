"""Flow's figure-eight on real SUMO."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from rlsuite.apps.traffic import cli, scenarios
from rlsuite.apps.traffic.envs.figure_eight import FigureEightEnv, local_observations
from rlsuite.platform import envs
from rlsuite.platform.evaluation import Scenario, build_controller, run_episode


def test_check_env():
    env = envs.make("rlsuite/FigureEight-v0", {"horizon": 30})
    try:
        check_env(env, skip_render_check=True)
    finally:
        env.close()


def test_vehicles_cross_the_intersection_and_positions_wrap():
    env = FigureEightEnv(horizon=600, record=True)
    try:
        ctrl = build_controller(scenarios.controller_for(scenarios.get("figure_eight"), "idm")[0])
        row = run_episode(env, ctrl, Scenario("rlsuite/FigureEight-v0", {}, 0))
        traj = env.trajectories()
    finally:
        env.close()
    assert row["collisions"] == 0 and row["length"] == 600
    # 4r + 3 pi r plus the junctions' internal lanes
    assert 403 < float(traj["length"]) < 440
    assert row["throughput_veh_h"] > 0  # vehicles complete laps
    assert 0 < row["return"] / row["length"] < 1  # desired-velocity reward is in [0, 1]
    assert traj["x"].min() >= 0 and traj["x"].max() < float(traj["length"])


def test_centralised_actions_for_several_avs():
    env = FigureEightEnv(num_avs=7, horizon=5)
    try:
        obs, _ = env.reset(seed=0)
        assert env.action_space.shape == (7,)
        assert obs.shape == (3 * 7 + 2 * 14,)
        assert len(local_observations(obs, 7)) == 7
        with pytest.raises(ValueError, match="7 finite accelerations"):
            env.step(np.zeros(3))
        env.step(np.zeros(7, dtype=np.float32))
    finally:
        env.close()


def test_bad_figure_eight_config():
    with pytest.raises(ValueError, match="too many vehicles for the figure-eight"):
        FigureEightEnv(num_vehicles=80)
    with pytest.raises(ValueError, match="num_avs must be within"):
        FigureEightEnv(num_avs=0)


def test_cli_evaluate_figure_eight(tmp_path):
    out = tmp_path / "f8.json"
    assert (
        cli.main(
            [
                "evaluate",
                "--scenario",
                "figure_eight",
                "--controller",
                "followerstopper",
                "--episodes",
                "1",
                "--workers",
                "0",
                "--horizon",
                "40",
                "--json",
                str(out),
            ]
        )
        == 0
    )
    assert out.exists() and (tmp_path / "f8.png").exists()
