"""The executor: the call stack rules, and max_ops as a time-out."""

from __future__ import annotations

import numpy as np
import pytest

from rlsuite.apps.hierarchy.procedures.executor import Executor
from rlsuite.apps.hierarchy.procedures.spec import ProcedureSpec
from rlsuite.apps.hierarchy.procedures.traces import Decision
from tests.apps.hierarchy.procedures._specs import small_spec


def test_max_ops_terminates_a_call_whatever_its_policy_says():
    spec = small_spec(
        procedures=(
            ProcedureSpec("ROOT", ("SUB",), max_ops=2),
            ProcedureSpec("SUB", ("A",), max_ops=3),
        )
    )

    class Busy:  # never terminates on its own
        def decide(self, frame, obs):
            return Decision("call", "SUB") if frame.proc == "ROOT" else Decision("act", "A", (1,))

    ex = Executor(spec, Busy(), record=True)
    kinds = [ex.act(np.zeros(3, np.float32)).kind for _ in range(8)]
    assert kinds == ["act"] * 6 + ["stop", "stop"]  # 2 calls x 3 actions, then the root returns
    terms = [e for e in ex.events if e.decision.kind == "terminate"]
    assert [(e.proc, e.pc) for e in terms] == [("SUB", 3), ("SUB", 3), ("ROOT", 2)]
    with pytest.raises(ValueError, match="max_ops"):
        small_spec(
            procedures=(ProcedureSpec("ROOT", ("SUB",)), ProcedureSpec("SUB", ("A",), max_ops=0))
        ).validate()
