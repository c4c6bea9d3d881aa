"""Learned controllers from demonstrations: hierarchical procedures and flat cloning.

:class:`HierarchicalModel` learns every decision of the procedure library in
:mod:`.program` with a small network:

- ``root``: which skill to call next (PICK, PLACE or return) and on which object;
- ``PICK`` / ``PLACE`` (the skills): the next operation (MOVE_TO, OPEN, CLOSE or
  return) from the observation seen from the skill's object and the program counter,
  plus MOVE_TO's goal as an offset from that object (the *argument output*);
- ``MOVE_TO`` / ``OPEN`` / ``CLOSE`` (the leaves): continuous elementary actions and a
  termination predicate.

Strong supervision reads every decision from the recorded call stack. Weak
supervision (observations and actions only) fills the stack in by hard EM
(:func:`infer_stacks`), level by level as DDCO / PHP do: the leaf level segments each
demonstration into leaf calls by a semi-Markov Viterbi pass under the current leaf
models (MOVE_TO's goal is where its segment ends) and refits them, a few rounds; the
skill level then groups the leaf calls into the root's two skill calls and picks each
skill's object, maximising the likelihood of the skills' call sequences and goal
offsets. The filled-in stacks then train the same networks as strong supervision.

:class:`FlatBC` is the baseline: one MLP from observation to action, on the same
demonstrations.

Example::

    >>> from rlsuite.apps.hierarchy.robot import demos as D
    >>> data = D.collect(2, num_workers=0)
    >>> model = HierarchicalModel.fit(data, TrainConfig(steps=50))
    >>> controller = model.controller()
    >>> controller.reset(0)
    >>> controller.act(data[0]["obs"][0]).shape
    (5,)
"""

from __future__ import annotations

import contextlib
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

from rlsuite.apps.hierarchy.robot.env import (
    OBJECT_REL_YAW,
    OBJECT_SLICES,
    OBJECTS,
    OBS_DIM,
    OBS_EE,
    OBS_EE_YAW,
    OBS_TARGET_KIND,
    OBS_WIDTH,
)
from rlsuite.apps.hierarchy.robot.program import (
    LEAVES,
    MAX_PC,
    ROOT,
    ROOT_MAX_PC,
    SKILLS,
    Executor,
    Frame,
)

SKILL_OPS = ("MOVE_TO", "OPEN", "CLOSE", "RETURN")
ROOT_OPS = (*SKILLS, "RETURN")
SUPERVISION = ("strong", "weak")
FORMAT_VERSION = 1


@dataclass(frozen=True)
class TrainConfig:
    """How the networks are fitted."""

    hidden: int = 64
    """Width of the two hidden layers of every procedure network."""
    steps: int = 300
    """Full-batch Adam steps per network."""
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


# ----------------------------------------------------------------------------- features


def _wrap(a: np.ndarray) -> np.ndarray:
    return (a + np.pi) % (2 * np.pi) - np.pi


def move_features(obs: np.ndarray, goal: np.ndarray) -> np.ndarray:
    """MOVE_TO's view: the goal seen from the hand (x10), its distance, yaw error, width."""
    obs, goal = np.atleast_2d(obs), np.atleast_2d(goal)
    d = (goal[:, :3] - obs[:, OBS_EE]) * 10.0
    yaw = _wrap(goal[:, 3] - obs[:, OBS_EE_YAW])
    return np.column_stack([d, np.linalg.norm(d, axis=1), yaw, obs[:, OBS_WIDTH] * 10]).astype(
        np.float32
    )


def grip_features(obs: np.ndarray, t: np.ndarray) -> np.ndarray:
    """OPEN / CLOSE see the finger width and how long they have been running."""
    obs = np.atleast_2d(obs)
    return np.column_stack([obs[:, OBS_WIDTH] * 10, np.asarray(t, dtype=np.float64) / 5.0]).astype(
        np.float32
    )


def skill_features(obs: np.ndarray, obj: Sequence[str], pc: np.ndarray) -> np.ndarray:
    """A skill's view: its object seen from the hand, the gripper, and its program counter."""
    obs = np.atleast_2d(obs)
    rows = []
    for o, name, k in zip(obs, obj, np.asarray(pc).reshape(-1)):
        rel = (o[OBJECT_SLICES[name]] - o[OBS_EE]) * 5.0
        onehot = np.zeros(MAX_PC + 1)
        onehot[min(int(k), MAX_PC)] = 1.0
        rows.append(
            [
                *rel,
                o[OBJECT_REL_YAW[name]],
                o[OBS_WIDTH] * 10,
                o[OBS_TARGET_KIND],
                o[OBS_EE][2] * 5,
                *onehot,
            ]
        )
    return np.asarray(rows, dtype=np.float32)


def root_features(obs: np.ndarray, pc: np.ndarray) -> np.ndarray:
    obs = np.atleast_2d(obs)
    onehot = np.eye(ROOT_MAX_PC + 1)[np.minimum(np.asarray(pc).reshape(-1), ROOT_MAX_PC)]
    return np.column_stack([obs[:, OBS_TARGET_KIND], onehot]).astype(np.float32)


def goal_to_arg(obs: np.ndarray, obj: str, goal: Sequence[float]) -> np.ndarray:
    """MOVE_TO's goal as the skill's argument output: offset from the object (x10), yaw change."""
    g = np.asarray(goal, dtype=np.float64)
    off = (g[:3] - obs[OBJECT_SLICES[obj]]) * 10.0
    return np.array([*off, _wrap(g[3] - obs[OBS_EE_YAW])], dtype=np.float32)


def arg_to_goal(obs: np.ndarray, obj: str, arg: np.ndarray) -> np.ndarray:
    pos = np.asarray(obs[OBJECT_SLICES[obj]], dtype=np.float64) + np.asarray(arg[:3]) / 10.0
    return np.array([*pos, float(obs[OBS_EE_YAW]) + float(arg[3])])


FEATURE_DIMS = {
    "MOVE_TO": 6,
    "OPEN": 2,
    "CLOSE": 2,
    "skill": 7 + MAX_PC + 1,
    "root": 1 + ROOT_MAX_PC + 1,
}


# ----------------------------------------------------------------------- annotations


@dataclass
class Calls:
    """Every decision of one demonstration, read from its (recorded or inferred) stack."""

    leaf: list[dict]
    """``{proc, arg, start, end, terminated}`` per leaf call (steps ``start..end-1``)."""
    skill: list[dict]
    """``{proc, obj, start, children: [(proc, arg, start)], returned_at}`` per skill call."""


def read_calls(demo: dict[str, Any]) -> Calls:
    """Cut a demonstration's stack trace into calls."""
    stack = demo["stack"]
    if stack is None:
        raise ValueError("this demonstration has no call stack (weak); use infer_stacks() first")
    T = len(demo["actions"])
    leaves: dict[int, dict] = {}
    skills: dict[int, dict] = {}
    for t, frames in enumerate(stack):
        if len(frames) < 3:
            continue  # the root has returned: idle steps
        (sp, sarg, _, _, sid), (lp, larg, _, _, lid) = frames[1], frames[-1]
        if lid not in leaves:
            leaves[lid] = {"proc": lp, "arg": larg, "start": t, "end": t + 1}
            if sid not in skills:
                skills[sid] = {"proc": sp, "obj": sarg, "start": t, "children": []}
            skills[sid]["children"].append((lp, larg, t))
        leaves[lid]["end"] = t + 1
    leaf_list = sorted(leaves.values(), key=lambda c: c["start"])
    for c in leaf_list:
        c["terminated"] = c["end"] < T
    skill_list = sorted(skills.values(), key=lambda c: c["start"])
    for s in skill_list:
        last = max(
            (c for c in leaf_list if c["start"] == s["children"][-1][2]), key=lambda c: c["end"]
        )
        s["returned_at"] = last["end"] if last["terminated"] else None
    return Calls(leaf_list, skill_list)


# ------------------------------------------------------------------------- networks


def mlp(i: int, o: int, hidden: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Linear(i, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh(), nn.Linear(hidden, o)
    )


@contextlib.contextmanager
def _one_thread():
    """Tiny networks gain nothing from intra-op threads and lose a lot on a busy machine."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


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


class HierarchicalModel(nn.Module):
    """One network per decision of the procedure library (see the module docstring)."""

    def __init__(self, config: TrainConfig | None = None):
        super().__init__()
        self.config = (config or TrainConfig()).validate()
        h = self.config.hidden
        torch.manual_seed(self.config.seed)
        self.nets = nn.ModuleDict(
            {
                "root": mlp(FEATURE_DIMS["root"], len(ROOT_OPS) + len(OBJECTS), h),
                **{s: mlp(FEATURE_DIMS["skill"], len(SKILL_OPS) + 4, h) for s in SKILLS},
                **{f"{leaf}_act": mlp(FEATURE_DIMS[leaf], 5, h) for leaf in LEAVES},
                **{f"{leaf}_term": mlp(FEATURE_DIMS[leaf], 1, h) for leaf in LEAVES},
            }
        )
        self.meta: dict[str, Any] = {}

    # ---- training ------------------------------------------------------------------
    @classmethod
    def fit(
        cls, demos: Sequence[dict], config: TrainConfig | None = None, supervision: str = "strong"
    ) -> HierarchicalModel:
        """Train on demonstrations; ``weak`` first fills in their stacks by EM."""
        if supervision not in SUPERVISION:
            raise ValueError(f"supervision must be one of {SUPERVISION}, got {supervision!r}")
        if not demos:
            raise ValueError("no demonstrations to learn from")
        model = cls(config)
        with _one_thread():
            if supervision == "weak":
                demos = infer_stacks(demos, model.config)
            model.train_on(demos)
        model.meta.update(
            supervision=supervision, demos=len(demos), tasks=sorted({d["task"] for d in demos})
        )
        return model

    def train_on(self, demos: Sequence[dict], only: Sequence[str] | None = None) -> None:
        """Fit the networks named in ``only`` (default: all) on annotated demonstrations."""
        data = _decision_data([read_calls(d) for d in demos], demos)
        c = self.config
        torch.manual_seed(c.seed)
        with _one_thread():
            for name, net in self.nets.items():
                proc = name if name in ("root", *SKILLS) else name.rsplit("_", 1)[0]
                if only is not None and proc not in only and name not in only:
                    continue
                fn = _loss_for(name, net, data)
                if fn is not None:
                    _fit(net, fn, c.steps, c.lr)

    # ---- acting --------------------------------------------------------------------
    @torch.no_grad()
    def _run(self, name: str, x: np.ndarray) -> np.ndarray:
        return self.nets[name](torch.as_tensor(x)).numpy()

    def controller(self, name: str = "hierarchical") -> Executor:
        """A deterministic controller (``reset``/``act``) running this model's procedures."""
        return Executor(LearnedPolicy(self), name=name)

    # ---- persistence ---------------------------------------------------------------
    def save(self, path: str) -> None:
        _save(path, "hierarchical", self.config, self.state_dict(), self.meta)


class LearnedPolicy:
    """A :class:`~.program.ProcedurePolicy` whose decisions come from a :class:`HierarchicalModel`."""

    def __init__(self, model: HierarchicalModel):
        self.model = model.eval()

    def decide(self, frame: Frame, obs: np.ndarray):
        m = self.model
        if frame.proc == ROOT:
            out = m._run("root", root_features(obs, [frame.pc]))[0]
            op = ROOT_OPS[int(np.argmax(out[: len(ROOT_OPS)]))]
            if op == "RETURN":
                return None
            return op, OBJECTS[int(np.argmax(out[len(ROOT_OPS) :]))]
        out = m._run(frame.proc, skill_features(obs, [frame.arg], [frame.pc]))[0]
        op = SKILL_OPS[int(np.argmax(out[: len(SKILL_OPS)]))]
        if op == "RETURN":
            return None
        if op == "MOVE_TO":
            return op, arg_to_goal(obs, frame.arg, out[len(SKILL_OPS) :])
        return op, None

    def leaf_done(self, frame: Frame, obs: np.ndarray) -> bool:
        return float(self.model._run(f"{frame.proc}_term", self._leaf_x(frame, obs))[0, 0]) > 0.0

    def leaf_act(self, frame: Frame, obs: np.ndarray) -> np.ndarray:
        return self.model._run(f"{frame.proc}_act", self._leaf_x(frame, obs))[0]

    @staticmethod
    def _leaf_x(frame: Frame, obs: np.ndarray) -> np.ndarray:
        if frame.proc == "MOVE_TO":
            return move_features(obs, np.asarray(frame.arg)[None])
        return grip_features(obs, [frame.t])


def _decision_data(calls: Sequence[Calls], demos: Sequence[dict]) -> dict[str, dict[str, list]]:
    """Inputs and targets of every network, from every demonstration's calls."""
    data: dict[str, dict[str, list]] = {}

    def add(name: str, **kw: Any) -> None:
        d = data.setdefault(name, {})
        for k, v in kw.items():
            d.setdefault(k, []).append(v)

    for c, demo in zip(calls, demos):
        obs, act = demo["obs"], demo["actions"]
        for leaf in c.leaf:
            s, e, p = leaf["start"], leaf["end"], leaf["proc"]
            idx = np.arange(s, e)
            if p == "MOVE_TO":
                g = np.repeat(np.asarray(leaf["arg"], dtype=np.float64)[None], len(idx) + 1, 0)
                x_all = move_features(obs[s : e + 1], g)
            else:
                x_all = grip_features(obs[s : e + 1], np.arange(0, e - s + 1))
            add(f"{p}_act", x=x_all[:-1], y=act[idx])
            # asked to terminate after each action; says yes only at the end (if it got there)
            labels = np.zeros(e - s, dtype=np.float32)
            if leaf["terminated"]:
                labels[-1] = 1.0
            add(f"{p}_term", x=x_all[1:], y=labels)
        for k, sk in enumerate(c.skill):
            for pc, (proc, arg, t) in enumerate(sk["children"]):
                a = (
                    goal_to_arg(obs[t], sk["obj"], arg)
                    if proc == "MOVE_TO"
                    else np.zeros(4, np.float32)
                )
                add(
                    sk["proc"],
                    x=skill_features(obs[t], [sk["obj"]], [pc]),
                    op=[SKILL_OPS.index(proc)],
                    arg=a[None],
                    has_arg=[proc == "MOVE_TO"],
                )
            if sk["returned_at"] is not None:
                t = sk["returned_at"]
                add(
                    sk["proc"],
                    x=skill_features(obs[t], [sk["obj"]], [len(sk["children"])]),
                    op=[SKILL_OPS.index("RETURN")],
                    arg=np.zeros((1, 4), np.float32),
                    has_arg=[False],
                )
            add(
                "root",
                x=root_features(obs[sk["start"]], [k]),
                op=[ROOT_OPS.index(sk["proc"])],
                obj=[OBJECTS.index(sk["obj"])],
            )
        if c.skill and c.skill[-1]["returned_at"] is not None:
            add(
                "root",
                x=root_features(obs[c.skill[-1]["returned_at"]], [len(c.skill)]),
                op=[ROOT_OPS.index("RETURN")],
                obj=[0],
            )
    return {
        name: {k: np.concatenate([np.asarray(v) for v in vs]) for k, vs in d.items()}
        for name, d in data.items()
    }


def _loss_for(name: str, net: nn.Module, data: dict[str, dict[str, np.ndarray]]):
    d = data.get(name)
    if d is None or len(d["x"]) == 0:
        return None
    x = torch.as_tensor(np.asarray(d["x"], dtype=np.float32))
    if name.endswith("_act"):
        y = torch.as_tensor(np.asarray(d["y"], dtype=np.float32))
        return lambda: F.mse_loss(net(x), y)
    if name.endswith("_term"):
        y = torch.as_tensor(np.asarray(d["y"], dtype=np.float32))
        pos = float(y.sum())
        w = torch.tensor(max(1.0, (len(y) - pos) / max(pos, 1.0)) ** 0.5)
        return lambda: F.binary_cross_entropy_with_logits(net(x)[:, 0], y, pos_weight=w)
    op = torch.as_tensor(np.asarray(d["op"], dtype=np.int64))
    if name == "root":
        obj = torch.as_tensor(np.asarray(d["obj"], dtype=np.int64))
        keep = op != ROOT_OPS.index("RETURN")
        n = len(ROOT_OPS)

        def root_loss():
            out = net(x)
            loss = F.cross_entropy(out[:, :n], op)
            if keep.any():
                loss = loss + F.cross_entropy(out[keep, n:], obj[keep])
            return loss

        return root_loss
    arg = torch.as_tensor(np.asarray(d["arg"], dtype=np.float32))
    has = torch.as_tensor(np.asarray(d["has_arg"], dtype=bool))
    n = len(SKILL_OPS)

    def skill_loss():
        out = net(x)
        loss = F.cross_entropy(out[:, :n], op)
        if has.any():
            loss = loss + F.mse_loss(out[has, n:], arg[has])
        return loss

    return skill_loss


# ------------------------------------------------------------------ flat baseline


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
        x = np.concatenate([d["obs"][:-1] for d in demos]).astype(np.float32)
        y = np.concatenate([d["actions"] for d in demos]).astype(np.float32)
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
            supervision="flat", demos=len(demos), tasks=sorted({d["task"] for d in demos})
        )
        return model

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net((x - self.mean) / self.std)

    def controller(self, name: str = "flat BC") -> FlatController:
        return FlatController(self, name)

    def save(self, path: str) -> None:
        _save(path, "flat", self.config, self.state_dict(), self.meta)


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


def _save(path: str, kind: str, config: TrainConfig, state: dict, meta: dict) -> None:
    os.makedirs(os.path.dirname(os.path.abspath(path)) or ".", exist_ok=True)
    torch.save(
        {
            "format": FORMAT_VERSION,
            "kind": kind,
            "config": json.dumps(asdict(config)),
            "meta": json.dumps(meta),
            "state": state,
        },
        path,
    )


def load(path: str) -> HierarchicalModel | FlatBC:
    """A model saved with ``.save(path)`` (weights, config and metadata)."""
    if not os.path.exists(path):
        raise FileNotFoundError(
            f"no model at {path!r}: train one with `hier-train robot --save PATH`"
        )
    blob = torch.load(path, weights_only=True)
    if not isinstance(blob, dict) or blob.get("format") != FORMAT_VERSION:
        raise ValueError(f"{path!r} is not a robot model saved by this version of rlsuite")
    config = TrainConfig(**json.loads(blob["config"]))
    model = HierarchicalModel(config) if blob["kind"] == "hierarchical" else FlatBC(config)
    model.load_state_dict(blob["state"])
    model.meta = json.loads(blob["meta"])
    return model


def make_controller(model: HierarchicalModel | FlatBC, name: str | None = None):
    """The controller of either kind of model."""
    return model.controller(name) if name else model.controller()


# -------------------------------------------------------------- weak supervision (EM)


def infer_stacks(demos: Sequence[dict], config: TrainConfig | None = None) -> list[dict]:
    """Fill in the call stack of demonstrations that have only observations and actions.

    Level 1 (leaves): start from runs of equal gripper command (open, close, neither) as
    OPEN / CLOSE / MOVE_TO calls, cut where the motion command jumps; then ``em_rounds`` times refit the leaf action models
    (Gaussian around each leaf network's output) and re-segment every demonstration by
    semi-Markov Viterbi, where a MOVE_TO call's goal is the hand pose where it ends.
    Level 2 (skills): split each demonstration's leaf calls into the root's two skill
    calls and give each skill an object, by hard EM over (split, objects) with every
    split point tried as a start; the score is the likelihood of each skill's call
    sequence and of its MOVE_TO offsets from its object.
    """
    cfg = (config or TrainConfig()).validate()
    segs = [_initial_segments(d) for d in demos]
    for _ in range(cfg.em_rounds):
        models = _fit_leaf_models(demos, segs, cfg)
        segs = [_viterbi(d, models, cfg.segment_penalty) for d in demos]
    groups = _group_skills(demos, segs)
    out = []
    for d, sg, (split, objs) in zip(demos, segs, groups):
        out.append({**d, "stack": _stack_from(d, sg, split, objs)})
    return out


CHANGE_POINT = 0.5
"""Weak supervision starts a new leaf call where the motion command jumps by more than this."""


def _initial_segments(demo: dict) -> list[tuple[str, int, int]]:
    a = demo["actions"]
    g = a[:, 4]
    kind = np.where(g > 0.5, 1, np.where(g < -0.5, 2, 0))
    jump = np.r_[False, np.abs(np.diff(a[:, :3], axis=0)).max(1) > CHANGE_POINT]
    segs, s = [], 0
    for t in range(1, len(kind) + 1):
        if t == len(kind) or kind[t] != kind[s] or jump[t]:
            segs.append((("MOVE_TO", "OPEN", "CLOSE")[kind[s]], s, t))
            s = t
    return segs


def _goal_at(obs: np.ndarray, t: int) -> np.ndarray:
    return np.array([*obs[t, OBS_EE], obs[t, OBS_EE_YAW]], dtype=np.float64)


def _fit_leaf_models(demos, segs, cfg) -> dict[str, tuple[nn.Module, np.ndarray]]:
    xs: dict[str, list] = {p: [] for p in LEAVES}
    ys: dict[str, list] = {p: [] for p in LEAVES}
    for d, sg in zip(demos, segs):
        for p, s, e in sg:
            if p == "MOVE_TO":
                x = move_features(d["obs"][s:e], np.repeat(_goal_at(d["obs"], e)[None], e - s, 0))
            else:
                x = grip_features(d["obs"][s:e], np.arange(e - s))
            xs[p].append(x)
            ys[p].append(d["actions"][s:e])
    models = {}
    torch.manual_seed(cfg.seed)
    for p in LEAVES:
        net = mlp(FEATURE_DIMS[p], 5, cfg.hidden)
        if xs[p]:
            x = torch.as_tensor(np.concatenate(xs[p]))
            y = torch.as_tensor(np.concatenate(ys[p]))
            _fit(
                net,
                lambda net=net, x=x, y=y: F.mse_loss(net(x), y),
                max(100, cfg.steps // 2),
                cfg.lr,
            )
            with torch.no_grad():
                sd = (net(x) - y).std(0).numpy() if len(x) > 1 else np.ones(5)
        else:
            sd = np.ones(5)
        models[p] = (net, np.maximum(sd, 0.05))
    return models


def _viterbi(demo: dict, models, penalty: float) -> list[tuple[str, int, int]]:
    from rlsuite.apps.hierarchy.robot.program import MAX_LEAF_STEPS

    obs, act = demo["obs"], demo["actions"]
    T = len(act)
    # score[p][s, e]: log-likelihood of steps s..e-1 as one call of leaf p
    scores: dict[str, np.ndarray] = {}
    for p in LEAVES:
        net, sd = models[p]
        L = MAX_LEAF_STEPS[p]
        sc = np.full((T + 1, T + 1), -np.inf)
        ss, tt = [], []
        for s in range(T):
            for e in range(s + 1, min(T, s + L) + 1):
                ss.append(s)
                tt.append(e)
        ss_a, ee_a = np.array(ss), np.array(tt)
        if p == "MOVE_TO":
            # per (t, e): log N(a_t | mu(obs_t, goal=obs_e)); the segment sums over t in s..e-1
            pairs = [(t, e) for e in range(1, T + 1) for t in range(max(0, e - L), e)]
            pt = np.array([q[0] for q in pairs])
            pe = np.array([q[1] for q in pairs])
            goals = np.column_stack([obs[pe][:, OBS_EE], obs[pe][:, OBS_EE_YAW]])
            with torch.no_grad():
                mu = net(torch.as_tensor(move_features(obs[pt], goals))).numpy()
            ll = _gauss(act[pt], mu, sd)
            cell = np.zeros((T + 1, T + 1))
            cell[pt, pe] = ll
            cum = np.vstack(
                [np.zeros(T + 1), np.cumsum(cell, axis=0)]
            )  # cum[t, e] = sum_{t'<t} cell
            sc[ss_a, ee_a] = cum[ee_a, ee_a] - cum[ss_a, ee_a]
        else:
            pairs = [(s, t) for s in range(T) for t in range(s, min(T, s + L))]
            ps = np.array([q[0] for q in pairs])
            pt = np.array([q[1] for q in pairs])
            with torch.no_grad():
                mu = net(torch.as_tensor(grip_features(obs[pt], pt - ps))).numpy()
            ll = _gauss(act[pt], mu, sd)
            cell = np.zeros((T + 1, T + 1))
            cell[ps, pt] = ll
            cum = np.hstack(
                [np.zeros((T + 1, 1)), np.cumsum(cell, axis=1)]
            )  # cum[s, t] = sum_{t'<t}
            sc[ss_a, ee_a] = cum[ss_a, ee_a] - cum[ss_a, ss_a]
        scores[p] = sc
    best = np.full(T + 1, -np.inf)
    best[0] = 0.0
    back: list[tuple[str, int] | None] = [None] * (T + 1)
    for e in range(1, T + 1):
        for p in LEAVES:
            cand = best[:e] + scores[p][:e, e] - penalty
            s = int(np.argmax(cand))
            if cand[s] > best[e]:
                best[e], back[e] = cand[s], (p, s)
    segs, e = [], T
    while e > 0:
        p, s = back[e]
        segs.append((p, s, e))
        e = s
    return segs[::-1]


def _gauss(a: np.ndarray, mu: np.ndarray, sd: np.ndarray) -> np.ndarray:
    z = (a - mu) / sd
    return -0.5 * (z**2).sum(1) - np.log(sd).sum() - 0.5 * len(sd) * math.log(2 * math.pi)


def _group_skills(demos, segs) -> list[tuple[int, tuple[str, str]]]:
    """Per demo: where the first skill's calls end and each skill's object (hard EM)."""
    calls = []
    for d, sg in zip(demos, segs):
        rows = []
        for p, s, e in sg:
            g = None
            if p == "MOVE_TO":  # the goal as an argument of a skill on each object
                g = {o: goal_to_arg(d["obs"][s], o, _goal_at(d["obs"], e)) for o in OBJECTS}
            rows.append((p, s, g))
        calls.append(rows)
    options = [
        (k, (o1, o2))
        for k in range(1, 1 + max(len(c) for c in calls))
        for o1 in OBJECTS
        for o2 in OBJECTS
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
        for objs0 in [(o1, o2) for o1 in OBJECTS for o2 in OBJECTS]:
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


def _stack_from(demo, segs, split: int, objs: tuple[str, str]) -> list[list[tuple]]:
    """A stack trace in the recorded format from inferred leaf calls and skill grouping."""
    stack: list[list[tuple]] = []
    for i, (p, s, e) in enumerate(segs):
        sk = 0 if i < split else 1
        pc = i if sk == 0 else i - split
        arg = [float(v) for v in _goal_at(demo["obs"], e)] if p == "MOVE_TO" else None
        root = (ROOT, None, sk, 0, 0)
        skill = (SKILLS[sk], objs[sk], pc, 0, 1 + sk)
        for t in range(s, e):
            stack.append([root, skill, (p, arg, 0, t - s, 100 + i)])
    return stack
