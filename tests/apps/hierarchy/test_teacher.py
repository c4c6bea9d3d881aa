"""The scripted teacher: correct sums at any length, consistent strong traces."""

from __future__ import annotations

import pytest

from rlsuite.apps.hierarchy.envs.addition import AdditionEnv
from rlsuite.apps.hierarchy.procedures.executor import Executor
from rlsuite.apps.hierarchy.procedures.traces import stacks_after_actions
from rlsuite.apps.hierarchy.synthesis.program import (
    SPEC,
    Teacher,
    from_env_action,
    make_traces,
    teacher_trace,
    to_env_action,
)


@pytest.mark.parametrize("length", [1, 2, 7, 50, 400])
def test_teacher_adds_correctly_at_any_length(length):
    env = AdditionEnv(length=length)
    for seed in range(5):
        tr = teacher_trace(env, seed=seed)
        assert tr.info["correct"] and env.is_correct()
        out = env.tapes[3]
        value = sum(int(d) * 10**i for i, d in enumerate(out) if d != 10)
        assert value == tr.info["a"] + tr.info["b"]


@pytest.mark.parametrize("a,b", [(999, 1), (0, 0), (500, 500), (123, 877)])
def test_teacher_on_carry_chains_and_final_carry(a, b):
    env = AdditionEnv(length=3)
    tr = teacher_trace(env, seed=0, problem=(a, b))
    assert tr.info["correct"]
    n_carry = sum(1 for e in tr.events if e.decision.kind == "call" and e.decision.op == "CARRY")
    expected = sum(
        1 for i in range(4) if (a % 10 ** (i + 1)) + (b % 10 ** (i + 1)) >= 10 ** (i + 1)
    )
    assert n_carry == expected  # CARRY exactly in the columns whose sum reaches 10


def test_strong_trace_replays_to_its_actions_and_weak_trace_hides_the_stack():
    tr = make_traces(1, seed=3, lengths=(6,))[0]
    stacks = stacks_after_actions(tr, SPEC)
    assert len(stacks) == len(tr.actions) and stacks[-1] == "STOP"
    assert all(s.startswith("ADD@") for s in stacks[:-1])
    # every action is taken by the procedure on top of the stack, which may take it
    acts = [e for e in tr.events if e.decision.kind == "act"]
    assert [e.decision for e in acts] == tr.actions[:-1]
    for e in acts:
        assert e.decision.op in SPEC.proc(e.proc).ops
    # calls and terminations balance
    calls = sum(e.decision.kind == "call" for e in tr.events)
    terms = sum(e.decision.kind == "terminate" for e in tr.events)
    assert terms == calls + 1
    weak = make_traces(1, seed=3, lengths=(6,), strong=False)[0]
    assert weak.events is None and weak.actions == tr.actions


def test_env_action_round_trip_and_executor_rejects_illegal_ops():
    for a in range(49):
        assert to_env_action(from_env_action(a)) == a

    class Bad(Teacher):
        def decide(self, frame, obs):
            if frame.proc == "ADD":
                from rlsuite.apps.hierarchy.procedures.traces import Decision

                return Decision("act", "WRITE", (3, 1))  # ADD may only call ADD1
            return super().decide(frame, obs)

    env = AdditionEnv(length=2)
    obs, _ = env.reset(seed=0)
    with pytest.raises(RuntimeError, match="cannot take action"):
        Executor(SPEC, Bad()).act(obs)


def test_make_traces_rejects_negative_counts():
    with pytest.raises(ValueError, match=">= 0"):
        make_traces(-1, seed=0)
