"""The figure-eight with one agent per AV (PettingZoo parallel) on real SUMO."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rlsuite.apps.traffic import cli, scenarios
from rlsuite.apps.traffic.envs.figure_eight_multi import FigureEightMultiEnv
from rlsuite.platform import envs
from rlsuite.platform.evaluation import Scenario, build_controller, run_episode
from tests.apps.traffic._cli import cli_json, train_shared_tiny

ENV_ID = "rlsuite/FigureEightMulti-v0"


@pytest.mark.parametrize("num_avs", [7, 14])
def test_passes_parallel_api_test(num_avs):
    envs.check(ENV_ID, {"num_avs": num_avs, "horizon": 60})


def test_each_agent_sees_the_full_state_rotated_to_itself():
    env = FigureEightMultiEnv(num_avs=7, horizon=50)
    try:
        env.reset(seed=0)
        for _ in range(40):
            obs, *_ = env.step({a: np.array([1.0], np.float32) for a in env.agents})
        core, n = env.core, 14
        assert env.agents == [f"av_{i}" for i in range(7)]
        for a, o in obs.items():
            i = core.ids.index(a)
            assert o.shape == (4 + 2 * n,)
            assert o[3] == pytest.approx(core.x[i] / core.length, abs=1e-6)
            assert o[4] == pytest.approx(core.v[i] / 30.0, abs=1e-6)  # its own speed first
            assert o[4 + n] == 0.0  # its own distance ahead
            ahead = o[4 + n :]
            assert np.all(np.diff(ahead) > 0)  # then the others in loop order
            # the next vehicle's distance ahead is the agent's own gap plus a car length
            assert ahead[1] * core.length == pytest.approx(o[2] * 270.0 + 5.0, abs=1e-3)
        # the AVs alternate with humans: agent av_1's view is av_0's shifted by two slots
        np.testing.assert_allclose(np.roll(obs["av_0"][4 : 4 + n], -2), obs["av_1"][4 : 4 + n])
    finally:
        env.close()


def run_baseline(name: str, cfg: dict) -> dict:
    """One seeded episode of a baseline through the CLI's controller lookup."""
    factory, overrides = scenarios.controller_for(scenarios.get("figure_eight_multi"), name, cfg)
    assert overrides == {}
    ctrl = build_controller(factory)
    env = envs.make(ENV_ID, cfg)
    try:
        return run_episode(env, ctrl, Scenario(ENV_ID, cfg, 0))
    finally:
        env.close()


@pytest.mark.parametrize("num_avs", [7, 14])
@pytest.mark.parametrize("baseline", ["idm", "followerstopper", "pi"])
def test_per_av_baselines_run_an_episode(num_avs, baseline):
    row = run_baseline(baseline, {"num_avs": num_avs, "horizon": 600})
    assert row["length"] == 600 and row["collisions"] == 0
    # the shared reward, in [0, 1] per step, summed over the agents
    assert row["mean_speed"] > 1.0 and 0 < row["return"] / (600 * num_avs) < 1


@pytest.mark.parametrize("num_avs", [7, 14])
def test_snake_baseline_leads_one_platoon_well_above_all_human(num_avs):
    """One AV leads, the others follow: Flow's figureeight1/2 have headroom too."""
    row = run_baseline("snake", {"num_avs": num_avs})
    assert row["collisions"] == 0 and row["length"] == 1500
    assert row["mean_speed"] >= 1.2 * 4.20, row  # all-human 4.20; measured 6.37


def test_rejects_no_avs():
    with pytest.raises(ValueError, match="num_avs >= 1"):
        FigureEightMultiEnv(num_avs=0)


def test_cli_evaluates_per_av_baseline_with_a_space_time_png(tmp_path):
    data = cli_json(tmp_path / "f8m.json", "evaluate", "--scenario", "figure_eight_multi",
                    "--avs", "14", "--controller", "idm", "--episodes", "1", "--workers", "0",
                    "--horizon", "100")  # fmt: skip
    assert data["env_config"]["num_avs"] == 14
    assert data["summary"]["length"]["mean"] == 100
    assert (tmp_path / "f8m.png").exists()


def test_cli_avs_only_where_the_scenario_has_avs(capsys):
    assert (
        cli.main(["evaluate", "--scenario", "signals", "--avs", "3", "--controller", "fixed"]) == 2
    )
    assert "--avs applies to" in capsys.readouterr().err


def test_train_one_shared_policy_for_every_av_then_evaluate(ray_local, tmp_path):
    """RLlib multi-agent through the CLI: the 14 AVs share one module, and the checkpoint
    is evaluated with the number of AVs it was trained with. Sampled in this process:
    multi-agent training on a remote runner is test_merge's."""
    argv = ["--scenario", "figure_eight_multi", "--avs", "14", "--horizon", "100"]
    out = train_shared_tiny(tmp_path / "run", *argv, batch=200)
    assert out["evaluation"]["summary"]["mean_speed"]["mean"] > 0
    js = tmp_path / "learned.json"
    rc = cli.main(["evaluate", "--scenario", "figure_eight_multi",
                   "--controller", out["checkpoint"], "--episodes", "1", "--workers", "0",
                   "--horizon", "100", "--json", str(js), "--no-png"])  # fmt: skip
    assert rc == 0
    data = json.loads(js.read_text())
    assert data["env_config"]["num_avs"] == 14  # not the scenario's default 7
    assert data["summary"]["length"]["mean"] == 100
