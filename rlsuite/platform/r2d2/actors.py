"""What each env runner does for R2D2, inside its own process.

The ``r2d2`` plan sends Ape-X's actor step (:func:`rlsuite.platform.apex.actors.sample_and_push`:
newest weights, the runner's own epsilon, the push to a replay shard) with
:func:`sequence_items` as what the sampled episodes become. RLlib's runner acts with the
LSTM and carries its state from step to step (its stateful-module connectors); each
step's ``STATE_OUT`` is in the episode. :class:`SequenceBuilder` keeps every ongoing
episode's steps across sample calls and the state before each, and gives out a sequence
as soon as its ``m`` steps are in (every ``m / 2`` steps, so that they overlap by half),
the rest at the episode's end. Each comes with the state stored before its first
burn-in step and its initial priority ``eta max|d| + (1 - eta) mean|d|`` from the
runner's own Q-network (the online one in place of the target, as Ape-X's actors do).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rlsuite.platform.r2d2 import sequences, unroll

BUILDER = "_r2d2_builder"


@dataclass
class _Episode:
    """One ongoing episode's steps from ``base`` on (earlier ones are no longer needed)."""

    cols: dict[str, list[Any]] = field(
        default_factory=lambda: {k: [] for k in ("obs", "actions", "rewards", "next_obs")}
    )
    states: list[np.ndarray] = field(default_factory=list)
    """The recurrent state before each step."""
    base: int = 0
    """The episode step of ``cols``' first entry."""
    next_start: int = 0
    """The first step of the next sequence to give out."""
    last_out: np.ndarray | None = None
    """The state after the last step so far (None before the first)."""

    @property
    def length(self) -> int:
        return self.base + len(self.states)


class SequenceBuilder:
    """Episode chunks in, sequences of ``m`` steps (with ``burn_in`` before) out."""

    def __init__(self, m: int, burn_in: int, initial_state: np.ndarray):
        sequences.check_lengths(m, burn_in)
        self.m, self.burn_in, self.initial_state = m, burn_in, initial_state
        self.period = max(1, m // 2)
        self.open: dict[str, _Episode] = {}

    def add(self, chunks: list[Any]) -> dict[str, np.ndarray]:
        """The sequences completed by these episode chunks (one per ongoing episode, as a
        runner's ``sample`` gives them), as replay items (:func:`unroll.finish`)."""
        from ray.rllib.core.columns import Columns

        parts, seen = [], set()
        for ep in chunks:
            if len(ep) == 0:
                continue
            e = self.open.get(ep.id_)
            if e is None:
                if ep.t_started > 0:  # its start was lost (a reset runner): skip it
                    continue
                e = self.open[ep.id_] = _Episode()
            seen.add(ep.id_)
            obs = np.asarray(ep.get_observations(), dtype=np.float32)
            n = len(ep)
            outs = unroll.flat_state(ep.get_extra_model_outputs(key=Columns.STATE_OUT))
            first = self.initial_state if e.last_out is None else e.last_out
            before = [first, *outs[:-1]]
            e.last_out = outs[-1]
            e.cols["obs"].extend(obs[:n])
            e.cols["next_obs"].extend(obs[1 : n + 1])
            e.cols["actions"].extend(np.asarray(ep.get_actions(), dtype=np.int64))
            e.cols["rewards"].extend(np.asarray(ep.get_rewards(), dtype=np.float32))
            e.states.extend(before)
            done = ep.is_done
            windows = self._ready(e, done)
            if windows:
                parts.append(self._pack(e, windows, bool(ep.is_terminated) and done))
            if done:
                del self.open[ep.id_]
            else:
                self._trim(e)
        for stale in set(self.open) - seen:  # episodes that went on no longer (a reset)
            del self.open[stale]
        if not parts:
            return {}
        return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}

    def _ready(self, e: _Episode, done: bool) -> list[sequences.Window]:
        out = []
        while e.next_start + self.m <= e.length:
            s = e.next_start
            out.append(sequences.Window(max(0, s - self.burn_in), s, s + self.m))
            e.next_start += self.period
            if s + self.m == e.length and done:
                return out
        if done:
            out += [
                w for w in sequences.cut(e.length, self.m, self.burn_in) if w.start >= e.next_start
            ]
        return out

    def _pack(self, e: _Episode, windows: list[sequences.Window], terminated: bool):
        cols = {k: np.asarray(v) for k, v in e.cols.items()}
        cols["terminateds"] = np.zeros(len(e.states), dtype=bool)
        cols["terminateds"][-1] = terminated
        rel = [
            sequences.Window(w.burn_start - e.base, w.start - e.base, w.end - e.base)
            for w in windows
        ]
        states = np.asarray(e.states)
        packed = sequences.pack(cols, states, states[0], self.m, self.burn_in, windows=rel)
        return unroll.finish(packed, self.burn_in)

    def _trim(self, e: _Episode) -> None:
        keep = max(0, e.next_start - self.burn_in) - e.base
        if keep > 0:
            for v in e.cols.values():
                del v[:keep]
            del e.states[:keep]
            e.base += keep


def initial_priorities(
    module: Any, items: dict[str, np.ndarray], *, burn_in: int, n_step: int, gamma: float,
    eta: float, double_q: bool, rescale_eps: float | None,
) -> np.ndarray:  # fmt: skip
    """Each sequence's priority under the runner's own Q-network."""
    import torch

    batch = {k: torch.from_numpy(np.asarray(v)) for k, v in items.items()}
    with torch.no_grad():
        q = unroll.unroll(module.compute_q_values, batch["obs"], batch["state"], batch["pad"],
                          burn_in)  # fmt: skip
        td, _, _ = unroll.sequence_td(q, q, batch, burn_in=burn_in, n_step=n_step, gamma=gamma,
                                      double_q=double_q, rescale_eps=rescale_eps)  # fmt: skip
    return np.asarray(sequences.priority(td.abs(), batch["loss_mask"][:, burn_in:], eta))


def sequence_items(
    runner: Any,
    episodes: list[Any],
    *,
    n_step: int,
    gamma: float,
    seq_len: int,
    burn_in: int,
    eta: float,
    double_q: bool,
    rescale_eps: float | None,
) -> tuple[dict[str, np.ndarray], np.ndarray | None]:
    """R2D2's items of a runner's sample: the sequences it completed and their
    priorities (the ``items_fn`` of Ape-X's actor step)."""
    builder = getattr(runner, BUILDER, None)
    if builder is None:
        init = unroll.flat_state(
            {k: v.numpy() for k, v in runner.module.get_initial_state().items()}
        )
        builder = SequenceBuilder(seq_len, burn_in, init)
        setattr(runner, BUILDER, builder)
    items = builder.add(episodes)
    if not items:
        return {}, None
    prio = initial_priorities(runner.module, items, burn_in=burn_in, n_step=n_step, gamma=gamma,
                              eta=eta, double_q=double_q, rescale_eps=rescale_eps)  # fmt: skip
    return items, prio
