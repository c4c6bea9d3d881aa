"""The robot's tasks and the observation layout they share (no pybullet here).

A :class:`Task` names its objects (one observation *slot* each), how they are laid out at
reset, the relations that make it solved and the expert's plan: the root's sequence of
``(skill, object slot)`` calls. Every task runs on the same :class:`~.env.PickPlaceEnv`
and the same skills (PICK / PLACE); only its root procedure is its own.

=================  ==========================================  =================  =====
task               objects (slots)                             root calls         steps
=================  ==========================================  =================  =====
pick_place         cube, tray                                  PICK, PLACE          150
stack              cube, base cube                             PICK, PLACE          150
sort               red / green / blue cube, red / green / blue PICK, PLACE x 3      400
                   tray (any order counts)
tower              three cubes, stacked 3 high                 PICK, PLACE x 2      320
clear_then_place   cube, target pad, blocker (on the target),  PICK, PLACE x 2      320
                   aside pad
=================  ==========================================  =================  =====

The observation (:data:`OBS_DIM` = 65 floats) is the hand (position, yaw, finger width) and
:data:`N_SLOTS` object slots of :data:`SLOT_DIM` floats: position, yaw relative to the hand
(modulo a quarter turn), position minus the hand, and the object's kind one-hot
(cube / tray / pad); a slot the task does not use is all zeros.

Example::

    >>> TASKS
    ('pick_place', 'stack', 'sort', 'tower', 'clear_then_place')
    >>> get("sort").plan[:2], get("sort").max_steps
    ((('PICK', 0), ('PLACE', 3)), 400)
    >>> get("juggle")
    Traceback (most recent call last):
    ...
    ValueError: unknown task 'juggle': choose one of pick_place, stack, sort, tower, clear_then_place
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

KINDS = ("cube", "tray", "pad")
"""What an object is; its one-hot sits in its slot and decides how PLACE releases on it."""
N_SLOTS = 6
SLOT_DIM = 10
OBS_EE = slice(0, 3)
OBS_EE_YAW = 3
OBS_WIDTH = 4
SLOT_BASE = 5
SLOT_POS = slice(0, 3)
SLOT_REL_YAW = 3
SLOT_REL = slice(4, 7)
SLOT_KIND = slice(7, 10)
OBS_DIM = SLOT_BASE + N_SLOTS * SLOT_DIM


def slot_index(slot: int, field: slice | int) -> slice | int:
    """Index into the observation of ``field`` (e.g. :data:`SLOT_POS`) of object slot ``slot``."""
    b = SLOT_BASE + slot * SLOT_DIM
    if isinstance(field, slice):
        return slice(b + field.start, b + field.stop)
    return b + field


PAD_HALF = 0.04
"""Half-side of a pad (a flat square marker on the floor, no collision)."""

Layout = dict[str, tuple[tuple[float, float], float]]
"""Object name -> (floor position xy, yaw)."""


@dataclass(frozen=True)
class Obj:
    """One object of a task (one observation slot)."""

    name: str
    """Its body name in the scene."""
    kind: str
    """One of :data:`KINDS`."""
    color: tuple[float, float, float, float] = (0.9, 0.2, 0.2, 1.0)
    """RGBA (cubes and pads)."""


@dataclass(frozen=True)
class Task:
    """A task of the robot env: objects, layout, goal relations, the expert's plan."""

    name: str
    """Its name (``--task``)."""
    root: str
    """Name of its root procedure."""
    objects: tuple[Obj, ...]
    """Its objects in slot order (at most :data:`N_SLOTS`)."""
    plan: tuple[tuple[str, int], ...]
    """The scripted expert's root calls: ``(skill, object slot)`` in order."""
    relations: tuple[tuple[str, int, int], ...]
    """What must hold at the end, all at once: ``(relation, slot a, slot b)`` with relation
    ``in`` (cube a rests in tray b), ``on`` (cube a rests on cube b), ``on_pad`` (cube a
    rests on pad b) or ``off`` (cube a lies off pad b); every cube released and at rest."""
    max_steps: int
    """Default episode horizon (the expert needs about 45 steps per PICK + PLACE)."""
    sample: Callable[[np.random.Generator, bool], Layout]
    """Random layout: ``(rng, randomize_yaw) -> {name: (xy, yaw)}``."""
    description: str
    """One line for ``--help``."""

    def slot(self, name: str) -> int:
        return [o.name for o in self.objects].index(name)


RED, GREEN, BLUE = (0.9, 0.2, 0.2, 1.0), (0.2, 0.8, 0.3, 1.0), (0.2, 0.4, 0.9, 1.0)
GREY, GOLD = (0.6, 0.6, 0.6, 1.0), (0.95, 0.8, 0.2, 1.0)


def _yaw(rng: np.random.Generator, randomize: bool) -> float:
    span = math.pi / 4 if randomize else 0.0
    return float(rng.uniform(-span, span))


def _spread(rng, n, lo, hi, gap, avoid=(), avoid_gap=0.0) -> list[np.ndarray]:
    """``n`` points uniform in the box ``lo..hi``, pairwise >= ``gap`` and >= ``avoid_gap``
    from each point of ``avoid`` (rejection sampling)."""
    while True:
        pts = [np.array([rng.uniform(lo[0], hi[0]), rng.uniform(lo[1], hi[1])]) for _ in range(n)]
        ok = all(np.linalg.norm(a - b) >= gap for i, a in enumerate(pts) for b in pts[i + 1 :])
        ok = ok and all(np.linalg.norm(a - b) >= avoid_gap for a in pts for b in avoid)
        if ok:
            return pts


def _pair(rng: np.random.Generator, randomize: bool, target: str, margin: float) -> Layout:
    # the original pick_place / stack sampling (same seeds, same episodes)
    while True:
        cube = np.array([rng.uniform(0.35, 0.65), rng.uniform(-0.30, 0.30)])
        tgt = np.array([rng.uniform(0.35, 0.62), rng.uniform(-0.30, 0.30)])
        if np.linalg.norm(cube - tgt) >= margin:
            break
    return {"cube": (tuple(cube), _yaw(rng, randomize)), target: (tuple(tgt), _yaw(rng, randomize))}


def _sort_layout(rng: np.random.Generator, randomize: bool) -> Layout:
    # three trays in a row at the far side, their colours shuffled; cubes on the near side
    x = rng.uniform(0.60, 0.65)
    rows = rng.permutation(3)
    out: Layout = {}
    for i, c in enumerate(("red", "green", "blue")):
        y = (-0.24, 0.0, 0.24)[rows[i]] + rng.uniform(-0.015, 0.015)
        out[f"tray_{c}"] = ((x, y), _yaw(rng, randomize) / 4)
    cubes = _spread(rng, 3, (0.33, -0.28), (0.45, 0.28), 0.11)
    for c, xy in zip(("red", "green", "blue"), cubes):
        out[f"cube_{c}"] = (tuple(xy), _yaw(rng, randomize))
    return out


def _tower_layout(rng: np.random.Generator, randomize: bool) -> Layout:
    pts = _spread(rng, 3, (0.35, -0.28), (0.62, 0.28), 0.13)
    return {f"cube_{i}": (tuple(p), _yaw(rng, randomize)) for i, p in enumerate(pts)}


def _clear_layout(rng: np.random.Generator, randomize: bool) -> Layout:
    target = _spread(rng, 1, (0.45, -0.22), (0.62, 0.22), 0.0)[0]
    cube, aside = _spread(rng, 2, (0.35, -0.28), (0.62, 0.28), 0.14, [target], 0.16)
    blocker = target + rng.uniform(-0.006, 0.006, 2)
    return {
        "cube": (tuple(cube), _yaw(rng, randomize)),
        "target": (tuple(target), _yaw(rng, randomize)),
        "blocker": (tuple(blocker), _yaw(rng, randomize)),
        "aside": (tuple(aside), _yaw(rng, randomize)),
    }


_COLORS = {"red": RED, "green": GREEN, "blue": BLUE}

_ALL = (
    Task(
        "pick_place",
        "PICK_AND_PLACE",
        (Obj("cube", "cube"), Obj("tray", "tray")),
        (("PICK", 0), ("PLACE", 1)),
        (("in", 0, 1),),
        150,
        lambda rng, r: _pair(rng, r, "tray", 0.22),
        "the cube into the tray",
    ),
    Task(
        "stack",
        "PICK_AND_PLACE",
        (Obj("cube", "cube"), Obj("base", "cube", BLUE)),
        (("PICK", 0), ("PLACE", 1)),
        (("on", 0, 1),),
        150,
        lambda rng, r: _pair(rng, r, "base", 0.15),
        "the cube onto a second cube",
    ),
    Task(
        "sort",
        "SORT",
        (
            *(Obj(f"cube_{c}", "cube", _COLORS[c]) for c in _COLORS),
            *(Obj(f"tray_{c}", "tray", _COLORS[c]) for c in _COLORS),
        ),
        (("PICK", 0), ("PLACE", 3), ("PICK", 1), ("PLACE", 4), ("PICK", 2), ("PLACE", 5)),
        (("in", 0, 3), ("in", 1, 4), ("in", 2, 5)),
        400,
        _sort_layout,
        "three coloured cubes into the trays of their colours (any order)",
    ),
    Task(
        "tower",
        "TOWER",
        (Obj("cube_0", "cube", BLUE), Obj("cube_1", "cube", GREEN), Obj("cube_2", "cube", RED)),
        (("PICK", 1), ("PLACE", 0), ("PICK", 2), ("PLACE", 1)),
        (("on", 1, 0), ("on", 2, 1)),
        320,
        _tower_layout,
        "three cubes stacked into a tower",
    ),
    Task(
        "clear_then_place",
        "CLEAR_THEN_PLACE",
        (
            Obj("cube", "cube"),
            Obj("target", "pad", GOLD),
            Obj("blocker", "cube", GREY),
            Obj("aside", "pad", GREY),
        ),
        (("PICK", 2), ("PLACE", 3), ("PICK", 0), ("PLACE", 1)),
        (("on_pad", 0, 1), ("off", 2, 1)),
        320,
        _clear_layout,
        "move the blocker off the target pad, then put the cube on it",
    ),
)
TASKS = tuple(t.name for t in _ALL)
"""The task names, in the order ``--help`` lists them."""
_BY_NAME = {t.name: t for t in _ALL}


def get(name: str) -> Task:
    """The task called ``name``; an unknown name lists the valid ones."""
    try:
        return _BY_NAME[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown task {name!r}: choose one of {', '.join(TASKS)}") from None
