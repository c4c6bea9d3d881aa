"""NPI's bubble sort as a second program family: the env, the teacher, its traces, a tiny
trained model, the baselines and ``hier-train synthesis --program sort``."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from rlsuite.apps.hierarchy.cli import main
from rlsuite.apps.hierarchy.envs.sort import (
    STOP_ACTION,
    SWAP_ACTION,
    SortEnv,
    ptr_action,
    step_bound,
)
from rlsuite.apps.hierarchy.procedures.calls import call_tree, trace_from_calls
from rlsuite.apps.hierarchy.procedures.fit import fit
from rlsuite.apps.hierarchy.procedures.model import ProcedureModel
from rlsuite.apps.hierarchy.procedures.traces import (
    load_traces,
    save_traces,
    stacks_after_actions,
)
from rlsuite.apps.hierarchy.procedures.weak import WeakLattice
from rlsuite.apps.hierarchy.synthesis.baselines import FlatLSTM, NPICore
from rlsuite.apps.hierarchy.synthesis.experiment import (
    SynthesisConfig,
    load_model,
    program_of,
    save_model,
)
from rlsuite.apps.hierarchy.synthesis.programs import get_program, program_names
from rlsuite.apps.hierarchy.synthesis.sort import FAMILY, SPEC, from_env_action, to_env_action


def _accuracy(policy, length, n, seed0=7000):
    env = SortEnv(length=length)
    return np.mean(
        [FAMILY.rollout(env, policy, seed0 + s, record=False).info["correct"] for s in range(n)]
    )


# ---------------------------------------------------------------- env
def test_env_passes_gymnasium_check_and_swaps_and_moves():
    env = SortEnv(length=4)
    check_env(env, skip_render_check=True)
    obs = env.set_problem([3, 1, 2, 0])
    assert obs.shape == (33,) and obs.sum() == 3
    env.step(ptr_action(1, 1))  # ptr2 onto the first element; ptr1 stays on the boundary
    env.step(SWAP_ACTION)  # a boundary cell is never swapped
    assert env.array.tolist() == [3, 1, 2, 0]
    env.step(ptr_action(0, 1))
    env.step(ptr_action(1, 1))
    env.step(SWAP_ACTION)
    assert env.array.tolist() == [1, 3, 2, 0]
    env.step(ptr_action(0, 0))
    env.step(ptr_action(0, 0))  # off the pad: stays on the boundary
    assert env.ptr[0] == 0
    _, r, term, _, _ = env.step(STOP_ACTION)
    assert term and r == 0.0 and env.episode_metrics()["correct"] == 0.0


def test_env_rejects_bad_input_and_truncates():
    with pytest.raises(ValueError, match="positive int"):
        SortEnv(length=0)
    with pytest.raises(ValueError, match="4 digits 0-9"):
        SortEnv(length=4).set_problem([1, 2, 10, 3])
    env = SortEnv(length=2, max_steps=3)
    env.reset(seed=0)
    trunc = [env.step(ptr_action(2, 1))[3] for _ in range(3)]
    assert trunc == [False, False, True]
    assert from_env_action(to_env_action(from_env_action(4))) == from_env_action(4)


# ---------------------------------------------------------------- teacher
@pytest.mark.parametrize("length", [1, 2, 5, 13, 30])
def test_teacher_sorts_random_arrays_within_the_step_bound(length):
    env = SortEnv(length=length)
    for seed in range(5):
        tr = FAMILY.teacher_trace(env, seed=seed)
        assert env.array.tolist() == sorted(tr.info["array"])
        assert tr.actions[-1].kind == "stop" and len(tr) <= step_bound(length)


def test_teacher_sorts_reversed_and_constant_arrays():
    env = SortEnv(length=9)
    worst = FAMILY.teacher_trace(env, seed=0, problem=list(range(9, 0, -1)))
    assert env.array.tolist() == list(range(1, 10))
    swaps = sum(d.op == "SWAP" for d in worst.actions)
    assert swaps == 9 * 8 // 2  # bubble sort swaps each inverted pair once
    same = FAMILY.teacher_trace(env, seed=0, problem=[4] * 9)
    assert not any(d.op == "SWAP" for d in same.actions) and len(same) < len(worst)


def test_strong_trace_replays_and_round_trips(tmp_path):
    tr = FAMILY.teacher_trace(SortEnv(length=6), seed=3)
    env = SortEnv(length=6)
    obs = env.set_problem(tr.info["array"])
    for t, d in enumerate(tr.actions):
        np.testing.assert_array_equal(obs, tr.observations[t])
        obs, _, term, _, _ = env.step(to_env_action(d))
    assert term and env.is_correct()
    # the call tree rebuilds the same strong trace; files read back equal
    rebuilt = trace_from_calls(SPEC, call_tree(tr), tr.observations, tr.actions, tr.info)
    assert rebuilt.events == tr.events
    save_traces(str(tmp_path / "t.npz"), [tr, tr.weak()])
    back = load_traces(str(tmp_path / "t.npz"))
    assert back[0].events == tr.events and back[1].events is None
    np.testing.assert_array_equal(back[1].observations, tr.observations)


def test_weak_lattice_scores_the_teachers_stacks():
    lattice = WeakLattice(SPEC)
    tr = FAMILY.teacher_trace(SortEnv(length=3), seed=1)
    names = {lattice.state_names(i) for i in range(lattice.n_states)}
    assert set(stacks_after_actions(tr, SPEC)) <= names  # every teacher stack is a state


# ---------------------------------------------------------------- learning
@pytest.mark.slow
def test_php_from_two_strong_and_weak_traces_sorts_longer_arrays():
    # 2 strong traces fix the call structure; 25 weak ones (actions only) show enough digit
    # pairs for the comparison; no demonstration is longer than 8 elements
    strong = FAMILY.make_traces(2, seed=0, lengths=(5, 6))
    weak = FAMILY.make_traces(25, seed=1, lengths=(8,), strong=False)
    model = ProcedureModel(SPEC, hidden=(64, 64), seed=0)
    assert _accuracy(model, 6, 3) == 0.0
    fit(model, strong=strong, epochs=200, lr=3e-3, target_loss=2e-3)
    strong_only = _accuracy(model, 6, 20)
    hist = fit(model, strong=strong, weak=weak, epochs=100, lr=1e-2, target_loss=5e-4)
    assert hist[-1]["weak_nll"] < 1e-3 < hist[0]["weak_nll"]
    assert _accuracy(model, 6, 20) >= max(0.8, strong_only + 0.3)
    assert _accuracy(model, 15, 10) >= 0.7  # longer than any demonstration


def test_baselines_train_save_and_reload_on_sort(tmp_path):
    strong = FAMILY.make_traces(3, seed=2, lengths=(2, 3))
    for model in (FlatLSTM(hidden=16, program="sort"), NPICore(hidden=16, program="sort")):
        model.fit(strong, epochs=3)
        path = str(tmp_path / f"{model.kind}.pt")
        save_model(model, path)
        back = load_model(path)
        assert program_of(back).name == "sort"
        c1, c2 = model.controller(), back.controller()
        env = SortEnv(length=3)
        obs, _ = env.reset(seed=0)
        c1.reset(), c2.reset()
        for _ in range(10):
            a = c1.act(obs)
            assert a == c2.act(obs) and 0 <= a <= STOP_ACTION
            obs, _, term, trunc, _ = env.step(a)
            if term or trunc:
                break


# ---------------------------------------------------------------- CLI and config
def test_programs_registry_and_bad_names():
    assert program_names() == ("addition", "sort")
    assert get_program("sort").env_id == "rlsuite/Sort-v0"
    with pytest.raises(ValueError, match="unknown program 'quicksort'; choose from addition, sort"):
        SynthesisConfig(program="quicksort").validate()
    cfg = SynthesisConfig.for_program("sort", eval_lengths=(7,))
    assert cfg.eval_lengths == (7,) and cfg.train_lengths == tuple(range(2, 11))
    assert SynthesisConfig.for_program("addition") == SynthesisConfig()


def test_cli_unknown_program_lists_the_valid_ones(capsys):
    for argv in (["synthesis", "--program", "quicksort"], ["trace", "--program", "nope"]):
        with pytest.raises(SystemExit) as e:
            main(argv)
        assert e.value.code == 2
        assert "choose from addition, sort" in capsys.readouterr().err


def test_cli_trace_of_sort(capsys):
    assert main(["trace", "--program", "sort", "--length", "3", "--seed", "2"]) == 0
    out = capsys.readouterr().out
    assert "BUBBLE[pc=0] PTR(ptr2, right)" in out and "COMPSWAP[pc=0] SWAP" in out
    assert "RESET[pc=0] PTR(counter, right)" in out


def test_cli_synthesis_sort_trains_evaluates_and_reloads(tmp_path, capsys):
    js = tmp_path / "r.json"
    argv = ["synthesis", "--program", "sort", "--strong", "2", "--weak", "20"]
    argv += ["--train-lengths", "4,5,6", "--models", "php,npi", "--lengths", "5,8"]
    argv += ["--problems", "5", "--epochs", "60", "--workers", "0"]
    assert main(argv + ["--out-dir", str(tmp_path), "--json", str(js)]) == 0
    data = json.loads(js.read_text())
    assert data["config"]["program"] == "sort"
    php, npi = data["results"]
    assert (php["model"], npi["model"], npi["weak"]) == ("php", "npi", 0)
    assert (php["strong"], php["weak"]) == (2, 20)
    for r in (php, npi):
        assert set(r["accuracy"]) == set(r["element_accuracy"]) == {"5", "8"}
        assert all(0 <= v <= 1 for v in r["accuracy"].values()) and r["program"] == "sort"
    assert os.path.getsize(tmp_path / "accuracy_vs_length.png") > 1000
    assert "bubble sort" in capsys.readouterr().out
    ev = tmp_path / "e.json"
    argv = ["evaluate", "--model", str(tmp_path / "php.pt"), "--lengths", "9", "--problems", "3"]
    assert main(argv + ["--workers", "0", "--json", str(ev)]) == 0
    again = json.loads(ev.read_text())
    assert set(again["accuracy"]) == {"9"} and again["program"] == "sort"
