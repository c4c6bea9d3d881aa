"""Flow's figure-eight on real SUMO."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from rlsuite.apps.traffic import cli, scenarios
from rlsuite.apps.traffic.controllers import IDMController
from rlsuite.apps.traffic.envs.figure_eight import (
    FigureEightConfig,
    FigureEightEnv,
    FigureEightSimulation,
    idm_accelerations,
    local_observations,
    vehicle_ids,
)
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
        FigureEightEnv(num_avs=15)
    with pytest.raises(ValueError, match="needs num_avs >= 1"):
        FigureEightEnv(num_avs=0)  # all human: the simulation only
    with pytest.raises(ValueError, match="human_model must be one of"):
        FigureEightEnv(human_model="krauss")
    with pytest.raises(ValueError, match="human_sumo_min_gap applies to human_model='flow'"):
        FigureEightEnv(human_model="sumo", human_sumo_min_gap=2.5)
    with pytest.raises(ValueError, match="av_speed_mode must be"):
        FigureEightEnv(av_speed_mode=200)
    with pytest.raises(ValueError, match="av_min_gap must be None"):
        FigureEightEnv(av_min_gap=-1.0)


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


# --- Flow's humans ------------------------------------------------------------------

FLOW_PAPER_ALL_HUMAN = 4.18
"""Flow's all-human mean speed on the figure-eight (CoRL 2018 benchmarks paper)."""


def all_human_speed(seed: int, **kwargs) -> float:
    """Flow's metric for 14 humans: mean speed of all vehicles over 1500 steps from rest."""
    core = FigureEightSimulation(FigureEightConfig(num_avs=0, **kwargs))
    try:
        core.start(np.random.default_rng(seed))
        for _ in range(core.cfg.horizon):
            core.control({})
        return core.metrics()["mean_speed"]
    finally:
        core.close()


def test_idm_accelerations_are_flows_idm_for_every_vehicle_at_once():
    human = FigureEightConfig().human_type
    rng = np.random.default_rng(0)
    v = rng.uniform(0, 12, 14)
    x = np.sort(rng.uniform(0, 400, 14))
    acc = idm_accelerations(v, x, 425.0, human)
    scalar = IDMController(noise=0.0)
    for i in range(14):
        gap = (x[(i + 1) % 14] - x[i]) % 425.0 - human.length
        assert acc[i] == pytest.approx(scalar.accel(v[i], v[(i + 1) % 14], gap))


def test_vehicles_are_placed_in_flows_benchmark_order():
    assert vehicle_ids(14, 1) == [f"human_{i:02d}" for i in range(13)] + ["av_0"]  # figureeight0
    seven = vehicle_ids(14, 7)  # figureeight1: human, rl, human, rl, ...
    assert seven[0::2] == [f"human_{i:02d}" for i in range(7)]
    assert seven[1::2] == [f"av_{i}" for i in range(7)]
    assert vehicle_ids(14, 14) == [f"av_{i}" for i in range(14)]  # figureeight2


def _modes_and_gaps(**config) -> dict[str, tuple[int, float]]:
    """SUMO's speed mode and min gap of ``human_00`` and ``av_0`` after one step of a
    figure-eight with ``config``."""
    env = FigureEightEnv(horizon=5, **config)
    try:
        env.reset(seed=0)
        env.step(np.zeros(1, dtype=np.float32))
        call = env.core.sim.call
        return {
            v: (call("vehicle", "getSpeedMode", v), call("vehicle", "getMinGap", v))
            for v in ("human_00", "av_0")
        }
    finally:
        env.close()


def test_flow_humans_are_commanded_under_speed_mode_1_with_no_sumo_min_gap():
    assert _modes_and_gaps() == {"human_00": (1, 0.0), "av_0": (1, 2.0)}
    old = _modes_and_gaps(human_model="sumo", av_speed_mode=25)
    assert old["human_00"] == (31, 2.0)  # SUMO's default speed mode, never set
    assert old["av_0"][0] == 25
    flows_av = _modes_and_gaps(av_min_gap=2.5)  # Flow's learning vehicle
    assert flows_av["av_0"][1] == 2.5 and flows_av["human_00"][1] == 0.0


def test_all_human_speed_with_flows_humans_is_flows_and_below_sumos_humans():
    """Flow's paper: 4.18 m/s. SUMO's own IDM humans yield at the crossing: 4.78."""
    flow = [all_human_speed(seed) for seed in range(3)]
    for s in flow:
        assert 3.9 <= s <= 4.5, flow  # measured 4.19, 4.21, 4.21
    assert abs(np.mean(flow) - FLOW_PAPER_ALL_HUMAN) < 0.2, flow
    sumo = all_human_speed(0, human_model="sumo", av_speed_mode=25)
    assert sumo > max(flow) + 0.4, (sumo, flow)  # measured 4.78


def test_same_seed_same_episode():
    assert all_human_speed(3) == all_human_speed(3)


def snake_and_all_human_speeds(env_config: dict) -> dict[str, float]:
    speed = {}
    for name in ("idm", "snake"):
        ctrl = build_controller(scenarios.controller_for(scenarios.get("figure_eight"), name)[0])
        env = FigureEightEnv(**env_config)
        try:
            row = run_episode(env, ctrl, Scenario("rlsuite/FigureEight-v0", env_config, 0))
        finally:
            env.close()
        assert row["collisions"] == 0 and row["length"] == 1500
        speed[name] = row["mean_speed"]
    return speed


def test_snake_platoon_beats_all_human_with_flows_humans_only():
    """The learning problem has headroom: one AV that waits for the humans to queue behind
    it and then leads them round at 7 m/s beats all-human driving by far, as in Flow.
    With SUMO's own humans, who stop at the crossing, the same rule gains nothing."""
    flow = snake_and_all_human_speeds({})
    assert flow["snake"] >= 1.2 * flow["idm"], flow  # measured 6.37 vs 4.14
    sumo = snake_and_all_human_speeds({"human_model": "sumo", "av_speed_mode": 25})
    assert sumo["snake"] < 1.05 * sumo["idm"], sumo  # measured 4.66 vs 4.77
