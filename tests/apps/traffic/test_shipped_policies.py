"""The trained policies shipped in benchmarks/policies/: each is small, says how it was
trained, and drives its scenario through ``traffic-train evaluate`` (real SUMO)."""

from __future__ import annotations

import json
import os

import pytest

from rlsuite.apps.traffic import cli, scenarios
from rlsuite.platform import checkpoints
from rlsuite.platform.checkpoints.export import size_bytes

POLICIES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "benchmarks", "policies")
SHARED = {"rlsuite/SignalsShared-v0": "rlsuite/Signals-v0"}
"""Envs that train one policy for a scenario's agents as one single-agent env: its scenario's."""
TRAFFIC_ENVS = {s.env_id for s in scenarios.SCENARIOS.values()} | set(SHARED)


def _traffic(d: str) -> bool:
    """A shipped checkpoint of a traffic scenario (the query optimizer ships its own)."""
    meta = os.path.join(POLICIES, d, checkpoints.META)
    if not os.path.isfile(meta):
        return False
    with open(meta) as f:
        return json.load(f).get("env") in TRAFFIC_ENVS


SHIPPED = sorted(d for d in os.listdir(POLICIES) if _traffic(d)) if os.path.isdir(POLICIES) else []


def test_policies_are_shipped():
    assert SHIPPED, f"no policy under {POLICIES}"


def assert_on_its_own_map(meta: dict, out: dict) -> None:
    """The evaluation ran with the options the policy was trained with that shape what it
    observes or how it acts, the road or map among them (the config's ``POLICY_FIELDS``)."""
    fields = getattr(scenarios.config_class(meta["env"]), "POLICY_FIELDS", ())
    trained = {k: v for k, v in meta["env_config"].items() if k in fields}
    assert {k: out["env_config"].get(k) for k in trained} == trained


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_policy_drives_its_scenario(name, tmp_path):
    path = os.path.join(POLICIES, name)
    assert size_bytes(path) < 5e6
    meta = checkpoints.metadata(path)
    assert meta["plan_config"]["env_config"] == meta["env_config"]  # the training config
    assert meta.get("note"), "a shipped policy says how it was trained (its command)"
    env = SHARED.get(meta["env"], meta["env"])
    scen = next(s for s in scenarios.SCENARIOS.values() if s.env_id == env)
    js = tmp_path / "eval.json"
    if scen.name == "signals":  # RESCO's maps: 100 s of the map's window, 10 s decisions
        network = meta["env_config"]["network"]
        rc = cli.main(["evaluate", "--scenario", "signals", "--network", network, "--controller",
                       path, "--episodes", "1", "--horizon", "100", "--workers", "0",
                       "--json", str(js)])  # fmt: skip
        assert rc == 0
        out = json.loads(js.read_text())
        assert out["summary"]["length"]["mean"] == 10 and out["summary"]["trips"]["mean"] > 0
        assert out["env_config"]["network"] == network
        assert_on_its_own_map(meta, out)
        return
    rc = cli.main(["evaluate", "--scenario", scen.name, "--controller", path, "--episodes", "1",
                   "--horizon", "100", "--warmup", "50", "--workers", "0", "--no-png",
                   "--json", str(js)])  # fmt: skip
    assert rc == 0
    out = json.loads(js.read_text())
    assert_on_its_own_map(meta, out)
    assert out["summary"]["length"]["mean"] == 100
    assert out["summary"]["mean_speed"]["mean"] > 0 and out["summary"]["collisions"]["mean"] == 0


def test_single_av_policy_drives_every_av_of_the_multi_av_ring(tmp_path):
    """A policy trained for the one-AV ring acts, with its own recurrent state, for each
    AV of ``ring_multi`` (each observes the same three features)."""
    path = os.path.join(POLICIES, "ring_es_gru_scratch_p025")
    ctrl = checkpoints.load_controller(path)
    assert ctrl.recurrent
    js = tmp_path / "eval.json"
    rc = cli.main(["evaluate", "--scenario", "ring_multi", "--avs", "3", "--ring-length", "230",
                   "--controller", path, "--episodes", "1", "--horizon", "100", "--warmup",
                   "50", "--workers", "0", "--no-png", "--json", str(js)])  # fmt: skip
    assert rc == 0
    out = json.loads(js.read_text())
    assert out["summary"]["length"]["mean"] == 100
    assert out["summary"]["collisions"]["mean"] == 0
    ctrl.reset()
    obs = {f"av_{i}": [0.2 + 0.1 * i, 0.0, 0.05] for i in range(3)}
    acts = ctrl.act(obs)
    assert set(acts) == set(obs)
    assert set(ctrl._state) == set(obs)  # one recurrent state per agent


def test_one_light_policy_drives_every_light_of_a_multi_light_map():
    """The shared policy trained on cologne1's one light acts, each on its own observation,
    for all three lights of cologne3 (both pad to 4 green phases and 8 lanes); an action for
    a 3-phase light's missing fourth phase keeps its phase."""
    from rlsuite.apps.traffic.envs.signals_resco import RescoSignalsEnv

    ctrl = checkpoints.load_controller(os.path.join(POLICIES, "resco_cologne1_replay"))
    env = RescoSignalsEnv(network="cologne3", num_seconds=100)
    try:
        obs, _ = env.reset(seed=0)
        assert env.action_space(env.possible_agents[0]).n == 4 and len(env.possible_agents) == 3
        steps, seen = 0, set()
        while env.agents:
            acts = ctrl.act(obs)
            assert set(acts) == set(env.agents) and all(0 <= a < 4 for a in acts.values())
            seen.update(acts.items())
            obs, *_ = env.step(acts)
            steps += 1
        m = env.episode_metrics()
    finally:
        env.close()
    assert steps == 10 and m["trips"] > 0
    assert len({a for _, a in seen}) > 1  # the lights' own observations, not one action
