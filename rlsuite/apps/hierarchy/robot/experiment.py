"""Train-and-evaluate runs of the robot half: what the CLI, the demo and the benchmarks call.

Example::

    >>> res = run(RobotRunConfig(demos=2, episodes=2, num_workers=0, train_steps=50))  # doctest: +SKIP
    >>> sorted(res["success"])                                                         # doctest: +SKIP
    ['flat', 'hierarchical-strong']
"""

from __future__ import annotations

import copy
import io
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

import torch

from rlsuite.apps.hierarchy.robot import demos as D
from rlsuite.apps.hierarchy.robot.env import TASKS
from rlsuite.apps.hierarchy.robot.model import (
    SUPERVISION,
    FlatBC,
    HierarchicalModel,
    TrainConfig,
)
from rlsuite.apps.hierarchy.robot.model import load as load_model
from rlsuite.platform.evaluation import evaluate, scenarios

ENV_ID = "rlsuite/PickPlace-v0"
REUSE_MODES = ("reuse", "retrain", "recreate", "scratch")
"""How the second task is learned: the first task's procedures as they are; all of them
retrained on both tasks' demonstrations; a new PLACE trained on the new task only (PICK
and the leaves kept); or a new hierarchy from the new task's demonstrations alone."""


@dataclass(frozen=True)
class RobotRunConfig:
    """One comparison: train on ``demos`` demonstrations, evaluate on ``episodes`` seeds."""

    demos: int = 20
    """Successful expert demonstrations to learn from."""
    supervision: tuple[str, ...] = ("strong",)
    """Hierarchical models to train: any of ``strong``, ``weak``."""
    flat: bool = True
    """Also train the flat behaviour-cloning baseline on the same demonstrations."""
    task: str = "pick_place"
    """``pick_place`` or ``stack``."""
    episodes: int = 100
    """Evaluation episodes (seeds ``0..episodes-1``, disjoint from demonstration seeds)."""
    num_workers: int | None = None
    """Parallel evaluation / collection workers on Ray (None: one per CPU; 0: in process)."""
    train_steps: int = 500
    """Adam steps per network (flat cloning gets three times as many)."""
    seed: int = 0
    """Seeds the networks' initial weights."""
    demo_path: str | None = None
    """Read demonstrations from this file (``hier-train robot-demos``) instead of recording."""

    def validate(self) -> RobotRunConfig:
        if not isinstance(self.demos, int) or self.demos < 1:
            raise ValueError(
                f"--demos must be a positive number of demonstrations, got {self.demos!r}"
            )
        if not isinstance(self.episodes, int) or self.episodes < 1:
            raise ValueError(f"--episodes must be a positive int, got {self.episodes!r}")
        bad = [s for s in self.supervision if s not in SUPERVISION]
        if bad:
            raise ValueError(
                f"unknown supervision {bad[0]!r}: choose from {', '.join(SUPERVISION)}"
            )
        if not self.supervision and not self.flat:
            raise ValueError("nothing to train: give a supervision or keep the flat baseline")
        if self.task not in TASKS:
            raise ValueError(f"unknown task {self.task!r}: choose one of {', '.join(TASKS)}")
        if self.num_workers is not None and self.num_workers < 0:
            raise ValueError(f"num_workers must be >= 0, got {self.num_workers}")
        if not isinstance(self.train_steps, int) or self.train_steps < 1:
            raise ValueError(f"train_steps must be a positive int, got {self.train_steps!r}")
        return self

    def train_config(self) -> TrainConfig:
        return TrainConfig(steps=self.train_steps, seed=self.seed)


class ModelFactory:
    """A picklable zero-argument factory of a model's controller (built once per Ray worker)."""

    def __init__(self, model: HierarchicalModel | FlatBC, name: str):
        buf = io.BytesIO()
        torch.save(
            {
                "kind": "flat" if isinstance(model, FlatBC) else "hierarchical",
                "config": asdict(model.config),
                "state": model.state_dict(),
            },
            buf,
        )
        self.blob = buf.getvalue()
        self.name = name

    def __call__(self):
        torch.set_num_threads(1)
        b = torch.load(io.BytesIO(self.blob), weights_only=True)
        cls = FlatBC if b["kind"] == "flat" else HierarchicalModel
        m = cls(TrainConfig(**b["config"]))
        m.load_state_dict(b["state"])
        return m.controller(self.name)


def success_rate(
    model, task: str, episodes: int, num_workers: int | None, name: str, progress: bool = False
) -> dict[str, float]:
    """Success rate and mean episode length over seeds ``0..episodes-1``, via the platform."""
    res = evaluate(
        ModelFactory(model, name),
        scenarios(ENV_ID, episodes, {"task": task}),
        num_workers=num_workers,
        progress=progress,
        name=name,
    )
    return {
        "success": res.summary["success"]["mean"],
        "steps": res.summary["steps"]["mean"],
        "eval_wall_s": res.wall_time_s,
    }


def get_demos(
    cfg: RobotRunConfig, n: int | None = None, task: str | None = None, progress: bool = False
) -> list[dict[str, Any]]:
    n = cfg.demos if n is None else n
    task = task or cfg.task
    if cfg.demo_path:
        data = [d for d in D.load(cfg.demo_path) if d["task"] == task]
        if len(data) < n:
            raise ValueError(
                f"{cfg.demo_path} holds {len(data)} {task} demonstrations, fewer than "
                f"the {n} asked for: record more with `hier-train robot-demos --n {n}`"
            )
        return data[:n]
    return D.collect(n, task, num_workers=cfg.num_workers, progress=progress)


def run(
    cfg: RobotRunConfig, progress: bool = False, save_prefix: str | None = None
) -> dict[str, Any]:
    """Train each requested model on the same demonstrations; their success rates."""
    cfg.validate()
    t0 = time.perf_counter()
    data = get_demos(cfg, progress=progress)
    out: dict[str, Any] = {"config": asdict(cfg), "success": {}, "steps": {}, "train_wall_s": {}}
    models: list[tuple[str, Any]] = []
    for sup in cfg.supervision:
        t = time.perf_counter()
        models.append((f"hierarchical-{sup}", HierarchicalModel.fit(data, cfg.train_config(), sup)))
        out["train_wall_s"][models[-1][0]] = time.perf_counter() - t
    if cfg.flat:
        t = time.perf_counter()
        models.append(("flat", FlatBC.fit(data, cfg.train_config())))
        out["train_wall_s"]["flat"] = time.perf_counter() - t
    for name, m in models:
        r = success_rate(m, cfg.task, cfg.episodes, cfg.num_workers, name, progress)
        out["success"][name] = r["success"]
        out["steps"][name] = r["steps"]
        if save_prefix:
            m.save(f"{save_prefix}{name}.pt")
    out["wall_s"] = time.perf_counter() - t0
    return out


def sweep(
    counts: Sequence[int], base: RobotRunConfig, progress: bool = True
) -> list[dict[str, Any]]:
    """:func:`run` at each number of demonstrations (the first ``n`` of one recorded set)."""
    if not counts or any(c < 1 for c in counts):
        raise ValueError(f"demonstration counts must be positive, got {list(counts)}")
    pool = get_demos(replace(base, demos=max(counts)), progress=progress)
    rows = []
    for n in sorted(counts):
        t = time.perf_counter()
        res: dict[str, Any] = {"demos": n, "success": {}, "steps": {}, "train_wall_s": {}}
        data = pool[:n]
        models = []
        for sup in base.supervision:
            ts = time.perf_counter()
            models.append(
                (f"hierarchical-{sup}", HierarchicalModel.fit(data, base.train_config(), sup))
            )
            res["train_wall_s"][models[-1][0]] = time.perf_counter() - ts
        if base.flat:
            ts = time.perf_counter()
            models.append(("flat", FlatBC.fit(data, base.train_config())))
            res["train_wall_s"]["flat"] = time.perf_counter() - ts
        for name, m in models:
            r = success_rate(m, base.task, base.episodes, base.num_workers, name)
            res["success"][name], res["steps"][name] = r["success"], r["steps"]
        res["wall_s"] = time.perf_counter() - t
        if progress:
            print(
                f"{n:>3} demos: " + ", ".join(f"{k} {v:.0%}" for k, v in res["success"].items()),
                flush=True,
            )
        rows.append(res)
    return rows


@dataclass(frozen=True)
class ReuseConfig:
    """Skill reuse: learn ``stack`` with the procedures learned on ``pick_place``."""

    first_demos: int = 20
    """Demonstrations of the first task (pick_place) behind the reused procedures."""
    counts: tuple[int, ...] = (1, 2, 5, 10)
    """Demonstrations of the second task (stack) to try."""
    modes: tuple[str, ...] = REUSE_MODES
    """Which of reuse / retrain / recreate / scratch to compare."""
    episodes: int = 100
    """Evaluation episodes of the second task."""
    num_workers: int | None = None
    """Parallel evaluation / collection workers (0: in process)."""
    train_steps: int = 500
    """Adam steps per network."""
    seed: int = 0
    """Seeds the networks' initial weights."""

    def validate(self) -> ReuseConfig:
        bad = [m for m in self.modes if m not in REUSE_MODES]
        if bad:
            raise ValueError(f"unknown reuse mode {bad[0]!r}: choose from {', '.join(REUSE_MODES)}")
        if not self.counts or any(not isinstance(c, int) or c < 1 for c in self.counts):
            raise ValueError(f"counts must be positive ints, got {self.counts!r}")
        if self.first_demos < 1 or self.episodes < 1:
            raise ValueError("first_demos and episodes must be >= 1")
        return self


def reuse_experiment(cfg: ReuseConfig, progress: bool = True) -> dict[str, Any]:
    """Success on the second task against its number of demonstrations, per mode."""
    cfg.validate()
    tc = TrainConfig(steps=cfg.train_steps, seed=cfg.seed)
    first = D.collect(cfg.first_demos, "pick_place", num_workers=cfg.num_workers)
    second_pool = D.collect(max(cfg.counts), "stack", num_workers=cfg.num_workers)
    base = HierarchicalModel.fit(first, tc, "strong")
    results: dict[str, dict[int, float]] = {m: {} for m in cfg.modes}
    if "reuse" in cfg.modes:
        r = success_rate(base, "stack", cfg.episodes, cfg.num_workers, "reuse")["success"]
        results["reuse"] = {n: r for n in cfg.counts}
        if progress:
            print(f"reuse as is: {r:.0%} (no stack demonstrations)", flush=True)
    for n in sorted(cfg.counts):
        second = second_pool[:n]
        for mode in cfg.modes:
            if mode == "reuse":
                continue
            if mode == "retrain":
                m = copy.deepcopy(base)
                m.train_on([*first, *second])
            elif mode == "recreate":
                m = copy.deepcopy(base)
                fresh = HierarchicalModel(tc)
                m.nets["PLACE"].load_state_dict(fresh.nets["PLACE"].state_dict())
                m.train_on(second, only=("PLACE",))
            else:
                m = HierarchicalModel.fit(second, tc, "strong")
            results[mode][n] = success_rate(m, "stack", cfg.episodes, cfg.num_workers, mode)[
                "success"
            ]
        if progress:
            print(
                f"{n:>3} stack demos: "
                + ", ".join(f"{k} {v[n]:.0%}" for k, v in results.items() if n in v),
                flush=True,
            )
    return {
        "config": asdict(cfg),
        "success": {m: {str(k): v for k, v in r.items()} for m, r in results.items()},
        "demos_to_90": {m: demos_needed(r, 0.9) for m, r in results.items()},
    }


def demos_needed(curve: dict[int, float], level: float) -> int | None:
    """The smallest number of demonstrations whose success reaches ``level`` (None: never)."""
    for n in sorted(curve):
        if curve[n] >= level:
            return n
    return None


def load(path: str):
    """A saved model (see :func:`rlsuite.apps.hierarchy.robot.model.load`)."""
    return load_model(path)
