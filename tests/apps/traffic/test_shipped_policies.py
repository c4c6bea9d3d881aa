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
SHIPPED = sorted(
    d for d in os.listdir(POLICIES) if os.path.isfile(os.path.join(POLICIES, d, checkpoints.META))
) if os.path.isdir(POLICIES) else []  # fmt: skip


def test_policies_are_shipped():
    assert SHIPPED, f"no policy under {POLICIES}"


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_policy_drives_its_scenario(name, tmp_path):
    path = os.path.join(POLICIES, name)
    assert size_bytes(path) < 5e6
    meta = checkpoints.metadata(path)
    assert meta["plan_config"]["env_config"] == meta["env_config"]  # the training config
    assert meta.get("note"), "a shipped policy says how it was trained (its command)"
    scen = next(s for s in scenarios.SCENARIOS.values() if s.env_id == meta["env"])
    js = tmp_path / "eval.json"
    rc = cli.main(["evaluate", "--scenario", scen.name, "--controller", path, "--episodes", "1",
                   "--horizon", "100", "--warmup", "50", "--workers", "0", "--no-png",
                   "--json", str(js)])  # fmt: skip
    assert rc == 0
    out = json.loads(js.read_text())
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
