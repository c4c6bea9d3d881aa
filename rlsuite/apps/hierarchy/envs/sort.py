"""The bubble-sort env (``rlsuite/Sort-v0``): sort an array of digits in place with three
pointers and a swap, as NPI's sorting task (Reed & de Freitas, 2016)."""

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
"""Symbol of the two boundary cells around the array (elements are digits 0-9)."""
POINTERS = ("ptr1", "ptr2", "counter")
N_POINTERS = 3
N_MOVE = N_POINTERS * 2
SWAP_ACTION = N_MOVE
STOP_ACTION = N_MOVE + 1
N_ACTIONS = STOP_ACTION + 1


def ptr_action(pointer: int, direction: int) -> int:
    """Action id of PTR(pointer, direction); LEFT moves towards the first element."""
    return pointer_action("PTR", POINTERS, pointer, direction)


def describe_action(a: int) -> str:
    """Readable form of an action id, e.g. ``PTR(counter, right)``."""
    a = int(a)
    if a < N_MOVE:
        return describe_pointer_action("PTR", POINTERS, a)
    if a == SWAP_ACTION:
        return "SWAP"
    if a == STOP_ACTION:
        return "STOP"
    raise ValueError(f"action id must be in 0..{STOP_ACTION}, got {a}")


def step_bound(length: int) -> int:
    """Most actions the scripted bubble sort takes on ``length`` elements (every pair
    swapped), plus the STOP: ``length`` passes of at most ``5 * length + 3`` actions."""
    return length * (5 * length + 3) + 1


class SortEnv(ScratchPadEnv):
    """Sort ``length`` digits in ascending order, in place, by bubble sort.

    ## States
    A scratch pad of ``length + 2`` cells: a blank boundary cell, the array (cells 1 to
    ``length``, random digits 0-9 drawn from the seed, repeats allowed) and a blank boundary
    cell. Three pointers: ``ptr1`` and ``ptr2`` (the pair compared and swapped) start on
    the left boundary; the ``counter`` (one bubble pass per cell) starts on the first
    element.

    ## Observations
    ``Box(0, 1, (33,))``: for each pointer, a one-hot over the 11 symbols under it (digits
    0-9, blank); nothing else (no positions, no history).

    ## Actions
    ``Discrete(8)``: ``PTR(pointer, direction)`` (ids 0-5: ``2 * pointer + direction``,
    direction 0 = left), ``SWAP`` (6: exchange the elements under ``ptr1`` and ``ptr2``;
    nothing happens if either is on a boundary) and ``STOP`` (7: the program has finished).
    A pointer moved off the pad stays where it is.

    ## Rewards
    1 at the end of the episode if the array is sorted (the same digits, ascending), else 0.

    ## Termination
    ``STOP`` terminates; ``max_steps`` (default :func:`step_bound`, the teacher's worst
    case) truncates. ``episode_metrics()`` reports ``correct`` (1/0), ``element_accuracy``
    (share of cells holding the sorted array's digit) and ``elements``.
    """

    n_pointers = N_POINTERS
    n_actions = N_ACTIONS
    stop_action = STOP_ACTION
    length_means = "elements to sort"

    def __init__(
        self, length: int = 10, max_steps: int | None = None, render_mode: str | None = None
    ):
        super().__init__(length, max_steps, render_mode)
        self.pad = np.full(self.width, BLANK, np.int64)
        self.ptr = np.array([0, 0, 1], np.int64)
        self.initial = np.zeros(self.length, np.int64)

    def _step_bound(self) -> int:
        return step_bound(self.length)

    # ------------------------------------------------------------------
    def set_problem(self, values) -> np.ndarray:
        """Load a specific array (``length`` digits 0-9)."""
        v = np.asarray(values, dtype=np.int64).reshape(-1)
        if len(v) != self.length or v.min() < 0 or v.max() > 9:
            raise ValueError(
                f"the array must hold {self.length} digits 0-9, got {list(map(int, v))}"
            )
        self.initial = v.copy()
        self.pad[:] = BLANK
        self.pad[1 : 1 + self.length] = v
        self.ptr[:] = (0, 0, 1)
        return self._begin()

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        values = self.np_random.integers(0, 10, self.length)
        return self.set_problem(values), {"array": [int(x) for x in values]}

    def _symbols(self) -> np.ndarray:
        return self.pad[self.ptr]

    def _apply(self, a: int) -> None:
        if a == SWAP_ACTION:
            i, j = self.ptr[0], self.ptr[1]
            if self.pad[i] != BLANK and self.pad[j] != BLANK:
                self.pad[i], self.pad[j] = self.pad[j], self.pad[i]
        else:
            p, d = divmod(a, 2)
            self._move(p, 1 if d == RIGHT else -1)

    # ------------------------------------------------------------------
    @property
    def array(self) -> np.ndarray:
        """The array as it stands now."""
        return self.pad[1 : 1 + self.length].copy()

    def is_correct(self) -> bool:
        return bool(np.array_equal(self.array, np.sort(self.initial)))

    def episode_metrics(self) -> dict[str, float]:
        return {
            "correct": float(self.is_correct()),
            "element_accuracy": float(np.mean(self.array == np.sort(self.initial))),
            "elements": float(self.length),
        }

    def render(self) -> str:
        cells = "".join("." if v == BLANK else str(v) for v in self.pad)
        rows = [f"{'array':>7} {cells}"]
        for p, name in enumerate(POINTERS):
            rows.append(
                f"{name:>7} " + "".join("^" if i == self.ptr[p] else " " for i in range(self.width))
            )
        return "\n".join(rows)
