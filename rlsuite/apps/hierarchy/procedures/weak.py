"""Weak supervision, exactly: the forward algorithm over every hidden call stack.

:class:`WeakLattice` computes the marginal log-likelihood of weak traces (observations and
actions only) by a forward pass over every call stack the hierarchy can be in (pcs
clipped, so the stack space is finite); its gradient is the expectation-gradient (the EM
gradient: the expected complete-data gradient under the posterior over stacks). It needs
procedures without arguments; hierarchies with continuous arguments fill their stacks in
by hard EM instead (:mod:`.segmentation`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch.nn import functional as F

from rlsuite.apps.hierarchy.procedures.model import ProcedureModel
from rlsuite.apps.hierarchy.procedures.spec import HierarchySpec
from rlsuite.apps.hierarchy.procedures.traces import Trace, stacks_after_actions

NEG = -1e9
"""Log-probability used for impossible events (finite, so gradients stay finite)."""


@dataclass
class WeakData:
    """Padded weak traces."""

    obs: torch.Tensor  # [N, T, obs_dim]
    act: torch.Tensor  # [N, T] action-type index, -1 for STOP, -2 for padding
    args: list[torch.Tensor]  # per (action type, arg): [N, T] long or [N, T, size] float
    lengths: torch.Tensor  # [N]
    n: int


class WeakLattice:
    """Exact forward algorithm over hidden call stacks, for weak (action-only) traces.

    A *state* is the call stack right after an elementary action: a path of procedures from
    the root, each with its clipped pc (the top one has just acted, so its pc >= 1); plus the
    initial stack ``[(root, 0)]`` and a final STOP state. Between two actions the stack can
    pop some frames (termination predicates), the new top chooses an operation, calls push
    frames (at pc 0, no termination), until one frame emits the observed action. Each such
    path is an *edge* with a list of factors (log-probabilities from the networks evaluated
    on the current observation). The log-likelihood of a trace is a logsumexp over edges per
    step; autograd gives the expectation-gradient.
    """

    def __init__(self, spec: HierarchySpec):
        spec.validate()
        for p in spec.procedures:
            if p.args:
                raise ValueError(
                    f"weak supervision enumerates call stacks and needs procedures without "
                    f"arguments; {p.name!r} takes {[a.name for a in p.args]}. Use strong traces "
                    "for procedures with arguments, or fill the weak traces' stacks in by hard EM "
                    "(procedures.fit.fit(model, weak=..., weak_infer=...)) instead of this "
                    "WeakLattice."
                )
        self.spec = spec
        self.K = spec.max_pc
        self.P = self.K + 1
        names = [p.name for p in spec.procedures]
        self.pidx = {n: i for i, n in enumerate(names)}
        self.aidx = {a.name: i for i, a in enumerate(spec.actions)}
        self.clip = [spec.pc_clip(n) for n in names]
        self.W = 2 + max(len(p.ops) for p in spec.procedures)  # TERM, NOTERM, ops...
        procs = {p.name: p for p in spec.procedures}

        # enumerate post-action stacks: call paths whose top has an action op
        paths: list[tuple[str, ...]] = []

        def walk(path: tuple[str, ...]) -> None:
            top = procs[path[-1]]
            if any(spec.is_action(o) for o in top.ops):
                paths.append(path)
            for o in top.ops:
                if o in procs:
                    walk(path + (o,))

        walk((spec.root,))
        states: list[tuple[tuple[int, int], ...]] = [((self.pidx[spec.root], 0),)]  # initial
        for path in paths:
            clips = [self.clip[self.pidx[n]] for n in path]
            ranges = [range(0, c + 1) for c in clips[:-1]] + [range(1, clips[-1] + 1)]
            for pcs in np.ndindex(*[len(r) for r in ranges]):
                st = tuple((self.pidx[n], ranges[i][pcs[i]]) for i, n in enumerate(path))
                states.append(st)
        self.states = states
        self.state_index = {s: i for i, s in enumerate(states)}
        self.STOP = len(states)
        self.n_states = len(states) + 1

        ctrl_pad = len(names) * self.P * self.W  # index of a zero column
        emit_pad = len(names) * self.P

        def cidx(p: int, k: int, col: int) -> int:
            return (p * self.P + k) * self.W + col

        edges: list[tuple[int, int, list[int], int, bool]] = []  # from, to, factors, emit, is_stop

        def expand(prefix: tuple[tuple[int, int], ...], factors: list[int], frm: int) -> None:
            """The top of ``prefix`` (not terminating, factors so far) picks an operation."""
            p, k = prefix[-1]
            proc = spec.procedures[p]
            if any(spec.is_action(op) for op in proc.ops):
                # one edge per emitting frame: the choice among its action types and the
                # action's arguments form the emission factor, looked up per step from the
                # observed action
                to = prefix[:-1] + ((p, min(k + 1, self.clip[p])),)
                edges.append((frm, self.state_index[to], list(factors), p * self.P + k, False))
            for oi, op in enumerate(proc.ops):
                if not spec.is_action(op):
                    expand(prefix + ((self.pidx[op], 0),), factors + [cidx(p, k, 2 + oi)], frm)

        for si, st in enumerate(states):
            n = len(st)
            factors: list[int] = []
            cur = list(st)
            for m in range(0, n + 1):
                # `cur` has had m frames popped; its top is the frame deciding now
                if m == n:
                    edges.append((si, self.STOP, list(factors), emit_pad, True))
                    break
                p, k = cur[-1]
                if k > 0:
                    expand(tuple(cur), factors + [cidx(p, k, 1)], si)
                    factors = factors + [cidx(p, k, 0)]
                else:
                    # pc 0 never terminates: no continuation with more pops
                    expand(tuple(cur), list(factors), si)
                    break
                cur.pop()
                if cur:
                    q, kq = cur[-1]
                    cur[-1] = (q, min(kq + 1, self.clip[q]))
        self.n_edges = len(edges)
        self.frm = torch.tensor([e[0] for e in edges])
        self.to = torch.tensor([e[1] for e in edges])
        self.is_stop = torch.tensor([e[4] for e in edges])
        # edge weight = [control log-probs, emission log-probs] @ M (a count matrix), so all
        # steps' edge weights come from one matrix product
        n_cols = ctrl_pad + 1 + emit_pad + 1
        M = torch.zeros(n_cols, self.n_edges)
        for ei, e in enumerate(edges):
            for c in e[2]:
                M[c, ei] += 1.0
            if not e[4]:
                M[ctrl_pad + 1 + e[3], ei] += 1.0
        self.M = M.to_sparse() if M.numel() > 4_000_000 else M

    def describe(self) -> str:
        return f"{self.n_states} stack states, {self.n_edges} transitions"

    def state_names(self, si: int) -> str:
        if si == self.STOP:
            return "STOP"
        return " > ".join(f"{self.spec.procedures[p].name}@{k}" for p, k in self.states[si])

    # data ----------------------------------------------------------------------
    def prepare(self, traces: Sequence[Trace]) -> WeakData:
        if not traces:
            raise ValueError("no weak traces")
        n = len(traces)
        tmax = max(len(t) for t in traces)
        obs = np.zeros((n, tmax, self.spec.obs_dim), np.float32)
        act = np.full((n, tmax), -2, np.int64)
        argbufs: list[np.ndarray] = []
        slots: dict[tuple[int, int], int] = {}
        for a_i, a in enumerate(self.spec.actions):
            for g_i, g in enumerate(a.args):
                slots[(a_i, g_i)] = len(argbufs)
                if g.kind == "discrete":
                    argbufs.append(np.zeros((n, tmax), np.int64))
                else:
                    argbufs.append(np.zeros((n, tmax, g.size), np.float32))
        for b, tr in enumerate(traces):
            if not tr.actions or tr.actions[-1].kind != "stop":
                raise ValueError(f"weak trace {b} does not end with STOP (the program's end)")
            obs[b, : len(tr)] = tr.observations
            for t, d in enumerate(tr.actions):
                if d.kind == "stop":
                    act[b, t] = -1
                    continue
                ai = self.aidx[d.op]
                act[b, t] = ai
                for g_i, v in enumerate(d.args):
                    argbufs[slots[(ai, g_i)]][b, t] = v
        self._slots = slots
        return WeakData(
            torch.as_tensor(obs),
            torch.as_tensor(act),
            [torch.as_tensor(x) for x in argbufs],
            torch.tensor([len(t) for t in traces]),
            n,
        )

    # likelihood -------------------------------------------------------------------
    def tables(
        self, model: ProcedureModel, obs: torch.Tensor, act: torch.Tensor, args: list[torch.Tensor]
    ):
        """Control log-probs ``[B, T, C+1]`` and emission log-probs ``[B, T, E+1]``."""
        B, T, D = obs.shape
        ctrl, emit = [], []
        pcs = torch.arange(self.P)
        for pi, proc in enumerate(self.spec.procedures):
            o = obs.unsqueeze(2).expand(B, T, self.P, D)
            pc1 = F.one_hot(pcs, self.P).float().expand(B, T, self.P, self.P)
            out = model.nets[pi](torch.cat([o, pc1], dim=-1))  # [B,T,P,width]
            h = model.heads[pi]
            term = out[..., 0]
            lt = F.logsigmoid(term)
            lnt = F.logsigmoid(-term)
            # pc 0 never terminates
            lt = torch.cat([torch.full_like(lt[..., :1], NEG), lt[..., 1:]], dim=-1)
            lnt = torch.cat([torch.zeros_like(lnt[..., :1]), lnt[..., 1:]], dim=-1)
            lops = F.log_softmax(out[..., 1 : 1 + h.n_ops], dim=-1)
            pad = torch.full((B, T, self.P, self.W - 2 - h.n_ops), NEG)
            ctrl.append(torch.cat([lt.unsqueeze(-1), lnt.unsqueeze(-1), lops, pad], dim=-1))
            em = torch.full((B, T, self.P), NEG)
            for oi, op in enumerate(proc.ops):
                if not self.spec.is_action(op):
                    continue
                ai = self.aidx[op]
                lp = lops[..., oi]
                for g_i, (g, s) in enumerate(h.args[oi]):
                    tgt = (
                        args[self._slots[(ai, g_i)]]
                        .unsqueeze(2)
                        .expand(B, T, self.P, *args[self._slots[(ai, g_i)]].shape[2:])
                    )
                    lp = lp + model.arg_logp(pi, oi, g_i, g, out[..., s], tgt)
                em = torch.where((act == ai).unsqueeze(-1), lp, em)
            emit.append(em)
        C = torch.stack(ctrl, dim=2).reshape(B, T, -1)
        C = torch.cat([C, torch.zeros(B, T, 1)], dim=-1)
        E = torch.stack(emit, dim=2).reshape(B, T, -1)
        E = torch.cat([E, torch.zeros(B, T, 1)], dim=-1)
        return C, E

    def forward_messages(
        self,
        model: ProcedureModel,
        data: WeakData,
        idx: Sequence[int] | None = None,
        probes: list[torch.Tensor] | None = None,
    ):
        """Log forward messages ``[B, T+1, n_states]`` and the per-trace log-likelihood.

        ``probes`` (a list to fill) receives one zero tensor per step added to the messages;
        the gradient of the log-likelihood with respect to each is the posterior marginal
        over stacks after that action.
        """
        idx = torch.as_tensor(np.arange(data.n) if idx is None else np.asarray(idx))
        lengths = data.lengths[idx]
        T = int(lengths.max())
        obs = data.obs[idx, :T]
        act = data.act[idx, :T]
        args = [a[idx, :T] for a in data.args]
        C, E = self.tables(model, obs, act, args)
        B = len(idx)
        # [B, T, n_edges]: every edge's log-weight at every step
        CE = torch.cat([C, E], dim=-1)
        Wt = (CE.reshape(B * T, -1) @ self.M).reshape(B, T, self.n_edges)
        alpha = torch.full((B, self.n_states), NEG)
        alpha[:, 0] = 0.0
        msgs = [alpha]
        to = self.to.unsqueeze(0).expand(B, -1)
        steps = Wt.unbind(1)  # one backward for all steps (indexing would allocate T copies)
        for t in range(T):
            stop_now = (act[:, t] == -1).unsqueeze(1)
            valid = torch.where(stop_now, self.is_stop.unsqueeze(0), ~self.is_stop.unsqueeze(0))
            cand = torch.where(valid, alpha[:, self.frm] + steps[t], torch.full_like(steps[t], NEG))
            # logsumexp of the candidates into each destination state
            mx = torch.full((B, self.n_states), NEG).scatter_reduce(
                1, to, cand.detach(), reduce="amax", include_self=True
            )
            ssum = torch.zeros(B, self.n_states).scatter_add(1, to, (cand - mx.gather(1, to)).exp())
            new = (ssum.clamp(min=1e-30).log() + mx).clamp(min=NEG)
            active = (t < lengths).unsqueeze(1)
            alpha = torch.where(active, new, alpha)
            if probes is not None:
                z = torch.zeros_like(alpha, requires_grad=True)
                probes.append(z)
                alpha = alpha + z
            msgs.append(alpha)
        return torch.stack(msgs, dim=1), alpha[:, self.STOP]

    def nll(
        self, model: ProcedureModel, data: WeakData, idx: Sequence[int]
    ) -> tuple[torch.Tensor, int]:
        _, ll = self.forward_messages(model, data, idx)
        n = int(data.lengths[torch.as_tensor(np.asarray(idx))].sum())
        return -ll.sum(), n

    def posterior_stacks(self, model: ProcedureModel, trace: Trace) -> list[tuple[str, float]]:
        """The most probable call stack after each action of a weak trace, with its
        posterior probability (forward-backward marginals, via autograd)."""
        data = self.prepare([trace])
        probes: list[torch.Tensor] = []
        with torch.enable_grad():
            _, ll = self.forward_messages(model, data, probes=probes)
            grads = torch.autograd.grad(ll.sum(), probes)
        out = []
        for g in grads:
            si = int(g[0].argmax())
            out.append((self.state_names(si), float(g[0, si])))
        return out

    def stacks_recovered(self, model: ProcedureModel, traces: Sequence[Trace]) -> tuple[int, int]:
        """How many of the call stacks after each action of strong ``traces``, read as
        weak ones, the posterior's most probable stack gets right, and out of how many."""
        ok = total = 0
        for tr in traces:
            post = [s for s, _ in self.posterior_stacks(model, tr.weak())]
            ref = stacks_after_actions(tr, self.spec)
            ok += sum(a == b for a, b in zip(post, ref))
            total += len(ref)
        return ok, total
