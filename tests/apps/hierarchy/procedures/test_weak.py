"""The exact weak likelihood: equal to the brute-force sum over call stacks; its limits."""

from __future__ import annotations

import math

import pytest
import torch
from torch.nn import functional as F

from rlsuite.apps.hierarchy.envs.addition import AdditionEnv
from rlsuite.apps.hierarchy.procedures.model import ProcedureModel
from rlsuite.apps.hierarchy.procedures.spec import ArgSpec, ProcedureSpec
from rlsuite.apps.hierarchy.procedures.weak import WeakLattice
from rlsuite.apps.hierarchy.synthesis.program import SPEC, make_traces, teacher_trace
from tests.apps.hierarchy.procedures._specs import small_spec


def _brute_likelihood(model, spec, trace):
    """P(actions | observations) by summing over explicit, unclipped call stacks."""
    memo = {}

    def dist(p, k, obs):
        pi = model.index[p]
        out = model.nets[pi](
            model.inputs(pi, torch.as_tensor(obs).reshape(1, -1), torch.tensor([k]), None)
        )[0]
        h = model.heads[pi]
        pt = torch.sigmoid(out[0]).item() if k > 0 else 0.0
        return pt, F.log_softmax(out[1 : 1 + h.n_ops], -1), out, h, spec.procedures[pi]

    def rest(stack, t):
        if t == len(trace.actions):
            return 0.0
        key = (stack, t)
        if key not in memo:
            memo[key] = ctrl(stack, t)
        return memo[key]

    def ctrl(stack, t):
        a, obs = trace.actions[t], trace.observations[t]
        if not stack:
            return 1.0 if a.kind == "stop" else 0.0
        p, k = stack[-1]
        pt, lops, out, h, proc = dist(p, k, obs)
        total = 0.0
        if pt > 0:
            parent = stack[:-1]
            if parent:
                parent = parent[:-1] + ((parent[-1][0], parent[-1][1] + 1),)
            total += pt * ctrl(parent, t)
        for oi, op in enumerate(proc.ops):
            po = math.exp(lops[oi].item()) * (1 - pt)
            if spec.is_action(op):
                if a.kind == "act" and a.op == op:
                    lp = sum(
                        F.log_softmax(out[s], -1)[a.args[gi]].item()
                        for gi, (_g, s) in enumerate(h.args[oi])
                    )
                    total += po * math.exp(lp) * rest(stack[:-1] + ((p, k + 1),), t + 1)
            else:
                total += po * ctrl(stack + ((op, 0),), t)
        return total

    return rest(((spec.root, 0),), 0)


def test_weak_likelihood_equals_brute_force_sum_over_call_stacks():
    torch.manual_seed(0)
    model = ProcedureModel(SPEC, hidden=(16,))
    lattice = WeakLattice(SPEC)
    env = AdditionEnv(length=1)
    for seed in (0, 1):  # a column with a carry (8+6), one without (4+5)
        tr = teacher_trace(env, seed=seed).weak()
        with torch.no_grad():
            _, ll = lattice.forward_messages(model, lattice.prepare([tr]))
        assert float(ll[0]) == pytest.approx(math.log(_brute_likelihood(model, SPEC, tr)), abs=1e-3)


def test_weak_likelihood_rejects_traces_that_do_not_finish():
    tr = make_traces(1, seed=0, lengths=(2,), strong=False)[0]
    tr.actions = tr.actions[:-1]
    tr.observations = tr.observations[:-1]
    with pytest.raises(ValueError, match="STOP"):
        WeakLattice(SPEC).prepare([tr])


def test_weak_supervision_needs_argument_free_procedures():
    spec = small_spec(
        procedures=(ProcedureSpec("ROOT", ("SUB",)), ProcedureSpec("SUB", ("A",), (ArgSpec("k"),)))
    )
    with pytest.raises(ValueError, match="without arguments"):
        WeakLattice(spec)
