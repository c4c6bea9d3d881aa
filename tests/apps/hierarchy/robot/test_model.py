"""The robot on the shared procedure model (strong / weak) and flat cloning, on real demos."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from rlsuite.apps.hierarchy.procedures.calls import call_tree, trace_from_calls
from rlsuite.apps.hierarchy.procedures.executor import Executor
from rlsuite.apps.hierarchy.procedures.fit import fit
from rlsuite.apps.hierarchy.procedures.model import ProcedureModel
from rlsuite.apps.hierarchy.robot import experiment as X
from rlsuite.apps.hierarchy.robot import recording as D
from rlsuite.apps.hierarchy.robot.env import PickPlaceEnv
from rlsuite.apps.hierarchy.robot.model import (
    FlatBC,
    TrainConfig,
    controller,
    fit_hierarchical,
    infer_stacks,
    load,
    meta,
    save,
)
from rlsuite.apps.hierarchy.robot.program import SPEC, RobotView, make_model
from rlsuite.platform.evaluation import evaluate, scenarios

TINY = TrainConfig(steps=200)


@pytest.fixture(scope="module")
def demos():
    return D.collect(3, num_workers=0)


@pytest.fixture(scope="module")
def strong_model(demos):
    return fit_hierarchical(demos, TINY, "strong")


class RandomController:
    name = "random"

    def reset(self, seed):
        self.rng = np.random.default_rng(seed)

    def act(self, obs):
        return self.rng.uniform(-1, 1, 5).astype(np.float32)


def test_learned_controller_is_the_shared_procedure_model_run_by_its_executor(strong_model):
    assert type(strong_model) is ProcedureModel and strong_model.spec == SPEC
    assert isinstance(strong_model.view, RobotView)
    c = controller(strong_model)
    assert type(c.executor) is Executor and c.executor.policy is strong_model
    env = PickPlaceEnv()
    try:
        obs, _ = env.reset(seed=2)
        c.reset(2)
        for _ in range(30):
            obs, *_ = env.step(c.act(obs))
    finally:
        env.close()
    # the executor's stack holds the learned calls with their arguments
    procs = [f.proc for f in c.stack]
    assert procs[0] == "PICK_AND_PLACE" and procs[1] in ("PICK", "PLACE") and len(procs) == 3
    assert c.stack[1].args in ((0,), (1,))
    if procs[2] == "MOVE_TO":
        assert c.stack[2].args[0].shape == (4,)


def test_tiny_strong_training_beats_random(strong_model):
    sc = scenarios("rlsuite/PickPlace-v0", 6)
    learned = evaluate(X.ModelFactory(strong_model, "hier"), sc, num_workers=0)
    rand = evaluate(RandomController(), sc, num_workers=0, max_steps=150)
    assert rand.summary["success"]["mean"] == 0.0
    assert learned.summary["success"]["mean"] >= 0.5


def test_strong_robot_trace_round_trips(tmp_path, demos):
    path = str(tmp_path / "demos.npz")
    D.save(path, demos)
    back = D.load(path)
    for a, b in zip(demos, back):
        np.testing.assert_array_equal(a.observations, b.observations)
        assert len(a.events) == len(b.events) and len(a.actions) == len(b.actions)
        for ea, eb in zip(a.events, b.events):
            assert (ea.step, ea.proc, ea.pc, ea.depth) == (eb.step, eb.proc, eb.pc, eb.depth)
            assert ea.decision.kind == eb.decision.kind and ea.decision.op == eb.decision.op
            for x, y in zip((*ea.args, *ea.decision.args), (*eb.args, *eb.decision.args)):
                np.testing.assert_array_equal(x, y)
        assert a.info["seed"] == b.info["seed"]
        np.testing.assert_array_equal(a.info["final_obs"], b.info["final_obs"])
        # the call tree rebuilds the same events
        again = trace_from_calls(SPEC, call_tree(b), b.observations, b.actions)
        assert [(e.step, e.proc, e.pc, e.decision.kind, e.decision.op) for e in again.events] == [
            (e.step, e.proc, e.pc, e.decision.kind, e.decision.op) for e in a.events
        ]


def _leaves(trace):
    return [(c.proc, c.start, c.end) for c in call_tree(trace).calls() if c.proc in
            ("MOVE_TO", "OPEN", "CLOSE")]  # fmt: skip


def test_weak_em_recovers_the_call_structure(demos):
    model = make_model(seed=0)
    inferred = infer_stacks(model, D.weak(demos), TINY)
    for true_d, weak_d in zip(demos, inferred):
        assert weak_d.strong and weak_d.info["inferred"]
        truth, got = _leaves(true_d), _leaves(weak_d)
        assert len(set(truth) & set(got)) >= 0.9 * len(truth), (truth, got)
        skills = [(c.proc, c.args, len(c.children)) for c in call_tree(true_d).children]
        assert [(c.proc, c.args, len(c.children)) for c in call_tree(weak_d).children] == skills


def _actions(controller_, obs_seq):
    controller_.reset(0)
    return np.array([controller_.act(o) for o in obs_seq])


def test_save_load_same_actions(tmp_path, demos, strong_model):
    flat = FlatBC.fit(demos, TrainConfig(steps=50))
    obs_seq = demos[0].observations
    for m in (strong_model, flat):
        path = str(tmp_path / f"{type(m).__name__}.pt")
        save(m, path)
        back = load(path)
        assert type(back) is type(m) and meta(back) == meta(m)
        c, cb = X.make_controller(m), X.make_controller(back)
        np.testing.assert_array_equal(_actions(c, obs_seq), _actions(cb, obs_seq))
    # and a whole closed-loop episode gives the same call trace
    traces = []
    for m in (strong_model, load(str(tmp_path / "ProcedureModel.pt"))):
        env, c = PickPlaceEnv(), Executor(SPEC, m, record=True)
        obs, _ = env.reset(seed=11)
        for _ in range(40):
            d = c.act(obs)
            obs, *_ = env.step(np.zeros(5) if d.kind == "stop" else d.args[0])
        env.close()
        traces.append([(e.step, e.proc, e.pc, e.decision.kind, e.decision.op) for e in c.events])
    assert traces[0] == traces[1]


def test_bad_arguments_give_clear_errors(tmp_path, demos):
    with pytest.raises(ValueError, match="steps must be a positive int"):
        TrainConfig(steps=0).validate()
    with pytest.raises(ValueError, match="no demonstrations"):
        fit_hierarchical([])
    with pytest.raises(ValueError, match="supervision must be one of"):
        fit_hierarchical(demos, TINY, "medium")
    with pytest.raises(ValueError, match="strong supervision needs demonstrations with call"):
        fit_hierarchical(D.weak(demos), TINY, "strong")
    with pytest.raises(ValueError, match="call_tree needs a strong trace"):
        call_tree(D.weak(demos)[0])
    with pytest.raises(ValueError, match="WeakLattice"):
        fit(make_model(), weak=D.weak(demos), epochs=1)  # continuous arguments: hard EM only
    with pytest.raises(FileNotFoundError, match="no model at"):
        load(str(tmp_path / "missing.pt"))
    junk = tmp_path / "junk.pt"
    torch.save({"hello": 1}, junk)
    with pytest.raises(ValueError, match="not a robot model"):
        load(str(junk))
    with pytest.raises(ValueError, match="--demos must be a positive number"):
        X.RobotRunConfig(demos=0).validate()
    with pytest.raises(ValueError, match="unknown supervision 'medium'"):
        X.RobotRunConfig(supervision=("medium",)).validate()
    with pytest.raises(ValueError, match="unknown reuse mode 'copy'"):
        X.ReuseConfig(modes=("copy",)).validate()


@pytest.mark.slow
def test_parallel_collection_and_evaluation_on_ray_match_in_process(ray_local, strong_model):
    here = D.collect(2, num_workers=0)
    there = D.collect(2, num_workers=2)
    for a, b in zip(here, there):
        assert a.info["seed"] == b.info["seed"]
        np.testing.assert_array_equal(a.observations, b.observations)
        assert [(e.step, e.proc, e.pc) for e in a.events] == [
            (e.step, e.proc, e.pc) for e in b.events
        ]
    on_ray = X.success_rate(strong_model, "pick_place", 4, 2, "hier")
    local = X.success_rate(strong_model, "pick_place", 4, 0, "hier")
    assert on_ray["success"] == local["success"] and on_ray["steps"] == local["steps"]


def test_same_demonstrations_and_seed_give_the_same_model(demos):
    a = fit_hierarchical(demos, TrainConfig(steps=30, seed=5), "strong")
    b = fit_hierarchical(demos, TrainConfig(steps=30, seed=5), "strong")
    c = fit_hierarchical(demos, TrainConfig(steps=30, seed=6), "strong")
    for k, v in a.state_dict().items():
        assert (v == b.state_dict()[k]).all(), k
    assert any((v != c.state_dict()[k]).any() for k, v in a.state_dict().items())
