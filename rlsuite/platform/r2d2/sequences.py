"""R2D2's replay items: sequences with burn-in and stored recurrent state, and their priority.

An episode of ``L`` steps is cut into sequences of ``m`` steps starting every ``m / 2``
steps (consecutive sequences overlap by half; the last one may be shorter and is
padded). Each sequence also carries the ``b`` steps before it as *burn-in*: the network
is unrolled over them from the stored state, without loss, so that its state at the
sequence's first step is the one the current weights would have (Kapturowski et al.'s
"stored state with burn-in"). The stored state is the runner's recurrent state at the
first burn-in step. A sequence at an episode's start has fewer burn-in steps: its
burn-in is left-padded and its stored state is the initial one.

Example::

    >>> [s.start for s in cut(10, m=4, burn_in=2)]
    [0, 2, 4, 6]
    >>> s = cut(10, m=4, burn_in=2)[1]
    >>> (s.burn_start, s.start, s.end)
    (0, 2, 6)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

ETA = 0.9
"""R2D2's mix of the max and the mean absolute TD error in a sequence's priority."""


def check_lengths(seq_len: int, burn_in: int) -> None:
    """Raise ``ValueError`` unless ``0 <= burn_in < seq_len`` (and ``seq_len >= 2``)."""
    if not isinstance(seq_len, int | np.integer) or seq_len < 2:
        raise ValueError(f"seq_len must be an int >= 2, got {seq_len!r}")
    if not isinstance(burn_in, int | np.integer) or burn_in < 0:
        raise ValueError(f"burn_in must be an int >= 0, got {burn_in!r}")
    if burn_in >= seq_len:
        raise ValueError(
            f"burn_in ({burn_in}) must be shorter than seq_len ({seq_len}): the burn-in "
            "steps are unrolled without loss, so a sequence would learn from nothing else; "
            f"R2D2 uses seq_len=80, burn_in=40"
        )


@dataclass(frozen=True)
class Window:
    """Where one sequence lies in its episode (step indices, end exclusive)."""

    burn_start: int
    """First burn-in step (its stored state is the state before this step)."""
    start: int
    """First step with a loss."""
    end: int
    """One past the last step (at most ``start + m``)."""


def cut(length: int, m: int, burn_in: int) -> list[Window]:
    """The sequences of an episode of ``length`` steps: starts every ``m // 2`` steps,
    each ``m`` long (the last ones shorter), with up to ``burn_in`` steps before."""
    check_lengths(m, burn_in)
    period = max(1, m // 2)
    out = []
    for start in range(0, max(length, 1), period):
        end = min(start + m, length)
        if end <= start:
            break
        out.append(Window(max(0, start - burn_in), start, end))
        if end == length:
            break
    return out


def pack(
    columns: dict[str, np.ndarray],
    states: np.ndarray,
    initial_state: np.ndarray,
    m: int,
    burn_in: int,
    windows: list[Window] | None = None,
) -> dict[str, np.ndarray]:
    """An episode's per-step ``columns`` (each ``[L, ...]``) as sequences
    ``[N, burn_in + m, ...]``, left-padded in the burn-in and right-padded at the end
    (``windows``: the sequences to pack, by default all of :func:`cut`'s).

    ``states[t]`` is the recurrent state *before* step ``t`` (``[L, ...]``); each
    sequence stores ``states[burn_start]`` (``initial_state`` is used where the padded
    burn-in starts before the episode, i.e. ``burn_start == 0``, which is the same
    state). Adds ``mask`` (a real step) and ``loss_mask`` (a real step after the burn-in).
    """
    if windows is None:
        windows = cut(len(next(iter(columns.values()))), m, burn_in)
    total = burn_in + m
    out: dict[str, np.ndarray] = {}
    for k, v in columns.items():
        v = np.asarray(v)
        out[k] = np.zeros((len(windows), total, *v.shape[1:]), dtype=v.dtype)
    out["mask"] = np.zeros((len(windows), total), dtype=bool)
    out["loss_mask"] = np.zeros((len(windows), total), dtype=bool)
    out["state"] = np.zeros((len(windows), *np.shape(initial_state)), dtype=np.float32)
    for i, w in enumerate(windows):
        pad = burn_in - (w.start - w.burn_start)  # left padding of a short burn-in
        n = w.end - w.burn_start
        for k, v in columns.items():
            out[k][i, pad : pad + n] = np.asarray(v)[w.burn_start : w.end]
        out["mask"][i, pad : pad + n] = True
        out["loss_mask"][i, burn_in : burn_in + (w.end - w.start)] = True
        out["state"][i] = states[w.burn_start] if w.burn_start > 0 else initial_state
    return out


def priority(td_abs: Any, loss_mask: Any, eta: float = ETA) -> Any:
    """Each sequence's priority ``eta * max|d| + (1 - eta) * mean|d|`` over its steps with a
    loss (``td_abs``, ``loss_mask``: ``[N, T]``, numpy or torch)."""
    if hasattr(td_abs, "detach"):
        m = loss_mask.to(td_abs.dtype)
        d = td_abs.abs() * m
        mean = d.sum(1) / m.sum(1).clamp(min=1.0)
        return eta * d.max(1).values + (1.0 - eta) * mean
    m = np.asarray(loss_mask, dtype=np.float64)
    d = np.abs(np.asarray(td_abs, dtype=np.float64)) * m
    mean = d.sum(1) / np.maximum(m.sum(1), 1.0)
    return eta * d.max(1) + (1.0 - eta) * mean
