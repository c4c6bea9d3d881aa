"""Flow's bottleneck on real SUMO: the env's API and Flow's spaces, the outflow metric, the
AVs' speed limits, the baselines (all-human, the ALINEA ramp meter), bad input, failures
that end an episode, the CLI, and the shipped policy."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from rlsuite.apps.traffic import cli, scenarios
from rlsuite.apps.traffic.controllers import AlineaMeter
from rlsuite.apps.traffic.envs.bottleneck import (
    BottleneckConfig,
    BottleneckEnv,
    BottleneckSimulation,
)
from rlsuite.platform import envs
from rlsuite.platform.evaluation import Scenario, build_controller, run_episode
from tests.apps.traffic._cli import cli_json

ENV_ID = "rlsuite/Bottleneck-v0"
SHORT = {"horizon": 160, "outflow_window": 40.0}
"""80 s after a 20 s warm-up: the first cars reach the exit at about 60 s."""
POLICY = os.path.join(
    os.path.dirname(__file__), "..", "..", "..", "benchmarks", "policies", "bottleneck_es"
)


def test_passes_check_env_with_flows_spaces():
    envs.check(ENV_ID, {"horizon": 20})
    env = BottleneckEnv(horizon=5)
    try:
        assert env.observation_space.shape == (141,) and env.action_space.shape == (20,)
        assert env.action_space.low[0] == -1.5 and env.action_space.high[0] == 1.0
        obs, _ = env.reset(seed=0)
        assert env.core.t == 0 and env.core.sim.time() == pytest.approx(20.0)  # 40 x 0.5 s
        assert obs[:35].sum() > 0  # humans on the road after the warm-up
    finally:
        env.close()
    big = BottleneckConfig(lane_scale=2, inflow=3800)  # Flow's bottleneck2
    assert big.num_observations == 281 and big.num_actions == 40


def test_outflow_metric_counts_the_cars_that_leave():
    env = BottleneckEnv(**SHORT)
    try:
        env.reset(seed=1)
        rewards, done = [], False
        while not done:
            _, r, term, trunc, info = env.step(np.zeros(20))
            rewards.append(r)
            done = term or trunc
        assert trunc and not term and info == {}
        m = env.episode_metrics()
        arrivals = env.series()["outflow"]
        assert len(arrivals) == 160
        # the last 40 s are the last 80 steps; the exit is 985 m away (43 s at 23 m/s)
        assert m["outflow_veh_h"] == pytest.approx(arrivals[-80:].sum() / 40 * 3600)
        assert arrivals[:40].sum() == 0 and 500 < m["outflow_veh_h"] < 2600
        assert m["inflow_veh_h"] == pytest.approx(1900, rel=0.1)
        assert max(rewards) > 0 and m["collisions"] == 0
    finally:
        env.close()


def test_actions_set_the_avs_speed_limits():
    env = BottleneckEnv(av_share=0.5, horizon=120)
    try:
        env.reset(seed=2)
        for _ in range(120):
            env.step(np.full(20, -1.5))  # every controlled lane-segment: slow down
        core = env.core
        avs = [v for v in core.state if v.startswith("av.")]
        for v in avs:  # the limit the env set is SUMO's
            assert core.sim.call("vehicle", "getMaxSpeed", v) == pytest.approx(core.av_limit[v])
        on_controlled = [v for v in avs if core.state[v][1] in ("2", "3", "4")]
        slow = [core.state[v][0] for v in on_controlled if core.av_limit[v] < 1.0]
        assert slow and max(slow) < 2.0
        assert all(core.av_limit[v] == 23.0 for v in avs if core.state[v][1] == "1")
    finally:
        env.close()


def test_alinea_meter_cuts_its_rate_when_occupancy_is_high():
    m = AlineaMeter(4, target=10.0, gain=20.0, period=2.0, rate_range=(600.0, 3000.0), green=2.0)
    assert m.state(0.0) == "GGGG"  # at the top of its range: all green
    for _ in range(4):
        m.update(50.0, 0.5)
    assert m.rate == pytest.approx(3000 - 20 * 40)
    cycle = 4 * 3600 / m.rate
    assert set(m.state(0.0)) == {"G", "r"}  # lanes staggered
    greens = np.mean([m.state(t).count("G") for t in np.arange(0, cycle, 0.1)])
    assert greens == pytest.approx(4 * 2.0 / cycle, abs=0.1)
    for _ in range(100):
        m.update(90.0, 0.5)
    assert m.rate == 600.0


def test_baselines_run_through_the_cli(tmp_path):
    out = cli_json(tmp_path / "human.json", "evaluate", "--scenario", "bottleneck",
                   "--controller", "all-human", "--episodes", "1", "--workers", "0",
                   "--horizon", "160", "--env-set", "outflow_window=40")  # fmt: skip
    assert out["env_config"]["av_share"] == 0.0
    assert out["summary"]["outflow_veh_h"]["mean"] > 500
    factory, overrides = scenarios.controller_for(scenarios.get("bottleneck"), "alinea", {})
    assert overrides == {"meter": "alinea"}
    cfg = {**SHORT, **overrides, "meter_occupancy": 1.0, "meter_period": 5.0, "meter_gain": 300.0}
    env = envs.make(ENV_ID, cfg)
    try:
        row = run_episode(env, build_controller(factory), Scenario(ENV_ID, cfg, 0))
        rates = env.unwrapped.series()["meter_rate"]
    finally:
        env.close()
    assert row["length"] == 160 and row["outflow_veh_h"] > 0
    assert rates.min() < 3000, "the meter never metered with a 1% target"


@pytest.mark.parametrize(
    "bad, match",
    [
        ({"inflow": 5000}, r"inflow must be within \[100, 4000\] veh/h at lane_scale 1"),
        ({"inflow": 50}, r"inflow must be within \[100, 4000\]"),
        ({"lane_scale": 2, "inflow": 9000}, r"inflow must be within \[200, 8000\]"),
        ({"av_share": 1.2}, r"av_share must be within \[0, 1\]"),
        ({"av_share": -0.1}, r"av_share must be within \[0, 1\]"),
        ({"lane_scale": 0}, r"lane_scale must be an integer within \[1, 4\]"),
        ({"lane_scale": 5}, r"lane_scale must be an integer within \[1, 4\]"),
        ({"meter": "pid"}, r"meter must be one of"),
        ({"lanes": 3}, r"unknown bottleneck option"),
    ],
)
def test_bad_options_name_the_valid_range(bad, match):
    with pytest.raises(ValueError, match=match):
        BottleneckConfig.from_kwargs(**bad)


def test_cli_refuses_bad_input_with_the_range(capsys):
    rc = cli.main(["evaluate", "--scenario", "bottleneck", "--controller", "all-human",
                   "--workers", "0", "--env-set", "inflow=9000"])  # fmt: skip
    assert rc == 2 and "inflow must be within [100, 4000] veh/h" in capsys.readouterr().err
    env = BottleneckEnv(horizon=5)
    try:
        env.reset(seed=0)
        with pytest.raises(ValueError, match="20 finite speed-limit shifts"):
            env.step(np.zeros(7))
    finally:
        env.close()


def test_teleport_storm_ends_the_episode_with_a_reason_and_reset_recovers():
    # AVs at 0.01 m/s block their lanes (nobody changes lanes); stuck cars teleport after 1 s
    env = BottleneckEnv(av_share=0.5, teleport_time=1, max_teleports=3, horizon=400)
    try:
        env.reset(seed=0)
        for _ in range(400):
            _, _, term, trunc, info = env.step(np.full(20, -1.5))
            if term or trunc:
                break
        assert term and info["reason"].startswith("teleport storm"), info
        env.reset(seed=1)
        assert env.core.teleports == 0
        _, _, term, _, info = env.step(np.zeros(20))
        assert not term and info == {}
    finally:
        env.close()


def test_sumo_failure_ends_the_episode_with_a_reason_and_reset_recovers():
    env = BottleneckEnv(backend="libsumo", horizon=20)
    try:
        env.reset(seed=0)
        env.core.sim.conn.close()  # the in-process simulation ends under the env
        obs, r, term, trunc, info = env.step(np.zeros(20))
        assert term and not trunc and info["reason"].startswith("SUMO failed")
        assert obs.shape == (141,) and r == 0.0
        env.reset(seed=0)
        _, _, term, _, _ = env.step(np.zeros(20))
        assert not term and env.core.sim.backend == "libsumo"
    finally:
        env.close()


def test_same_seed_same_episode():
    cfg = BottleneckConfig(horizon=120)
    runs = []
    for _ in range(2):
        core = BottleneckSimulation(cfg)
        try:
            core.start(np.random.default_rng(5))
            for _ in range(120):
                core.advance(np.zeros(20))
            runs.append((core.observation(), core.metrics()))
        finally:
            core.close()
    assert np.array_equal(runs[0][0], runs[1][0]) and runs[0][1] == runs[1][1]


def test_es_trains_on_the_bottleneck_through_the_cli(ray_local, tmp_path):
    run = tmp_path / "run"
    rc = cli.main(["train", "--scenario", "bottleneck", "--plan", "es", "--workers", "1",
                   "--iterations", "1", "--horizon", "40", "--warmup", "4", "--run-dir", str(run),
                   "--plan-set", "population_size=2", "--plan-set", "eval_episodes=0",
                   "--plan-set", "hidden=[8]"])  # fmt: skip
    assert rc == 0
    out = json.loads((run / "traffic_train.json").read_text())
    assert out["iterations"] == 1 and out["env_steps"] >= 80
    assert np.isfinite(out["final_return"])


@pytest.mark.skipif(not os.path.isdir(POLICY), reason="no shipped bottleneck policy")
@pytest.mark.parametrize(
    "road, expected", [([], False), (["--env-set", "capacity_drop=true"], True)]
)
def test_shipped_policy_runs_on_its_own_road_unless_told(tmp_path, road, expected):
    # bottleneck_es was trained on the free-flowing road, which its config states: evaluation
    # runs it there by default (reproducing its row), and on the breaking road when asked
    js = tmp_path / "eval.json"
    rc = cli.main(["evaluate", "--scenario", "bottleneck", "--controller", POLICY,
                   "--episodes", "1", "--horizon", "160", "--workers", "0",
                   "--env-set", "outflow_window=40", *road, "--json", str(js)])  # fmt: skip
    assert rc == 0
    out = json.loads(js.read_text())
    assert out["env_config"]["capacity_drop"] is expected
    s = out["summary"]
    assert s["length"]["mean"] == 160 and s["outflow_veh_h"]["mean"] > 0
