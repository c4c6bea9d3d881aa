"""What the program-synthesis envs share (:mod:`.addition`, :mod:`.sort`): a scratch pad
of ``length + 2`` cells read through pointers, one-hot observations of the symbols under
them, elementary actions ending with ``STOP``, and a reward of 1 for a right result at
the end of the episode."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import gymnasium as gym
import numpy as np

N_SYMBOLS = 11
"""Digits 0-9 and the blank."""


LEFT, RIGHT = 0, 1
"""The two directions a pointer moves in."""


def pointer_action(op: str, pointers: Sequence[str], pointer: int, direction: int) -> int:
    """Action id of ``op(pointer, direction)``: the pointer actions come first, two per
    pointer of ``pointers`` (left, then right)."""
    if not (0 <= pointer < len(pointers) and direction in (LEFT, RIGHT)):
        raise ValueError(
            f"{op} needs pointer in 0..{len(pointers) - 1} and direction 0 (left) or 1 (right), "
            f"got {pointer}, {direction}"
        )
    return pointer * 2 + direction


def describe_pointer_action(op: str, pointers: Sequence[str], a: int) -> str:
    """Readable form of pointer action id ``a``, e.g. ``MOVE(carry, left)``."""
    return f"{op}({pointers[a // 2]}, {'left' if a % 2 == LEFT else 'right'})"


class ScratchPadEnv(gym.Env):
    """Base of the synthesis envs. A subclass sets the class attributes, builds its pad in
    ``__init__`` after ``super().__init__``, and gives ``_symbols`` (the symbol under each
    pointer), ``_apply`` (one action other than ``STOP``) and ``is_correct``."""

    metadata = {"render_modes": ["ansi"]}
    n_pointers: ClassVar[int]
    n_actions: ClassVar[int]
    stop_action: ClassVar[int]
    length_means: ClassVar[str]
    """What ``length`` counts, for the error message (``digits per number``)."""

    def __init__(self, length: int, max_steps: int | None, render_mode: str | None) -> None:
        if not isinstance(length, int | np.integer) or length < 1:
            raise ValueError(f"length must be a positive int ({self.length_means}), got {length!r}")
        if max_steps is not None and max_steps < 1:
            raise ValueError(f"max_steps must be >= 1, got {max_steps}")
        self.length = int(length)
        self.width = self.length + 2
        self.max_steps = int(max_steps) if max_steps is not None else self._step_bound()
        self.render_mode = render_mode
        self.observation_space = gym.spaces.Box(
            0.0, 1.0, (self.n_pointers * N_SYMBOLS,), np.float32
        )
        self.action_space = gym.spaces.Discrete(self.n_actions)
        self.steps = 0
        self.stopped = False
        self._eye = np.eye(N_SYMBOLS, dtype=np.float32)

    def _begin(self) -> np.ndarray:
        """A problem has just been loaded: the episode starts."""
        self.steps = 0
        self.stopped = False
        return self._obs()

    def _obs(self) -> np.ndarray:
        return self._eye[self._symbols()].reshape(-1)

    def step(self, action):
        a = int(action)
        if not 0 <= a < self.n_actions:
            raise ValueError(f"action must be in 0..{self.n_actions - 1}, got {action!r}")
        self.steps += 1
        if a == self.stop_action:
            self.stopped = True
        else:
            self._apply(a)
        terminated = self.stopped
        truncated = not terminated and self.steps >= self.max_steps
        reward = float(self.is_correct()) if (terminated or truncated) else 0.0
        return self._obs(), reward, terminated, truncated, {}

    def _move(self, p: int, step: int) -> None:
        """Move pointer ``p`` by ``step`` cells, staying on the pad."""
        self.ptr[p] = min(max(self.ptr[p] + step, 0), self.width - 1)

    def _step_bound(self) -> int:
        raise NotImplementedError

    def _symbols(self) -> np.ndarray:
        raise NotImplementedError

    def _apply(self, a: int) -> None:
        raise NotImplementedError

    def is_correct(self) -> bool:
        raise NotImplementedError
