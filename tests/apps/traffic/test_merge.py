"""Flow's merge on real SUMO: the two envs' APIs, AVs that enter and leave as agents,
RLlib multi-agent on them, bad input, failures that end an episode, the shipped policy."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from rlsuite.apps.traffic import cli, scenarios
from rlsuite.apps.traffic.envs.merge import MergeEnv, MergeMultiEnv, all_human
from rlsuite.apps.traffic.envs.merge_road import MergeConfig
from rlsuite.platform import envs
from rlsuite.platform.evaluation import Scenario, build_controller, run_episode
from tests.apps.traffic._episodes import crashed

MULTI = "rlsuite/MergeMulti-v0"
FREE = {"highway_inflow": 900.0, "av_share": 0.3}
"""A light inflow: traffic flows, so AVs cross the 800 m road in well under a minute."""
POLICY = os.path.join(
    os.path.dirname(__file__), "..", "..", "..", "benchmarks", "policies", "merge_es"
)


def test_multi_passes_parallel_api_test():
    envs.check(MULTI, {**FREE, "horizon": 80})


def test_centralised_passes_check_env():
    envs.check("rlsuite/Merge-v0", {"horizon": 40})
    env = MergeEnv(horizon=30)
    try:
        obs, _ = env.reset(seed=0)
        assert obs.shape == (25,) and env.action_space.shape == (5,)
        for _ in range(30):
            obs, r, term, trunc, _ = env.step(np.zeros(5, np.float32))
        assert trunc and not term and r >= 0 and 1 <= len(env.slots) <= 5
        assert np.all(obs[: 5 * len(env.slots) : 5] > 0)  # the filled slots' speeds
    finally:
        env.close()


def test_agents_appear_and_disappear_with_their_avs():
    env = MergeMultiEnv(**FREE, horizon=150)
    try:
        obs, _ = env.reset(seed=1)
        first = set(env.agents)
        assert first and first == set(obs)
        seen, left, appeared_late = set(first), set(), set()
        while env.agents:
            acting = set(env.agents)
            obs, rew, term, trunc, info = env.step({a: np.zeros(1, np.float32) for a in acting})
            assert set(obs) == set(rew) == set(term) == set(trunc) == set(info)
            new = set(obs) - acting
            assert not new & seen, "an agent came back"
            assert all(rew[a] == 0.0 for a in new)
            appeared_late |= new
            seen |= new
            left |= {a for a in obs if term[a]}  # no collision here: only AVs that left
            assert set(env.agents) == {a for a in obs if not (term[a] or trunc[a])}
            assert not env.agents or all(a not in left for a in env.agents)
        assert appeared_late, "no AV entered during the episode"
        assert left, "no AV left the road during the episode"
        assert set(env.possible_agents) >= seen
        m = env.episode_metrics()
        assert m["mean_speed"] > 5 and m["collisions"] == 0 and m["throughput_veh_h"] > 0
    finally:
        env.close()


@pytest.mark.slow
def test_rllib_multi_agent_trains_on_agents_that_come_and_go(ray_local, tmp_path):
    """PPO through the platform (RLlib multi-agent, one shared module) on the merge."""
    run = tmp_path / "run"
    rc = cli.main(["train", "--scenario", "merge", "--plan", "sync", "--workers", "1",
                   "--iterations", "1", "--horizon", "120", "--run-dir", str(run),
                   "--env-set", "highway_inflow=900", "--env-set", "av_share=0.3",
                   "--plan-set", "train_batch_size=240", "--plan-set", "minibatch_size=120",
                   "--plan-set", "num_epochs=1", "--plan-set", "hidden=[16,16]"])  # fmt: skip
    assert rc == 0
    out = json.loads((run / "traffic_train.json").read_text())
    assert out["iterations"] == 1 and out["env_steps"] >= 240
    assert np.isfinite(out["final_return"])


@pytest.mark.parametrize(
    "bad, match",
    [
        ({"highway_inflow": 5000}, r"highway_inflow must be within \(0, 4000\] veh/h"),
        ({"highway_inflow": 0}, r"highway_inflow must be within"),
        ({"av_share": 1.5}, r"av_share must be within \[0, 1\]"),
        ({"av_share": -0.1}, r"av_share must be within \[0, 1\]"),
        ({"ramp_inflow": -1}, r"ramp_inflow must be within \[0, 1000\] veh/h"),
        ({"num_rl": 0}, r"num_rl must be within \[1, 100\]"),
        ({"speed": 3}, r"unknown merge option"),
    ],
)
def test_bad_options_name_the_valid_range(bad, match):
    with pytest.raises(ValueError, match=match):
        MergeConfig.from_kwargs(**bad)


def test_multi_needs_avs_and_the_cli_says_so(capsys):
    with pytest.raises(ValueError, match=r"av_share within \(0, 1\]"):
        MergeMultiEnv(av_share=0.0)
    rc = cli.main(["evaluate", "--scenario", "merge", "--controller", "idm", "--workers", "0",
                   "--env-set", "highway_inflow=9000"])  # fmt: skip
    assert rc == 2 and "highway_inflow must be within" in capsys.readouterr().err


def test_teleport_storm_ends_the_episode_with_a_reason_and_reset_recovers():
    # AVs that stand still block the highway; vehicles stuck over 1 s are teleported
    env = MergeMultiEnv(teleport_time=1, max_teleports=3, horizon=200)
    try:
        env.reset(seed=0)
        info = {}
        for _ in range(200):
            obs, rew, term, trunc, info = env.step({a: np.array([-1.5]) for a in env.agents})
            if any(term.values()) and all(term.values()):
                break
        reasons = {i.get("reason", "") for i in info.values()}
        assert any(r.startswith("teleport storm") for r in reasons), reasons
        assert not env.agents
        obs, _ = env.reset(seed=1)
        assert env.agents and env.core.teleports == 0
        env.step({a: np.zeros(1) for a in env.agents})
    finally:
        env.close()


def test_sumo_failure_ends_the_episode_with_a_reason_and_reset_recovers():
    with crashed(MergeMultiEnv(backend="libsumo", horizon=50)) as env:
        obs, rew, term, trunc, info = env.step({a: np.zeros(1) for a in env.agents})
        assert all(term.values()) and not env.agents
        assert all(i["reason"].startswith("SUMO failed") for i in info.values())
        env.reset(seed=0)
        env.step({a: np.zeros(1) for a in env.agents})
        assert env.core.sim.backend == "libsumo"


def test_idm_on_the_avs_drives_like_all_human():
    cfg = {"horizon": 300}
    factory, overrides = scenarios.controller_for(scenarios.get("merge"), "idm", cfg)
    assert overrides == {}
    env = envs.make(MULTI, cfg)
    try:
        row = run_episode(env, build_controller(factory), Scenario(MULTI, cfg, 0))
    finally:
        env.close()
    human = all_human(cfg, [0])[0]
    # the steps before the first AV enters are not agent steps: the road's clock ran 300
    assert row["collisions"] == 0 and 290 <= row["length"] <= 300
    assert row["mean_speed"] == pytest.approx(human["mean_speed"], rel=0.1)


@pytest.mark.skipif(not os.path.isdir(POLICY), reason="no shipped merge policy")
def test_shipped_policy_evaluates(tmp_path):
    js = tmp_path / "eval.json"
    rc = cli.main(["evaluate", "--scenario", "merge", "--controller", POLICY, "--episodes", "1",
                   "--horizon", "150", "--workers", "0", "--json", str(js)])  # fmt: skip
    assert rc == 0
    s = json.loads(js.read_text())["summary"]
    assert 140 <= s["length"]["mean"] <= 150 and s["collisions"]["mean"] == 0
    assert s["mean_speed"]["mean"] > 0
