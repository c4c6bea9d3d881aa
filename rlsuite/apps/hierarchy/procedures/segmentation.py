"""Weak supervision by hard EM: segment demonstrations into leaf calls (semi-Markov Viterbi).

Procedures with continuous arguments have call stacks that cannot be enumerated, so the
exact marginal (:mod:`.weak`) does not apply. Hard EM, as DDCO and PHP do, fills the stacks
in level by level instead; this module is the leaf level. A demonstration's continuous
commands are cut into *segments*, one leaf call each (``(procedure, start, end)``, end
exclusive); :func:`refine_segments` then alternates

- M-step: fit the model's leaf procedures on the segmentation (:func:`leaf_trace` makes
  strong traces of the leaf decisions alone), and
- E-step: re-segment every demonstration by :func:`viterbi` under those leaves: each
  step's command scores as a Gaussian around the leaf's output with the residual spread
  (:func:`residual_sd`), each new segment pays a fixed penalty, and a goal-taking leaf's
  goal is read from the observation where its segment ends.

The hierarchy's leaf level is described by a :class:`LeafLevel`; the upper levels (which
skill called which leaves) are the caller's: the robot groups them in
:func:`rlsuite.apps.hierarchy.robot.model.infer_stacks`, which is the ``weak_infer`` it
gives :func:`~.fit.fit`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from rlsuite.apps.hierarchy.procedures.fit import fit
from rlsuite.apps.hierarchy.procedures.model import ProcedureModel
from rlsuite.apps.hierarchy.procedures.traces import TERMINATE, Event, Trace

Segment = tuple[str, int, int]
"""One leaf call of a demonstration: ``(procedure, first step, one past its last step)``."""


@dataclass(frozen=True)
class LeafLevel:
    """The leaf procedures a demonstration is segmented into.

    Every leaf's first operation is an elementary action whose first argument is the
    continuous command (the robot's ``STEP(command)``); the model must have an
    :class:`~.model.InputView` (the leaves' features come from it).
    """

    leaves: tuple[str, ...]
    """The leaf procedures."""
    max_steps: Mapping[str, int]
    """The longest call of each leaf, in steps (a segment is at most this long)."""
    goal_leaves: tuple[str, ...]
    """Leaves whose one (continuous) argument is the goal they reach: the :attr:`goal` of
    the observation right after their segment. The other leaves take no argument and see
    their pc."""
    goal: Callable[[np.ndarray], np.ndarray]
    """Observation rows ``[n, obs_dim]`` -> the goal reached at each ``[n, goal size]``."""
    depth: int
    """Stack depth of a leaf call (the root is 1)."""

    def goal_at(self, obs: np.ndarray, t: int) -> np.ndarray:
        """The goal of a leaf call ending at step ``t`` (float64)."""
        return np.asarray(self.goal(obs[t : t + 1])[0], dtype=np.float64)


def leaf_trace(level: LeafLevel, demo: Trace, obs: np.ndarray, segs: Sequence[Segment]) -> Trace:
    """A trace whose events are the leaf calls' decisions only (trains the leaves).

    ``obs``: the demonstration's observations with the one after its last action."""
    events = []
    T = len(demo.actions)
    for p, s, e in segs:
        args = (level.goal_at(obs, e).astype(np.float32),) if p in level.goal_leaves else ()
        for t in range(s, e):
            events.append(Event(t, p, t - s, args, demo.actions[t], level.depth))
        if e < T:
            events.append(Event(e, p, e - s, args, TERMINATE, level.depth))
    return Trace(demo.observations, list(demo.actions), events, dict(demo.info))


def leaf_mean(
    model: ProcedureModel, level: LeafLevel, p: str, obs: np.ndarray, extra: np.ndarray
) -> np.ndarray:
    """The command's mean of leaf ``p`` on rows ``obs`` with, per row, its goal (a goal
    leaf) or its pc (the others)."""
    pi = model.index[p]
    o = torch.as_tensor(np.asarray(obs, dtype=np.float32))
    if p in level.goal_leaves:
        x = model.view.features(p, o, torch.zeros(len(o), dtype=torch.long),
                                [torch.as_tensor(np.asarray(extra, dtype=np.float32))])  # fmt: skip
    else:
        x = model.view.features(p, o, torch.as_tensor(np.asarray(extra, dtype=np.int64)), [])
    with torch.no_grad():
        mu, _ = model.arg_mean_std(pi, 0, 0, x)
    return mu.numpy().astype(np.float64)


def residual_sd(
    model: ProcedureModel,
    level: LeafLevel,
    data: Sequence[tuple[np.ndarray, np.ndarray]],
    segs: Sequence[Sequence[Segment]],
) -> dict[str, np.ndarray]:
    """Per leaf: the spread of the commands around its mean on its segments (at least 0.05).

    ``data``: per demonstration, ``(observations with the final one, commands)``."""
    sds = {}
    for p in level.leaves:
        rows_o, rows_x, rows_a = [], [], []
        for (obs, act), sg in zip(data, segs):
            for q, s, e in sg:
                if q != p:
                    continue
                rows_o.append(obs[s:e])
                rows_a.append(act[s:e])
                if p in level.goal_leaves:
                    rows_x.append(np.repeat(level.goal_at(obs, e)[None], e - s, 0))
                else:
                    rows_x.append(np.arange(e - s))
        if sum(len(r) for r in rows_o) > 1:
            o, x, a = np.concatenate(rows_o), np.concatenate(rows_x), np.concatenate(rows_a)
            sd = (leaf_mean(model, level, p, o, x) - a).std(0)
        else:
            sd = np.ones(data[0][1].shape[1])
        sds[p] = np.maximum(sd, 0.05)
    return sds


def viterbi(
    model: ProcedureModel,
    level: LeafLevel,
    sds: Mapping[str, np.ndarray],
    obs: np.ndarray,
    act: np.ndarray,
    penalty: float,
) -> list[Segment]:
    """The best segmentation of one demonstration (``obs`` with the final observation,
    ``act`` its commands) into leaf calls: semi-Markov Viterbi, each segment scored by the
    Gaussian log-likelihood of its commands minus ``penalty``."""
    T = len(act)
    scores: dict[str, np.ndarray] = {}
    for p in level.leaves:
        sd = sds[p]
        L = level.max_steps[p]
        sc = np.full((T + 1, T + 1), -np.inf)
        ss, tt = [], []
        for s in range(T):
            for e in range(s + 1, min(T, s + L) + 1):
                ss.append(s)
                tt.append(e)
        ss_a, ee_a = np.array(ss), np.array(tt)
        if p in level.goal_leaves:
            # per (t, e): log N(a_t | mu(obs_t, goal=obs_e)); the segment sums over t in s..e-1
            pairs = [(t, e) for e in range(1, T + 1) for t in range(max(0, e - L), e)]
            pt = np.array([q[0] for q in pairs])
            pe = np.array([q[1] for q in pairs])
            goals = level.goal(obs[pe])
            ll = gauss(act[pt], leaf_mean(model, level, p, obs[pt], goals), sd)
            cell = np.zeros((T + 1, T + 1))
            cell[pt, pe] = ll
            cum = np.vstack([np.zeros(T + 1), np.cumsum(cell, axis=0)])
            sc[ss_a, ee_a] = cum[ee_a, ee_a] - cum[ss_a, ee_a]
        else:
            pairs = [(s, t) for s in range(T) for t in range(s, min(T, s + L))]
            ps = np.array([q[0] for q in pairs])
            pt = np.array([q[1] for q in pairs])
            ll = gauss(act[pt], leaf_mean(model, level, p, obs[pt], pt - ps), sd)
            cell = np.zeros((T + 1, T + 1))
            cell[ps, pt] = ll
            cum = np.hstack([np.zeros((T + 1, 1)), np.cumsum(cell, axis=1)])
            sc[ss_a, ee_a] = cum[ss_a, ee_a] - cum[ss_a, ss_a]
        scores[p] = sc
    best = np.full(T + 1, -np.inf)
    best[0] = 0.0
    back: list[tuple[str, int] | None] = [None] * (T + 1)
    for e in range(1, T + 1):
        for p in level.leaves:
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


def gauss(a: np.ndarray, mu: np.ndarray, sd: np.ndarray) -> np.ndarray:
    """Row-wise log-density of ``a`` under independent Gaussians ``N(mu, sd)``."""
    z = (a - mu) / sd
    return -0.5 * (z**2).sum(1) - np.log(sd).sum() - 0.5 * len(sd) * math.log(2 * math.pi)


def refine_segments(
    model: ProcedureModel,
    level: LeafLevel,
    demos: Sequence[Trace],
    data: Sequence[tuple[np.ndarray, np.ndarray]],
    segs: Sequence[Sequence[Segment]],
    *,
    rounds: int,
    epochs: int,
    lr: float,
    seed: int,
    penalty: float,
) -> list[list[Segment]]:
    """``rounds`` of hard EM from the initial segmentation ``segs``: refit the leaves from
    scratch on the segments (``epochs`` of :func:`~.fit.fit`, the other procedures fixed),
    then re-segment by :func:`viterbi`. Trains ``model``'s leaves as it goes.

    ``data``: per demonstration, ``(observations with the final one, commands)``."""
    segs = [list(sg) for sg in segs]
    for _ in range(rounds):
        leaf_traces = [leaf_trace(level, d, o, sg) for d, (o, _), sg in zip(demos, data, segs)]
        for p in level.leaves:  # refit from scratch: no drift towards an earlier round's mistakes
            model.reset_procedure(p, seed=seed + model.index[p])
        fit(
            model,
            strong=leaf_traces,
            epochs=epochs,
            lr=lr,
            seed=seed,
            only=level.leaves,
            cosine=True,
        )
        sds = residual_sd(model, level, data, segs)
        segs = [viterbi(model, level, sds, o, a, penalty) for o, a in data]
    return segs
