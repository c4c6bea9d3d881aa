"""The shared procedure model: spec validation, execution, the exact weak likelihood,
strong training with continuous actions and arguments, save/load."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch.nn import functional as F

from rlsuite.apps.hierarchy.envs.addition import AdditionEnv
from rlsuite.apps.hierarchy.procedures.executor import Executor
from rlsuite.apps.hierarchy.procedures.fit import fit
from rlsuite.apps.hierarchy.procedures.model import InputView, ProcedureModel
from rlsuite.apps.hierarchy.procedures.spec import ActionSpec, ArgSpec, HierarchySpec, ProcedureSpec
from rlsuite.apps.hierarchy.procedures.traces import TERMINATE, Decision
from rlsuite.apps.hierarchy.procedures.weak import WeakLattice
from rlsuite.apps.hierarchy.synthesis.program import SPEC, make_traces, rollout, teacher_trace


@pytest.fixture(autouse=True, scope="module")
def _one_torch_thread():
    """Tiny networks: one thread (the default, one per core, thrashes a shared machine)."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def _spec(**kw):
    base = dict(
        obs_dim=3,
        actions=(ActionSpec("A", (ArgSpec("x", "discrete", 3),)),),
        procedures=(ProcedureSpec("ROOT", ("SUB",)), ProcedureSpec("SUB", ("A",))),
        root="ROOT",
    )
    base.update(kw)
    return HierarchySpec(**base)


@pytest.mark.parametrize(
    "kw,match",
    [
        (dict(root="NOPE"), "root"),
        (dict(procedures=(ProcedureSpec("ROOT", ("B",)),)), "unknown operation"),
        (
            dict(procedures=(ProcedureSpec("ROOT", ("SUB",)), ProcedureSpec("SUB", ("ROOT",)))),
            "cycle",
        ),
        (
            dict(procedures=(ProcedureSpec("ROOT", ("A",), (ArgSpec("k"),)),)),
            "cannot take arguments",
        ),
        (dict(procedures=(ProcedureSpec("ROOT", ("A",), max_pc=9),)), "max_pc"),
        (dict(actions=(ActionSpec("A", (ArgSpec("x", "ordinal", 3),)),)), "kind"),
    ],
)
def test_bad_specs_are_clear_errors(kw, match):
    with pytest.raises(ValueError, match=match):
        _spec(**kw).validate()


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
    spec = _spec(
        procedures=(ProcedureSpec("ROOT", ("SUB",)), ProcedureSpec("SUB", ("A",), (ArgSpec("k"),)))
    )
    with pytest.raises(ValueError, match="without arguments"):
        WeakLattice(spec)


class _Reach:
    """A robot-like expert: MOVE_TO(target) procedures over continuous actions."""

    def decide(self, frame, obs):
        if frame.proc == "ROOT":
            return (
                [Decision("call", "GOTO", (0,)), Decision("call", "GOTO", (1,))][frame.pc]
                if frame.pc < 2
                else TERMINATE
            )
        target = np.array([1.0, -1.0] if frame.args[0] == 0 else [-0.5, 0.5], np.float32)
        if frame.pc < 2:
            return Decision("act", "STEP", ((target - obs[:2]) * 0.5,))
        return TERMINATE


def _reach_rollout(policy, spec, record=True):
    ex = Executor(spec, policy, record=record)
    pos = np.zeros(2, np.float32)
    while True:
        d = ex.act(np.concatenate([pos, [1.0]]).astype(np.float32))
        if d.kind == "stop":
            break
        pos = pos + d.args[0]
    return ex, pos


def test_continuous_actions_and_arguments_train_strongly_and_reload(tmp_path):
    spec = HierarchySpec(
        obs_dim=3,
        actions=(ActionSpec("STEP", (ArgSpec("delta", "continuous", 2),)),),
        procedures=(
            ProcedureSpec("ROOT", ("GOTO",)),
            ProcedureSpec("GOTO", ("STEP",), (ArgSpec("which", "discrete", 2),)),
        ),
        root="ROOT",
        max_pc=3,
    )
    ex, pos = _reach_rollout(_Reach(), spec)
    traces = [ex.trace()]
    model = ProcedureModel(spec, hidden=(32,))
    hist = fit(model, strong=traces, epochs=400, lr=1e-2)
    assert hist[-1]["strong_nll"] < hist[0]["strong_nll"] - 1.0
    _, learned = _reach_rollout(model, spec, record=False)
    assert np.allclose(learned, pos, atol=0.05)
    path = str(tmp_path / "reach.pt")
    model.save(path)
    again = ProcedureModel.load(path)
    _, reloaded = _reach_rollout(again, spec, record=False)
    assert np.allclose(reloaded, learned, atol=1e-6)


def test_save_load_same_decisions(tmp_path):
    model = ProcedureModel(SPEC, hidden=(16,))
    fit(model, strong=make_traces(2, seed=0, lengths=(3,)), epochs=20)
    path = str(tmp_path / "php.pt")
    model.save(path)
    again = ProcedureModel.load(path)
    env = AdditionEnv(length=5)
    a = rollout(env, model, seed=11)
    b = rollout(env, again, seed=11)
    assert a.actions == b.actions and [e.decision for e in a.events] == [
        e.decision for e in b.events
    ]


def test_fit_rejects_empty_data_and_negative_epochs():
    model = ProcedureModel(SPEC, hidden=(8,))
    with pytest.raises(ValueError, match="at least one"):
        fit(model)
    with pytest.raises(ValueError, match="epochs"):
        fit(model, strong=make_traces(1, seed=0, lengths=(1,)), epochs=-1)


# ---------------------------------------------------------------- shared-model extensions


def test_call_tree_and_trace_from_calls_round_trip_a_teacher_trace(tmp_path):
    from rlsuite.apps.hierarchy.procedures.calls import call_tree, trace_from_calls
    from rlsuite.apps.hierarchy.procedures.traces import load_traces, save_traces

    traces = make_traces(3, seed=1, lengths=(2, 3))
    for tr in traces:
        root = call_tree(tr)
        assert root.proc == SPEC.root and root.terminated  # the teacher finishes (STOP)
        again = trace_from_calls(SPEC, root, tr.observations, tr.actions)
        assert again.events == tr.events
    path = str(tmp_path / "t.npz")
    save_traces(path, [*traces, traces[0].weak()])
    back = load_traces(path)
    assert [b.events for b in back[:3]] == [t.events for t in traces] and back[3].events is None
    assert [b.actions for b in back] == [t.actions for t in [*traces, traces[0]]]
    with pytest.raises(ValueError, match="cover the trace's actions"):
        trace_from_calls(SPEC, type(root)(SPEC.root, (), [0]), tr.observations, tr.actions)


def test_max_ops_terminates_a_call_whatever_its_policy_says():
    spec = _spec(
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
        _spec(
            procedures=(ProcedureSpec("ROOT", ("SUB",)), ProcedureSpec("SUB", ("A",), max_ops=0))
        ).validate()


class _HalfView(InputView):
    """A view for _spec: the observation halved, the pc as a number; args doubled."""

    def in_dim(self, spec, proc):
        return spec.obs_dim + 1

    def features(self, proc, obs, pc, args):
        return torch.cat([obs * 0.5, pc.float()[:, None]], dim=1)


def test_input_view_model_trains_saves_and_loads_with_its_view(tmp_path):
    spec = _spec(actions=(ActionSpec("A", (ArgSpec("x", "continuous", 2),)),))

    class Teacher:
        def decide(self, frame, obs):
            if frame.pc >= 2:
                return TERMINATE
            if frame.proc == "ROOT":
                return Decision("call", "SUB")
            return Decision("act", "A", (np.array([obs[0], -obs[1]], np.float32),))

    rng = np.random.default_rng(0)
    traces = []
    for _ in range(8):
        ex = Executor(spec, Teacher(), record=True)
        while not ex.done:
            ex.act(rng.normal(size=3).astype(np.float32))
        traces.append(ex.trace())
    model = ProcedureModel(spec, hidden=(16,), seed=0, view=_HalfView(), separate_termination=True)
    before = model.strong_loss(model.prepare_strong(traces))[0].item()
    sub = model.index["SUB"]
    frozen = [p.detach().clone() for p in model.nets[model.index["ROOT"]].parameters()]
    fit(model, strong=traces, epochs=150, lr=1e-2, only=("SUB",), cosine=True)
    assert model.strong_loss(model.prepare_strong(traces))[0].item() < before
    assert all((a == b).all() for a, b in zip(frozen, model.nets[model.index["ROOT"]].parameters()))
    path = str(tmp_path / "m.pt")
    model.save(path)
    back = ProcedureModel.load(path)
    assert isinstance(back.view, _HalfView) and back.separate_termination
    obs = np.array([0.3, -0.2, 1.0], np.float32)
    from rlsuite.apps.hierarchy.procedures.executor import Frame

    d1, d2 = model.decide(Frame("SUB", (), 0), obs), back.decide(Frame("SUB", (), 0), obs)
    np.testing.assert_array_equal(d1.args[0], d2.args[0])
    with pytest.raises(ValueError, match="WeakLattice"):
        fit(ProcedureModel(_spec(), view=_HalfView()), weak=[make_traces(1, seed=0)[0].weak()])
    model.reset_procedure("SUB", seed=1)
    assert model.strong_loss(model.prepare_strong(traces))[0].item() > 0
    assert sub == model.index["SUB"]
