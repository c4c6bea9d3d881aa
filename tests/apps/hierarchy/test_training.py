"""Learning: strong PHP training generalises, weak EM recovers the call structure,
baselines train and reload."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from rlsuite.apps.hierarchy.envs.addition import AdditionEnv
from rlsuite.apps.hierarchy.procedures.fit import fit
from rlsuite.apps.hierarchy.procedures.model import ProcedureModel
from rlsuite.apps.hierarchy.procedures.weak import WeakLattice
from rlsuite.apps.hierarchy.synthesis.baselines import FlatLSTM, NPICore
from rlsuite.apps.hierarchy.synthesis.experiment import load_model, save_model
from rlsuite.apps.hierarchy.synthesis.program import SPEC, make_traces, rollout


def _accuracy(policy, length, n, seed0=5000):
    env = AdditionEnv(length=length)
    return np.mean(
        [rollout(env, policy, seed0 + s, record=False).info["correct"] for s in range(n)]
    )


def test_strong_training_on_three_traces_reaches_100_percent():
    # three long strong traces cover the digit combinations a column can show
    strong = make_traces(3, seed=0, lengths=(300,))
    model = ProcedureModel(SPEC, hidden=(64, 64))
    assert _accuracy(model, 10, 5) == 0.0
    hist = fit(model, strong=strong, epochs=600, lr=1e-2, target_loss=1e-3)
    assert hist[-1]["strong_nll"] < 1e-3
    assert _accuracy(model, 10, 50) == 1.0
    assert _accuracy(model, 100, 10) == 1.0


def test_weak_training_recovers_the_call_structure():
    weak = make_traces(60, seed=1, lengths=(1, 2, 3), strong=False)
    held_out = make_traces(4, seed=99, lengths=(3,))
    model = ProcedureModel(SPEC, hidden=(32,), seed=0)  # EM's optimum depends on the start
    lattice = WeakLattice(SPEC)

    def match_rate():
        ok, total = lattice.stacks_recovered(model, held_out)
        return ok / total

    assert match_rate() < 0.5  # untrained: the posterior does not know the structure
    fit(model, weak=weak, epochs=300, lr=1e-2, target_loss=0.05, seed=0)
    assert match_rate() == 1.0


def test_baselines_fit_and_reload_with_same_actions(tmp_path):
    strong = make_traces(8, seed=2, lengths=(1, 2))
    for model, data in ((FlatLSTM(hidden=32), strong), (NPICore(hidden=32), strong)):
        hist = model.fit(data, epochs=60, lr=1e-2, target_loss=None)
        assert hist[-1]["nll"] < 0.5 * hist[0]["nll"]
        path = str(tmp_path / f"{model.kind}.pt")
        save_model(model, path)
        again = load_model(path)
        env = AdditionEnv(length=3)
        a = [rollout_env_actions(env, model.controller(), s) for s in range(3)]
        b = [rollout_env_actions(env, again.controller(), s) for s in range(3)]
        assert a == b


def rollout_env_actions(env, controller, seed):
    obs, _ = env.reset(seed=seed)
    controller.reset(seed)
    acts = []
    while True:
        a = controller.act(obs)
        acts.append(a)
        obs, _, term, trunc, _ = env.step(a)
        if term or trunc:
            return acts


def test_npi_needs_strong_traces_and_load_rejects_other_files(tmp_path):
    with pytest.raises(ValueError, match="strong"):
        NPICore().fit(make_traces(2, seed=0, lengths=(1,), strong=False))
    with pytest.raises(FileNotFoundError, match="hier-train synthesis"):
        load_model(str(tmp_path / "missing.pt"))
    bogus = tmp_path / "bogus.pt"
    torch.save({"kind": "something"}, bogus)
    with pytest.raises(ValueError, match="not a hierarchy synthesis model"):
        load_model(str(bogus))
