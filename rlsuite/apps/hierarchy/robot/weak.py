"""The robot's weak supervision (observations and actions only): hard EM that fills in the
call stacks of demonstrations, as DDCO / PHP do, level by level.

:func:`infer_stacks` is the ``weak_infer`` of
:func:`~rlsuite.apps.hierarchy.procedures.fit.fit`. The leaf level segments each
demonstration into leaf calls by a semi-Markov Viterbi pass under the model's own leaf
procedures (MOVE_TO's goal is where its segment ends) and refits them, a few rounds
(:mod:`rlsuite.apps.hierarchy.procedures.segmentation`); the skill level then cuts the leaf
calls into the root's skill calls (two for pick_place, six for sort), each with a skill type
and an object, by a second semi-Markov Viterbi pass over the leaf calls
(:func:`group_skills`: hard EM on the root's choices, each skill's call sequence and its
goal offsets from its object, from a few starts). The filled-in call trees become strong
traces (:func:`~rlsuite.apps.hierarchy.procedures.calls.trace_from_calls`) that train the
same model. (The exact weak marginal,
:class:`~rlsuite.apps.hierarchy.procedures.weak.WeakLattice`, covers argument-free
hierarchies only; continuous goals cannot be enumerated.)
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from rlsuite.apps.hierarchy.procedures.calls import Call, trace_from_calls
from rlsuite.apps.hierarchy.procedures.model import ProcedureModel
from rlsuite.apps.hierarchy.procedures.segmentation import LeafLevel, refine_segments
from rlsuite.apps.hierarchy.procedures.traces import Trace
from rlsuite.apps.hierarchy.robot.program import (
    LEAVES,
    MAX_LEAF_STEPS,
    SKILL_MAX_OPS,
    SKILLS,
    anchor_position,
)
from rlsuite.apps.hierarchy.robot.recording import commands
from rlsuite.apps.hierarchy.robot.tasks import N_SLOTS, OBS_EE, OBS_EE_YAW, SLOT_KIND, slot_index
from rlsuite.apps.hierarchy.robot.train_config import TrainConfig


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
    pos = anchor_position(obs, obj)
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
    (skills): cut each demonstration's leaf calls into the root's skill calls, each with a
    skill type and an object (:func:`group_skills`).
    """
    cfg = (config or TrainConfig()).validate()
    spec = model.spec
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
    groups = group_skills(data, segs, spec.pc_clip(spec.root))
    out = []
    for d, (obs, _), sg, calls in zip(demos, data, segs, groups):
        skills = []
        for k, o, a, b in calls:
            c = Call(SKILLS[k], (o,))
            for p, s, e in sg[a:b]:
                args = (LEAF_LEVEL.goal_at(obs, e).astype(np.float32),) if p == "MOVE_TO" else ()
                c.children.append(Call(p, args, list(range(s, e))))
            skills.append(c)
        info = {**d.info, "inferred": True}
        out.append(
            trace_from_calls(spec, Call(spec.root, (), skills), d.observations, d.actions, info)
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


ANCHOR_SD = 0.3
"""Skill-level start: a skill's MOVE_TO goals lie above its object, within this (x10 m) in xy."""
ANCHOR_COST = 3.0
"""Skill-level start: log-likelihood cost of one more skill call."""
_OPS = (*LEAVES, "END")

SkillCall = tuple[int, int, int, int]
"""One inferred skill call: ``(skill index, object slot, first leaf call, one past the last)``."""


def _present(obs: np.ndarray) -> list[int]:
    return [o for o in range(N_SLOTS) if obs[0, slot_index(o, SLOT_KIND)].any()]


def _semi_markov(
    n: int, max_calls: int, objects, seg_score, root_score
) -> tuple[list[SkillCall], float]:
    """Best cut of ``n`` leaf calls into at most ``max_calls`` skill calls (Viterbi), and
    its log-likelihood."""
    V = np.full((n + 1, max_calls + 1), -np.inf)
    back: dict[tuple[int, int], tuple[int, int, int, int]] = {}
    V[0, 0] = 0.0
    for a in range(n):
        for j in range(max_calls):
            if V[a, j] == -np.inf:
                continue
            for k in range(len(SKILLS)):
                for o in objects:
                    base = V[a, j] + root_score(j, (k, o))
                    for b, sc in seg_score(k, o, a):
                        if base + sc > V[b, j + 1]:
                            V[b, j + 1] = base + sc
                            back[(b, j + 1)] = (a, j, k, o)
    ends = [V[n, j] + root_score(j, None) for j in range(max_calls + 1)]
    j = int(np.argmax(ends))
    if ends[j] == -np.inf:
        raise ValueError("no cut of the leaf calls into skill calls fits the hierarchy")
    calls, b = [], n
    while j > 0:
        a, j, k, o = back[(b, j)]
        calls.append((k, o, a, b))
        b = a
    return calls[::-1], float(ends[int(np.argmax(ends))])


def group_skills(
    data: Sequence[tuple[np.ndarray, np.ndarray]],
    segs: Sequence[Sequence[tuple[str, int, int]]],
    max_calls: int,
    rounds: int = 8,
) -> list[list[SkillCall]]:
    """Cut each demonstration's leaf calls into skill calls with a skill type and an object.

    Hard EM with a semi-Markov Viterbi pass over the leaf calls. Start: cut where the
    MOVE_TO goals move to another object (a skill's goals lie above its object, within
    :data:`ANCHOR_SD`) at :data:`ANCHOR_COST` per call, and type the calls by clustering
    their leaf sequences into ``len(SKILLS)`` groups (:func:`_type_starts`; the type of the
    first call is ``SKILLS[0]``). Then up to ``rounds`` times: fit a model (the root's
    choice of (skill, object) or return per pc; per skill and pc the next leaf or return,
    and a Gaussian of MOVE_TO's goal offset from the object) and re-cut every
    demonstration under it. Each start runs to convergence; the one whose cuts are most
    likely under their own model wins (the first on a tie). Finally the skill type that
    most demonstrations start with is named ``SKILLS[0]`` (weak supervision's names are
    its own; this keeps them stable across data sets).
    """
    rows = []  # per demo: [(leaf, {object: goal offset} or None)]
    objects = []
    for (obs, _), sg in zip(data, segs):
        present = _present(obs)
        objects.append(present)
        r = []
        for p, s, e in sg:
            g = None
            if p == "MOVE_TO":
                goal = LEAF_LEVEL.goal_at(obs, e)
                g = {o: goal_to_arg(obs[s], o, goal) for o in present}
            r.append((p, g))
        rows.append(r)

    def anchor_scores(r):
        def seg_score(k, o, a):
            if k:
                return []
            out, tot, moves = [], -ANCHOR_COST, 0
            for b in range(a, min(len(r), a + SKILL_MAX_OPS)):
                p, g = r[b]
                if g is not None:
                    moves += 1
                    z = g[o][:2] / ANCHOR_SD
                    tot += float(-0.5 * (z @ z))
                if moves:
                    out.append((b + 1, tot))
            return out

        return seg_score

    cut = [
        _semi_markov(len(r), max_calls, objs, anchor_scores(r), lambda j, c: 0.0)[0]
        for r, objs in zip(rows, objects)
    ]
    best, best_ll = None, -np.inf
    for start in _type_starts(rows, cut):
        assign, ll = start, -np.inf
        for _ in range(rounds):
            root_lp, op_lp, goal_lp = _fit_skill_model(rows, objects, assign, max_calls)
            out = [
                _semi_markov(len(r), max_calls, objs, _skill_scores(r, op_lp, goal_lp), root_lp)
                for r, objs in zip(rows, objects)
            ]
            new, ll = [c for c, _ in out], sum(x for _, x in out)
            if new == assign:
                break
            assign = new
        if ll > best_ll:
            best, best_ll = assign, ll
    assert best is not None
    # names are the learner's own: the type most demonstrations start with is SKILLS[0]
    firsts = [calls[0][0] for calls in best if calls]
    lead = max(set(firsts), key=firsts.count) if firsts else 0
    swap = {lead: 0, 0: lead}
    return [[(swap.get(k, k), o, a, b) for k, o, a, b in calls] for calls in best]


TYPE_STARTS = 4
"""Skill-level restarts: the second skill type is seeded from up to this many call sequences."""


def _skill_scores(r, op_lp, goal_lp):
    """``seg_score(k, o, a)``: (end, log-likelihood) of skill ``k`` on object ``o`` making
    the leaf calls ``r[a:end]`` and returning, for every end it can reach."""

    def seg_score(k, o, a):
        out, tot = [], 0.0
        for i, b in enumerate(range(a, min(len(r), a + SKILL_MAX_OPS))):
            p, g = r[b]
            tot += op_lp(k, i, p) + (goal_lp(k, i, g[o]) if g is not None else 0.0)
            out.append((b + 1, tot + op_lp(k, i + 1, "END")))
        return out

    return seg_score


def _type_starts(rows, assign) -> list[list[list[SkillCall]]]:
    """Starting skill types for the calls of ``assign``: cluster the calls' leaf sequences
    around the most common one and a second seed (first the one farthest from it, then
    the next most common ones, :data:`TYPE_STARTS` in all); the first call's type is 0."""
    sig = [
        [tuple(r[i][0] for i in range(a, b)) for _, _, a, b in calls]
        for r, calls in zip(rows, assign)
    ]
    counts: dict[tuple, int] = {}
    for ss in sig:
        for x in ss:
            counts[x] = counts.get(x, 0) + 1

    def dist(x, y):
        return sum(1 for i in range(max(len(x), len(y))) if x[i : i + 1] != y[i : i + 1])

    first = max(counts, key=lambda x: counts[x])
    rest = [x for x in counts if x != first]
    seconds = [max(rest, key=lambda x: (dist(x, first), counts[x]))] if rest else [None]
    seconds += [x for x in sorted(rest, key=lambda x: -counts[x]) if x not in seconds]
    starts = []
    for second in seconds[:TYPE_STARTS]:
        seeds = [first] if second is None else [first, second]
        kind = {x: min(range(len(seeds)), key=lambda i: dist(x, seeds[i])) for x in counts}
        lead = kind[sig[0][0]] if sig and sig[0] else 0
        swap = {lead: 0, 0: lead}
        starts.append(
            [
                [(swap.get(kind[x], kind[x]), o, a, b) for x, (_, o, a, b) in zip(ss, calls)]
                for ss, calls in zip(sig, assign)
            ]
        )
    return starts


def _fit_skill_model(rows, objects, assign, max_calls, alpha: float = 0.1):
    """The M-step: smoothed categoricals and Gaussians of the skill level, as scorers."""
    root: dict[int, dict] = {}
    ops: dict[tuple[int, int], dict] = {}
    goals: dict[tuple[int, int], list] = {}
    for r, calls in zip(rows, assign):
        for j, (k, o, a, b) in enumerate(calls):
            root.setdefault(j, {})[(k, o)] = root.get(j, {}).get((k, o), 0) + 1
            for i, t in enumerate(range(a, b)):
                p, g = r[t]
                ops.setdefault((k, i), {})[p] = ops.get((k, i), {}).get(p, 0) + 1
                if g is not None:
                    goals.setdefault((k, i), []).append(g[o])
            ops.setdefault((k, b - a), {})["END"] = ops.get((k, b - a), {}).get("END", 0) + 1
        root.setdefault(len(calls), {})[None] = root.get(len(calls), {}).get(None, 0) + 1
    n_choices = len(SKILLS) * N_SLOTS + 1
    gauss = {}
    for key, v in goals.items():
        x = np.asarray(v)
        sd = np.maximum(x.std(0), 0.1) if len(x) > 1 else np.full(4, 1.0)
        gauss[key] = (x.mean(0), sd, float(np.log(sd).sum()))

    def root_lp(j, choice):
        c = root.get(j, {})
        return math.log((c.get(choice, 0) + alpha) / (sum(c.values()) + alpha * n_choices))

    def op_lp(k, i, p):
        c = ops.get((k, i), {})
        return math.log((c.get(p, 0) + alpha) / (sum(c.values()) + alpha * len(_OPS)))

    def goal_lp(k, i, g):
        if (k, i) not in gauss:
            return -0.5 * float(g @ g) - 4 * math.log(10.0)
        mean, sd, log_sd = gauss[(k, i)]
        z = (g - mean) / sd
        return float(-0.5 * (z @ z)) - log_sd

    return root_lp, op_lp, goal_lp
