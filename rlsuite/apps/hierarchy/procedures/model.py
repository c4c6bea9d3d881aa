"""The learned procedures: one operation network and termination predicate per procedure.

:class:`ProcedureModel` is a policy for the :class:`~.executor.Executor` (greedy
:meth:`~ProcedureModel.decide`), holds the strong loss
(:meth:`~ProcedureModel.prepare_strong`, :meth:`~ProcedureModel.strong_loss`: cross-entropy
/ Gaussian NLL on terminations, operations and arguments) and saves / loads itself with its
spec and view. Training is :func:`rlsuite.apps.hierarchy.procedures.fit.fit`. An
:class:`InputView` lets each procedure see the observation its own way and output
continuous arguments in frame-relative units.
"""

from __future__ import annotations

import abc
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from rlsuite.apps.hierarchy.procedures.executor import Frame
from rlsuite.apps.hierarchy.procedures.spec import ArgSpec, HierarchySpec, ProcedureSpec
from rlsuite.apps.hierarchy.procedures.traces import TERMINATE, Decision, Event, Trace


class _Heads:
    """Column layout of one procedure's output vector."""

    def __init__(self, spec: HierarchySpec, proc: ProcedureSpec):
        self.n_ops = len(proc.ops)
        col = 1 + self.n_ops  # 0: termination logit, then op logits
        self.args: list[list[tuple[ArgSpec, slice]]] = []
        for op in proc.ops:
            heads = []
            for a in spec.op_args(op):
                heads.append((a, slice(col, col + a.size)))
                col += a.size
            self.args.append(heads)
        self.width = col


class InputView(abc.ABC):
    """Hook: what a procedure's network sees, and in which units it outputs continuous arguments.

    The default (no view) feeds ``[observation, one-hot(clipped pc), arguments]`` and reads
    arguments as they are. A subclass can give each procedure its own view of the frame, e.g.
    the observation relative to the object it was called with (the robot's skills), its
    unclipped pc (a leaf's elapsed steps), and express argument outputs relative to the frame
    (a MOVE_TO goal as an offset from the skill's object). Everything is torch, batched:
    ``obs`` ``[N, obs_dim]``, ``pc`` ``[N]`` (long, not clipped), ``args`` one tensor per
    argument of the procedure (discrete: ``[N]`` long; continuous: ``[N, size]``).
    Saved models store the view's import path and :meth:`config`; it must be importable.
    """

    @abc.abstractmethod
    def in_dim(self, spec: HierarchySpec, proc: ProcedureSpec) -> int:
        """Width of :meth:`features` for ``proc``."""

    @abc.abstractmethod
    def features(
        self, proc: str, obs: torch.Tensor, pc: torch.Tensor, args: list[torch.Tensor]
    ) -> torch.Tensor:
        """The network input ``[N, in_dim]`` of procedure ``proc``'s frames."""

    def encode_arg(
        self,
        proc: str,
        op: str,
        index: int,
        obs: torch.Tensor,
        args: list[torch.Tensor],
        value: torch.Tensor,
    ) -> torch.Tensor:
        """Continuous argument ``index`` of operation ``op`` (``[N, size]``) in network units."""
        return value

    def decode_arg(
        self,
        proc: str,
        op: str,
        index: int,
        obs: torch.Tensor,
        args: list[torch.Tensor],
        raw: torch.Tensor,
    ) -> torch.Tensor:
        """Inverse of :meth:`encode_arg`: the argument passed on from a network output."""
        return raw

    def config(self) -> dict[str, Any]:
        """Keyword arguments that rebuild this view (saved with the model)."""
        return {}


class _SplitNet(nn.Module):
    """Operation network and termination predicate as two MLPs on the same input."""

    def __init__(self, d_in: int, hidden: Sequence[int], width: int):
        super().__init__()
        self.term = _mlp(d_in, hidden, 1)
        self.ops = _mlp(d_in, hidden, width - 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([self.term(x), self.ops(x)], dim=-1)


def _mlp(d_in: int, hidden: Sequence[int], d_out: int) -> nn.Sequential:
    layers: list[nn.Module] = []
    for w in hidden:
        layers += [nn.Linear(d_in, w), nn.Tanh()]
        d_in = w
    layers.append(nn.Linear(d_in, d_out))
    return nn.Sequential(*layers)


class ProcedureModel(nn.Module):
    """One operation network + termination predicate per procedure (an MLP each), on
    ``[observation, one-hot(clipped pc), procedure arguments]`` or, with an
    :class:`InputView`, on the view's features.

    ``balance_termination`` weighs the rare "terminate" labels up (``pos_weight`` =
    sqrt(#continue / #terminate) per procedure; for long-running leaves);
    ``separate_termination`` gives each termination predicate its own MLP instead of a
    shared one with the operation network.
    """

    def __init__(
        self,
        spec: HierarchySpec,
        hidden: Sequence[int] = (64, 64),
        cache: bool = True,
        seed: int | None = None,
        view: InputView | None = None,
        balance_termination: bool = False,
        separate_termination: bool = False,
    ):
        super().__init__()
        spec.validate()
        if seed is not None:  # a reproducible initialisation (EM's result depends on it)
            torch.manual_seed(seed)
        self.spec = spec
        self.hidden = tuple(int(h) for h in hidden)
        self.cache_enabled = cache
        self.view = view
        self.balance_termination = bool(balance_termination)
        self.separate_termination = bool(separate_termination)
        self.P = spec.max_pc + 1
        self.heads = [_Heads(spec, p) for p in spec.procedures]
        self.index = {p.name: i for i, p in enumerate(spec.procedures)}
        self.clip = [spec.pc_clip(p.name) for p in spec.procedures]
        self.nets = nn.ModuleList([self._make_net(pi) for pi in range(len(spec.procedures))])
        # one learned log-std per continuous head (shared over inputs)
        self.log_std = nn.ParameterDict()
        for pi, (_p, h) in enumerate(zip(spec.procedures, self.heads)):
            for oi, heads in enumerate(h.args):
                for ai, (a, _s) in enumerate(heads):
                    if a.kind == "continuous":
                        self.log_std[f"{pi}_{oi}_{ai}"] = nn.Parameter(torch.full((a.size,), -1.0))
        self._cache: dict[Any, Decision] = {}
        self.extra: dict[str, Any] = {}

    def _make_net(self, pi: int) -> nn.Module:
        p, h = self.spec.procedures[pi], self.heads[pi]
        if self.view is None:
            d_in = self.spec.obs_dim + self.P + sum(a.width for a in p.args)
        else:
            d_in = int(self.view.in_dim(self.spec, p))
        if self.separate_termination:
            return _SplitNet(d_in, self.hidden, h.width)
        return _mlp(d_in, self.hidden, h.width)

    def reset_procedure(self, name: str, seed: int | None = None) -> None:
        """Fresh random weights for procedure ``name`` (to learn it anew: *recreate*)."""
        pi = self.index[name]
        if seed is not None:
            torch.manual_seed(seed)
        self.nets[pi] = self._make_net(pi)
        for k, v in self.log_std.items():
            if k.split("_")[0] == str(pi):
                v.data.fill_(-1.0)
        self._cache.clear()

    # encoding ----------------------------------------------------------------
    def _encode_args(self, proc: ProcedureSpec, args_rows: Sequence[tuple]) -> torch.Tensor | None:
        if not proc.args:
            return None
        cols = []
        for ai, a in enumerate(proc.args):
            vals = [r[ai] for r in args_rows]
            if a.kind == "discrete":
                cols.append(
                    F.one_hot(torch.as_tensor(np.asarray(vals, dtype=np.int64)), a.size).float()
                )
            else:
                cols.append(
                    torch.as_tensor(np.asarray(vals, dtype=np.float32)).reshape(len(vals), a.size)
                )
        return torch.cat(cols, dim=1)

    @staticmethod
    def _arg_tensors(proc: ProcedureSpec, args_rows: Sequence[tuple]) -> list[torch.Tensor]:
        out = []
        for ai, a in enumerate(proc.args):
            vals = [r[ai] for r in args_rows]
            if a.kind == "discrete":
                out.append(torch.as_tensor(np.asarray(vals, dtype=np.int64)).reshape(len(vals)))
            else:
                out.append(
                    torch.as_tensor(np.asarray(vals, dtype=np.float32)).reshape(len(vals), a.size)
                )
        return out

    def inputs(
        self, pi: int, obs: torch.Tensor, pc: torch.Tensor, args: torch.Tensor | None
    ) -> torch.Tensor:
        pc1 = F.one_hot(pc.clamp(max=self.clip[pi]), self.P).float()
        parts = [obs, pc1] + ([args] if args is not None else [])
        return torch.cat(parts, dim=-1)

    def frame_inputs(
        self, pi: int, obs: torch.Tensor, pc: torch.Tensor, args_rows: Sequence[tuple]
    ) -> torch.Tensor:
        """Network input of procedure ``pi`` for frames (``pc`` not clipped; ``args_rows``
        one argument tuple per row), through the view if there is one."""
        proc = self.spec.procedures[pi]
        if self.view is None:
            return self.inputs(pi, obs, pc, self._encode_args(proc, args_rows))
        return self.view.features(proc.name, obs, pc, self._arg_tensors(proc, args_rows))

    # acting ------------------------------------------------------------------
    def clear_cache(self) -> None:
        self._cache.clear()

    def train(self, mode: bool = True):  # noqa: D102 - weights change: forget cached decisions
        self._cache.clear()
        return super().train(mode)

    @torch.no_grad()
    def decide(self, frame: Frame, obs: np.ndarray) -> Decision:
        """Greedy decision for the top frame (memoised on (procedure, pc, args, obs))."""
        pi = self.index[frame.proc]
        pc = min(frame.pc, self.clip[pi])
        key = None
        if self.cache_enabled:
            key = (
                frame.proc,
                pc if self.view is None else frame.pc,
                _hashable(frame.args),
                np.asarray(obs, dtype=np.float32).tobytes(),
            )
            hit = self._cache.get(key)
            if hit is not None:
                return hit
        proc = self.spec.procedures[pi]
        o = torch.as_tensor(np.asarray(obs, dtype=np.float32)).reshape(1, -1)
        if self.view is None:
            x = self.inputs(pi, o, torch.tensor([pc]), self._encode_args(proc, [frame.args]))
        else:
            x = self.frame_inputs(pi, o, torch.tensor([frame.pc]), [frame.args])
        out = self.nets[pi](x)[0]
        h = self.heads[pi]
        if frame.pc > 0 and out[0].item() > 0.0:
            d = TERMINATE
        else:
            oi = int(out[1 : 1 + h.n_ops].argmax())
            op = proc.ops[oi]
            args = []
            for ai, (a, s) in enumerate(h.args[oi]):
                if a.kind == "discrete":
                    args.append(int(out[s].argmax()))
                else:
                    raw = out[s]
                    if self.view is not None:
                        fargs = self._arg_tensors(proc, [frame.args])
                        raw = self.view.decode_arg(proc.name, op, ai, o, fargs, raw[None])[0]
                    args.append(raw.numpy().astype(np.float32).copy())
            d = Decision("act" if self.spec.is_action(op) else "call", op, tuple(args))
        if key is not None:
            if len(self._cache) > 2_000_000:
                self._cache.clear()
            self._cache[key] = d
        return d

    # strong supervision -----------------------------------------------------
    def prepare_strong(
        self, traces: Sequence[Trace], only: Sequence[str] | None = None
    ) -> list[dict[str, Any]]:
        """Tensors of every recorded decision, grouped by procedure (reuse across epochs);
        ``only``: keep the decisions of these procedures alone."""
        rows: list[list[tuple[np.ndarray, Event]]] = [[] for _ in self.spec.procedures]
        for tr in traces:
            if tr.events is None:
                raise ValueError("prepare_strong needs strong traces (with events)")
            for ev in tr.events:
                rows[self.index[ev.proc]].append((tr.observations[ev.step], ev))
        data = []
        for pi, proc in enumerate(self.spec.procedures):
            evs = rows[pi]
            if not evs or (only is not None and proc.name not in only):
                data.append({})
                continue
            obs = torch.as_tensor(np.stack([o for o, _ in evs]))
            pc = torch.tensor([e.pc for _, e in evs])
            frame_args = [e.args for _, e in evs]
            x = self.frame_inputs(pi, obs, pc, frame_args)
            term = torch.tensor([1.0 if e.decision.kind == "terminate" else 0.0 for _, e in evs])
            term_mask = pc > 0
            op = torch.tensor(
                [
                    proc.ops.index(e.decision.op) if e.decision.kind != "terminate" else -1
                    for _, e in evs
                ]
            )
            arg_targets = []
            for oi, heads in enumerate(self.heads[pi].args):
                sel = (op == oi).nonzero().flatten()
                per = []
                for ai, (a, _s) in enumerate(heads):
                    vals = [evs[i][1].decision.args[ai] for i in sel.tolist()]
                    if a.kind == "discrete":
                        per.append(torch.tensor(np.asarray(vals, dtype=np.int64)))
                    else:
                        v = torch.as_tensor(np.asarray(vals, dtype=np.float32)).reshape(
                            len(vals), a.size
                        )
                        if self.view is not None and len(sel):
                            v = self.view.encode_arg(
                                proc.name,
                                proc.ops[oi],
                                ai,
                                obs[sel],
                                self._arg_tensors(proc, [frame_args[i] for i in sel.tolist()]),
                                v,
                            )
                        per.append(v)
                arg_targets.append((sel, per))
            pos_weight = None
            if self.balance_termination:
                npos = float(term[term_mask].sum())
                nneg = float(term_mask.sum()) - npos
                pos_weight = torch.tensor(max(1.0, nneg / max(npos, 1.0)) ** 0.5)
            data.append(
                dict(
                    x=x,
                    term=term,
                    term_mask=term_mask,
                    op=op,
                    args=arg_targets,
                    pos_weight=pos_weight,
                )
            )
        return data

    def strong_loss(self, data: list[dict[str, Any]]) -> tuple[torch.Tensor, int]:
        """Summed negative log-likelihood of all decisions, and the number of decisions."""
        total = torch.zeros(())
        n = 0
        for pi, d in enumerate(data):
            if not d:
                continue
            out = self.nets[pi](d["x"])
            h = self.heads[pi]
            m = d["term_mask"]
            if m.any():
                total = total + F.binary_cross_entropy_with_logits(
                    out[m, 0], d["term"][m], reduction="sum", pos_weight=d.get("pos_weight")
                )
            acting = d["op"] >= 0
            if acting.any():
                total = total + F.cross_entropy(
                    out[acting, 1 : 1 + h.n_ops], d["op"][acting], reduction="sum"
                )
            for oi, (sel, per) in enumerate(d["args"]):
                if len(sel) == 0:
                    continue
                for ai, (a, s) in enumerate(h.args[oi]):
                    total = total - self.arg_logp(pi, oi, ai, a, out[sel, s], per[ai]).sum()
            n += len(d["x"])
        return total, n

    def arg_mean_std(
        self, pi: int, oi: int, ai: int, x: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Mean (network units) and std of continuous argument ``ai`` of op ``oi`` of
        procedure ``pi`` on inputs ``x``: the Gaussian the strong loss fits."""
        a, s = self.heads[pi].args[oi][ai]
        if a.kind != "continuous":
            raise ValueError(f"argument {a.name!r} is not continuous")
        return self.nets[pi](x)[..., s], self.log_std[f"{pi}_{oi}_{ai}"].exp()

    def arg_logp(
        self, pi: int, oi: int, ai: int, a: ArgSpec, raw: torch.Tensor, target: torch.Tensor
    ) -> torch.Tensor:
        """Log-probability of ``target`` for argument ``ai`` (spec ``a``) of op ``oi`` of
        procedure ``pi``, given the head's raw output ``raw`` (categorical or Gaussian)."""
        if a.kind == "discrete":
            return F.log_softmax(raw, dim=-1).gather(-1, target.unsqueeze(-1)).squeeze(-1)
        log_std = self.log_std[f"{pi}_{oi}_{ai}"]
        z = (target - raw) / log_std.exp()
        return (-0.5 * z * z - log_std - 0.5 * math.log(2 * math.pi)).sum(-1)

    # persistence -------------------------------------------------------------
    def to_blob(self, extra: dict[str, Any] | None = None) -> dict[str, Any]:
        """Everything :meth:`from_blob` needs (plain containers and tensors only)."""
        view = None
        if self.view is not None:
            cls = type(self.view)
            view = {"path": f"{cls.__module__}:{cls.__qualname__}", "config": self.view.config()}
        return {
            "spec": self.spec.to_dict(),
            "hidden": list(self.hidden),
            "state": self.state_dict(),
            "extra": dict(self.extra if extra is None else extra),
            "view": view,
            "options": {
                "balance_termination": self.balance_termination,
                "separate_termination": self.separate_termination,
                "cache": self.cache_enabled,
            },
        }

    def save(self, path: Any, extra: dict[str, Any] | None = None) -> None:
        torch.save(self.to_blob(extra), path)

    @staticmethod
    def from_blob(blob: dict[str, Any]) -> ProcedureModel:
        view = None
        if blob.get("view"):
            import importlib

            mod, _, name = blob["view"]["path"].partition(":")
            view = getattr(importlib.import_module(mod), name)(**blob["view"]["config"])
        opts = blob.get("options", {})
        model = ProcedureModel(
            HierarchySpec.from_dict(blob["spec"]),
            hidden=blob["hidden"],
            view=view,
            balance_termination=opts.get("balance_termination", False),
            separate_termination=opts.get("separate_termination", False),
            cache=opts.get("cache", True),
        )
        model.load_state_dict(blob["state"])
        model.extra = blob.get("extra", {})
        model.eval()
        return model

    @staticmethod
    def load(path: Any) -> ProcedureModel:
        blob = torch.load(path, map_location="cpu", weights_only=False)
        return ProcedureModel.from_blob(blob)


def _hashable(args: tuple) -> tuple:
    return tuple(a.tobytes() if isinstance(a, np.ndarray) else a for a in args)
