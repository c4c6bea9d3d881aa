"""The two-lane ring on real SUMO: the env's API, lane changes carried out and refused by
SUMO, bad input, recovery after a SUMO failure or a teleport storm, the scenario's CLI and
the shipped policy."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from rlsuite.apps.traffic import cli, plots
from rlsuite.apps.traffic.envs.ring_2lane import Ring2LaneConfig, Ring2LaneEnv, lane_direction
from rlsuite.platform import checkpoints, envs

SHORT = dict(warmup_steps=5, horizon=30)
POLICY = os.path.join(
    os.path.dirname(__file__), "..", "..", "..", "benchmarks", "policies", "ring_2lane_es"
)


def test_check_env_and_registration():
    env = envs.make("rlsuite/Ring2Lane-v0", SHORT)
    try:
        check_env(env.unwrapped, skip_render_check=True)
        obs, info = env.reset(seed=0)
        assert obs.shape == (13,) and info["lanes"] == 2
        assert env.action_space.shape == (2,)
    finally:
        env.close()


def test_lane_changes_are_carried_out_counted_and_cooled_down():
    # 6 vehicles on 230 m: the left lane is free, so SUMO lets the AV in at once
    env = Ring2LaneEnv(num_vehicles=6, bunching=0.0, lane_change_cooldown_s=1.0, **SHORT)
    try:
        env.reset(seed=0)
        _, _, _, _, info = env.step([0.0, 1.0])
        assert info["lane_change"] == "left" and info["lane"] == 1 and info["lane_changes"] == 1
        _, _, _, _, info = env.step([0.0, -1.0])  # within the 1 s cooldown: dropped
        assert info["lane"] == 1 and env.core.lane_change_requests == 1
        for _ in range(10):
            env.step([0.0, 0.0])
        _, _, _, _, info = env.step([0.0, -0.9])
        assert info["lane_change"] == "right" and info["lane"] == 0
        _, _, _, _, info = env.step([0.0, -1.0])  # no lane to the right: nothing asked
        assert env.core.lane_change_requests == 2
        m = env.episode_metrics()
        assert m["lane_changes"] == 2 and m["lane_changes_refused"] == 0
    finally:
        env.close()


def test_target_lane_actions_pick_a_lane_and_hold_the_request():
    """lane_action="target": the sign of d picks the lane (two lanes); the AV asks to move
    every step it is elsewhere, and asks nothing once there."""
    env = Ring2LaneEnv(num_vehicles=6, bunching=0.0, lane_change_cooldown_s=1.0,
                       lane_action="target", **SHORT)  # fmt: skip
    try:
        env.reset(seed=0)
        _, _, _, _, info = env.step([0.0, -0.5])  # the right lane, where it is: nothing asked
        assert info["lane"] == 0 and env.core.lane_change_requests == 0
        _, _, _, _, info = env.step([0.0, 0.4])  # the left lane (direction mode would stay)
        assert info["lane_change"] == "left" and info["lane"] == 1
        for _ in range(5):
            _, _, _, _, info = env.step([0.0, 0.9])  # there already: nothing more asked
        assert info["lane"] == 1 and env.core.lane_change_requests == 1
        lanes = [env.step([0.0, -0.2])[4]["lane"] for _ in range(15)]  # held past the cooldown
        assert lanes[-1] == 0 and env.episode_metrics()["lane_changes"] == 2
    finally:
        env.close()
    with pytest.raises(ValueError, match="lane_action must be one of"):
        Ring2LaneConfig(lane_action="absolute").validate()


def test_unsafe_lane_changes_are_refused_by_sumo():
    # 42 vehicles: the AV is boxed in alongside, SUMO's safety checks refuse the change
    env = Ring2LaneEnv(**SHORT)
    try:
        env.reset(seed=0)
        refused = 0
        for _ in range(30):
            _, _, term, _, info = env.step([0.0, 1.0])
            refused += info["refused"]
            assert not term
        m = env.episode_metrics()
        assert m["lane_changes_refused"] == refused >= 1
        assert m["lane_change_requests"] == m["lane_changes"] + m["lane_changes_refused"]
        assert m["collisions"] == 0
    finally:
        env.close()


@pytest.mark.parametrize(
    "kwargs, words",
    [
        (dict(lanes=1), "lanes must be an integer within [2, 4]"),
        (dict(lanes=5), "lanes must be an integer within [2, 4]"),
        (dict(num_vehicles=70), "num_vehicles must be within [2, 64]"),
        (dict(num_vehicles=1), "num_vehicles must be within [2, 64]"),
        (dict(ring_length=[220, 270]), "ring_length must be a number of metres"),
        (dict(av_driver="robot"), "av_driver must be one of"),
        (dict(colour="red"), "unknown ring_2lane option"),
    ],
)
def test_bad_input_names_the_valid_range(kwargs, words):
    with pytest.raises(ValueError) as e:
        Ring2LaneConfig.from_kwargs(**kwargs)
    assert words in str(e.value)


def test_lane_direction_thresholds():
    assert [lane_direction(d, 1 / 3) for d in (-1, -0.34, -0.3, 0.3, 0.34, 1)] == [
        -1, -1, 0, 0, 1, 1,
    ]  # fmt: skip


def test_sumo_failure_and_teleport_storm_end_the_episode_and_reset_recovers():
    env = Ring2LaneEnv(warmup_steps=5, horizon=400, time_to_teleport=2.0, max_teleports=0)
    try:
        env.reset(seed=0)
        env.core.sim.close()  # SUMO gone mid-episode, as after a crash
        _, _, term, trunc, info = env.step([0.0, 0.0])
        assert term and not trunc and info["termination_reason"].startswith("SUMO failed")
        env.reset(seed=0)  # a fresh simulation
        for _ in range(400):  # the AV stands still: the cars behind jam and get teleported
            _, _, term, trunc, info = env.step([-3.0, 0.0])
            if term or trunc:
                break
        assert term and "teleport storm" in info["termination_reason"]
        env.reset(seed=1)
        _, r, term, _, _ = env.step([0.0, 0.0])
        assert not term and r > 0
    finally:
        env.close()


def test_all_human_baseline_and_lane_space_time_diagram(tmp_path):
    env = Ring2LaneEnv(av_driver="sumo", record=True, **SHORT)
    try:
        env.reset(seed=0)
        for _ in range(30):
            env.step(env.action_space.sample())  # ignored: SUMO drives the AV
        assert env.core.lane_change_requests == 0
        traj = env.trajectories()
    finally:
        env.close()
    assert traj["lane"].shape == traj["x"].shape and int(traj["lanes"]) == 2
    png = plots.space_time_diagram(traj, str(tmp_path / "st.png"))
    assert os.path.getsize(png) > 10_000


def test_scenario_cli_evaluate_and_train_smoke(ray_local, tmp_path):
    js = tmp_path / "pi.json"
    rc = cli.main(["evaluate", "--scenario", "ring_2lane", "--controller", "pi", "--episodes", "1",
                   "--horizon", "30", "--warmup", "5", "--workers", "0", "--json", str(js)])  # fmt: skip
    assert rc == 0
    out = json.loads(js.read_text())
    assert out["summary"]["mean_speed"]["mean"] > 0 and os.path.exists(out["space_time_png"])
    assert out["summary"]["lane_changes"]["mean"] == 0  # pi keeps its lane
    assert cli.main(["evaluate", "--scenario", "ring_2lane", "--controller", "human",
                     "--episodes", "1", "--horizon", "20", "--warmup", "5", "--workers", "0",
                     "--no-png"]) == 0  # fmt: skip
    assert cli.main(["evaluate", "--scenario", "ring_2lane", "--controller", "snake"]) == 2
    rc = cli.main(["train", "--scenario", "ring_2lane", "--plan", "es", "--iterations", "1",
                   "--workers", "1", "--horizon", "20", "--warmup", "5",
                   "--plan-set", "population_size=2", "--plan-set", "eval_episodes=1",
                   "--run-dir", str(tmp_path / "run")])  # fmt: skip
    assert rc == 0
    assert json.loads((tmp_path / "run" / "traffic_train.json").read_text())["iterations"] == 1


@pytest.mark.skipif(not os.path.isdir(POLICY), reason="no shipped ring_2lane policy")
def test_shipped_policy_evaluates_through_the_cli(tmp_path):
    js = tmp_path / "learned.json"
    rc = cli.main(["evaluate", "--scenario", "ring_2lane", "--controller", POLICY,
                   "--episodes", "1", "--horizon", "300", "--workers", "0", "--no-png",
                   "--json", str(js)])  # fmt: skip
    assert rc == 0
    out = json.loads(js.read_text())
    s = out["summary"]
    assert s["collisions"]["mean"] == 0 and s["mean_speed"]["mean"] > 2.0
    assert np.isfinite(s["lane_change_requests"]["mean"])
    # it drives with the lane action it was trained with (its checkpoint's policy fields)
    trained = checkpoints.metadata(POLICY)["env_config"]
    assert out["env_config"]["lane_action"] == trained.get("lane_action", "direction")


def test_a_checkpoint_is_evaluated_with_the_lane_threshold_it_was_trained_with(tmp_path):
    """The lane threshold decides what the policy's lane output means, so evaluating a
    checkpoint uses the one it was trained with (unless asked otherwise); the episode's own
    options, such as the ring's length, stay as given."""
    from rlsuite.apps.traffic import scenarios
    from rlsuite.apps.traffic.envs.ring_2lane import SumoDriven

    env_id = "rlsuite/Ring2Lane-v0"
    (tmp_path / "rlsuite.json").write_text(json.dumps(
        {"env": env_id, "env_config": {"lane_threshold": 0.1, "ring_length": 250.0}}
    ))  # fmt: skip
    ckpt = str(tmp_path)
    assert scenarios.with_policy_fields(env_id, {"horizon": 10}, ckpt) == {
        "lane_threshold": 0.1,
        "horizon": 10,
    }
    assert scenarios.with_policy_fields(env_id, {"lane_threshold": 0.2}, ckpt) == {
        "lane_threshold": 0.2
    }
    assert scenarios.with_policy_fields(env_id, {"horizon": 10}, SumoDriven) == {"horizon": 10}
