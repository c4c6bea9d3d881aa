"""The long-hand addition env (``rlsuite/Addition-v0``): add two numbers digit by digit on a
scratch pad, as NPI (Reed & de Freitas, 2016) and PHP (Fox et al., 2018)."""

from __future__ import annotations

from typing import Any

import numpy as np

from rlsuite.apps.hierarchy.envs.scratchpad import LEFT as LEFT
from rlsuite.apps.hierarchy.envs.scratchpad import N_SYMBOLS as N_SYMBOLS
from rlsuite.apps.hierarchy.envs.scratchpad import RIGHT as RIGHT
from rlsuite.apps.hierarchy.envs.scratchpad import (
    ScratchPadEnv,
    describe_pointer_action,
    pointer_action,
)

BLANK = 10
"""Symbol of an empty cell (digits are 0-9)."""
TAPES = ("in1", "in2", "carry", "out")
N_TAPES = 4
N_MOVE = N_TAPES * 2
N_WRITE = N_TAPES * 10
STOP_ACTION = N_MOVE + N_WRITE
N_ACTIONS = STOP_ACTION + 1


def move_action(pointer: int, direction: int) -> int:
    """Action id of MOVE(pointer, direction); LEFT moves to the more significant digit."""
    return pointer_action("MOVE", TAPES, pointer, direction)


def write_action(tape: int, digit: int) -> int:
    """Action id of WRITE(tape, digit)."""
    if not (0 <= tape < N_TAPES and 0 <= digit <= 9):
        raise ValueError(f"WRITE needs tape in 0..3 and digit in 0..9, got {tape}, {digit}")
    return N_MOVE + tape * 10 + digit


def describe_action(a: int) -> str:
    """Readable form of an action id, e.g. ``MOVE(carry, left)``."""
    a = int(a)
    if a == STOP_ACTION:
        return "STOP"
    if a < N_MOVE:
        return describe_pointer_action("MOVE", TAPES, a)
    if a < STOP_ACTION:
        return f"WRITE({TAPES[(a - N_MOVE) // 10]}, {(a - N_MOVE) % 10})"
    raise ValueError(f"action id must be in 0..{STOP_ACTION}, got {a}")


def digits_of(n: int, width: int) -> np.ndarray:
    """Least significant digit first, padded with zeros to ``width``."""
    return np.array([(n // 10**i) % 10 for i in range(width)], dtype=np.int64)


class AdditionEnv(ScratchPadEnv):
    """Add two ``length``-digit numbers with a scratch pad, digit by digit.

    ## States
    Four tapes (first number, second number, carries, output), each ``length + 2`` cells,
    column 0 the least significant digit; cells hold a digit or blank. Four pointers start
    at column 0. The inputs are random digit strings (leading zeros allowed), drawn from
    the seed.

    ## Observations
    ``Box(0, 1, (44,))``: for each pointer, a one-hot over the 11 symbols under it
    (digits 0-9, blank); nothing else (no column index, no history).

    ## Actions
    ``Discrete(49)``: ``MOVE(pointer, direction)`` (ids 0-7: ``2 * pointer + direction``,
    direction 0 = left = towards the more significant digit), ``WRITE(tape, digit)``
    (ids 8-47: ``8 + 10 * tape + digit``) and ``STOP`` (48: the program has finished).
    Moving off the tape leaves the pointer where it is.

    ## Rewards
    1 at the end of the episode if the output tape holds exactly the sum (no stray digits),
    else 0.

    ## Termination
    ``STOP`` terminates; ``max_steps`` (default ``12 * (length + 1) + 20``) truncates.
    ``episode_metrics()`` reports ``correct`` (1/0), ``digit_accuracy`` and ``digits``.
    """

    n_pointers = N_TAPES
    n_actions = N_ACTIONS
    stop_action = STOP_ACTION
    length_means = "digits per number"

    def __init__(
        self, length: int = 10, max_steps: int | None = None, render_mode: str | None = None
    ):
        super().__init__(length, max_steps, render_mode)
        self.tapes = np.full((N_TAPES, self.width), BLANK, np.int64)
        self.ptr = np.zeros(N_TAPES, np.int64)
        self.a = self.b = 0

    def _step_bound(self) -> int:
        return 12 * (self.length + 1) + 20

    # ------------------------------------------------------------------
    def set_problem(self, a: int, b: int) -> np.ndarray:
        """Load a specific problem (each number must fit in ``length`` digits)."""
        if not (0 <= a < 10**self.length and 0 <= b < 10**self.length):
            raise ValueError(f"operands must be in [0, 10**{self.length}), got {a}, {b}")
        self.a, self.b = int(a), int(b)
        self.tapes[:] = BLANK
        self.tapes[0, : self.length] = digits_of(self.a, self.length)
        self.tapes[1, : self.length] = digits_of(self.b, self.length)
        self.ptr[:] = 0
        return self._begin()

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        d1 = self.np_random.integers(0, 10, self.length)
        d2 = self.np_random.integers(0, 10, self.length)
        a = int("".join(map(str, d1[::-1])))
        b = int("".join(map(str, d2[::-1])))
        return self.set_problem(a, b), {"a": a, "b": b}

    def _symbols(self) -> np.ndarray:
        return self.tapes[np.arange(N_TAPES), self.ptr]

    def _apply(self, a: int) -> None:
        if a < N_MOVE:
            p, d = divmod(a, 2)
            self._move(p, 1 if d == LEFT else -1)
        else:
            t, digit = divmod(a - N_MOVE, 10)
            self.tapes[t, self.ptr[t]] = digit

    # ------------------------------------------------------------------
    def expected_output(self) -> np.ndarray:
        s = self.a + self.b
        n = max(len(str(s)), 1) if s >= 10**self.length else self.length
        out = np.full(self.width, BLANK, np.int64)
        out[:n] = digits_of(s, n)
        return out

    def is_correct(self) -> bool:
        return bool(np.array_equal(self.tapes[3], self.expected_output()))

    def episode_metrics(self) -> dict[str, float]:
        exp = self.expected_output()
        return {
            "correct": float(self.is_correct()),
            "digit_accuracy": float(np.mean(self.tapes[3] == exp)),
            "digits": float(self.length),
        }

    def render(self) -> str:
        rows = []
        for t, name in enumerate(TAPES):
            cells = "".join("." if v == BLANK else str(v) for v in self.tapes[t][::-1])
            marks = "".join(
                "^" if self.width - 1 - i == self.ptr[t] else " " for i in range(self.width)
            )
            rows.append(f"{name:>5} {cells}\n      {marks}")
        return "\n".join(rows)
