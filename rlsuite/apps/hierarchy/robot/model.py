"""The robot's learned controllers: the shared procedure model trained on demonstrations,
flat cloning, their files, and the robot's weak supervision.

The hierarchical controller IS a :class:`~rlsuite.apps.hierarchy.procedures.model.ProcedureModel`
of the robot's hierarchy (``program.SPEC``, :func:`program.make_model`), run by the shared
:class:`~rlsuite.apps.hierarchy.procedures.executor.Executor` (:func:`controller`). Its
per-procedure view (:class:`program.RobotView`) lets a skill see the scene from the object
it was called with and output MOVE_TO goals relative to it; the leaves emit continuous STEP
commands (a Gaussian head) and learn when to stop.

Strong supervision: :func:`~rlsuite.apps.hierarchy.procedures.fit.fit` on the recorded
traces (the strong loss). Weak supervision (observations and actions only): the same
``fit`` with ``weak_infer=`` :func:`infer_stacks`, hard EM as DDCO / PHP do, level by
level: the leaf level segments each demonstration into leaf calls by a semi-Markov Viterbi
pass under the model's own leaf procedures (MOVE_TO's goal is where its segment ends) and
refits them, a few rounds (:mod:`rlsuite.apps.hierarchy.procedures.segmentation`); the
skill level then groups the leaf calls into the root's two skill calls and picks each
skill's object, maximising the likelihood of the skills' call sequences and goal offsets.
The filled-in call trees become strong traces
(:func:`~rlsuite.apps.hierarchy.procedures.calls.trace_from_calls`) that train the same
model. (The exact weak marginal, :class:`~rlsuite.apps.hierarchy.procedures.weak.WeakLattice`,
covers argument-free hierarchies only; continuous goals cannot be enumerated.)

:class:`FlatBC` is the baseline: one MLP from observation to action, on the same
demonstrations.

Example::

    >>> from rlsuite.apps.hierarchy.robot import recording
    >>> data = recording.collect(2, num_workers=0)
    >>> model = fit_hierarchical(data, TrainConfig(steps=50))
    >>> isinstance(model, ProcedureModel)
    True
    >>> c = controller(model)
    >>> c.reset(0)
    >>> c.act(data[0].observations[0]).shape
    (5,)
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from rlsuite.apps.hierarchy.procedures.calls import Call, trace_from_calls
from rlsuite.apps.hierarchy.procedures.fit import fit
from rlsuite.apps.hierarchy.procedures.model import ProcedureModel
from rlsuite.apps.hierarchy.procedures.segmentation import LeafLevel, refine_segments
from rlsuite.apps.hierarchy.procedures.traces import Trace
from rlsuite.apps.hierarchy.robot.env import OBS_DIM, OBS_EE, OBS_EE_YAW
from rlsuite.apps.hierarchy.robot.program import (
    LEAVES,
    MAX_LEAF_STEPS,
    OBJECTS,
    ROOT,
    SKILLS,
    SPEC,
    Controller,
    make_model,
)
from rlsuite.apps.hierarchy.robot.recording import commands

SUPERVISION = ("strong", "weak")
FORMAT_VERSION = 2


@dataclass(frozen=True)
class TrainConfig:
    """How the networks are fitted."""

    hidden: int = 64
    """Width of the two hidden layers of every procedure network."""
    steps: int = 300
    """Full-batch Adam steps (cosine learning-rate decay)."""
    lr: float = 3e-3
    """Adam learning rate."""
    seed: int = 0
    """Seeds torch (initial weights) so the same demonstrations give the same model."""
    em_rounds: int = 4
    """Weak supervision: rounds of leaf segmentation / refit."""
    segment_penalty: float = 6.0
    """Weak supervision: log-likelihood cost of starting one more leaf call."""

    def validate(self) -> TrainConfig:
        for name in ("hidden", "steps", "em_rounds"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < (0 if name == "em_rounds" else 1):
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        if not self.lr > 0:
            raise ValueError(f"lr must be > 0, got {self.lr}")
        if self.segment_penalty < 0:
            raise ValueError(f"segment_penalty must be >= 0, got {self.segment_penalty}")
        return self


@contextlib.contextmanager
def _one_thread():
    """Tiny networks gain nothing from intra-op threads and lose a lot on a busy machine."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def fit_hierarchical(
    demos: Sequence[Trace], config: TrainConfig | None = None, supervision: str = "strong"
) -> ProcedureModel:
    """A :class:`ProcedureModel` of the robot's hierarchy trained on demonstrations;
    ``weak`` first fills in their call stacks by hard EM (:func:`infer_stacks`)."""
    if supervision not in SUPERVISION:
        raise ValueError(f"supervision must be one of {SUPERVISION}, got {supervision!r}")
    if not demos:
        raise ValueError("no demonstrations to learn from")
    cfg = (config or TrainConfig()).validate()
    model = make_model(cfg.hidden, cfg.seed)
    with _one_thread():
        if supervision == "strong":
            if any(d.events is None for d in demos):
                raise ValueError(
                    "strong supervision needs demonstrations with call stacks; these are weak "
                    "(use supervision='weak')"
                )
            fit(model, strong=demos, epochs=cfg.steps, lr=cfg.lr, seed=cfg.seed, cosine=True)
        else:
            fit(
                model,
                weak=D_weak(demos),
                epochs=cfg.steps,
                lr=cfg.lr,
                seed=cfg.seed,
                cosine=True,
                weak_infer=functools.partial(infer_stacks, config=cfg),
            )
    model.extra["meta"] = dict(
        supervision=supervision, demos=len(demos), tasks=sorted({d.info["task"] for d in demos})
    )
    model.extra["config"] = asdict(cfg)
    return model


def D_weak(demos: Sequence[Trace]) -> list[Trace]:  # noqa: N802 - mirrors recording.weak
    return [d.weak() for d in demos]


def retrain(model: ProcedureModel, demos: Sequence[Trace], config: TrainConfig,
            only: Sequence[str] | None = None) -> ProcedureModel:  # fmt: skip
    """Train ``model`` further on strong demonstrations (all procedures, or ``only`` these)."""
    with _one_thread():
        fit(
            model, strong=demos, epochs=config.steps, lr=config.lr, seed=config.seed, cosine=True,
            only=only,
        )  # fmt: skip
    return model


def controller(model: ProcedureModel, name: str = "hierarchical") -> Controller:
    """A deterministic controller (``reset``/``act``) running the model through the Executor."""
    return Controller(model.eval(), name=name)


def meta(model: ProcedureModel | FlatBC) -> dict[str, Any]:
    return model.meta if isinstance(model, FlatBC) else model.extra.get("meta", {})


# ------------------------------------------------------------------ flat baseline


def mlp(i: int, o: int, hidden: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Linear(i, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh(), nn.Linear(hidden, o)
    )


def _fit(net: nn.Module, loss_fn, steps: int, lr: float) -> float:
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps)
    loss = torch.tensor(0.0)
    for _ in range(steps):
        opt.zero_grad()
        loss = loss_fn()
        loss.backward()
        opt.step()
        sched.step()
    return float(loss.detach())


class FlatBC(nn.Module):
    """Behaviour cloning: an MLP from the (normalised) observation to the action."""

    def __init__(self, config: TrainConfig | None = None):
        super().__init__()
        self.config = (config or TrainConfig()).validate()
        torch.manual_seed(self.config.seed)
        self.net = mlp(OBS_DIM, 5, max(self.config.hidden, 128))
        self.register_buffer("mean", torch.zeros(OBS_DIM))
        self.register_buffer("std", torch.ones(OBS_DIM))
        self.meta: dict[str, Any] = {}

    @classmethod
    def fit(cls, demos: Sequence[dict], config: TrainConfig | None = None) -> FlatBC:
        if not demos:
            raise ValueError("no demonstrations to learn from")
        model = cls(config)
        pairs = [commands(d) for d in demos]
        x = np.concatenate([o[:-1] for o, _ in pairs]).astype(np.float32)
        y = np.concatenate([a for _, a in pairs]).astype(np.float32)
        model.mean.copy_(torch.as_tensor(x.mean(0)))
        model.std.copy_(torch.as_tensor(x.std(0) + 1e-3))
        xt, yt = torch.as_tensor(x), torch.as_tensor(y)
        torch.manual_seed(model.config.seed)
        with _one_thread():
            _fit(
                model.net,
                lambda: F.mse_loss(model.forward(xt), yt),
                model.config.steps * 3,
                model.config.lr,
            )
        model.meta.update(
            supervision="flat", demos=len(demos), tasks=sorted({d.info["task"] for d in demos})
        )
        return model

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net((x - self.mean) / self.std)

    def controller(self, name: str = "flat BC") -> FlatController:
        return FlatController(self, name)

    def save(self, path: str) -> None:
        save(self, path)


class FlatController:
    """A deterministic controller for :class:`FlatBC`."""

    def __init__(self, model: FlatBC, name: str = "flat BC"):
        self.model = model.eval()
        self.name = name

    def reset(self, seed: int | None = None) -> None:
        pass

    @torch.no_grad()
    def act(self, obs: Any) -> np.ndarray:
        x = torch.as_tensor(np.asarray(obs, dtype=np.float32))[None]
        return np.clip(self.model(x)[0].numpy(), -1, 1)


# --------------------------------------------------------------------- persistence


def save(model: ProcedureModel | FlatBC, path: str) -> None:
    """Write a model (weights, configuration and metadata) to ``path``."""
    os.makedirs(os.path.dirname(os.path.abspath(path)) or ".", exist_ok=True)
    if isinstance(model, FlatBC):
        blob = {
            "format": FORMAT_VERSION,
            "kind": "flat",
            "config": json.dumps(asdict(model.config)),
            "meta": json.dumps(model.meta),
            "state": model.state_dict(),
        }
    else:
        blob = {
            "format": FORMAT_VERSION,
            "kind": "hierarchical",
            "model": model.to_blob(
                {"meta": json.dumps(meta(model)), "config": json.dumps(model.extra.get("config"))}
            ),
        }
    torch.save(blob, path)


def load(path: str) -> ProcedureModel | FlatBC:
    """A model saved with :func:`save`."""
    if not os.path.exists(path):
        raise FileNotFoundError(
            f"no model at {path!r}: train one with `hier-train robot --save DIR`"
        )
    blob = torch.load(path, weights_only=True)
    if not isinstance(blob, dict) or blob.get("format") != FORMAT_VERSION:
        raise ValueError(f"{path!r} is not a robot model saved by this version of rlsuite")
    if blob["kind"] == "flat":
        model = FlatBC(TrainConfig(**json.loads(blob["config"])))
        model.load_state_dict(blob["state"])
        model.meta = json.loads(blob["meta"])
        return model
    m = ProcedureModel.from_blob(blob["model"])
    m.extra = {"meta": json.loads(m.extra["meta"]), "config": json.loads(m.extra["config"])}
    return m


def make_controller(model: ProcedureModel | FlatBC, name: str | None = None):
    """The controller of either kind of model."""
    if isinstance(model, FlatBC):
        return model.controller(name) if name else model.controller()
    return controller(model, name or "hierarchical")


# -------------------------------------------------------------- weak supervision (EM)


def _wrap(a):
    return (a + np.pi) % (2 * np.pi) - np.pi


def _hand_pose(obs: np.ndarray) -> np.ndarray:
    """``(x, y, z, yaw)`` of the hand in each observation row: where a MOVE_TO call ended."""
    return np.column_stack([obs[:, OBS_EE], obs[:, OBS_EE_YAW]])


LEAF_LEVEL = LeafLevel(
    leaves=LEAVES, max_steps=MAX_LEAF_STEPS, goal_leaves=("MOVE_TO",), goal=_hand_pose, depth=3
)
"""The robot's leaves as the segmentation sees them: MOVE_TO's goal is the hand pose where
its call ends; OPEN and CLOSE count their steps."""


def goal_to_arg(obs: np.ndarray, obj: int, goal: Sequence[float]) -> np.ndarray:
    """A MOVE_TO goal as skill ``obj``'s argument output (what :class:`RobotView` encodes)."""
    g = np.asarray(goal, dtype=np.float64)
    pos = np.asarray(obs[(slice(5, 8), slice(9, 12))[obj]], dtype=np.float64)
    return np.array([*((g[:3] - pos) * 10.0), _wrap(g[3] - obs[OBS_EE_YAW])], dtype=np.float32)


def infer_stacks(
    model: ProcedureModel, demos: Sequence[Trace], config: TrainConfig | None = None
) -> list[Trace]:
    """Fill in the call stacks of weak demonstrations (hard EM); strong traces out.

    The ``weak_infer`` of :func:`~rlsuite.apps.hierarchy.procedures.fit.fit`. Level 1
    (leaves): start from runs of equal gripper command (open, close, neither) as OPEN /
    CLOSE / MOVE_TO calls, cut where the motion command jumps (a heuristic initialisation,
    not the expert's labels); then ``em_rounds`` times fit ``model``'s leaf procedures on
    the segmentation (M-step) and re-segment every demonstration by semi-Markov Viterbi
    under them (E-step: a Gaussian around each leaf's STEP output with the residual
    spread), where a MOVE_TO call's goal is the hand pose where it ends
    (:func:`~rlsuite.apps.hierarchy.procedures.segmentation.refine_segments`). Level 2
    (skills): split each demonstration's leaf calls into the root's two skill calls and give
    each skill an object, by hard EM over (split, objects) with every split point tried as
    a start; the score is the likelihood of each skill's call sequence and of its MOVE_TO
    offsets from its object.
    """
    cfg = (config or TrainConfig()).validate()
    data = [commands(d) for d in demos]
    segs = [_initial_segments(act) for _, act in data]
    segs = refine_segments(
        model,
        LEAF_LEVEL,
        demos,
        data,
        segs,
        rounds=cfg.em_rounds,
        epochs=max(100, cfg.steps // 2),
        lr=cfg.lr,
        seed=cfg.seed,
        penalty=cfg.segment_penalty,
    )
    groups = _group_skills(data, segs)
    out = []
    for d, (obs, _), sg, (split, objs) in zip(demos, data, segs, groups):
        skills = [Call(SKILLS[0], (objs[0],)), Call(SKILLS[1], (objs[1],))]
        for i, (p, s, e) in enumerate(sg):
            args = (LEAF_LEVEL.goal_at(obs, e).astype(np.float32),) if p == "MOVE_TO" else ()
            skills[0 if i < split else 1].children.append(Call(p, args, list(range(s, e))))
        info = {**d.info, "inferred": True}
        out.append(
            trace_from_calls(SPEC, Call(ROOT, (), list(skills)), d.observations, d.actions, info)
        )
    return out


CHANGE_POINT = 0.5
"""Weak supervision starts a new leaf call where the motion command jumps by more than this."""


def _initial_segments(a: np.ndarray) -> list[tuple[str, int, int]]:
    g = a[:, 4]
    kind = np.where(g > 0.5, 1, np.where(g < -0.5, 2, 0))
    jump = np.r_[False, np.abs(np.diff(a[:, :3], axis=0)).max(1) > CHANGE_POINT]
    segs, s = [], 0
    for t in range(1, len(kind) + 1):
        if t == len(kind) or kind[t] != kind[s] or jump[t]:
            segs.append((("MOVE_TO", "OPEN", "CLOSE")[kind[s]], s, t))
            s = t
    return segs


OBJ = tuple(range(len(OBJECTS)))
"""Object argument values."""


def _group_skills(demos, segs) -> list[tuple[int, tuple[int, int]]]:
    """Per demo: where the first skill's calls end and each skill's object (hard EM)."""
    calls = []
    for d, sg in zip(demos, segs):
        rows = []
        for p, s, e in sg:
            g = None
            if p == "MOVE_TO":  # the goal as an argument of a skill on each object
                g = {o: goal_to_arg(d[0][s], o, LEAF_LEVEL.goal_at(d[0], e)) for o in OBJ}
            rows.append((p, s, g))
        calls.append(rows)
    options = [
        (k, (o1, o2)) for k in range(1, 1 + max(len(c) for c in calls)) for o1 in OBJ for o2 in OBJ
    ]

    def fit(assign):
        stats: dict[tuple[int, int], dict] = {}
        for _d, c, (k, objs) in zip(demos, calls, assign):
            for i, (p, _s, g) in enumerate(c):
                sk, pc = (0, i) if i < k else (1, i - k)
                obj = objs[sk]
                st = stats.setdefault((sk, pc), {"ops": [], "args": []})
                st["ops"].append(p)
                if g is not None:
                    st["args"].append(g[obj])
        model = {}
        for key, st in stats.items():
            ops = {o: st["ops"].count(o) / len(st["ops"]) for o in set(st["ops"])}
            args = np.asarray(st["args"])
            mean = args.mean(0) if len(args) else np.zeros(4)
            sd = np.maximum(args.std(0), 0.1) if len(args) > 1 else np.full(4, 0.1)
            model[key] = (ops, mean, sd)
        return model

    def score(model, d, c, k, objs) -> float:
        if k > len(c) - 1:
            return -np.inf
        total = 0.0
        for i, (p, _s, g) in enumerate(c):
            sk, pc = (0, i) if i < k else (1, i - k)
            ops, mean, sd = model.get((sk, pc), ({}, np.zeros(4), np.full(4, 1.0)))
            total += math.log(ops.get(p, 1e-3))
            if g is not None:
                z = (g[objs[sk]] - mean) / sd
                total += float(-0.5 * (z @ z) - np.log(sd).sum())
        return total

    best, best_total = None, -np.inf
    for k0 in range(1, max(len(c) for c in calls)):
        for objs0 in [(o1, o2) for o1 in OBJ for o2 in OBJ]:
            assign = [(min(k0, len(c) - 1), objs0) for c in calls]
            for _ in range(6):
                model = fit(assign)
                new = [
                    max(options, key=lambda opt, d=d, c=c: score(model, d, c, *opt))
                    for d, c in zip(demos, calls)
                ]
                if new == assign:
                    break
                assign = new
            model = fit(assign)
            total = sum(score(model, d, c, *a) for d, c, a in zip(demos, calls, assign))
            if total > best_total:
                best, best_total = assign, total
    assert best is not None
    return best
