"""The root's view of the scene on real pybullet: which object is held, which rests on or in
which, so that a root trained on two valid call orders follows one of them consistently."""

from __future__ import annotations

import pytest
import torch

from rlsuite.apps.hierarchy.procedures.executor import Frame
from rlsuite.apps.hierarchy.robot import recording as D
from rlsuite.apps.hierarchy.robot.env import PickPlaceEnv
from rlsuite.apps.hierarchy.robot.expert import Imperfection
from rlsuite.apps.hierarchy.robot.model import TrainConfig, controller, fit_hierarchical
from rlsuite.apps.hierarchy.robot.program import N_SLOTS, SCENE_DIM, SCENE_PAIRS, scene_features


def _root_events(demo):
    return [e for e in demo.events if e.proc == demo.events[0].proc]


def _rests(f: torch.Tensor) -> set[tuple[int, int]]:
    return {SCENE_PAIRS[i] for i in torch.nonzero(f[2 * N_SLOTS :]).flatten().tolist()}


def test_scene_features_name_the_held_cube_and_the_sorted_ones():
    d = D.record(100_000, "sort")  # red, green, blue: cubes in slots 0-2, trays in 3-5
    feats = [
        scene_features(torch.as_tensor(d.observations[e.step])[None])[0] for e in _root_events(d)
    ]
    assert all(f.shape == (SCENE_DIM,) for f in feats)
    assert all(f[:N_SLOTS].tolist() == [1.0] * 6 for f in feats)  # every slot in use
    held = [torch.nonzero(f[N_SLOTS : 2 * N_SLOTS]).flatten().tolist() for f in feats]
    assert held == [[], [0], [], [1], [], [2]]  # after each PICK its cube is in hand
    assert [_rests(f) for f in feats] == [
        set(), set(), {(0, 3)}, {(0, 3)}, {(0, 3), (1, 4)}, {(0, 3), (1, 4)}
    ]  # fmt: skip
    # pick_place uses two slots: the other four read 0 everywhere
    pp = D.record(100_000, "pick_place")
    f = scene_features(torch.as_tensor(pp.observations)).sum(0)
    assert f[2:N_SLOTS].sum() == 0 and f[N_SLOTS + 2 : 2 * N_SLOTS].sum() == 0


@pytest.fixture(scope="module")
def two_orders():
    """Sort demonstrations by two experts: red, green, blue and blue, green, red."""
    demos = D.collect(6, "sort", num_workers=0, imperfection=Imperfection(second_expert=0.5))
    assert {d.info["expert"] for d in demos} == {"first", "second"}
    return demos


def test_a_root_trained_on_two_orders_follows_each_demonstration(two_orders):
    # the root's pc alone cannot tell the orders apart (both start at pc 0 and have the same
    # slots in use): at pc 1 one PLACEs into the red tray, the other into the blue one
    model = fit_hierarchical(two_orders, TrainConfig(steps=150), "strong")
    for d in two_orders:
        for e in _root_events(d):
            if e.pc == 0 or e.decision.kind == "terminate":
                continue  # the first call is either cube; every later one follows from the scene
            got = model.decide(Frame(e.proc, e.args, e.pc), d.observations[e.step])
            assert (got.op, got.args) == (e.decision.op, e.decision.args), (d.info["expert"], e.pc)

    # closed loop: the learned root keeps to one order, each PLACE into the held cube's tray
    env = PickPlaceEnv(task="sort")
    c = controller(model)
    try:
        obs, _ = env.reset(seed=0)
        c.reset(0)
        calls: list[tuple[str, int]] = []
        done = False
        while not done:
            if len(c.stack) > 1 and (c.stack[1].proc, c.stack[1].args[0]) not in calls[-1:]:
                calls.append((c.stack[1].proc, c.stack[1].args[0]))
            obs, _, term, trunc, _ = env.step(c.act(obs))
            done = term or trunc
    finally:
        env.close()
    picks = [o for p, o in calls if p == "PICK"]
    places = [o for p, o in calls if p == "PLACE"]
    assert sorted(picks) == [0, 1, 2] and places == [o + 3 for o in picks], calls
    assert env.episode_metrics()["success"] == 1.0
