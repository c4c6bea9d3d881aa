"""The TPC-DS rewriters shipped in benchmarks/policies/: each is small, says how it was
trained, loads with the featurizer it was trained with, and gives an action value per rule
and STOP for an observation of that featurizer's size (what they choose on TPC-DS is
measured by ``rlsuite bench run queryopt_tpcds_learn``)."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from rlsuite.apps.queryopt import rules as R
from rlsuite.apps.queryopt.featurizer import Featurizer
from rlsuite.platform import checkpoints
from rlsuite.platform.checkpoints.export import size_bytes

POLICIES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "benchmarks", "policies")
MODELS = ["queryopt_tpcds_odd_dqn", "queryopt_tpcds_even_dqn"]


@pytest.mark.parametrize("name", MODELS)
def test_shipped_rewriter_loads_with_its_featurizer_and_acts(name):
    path = os.path.join(POLICIES, name)
    assert size_bytes(path) < 5e6
    meta = checkpoints.metadata(path)
    assert meta["env_config"]["workload"] == "tpcds" and meta["env_config"]["log_reward"]
    assert meta.get("note"), "a shipped model says how it was trained (its command)"
    with open(os.path.join(path, "queryopt.json")) as f:
        side = json.load(f)
    # a featurizer change that would refuse this model fails here, not in a user's hands
    feat = Featurizer.from_description(side["featurizer"])
    ctl = checkpoints.load_controller(path)
    obs = np.zeros(feat.size, dtype=np.float32)
    q = ctl.action_values(obs)
    assert q.shape == (len(R.RULE_NAMES) + 1,) and np.all(np.isfinite(q))
    assert 0 <= ctl.act(obs) <= len(R.RULE_NAMES)
