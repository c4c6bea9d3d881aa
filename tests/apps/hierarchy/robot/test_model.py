"""Hierarchical procedures (strong / weak) and flat cloning, trained on real demonstrations."""

from __future__ import annotations

import numpy as np
import pytest

from rlsuite.apps.hierarchy.robot import demos as D
from rlsuite.apps.hierarchy.robot import experiment as X
from rlsuite.apps.hierarchy.robot.env import PickPlaceEnv
from rlsuite.apps.hierarchy.robot.model import (
    FlatBC,
    HierarchicalModel,
    TrainConfig,
    infer_stacks,
    load,
    read_calls,
)
from rlsuite.platform.evaluation import evaluate, scenarios

TINY = TrainConfig(steps=200)


@pytest.fixture(scope="module")
def demos():
    return D.collect(3, num_workers=0)


@pytest.fixture(scope="module")
def strong_model(demos):
    return HierarchicalModel.fit(demos, TINY, "strong")


class RandomController:
    name = "random"

    def reset(self, seed):
        self.rng = np.random.default_rng(seed)

    def act(self, obs):
        return self.rng.uniform(-1, 1, 5).astype(np.float32)


def test_tiny_strong_training_beats_random(strong_model):
    sc = scenarios("rlsuite/PickPlace-v0", 6)
    learned = evaluate(X.ModelFactory(strong_model, "hier"), sc, num_workers=0)
    rand = evaluate(RandomController(), sc, num_workers=0, max_steps=150)
    assert rand.summary["success"]["mean"] == 0.0
    assert learned.summary["success"]["mean"] >= 0.5


def test_weak_em_recovers_the_call_structure(demos):
    inferred = infer_stacks(D.weak(demos), TINY)
    for true_d, weak_d in zip(demos, inferred):
        truth, guess = read_calls(true_d), read_calls(weak_d)
        true_leaves = [(c["proc"], c["start"], c["end"]) for c in truth.leaf]
        got_leaves = [(c["proc"], c["start"], c["end"]) for c in guess.leaf]
        matched = len(set(true_leaves) & set(got_leaves))
        assert matched >= 0.9 * len(true_leaves), (true_leaves, got_leaves)
        assert [(s["proc"], s["obj"], len(s["children"])) for s in guess.skill] == [
            (s["proc"], s["obj"], len(s["children"])) for s in truth.skill
        ]


def _actions(controller, obs_seq):
    controller.reset(0)
    return np.array([controller.act(o) for o in obs_seq])


def test_save_load_same_actions(tmp_path, demos, strong_model):
    flat = FlatBC.fit(demos, TrainConfig(steps=50))
    obs_seq = demos[0]["obs"][:-1]
    for m in (strong_model, flat):
        path = str(tmp_path / f"{type(m).__name__}.pt")
        m.save(path)
        back = load(path)
        assert type(back) is type(m) and back.meta == m.meta
        np.testing.assert_array_equal(
            _actions(m.controller(), obs_seq), _actions(back.controller(), obs_seq)
        )
    # and a whole closed-loop episode gives the same call stack
    traces = []
    for m in (strong_model, load(str(tmp_path / "HierarchicalModel.pt"))):
        env, c = PickPlaceEnv(), m.controller()
        obs, _ = env.reset(seed=11)
        c.reset(11)
        for _ in range(40):
            obs, *_ = env.step(c.act(obs))
        env.close()
        traces.append(c.trace)
    assert traces[0] == traces[1]


def test_bad_arguments_give_clear_errors(tmp_path, demos):
    with pytest.raises(ValueError, match="steps must be a positive int"):
        TrainConfig(steps=0).validate()
    with pytest.raises(ValueError, match="no demonstrations"):
        HierarchicalModel.fit([])
    with pytest.raises(ValueError, match="supervision must be one of"):
        HierarchicalModel.fit(demos, TINY, "medium")
    with pytest.raises(ValueError, match="no call stack"):
        read_calls(D.weak(demos)[0])
    with pytest.raises(FileNotFoundError, match="no model at"):
        load(str(tmp_path / "missing.pt"))
    junk = tmp_path / "junk.pt"
    import torch

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
        assert a["seed"] == b["seed"]
        np.testing.assert_array_equal(a["obs"], b["obs"])
        assert a["stack"] == b["stack"]
    on_ray = X.success_rate(strong_model, "pick_place", 4, 2, "hier")
    local = X.success_rate(strong_model, "pick_place", 4, 0, "hier")
    assert on_ray["success"] == local["success"] and on_ray["steps"] == local["steps"]


def test_same_demonstrations_and_seed_give_the_same_model(demos):
    a = HierarchicalModel.fit(demos, TrainConfig(steps=30, seed=5), "strong")
    b = HierarchicalModel.fit(demos, TrainConfig(steps=30, seed=5), "strong")
    c = HierarchicalModel.fit(demos, TrainConfig(steps=30, seed=6), "strong")
    for k, v in a.state_dict().items():
        assert (v == b.state_dict()[k]).all(), k
    assert any((v != c.state_dict()[k]).any() for k, v in a.state_dict().items())
