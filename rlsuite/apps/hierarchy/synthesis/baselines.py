"""Baselines on the same demonstrations as PHP.

- :class:`FlatLSTM`: flat imitation, an LSTM from the observation history (and the previous
  action) to the next elementary action; trained on every trace (strong ones too, through
  their actions).
- :class:`NPICore`: NPI-style (Reed & de Freitas, 2016): one LSTM core shared by all
  programs, fed the observation and a learned program embedding; it outputs the end-of-program
  probability, the next operation and its arguments. A call starts the callee with a fresh
  core state and the caller's state is kept on the stack. It needs the call stack, so it
  trains on the strong traces only.

Both work on any program family (``program``: its actions, its hierarchy) and save its name.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from rlsuite.apps.hierarchy.procedures.executor import Frame
from rlsuite.apps.hierarchy.procedures.traces import TERMINATE, Decision, Trace
from rlsuite.apps.hierarchy.synthesis.family import ProcedureController
from rlsuite.apps.hierarchy.synthesis.programs import get_program


def _adam_loop(
    params,
    loss_fn: Callable[[], tuple[torch.Tensor, int]],
    epochs: int,
    lr: float,
    progress: Callable[[int, dict[str, float]], None] | None,
    time_limit_s: float | None,
    target_loss: float | None,
) -> list[dict[str, float]]:
    from rlsuite.platform.cluster import configure_driver_threads

    configure_driver_threads()
    opt = torch.optim.Adam(params, lr=lr)
    hist = []
    t0 = time.perf_counter()
    for ep in range(epochs):
        opt.zero_grad()
        loss, n = loss_fn()
        (loss / max(n, 1)).backward()
        nn.utils.clip_grad_norm_(params, 5.0)
        opt.step()
        row = {
            "epoch": float(ep),
            "nll": float(loss.detach()) / max(n, 1),
            "wall_s": time.perf_counter() - t0,
        }
        hist.append(row)
        if progress is not None:
            progress(ep, row)
        if target_loss is not None and row["nll"] < target_loss:
            break
        if time_limit_s is not None and row["wall_s"] > time_limit_s:
            break
    return hist


def _tie(lstm: nn.LSTM, cell: nn.LSTMCell) -> None:
    """Share weights between the fast sequence LSTM (training) and the cell (acting)."""
    lstm.weight_ih_l0 = cell.weight_ih
    lstm.weight_hh_l0 = cell.weight_hh
    lstm.bias_ih_l0 = cell.bias_ih
    lstm.bias_hh_l0 = cell.bias_hh


class _Baseline(nn.Module):
    """What both baselines share: their program family, training by Adam on a summed
    negative log-likelihood, and saving. A subclass gives ``_training_set`` (the traces
    it learns from, refusing none), ``_loss_fn`` (``() -> (summed loss, count)``),
    ``_saved`` (its constructor's arguments)."""

    kind: str
    uses_weak: bool
    """Whether it learns from weak traces too (else from the strong ones only)."""

    def __init__(self, program: str):
        super().__init__()
        self.family = get_program(program)
        self.program = program

    def fit(
        self,
        traces: Sequence[Trace],
        epochs: int = 300,
        lr: float = 3e-3,
        seed: int = 0,
        progress=None,
        time_limit_s: float | None = None,
        target_loss: float | None = 1e-3,
    ):
        data = self._training_set(traces)
        torch.manual_seed(seed)
        loss_fn = self._loss_fn(data)
        hist = _adam_loop(
            list(self.parameters()), loss_fn, epochs, lr, progress, time_limit_s, target_loss
        )
        self.eval()
        return hist

    def save(self, path: str) -> None:
        saved = {"kind": self.kind, "program": self.program, **self._saved()}
        torch.save({**saved, "state": self.state_dict()}, path)

    def _training_set(self, traces: Sequence[Trace]) -> Sequence[Trace]:
        raise NotImplementedError

    def _loss_fn(self, traces: Sequence[Trace]) -> Callable[[], tuple[torch.Tensor, int]]:
        raise NotImplementedError

    def _saved(self) -> dict[str, Any]:
        raise NotImplementedError


class FlatLSTM(_Baseline):
    """Flat imitation: ``(observation, previous action) history -> action``."""

    kind = "flat-lstm"
    uses_weak = True

    def __init__(self, obs_dim: int | None = None, hidden: int = 128, program: str = "addition"):
        super().__init__(program)
        self.n_actions = self.family.n_actions
        self.obs_dim = self.family.spec.obs_dim if obs_dim is None else obs_dim
        self.hidden = hidden
        self.cell = nn.LSTMCell(self.obs_dim + self.n_actions + 1, hidden)
        self.out = nn.Linear(hidden, self.n_actions)

    def _inputs(self, traces: Sequence[Trace]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        B, T = len(traces), max(len(t) for t in traces)
        x = torch.zeros(B, T, self.obs_dim + self.n_actions + 1)
        y = torch.full((B, T), -100, dtype=torch.long)
        for b, tr in enumerate(traces):
            acts = [self.family.to_env_action(d) for d in tr.actions]
            n = len(acts)
            x[b, :n, : self.obs_dim] = torch.as_tensor(tr.observations)
            prev = [self.n_actions] + acts[:-1]
            x[b, torch.arange(n), self.obs_dim + torch.tensor(prev)] = 1.0
            y[b, :n] = torch.tensor(acts)
        return x, y, torch.tensor([len(t) for t in traces])

    def _training_set(self, traces: Sequence[Trace]) -> Sequence[Trace]:
        if not traces:
            raise ValueError("the flat LSTM needs at least one trace")
        return traces

    def _loss_fn(self, traces: Sequence[Trace]) -> Callable[[], tuple[torch.Tensor, int]]:
        x, y, _ = self._inputs(traces)
        lstm = nn.LSTM(self.cell.input_size, self.hidden, batch_first=True)

        def loss_fn():
            _tie(lstm, self.cell)
            h, _ = lstm(x)
            logits = self.out(h)
            mask = y >= 0
            return F.cross_entropy(logits[mask], y[mask], reduction="sum"), int(mask.sum())

        return loss_fn

    def _saved(self) -> dict[str, Any]:
        return {"obs_dim": self.obs_dim, "hidden": self.hidden}

    def controller(self) -> FlatController:
        return FlatController(self)


class FlatController:
    name = "flat-lstm"

    def __init__(self, model: FlatLSTM):
        self.model = model
        self.reset()

    def reset(self, seed: int | None = None) -> None:
        z = torch.zeros(1, self.model.hidden)
        self.state = (z, z.clone())
        self.prev = self.model.n_actions

    @torch.no_grad()
    def act(self, obs: np.ndarray) -> int:
        x = torch.zeros(1, self.model.obs_dim + self.model.n_actions + 1)
        x[0, : self.model.obs_dim] = torch.as_tensor(np.asarray(obs, dtype=np.float32))
        x[0, self.model.obs_dim + self.prev] = 1.0
        self.state = self.model.cell(x, self.state)
        a = int(self.model.out(self.state[0]).argmax())
        self.prev = a
        return a


class NPICore(_Baseline):
    """NPI-style single LSTM core with program embeddings (see the module docstring)."""

    kind = "npi"
    uses_weak = False

    def __init__(self, hidden: int = 64, emb: int = 16, program: str = "addition"):
        super().__init__(program)
        self.spec = spec = self.family.spec
        self.hidden = hidden
        self.procs = [p.name for p in spec.procedures]
        self.keys = [p.name for p in spec.procedures] + [a.name for a in spec.actions]
        self.prog = nn.Embedding(len(self.procs), emb)
        self.enc = nn.Sequential(nn.Linear(spec.obs_dim, 64), nn.Tanh())
        self.cell = nn.LSTMCell(64 + emb, hidden)
        self.arg_slices: dict[str, list[slice]] = {}
        col = 1 + len(self.keys)
        for a in spec.actions:
            sl = []
            for g in a.args:
                if g.kind != "discrete":
                    raise ValueError("the NPI baseline handles discrete action arguments only")
                sl.append(slice(col, col + g.size))
                col += g.size
            self.arg_slices[a.name] = sl
        self.head = nn.Linear(hidden, col)
        # which keys each program may choose
        allowed = torch.zeros(len(self.procs), len(self.keys), dtype=torch.bool)
        for i, p in enumerate(spec.procedures):
            for op in p.ops:
                allowed[i, self.keys.index(op)] = True
        self.register_buffer("allowed", allowed)

    # ------------------------------------------------------------------ data
    def _invocations(self, traces: Sequence[Trace]) -> list[list[tuple[np.ndarray, Any]]]:
        """Each procedure invocation's decisions, in order (the NPI core's sequences)."""
        seqs: list[list[tuple[np.ndarray, Any]]] = []
        for tr in traces:
            if tr.events is None:
                raise ValueError("the NPI baseline needs strong traces (with the call stack)")
            stack: list[list] = []
            for ev in tr.events:
                while len(stack) > ev.depth:
                    stack.pop()
                if len(stack) < ev.depth:
                    stack.append([])
                    seqs.append(stack[-1])
                stack[-1].append((tr.observations[ev.step], ev))
                if ev.decision.kind == "terminate":
                    stack.pop()
        return seqs

    def _training_set(self, traces: Sequence[Trace]) -> Sequence[Trace]:
        strong = [t for t in traces if t.strong]
        if not strong:
            raise ValueError("the NPI baseline needs at least one strong trace")
        return strong

    def _loss_fn(self, strong: Sequence[Trace]) -> Callable[[], tuple[torch.Tensor, int]]:
        seqs = self._invocations(strong)
        B, T = len(seqs), max(len(s) for s in seqs)
        obs = torch.zeros(B, T, self.spec.obs_dim)
        prog = torch.zeros(B, dtype=torch.long)
        end = torch.full((B, T), -1.0)
        op = torch.full((B, T), -100, dtype=torch.long)
        argt = {
            (a.name, i): torch.full((B, T), -100, dtype=torch.long)
            for a in self.spec.actions
            for i in range(len(a.args))
        }
        lengths = torch.tensor([len(s) for s in seqs])
        for b, s in enumerate(seqs):
            prog[b] = self.procs.index(s[0][1].proc)
            for t, (o, ev) in enumerate(s):
                obs[b, t] = torch.as_tensor(o)
                if ev.pc > 0:
                    end[b, t] = 1.0 if ev.decision.kind == "terminate" else 0.0
                if ev.decision.kind != "terminate":
                    op[b, t] = self.keys.index(ev.decision.op)
                    if ev.decision.kind == "act":
                        for i, v in enumerate(ev.decision.args):
                            argt[(ev.decision.op, i)][b, t] = int(v)
        mask_t = torch.arange(T).unsqueeze(0) < lengths.unsqueeze(1)
        lstm = nn.LSTM(self.cell.input_size, self.hidden, batch_first=True)

        def loss_fn():
            _tie(lstm, self.cell)
            x = torch.cat([self.enc(obs), self.prog(prog).unsqueeze(1).expand(B, T, -1)], dim=-1)
            h, _ = lstm(x)
            out = self.head(h)
            total = torch.zeros(())
            m = (end >= 0) & mask_t
            total = total + F.binary_cross_entropy_with_logits(
                out[..., 0][m], end[m], reduction="sum"
            )
            logits = out[..., 1 : 1 + len(self.keys)]
            total = total + F.cross_entropy(
                logits.reshape(-1, len(self.keys)), op.reshape(-1), reduction="sum"
            )
            for (name, i), tgt in argt.items():
                s = self.arg_slices[name][i]
                total = total + F.cross_entropy(
                    out[..., s].reshape(-1, s.stop - s.start), tgt.reshape(-1), reduction="sum"
                )
            return total, int(mask_t.sum())

        return loss_fn

    # ------------------------------------------------------------------ acting
    @torch.no_grad()
    def decide(self, frame: Frame, obs: np.ndarray) -> Decision:
        pi = self.procs.index(frame.proc)
        if frame.memory is None:
            z = torch.zeros(1, self.hidden)
            frame.memory = (z, z.clone())
        x = torch.cat(
            [
                self.enc(torch.as_tensor(np.asarray(obs, dtype=np.float32)).reshape(1, -1)),
                self.prog.weight[pi : pi + 1],
            ],
            dim=-1,
        )
        frame.memory = self.cell(x, frame.memory)
        out = self.head(frame.memory[0])[0]
        if frame.pc > 0 and out[0].item() > 0:
            return TERMINATE
        logits = out[1 : 1 + len(self.keys)].masked_fill(~self.allowed[pi], -1e9)
        key = self.keys[int(logits.argmax())]
        if key in self.procs:
            return Decision("call", key)
        args = tuple(int(out[s].argmax()) for s in self.arg_slices[key])
        return Decision("act", key, args)

    def _saved(self) -> dict[str, Any]:
        return {"hidden": self.hidden}

    def controller(self) -> ProcedureController:
        """Runs the core as a procedure policy (a call starts the callee's own state)."""
        return ProcedureController(self, self.family, "npi")
