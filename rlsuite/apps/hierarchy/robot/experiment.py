"""Train-and-evaluate runs of the robot half: what the CLI, the demo and the benchmarks call.

Example::

    >>> res = run(RobotRunConfig(demos=2, episodes=2, num_workers=0, train_steps=50))  # doctest: +SKIP
    >>> sorted(res["success"])                                                         # doctest: +SKIP
    ['flat', 'hierarchical-strong']
"""

from __future__ import annotations

import copy
import io
import os
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import torch

from rlsuite.apps.hierarchy.procedures.model import ProcedureModel
from rlsuite.apps.hierarchy.procedures.traces import Trace
from rlsuite.apps.hierarchy.robot import recording as D
from rlsuite.apps.hierarchy.robot import tasks as T
from rlsuite.apps.hierarchy.robot.expert import Imperfection
from rlsuite.apps.hierarchy.robot.model import (
    SUPERVISION,
    FlatBC,
    TrainConfig,
    fit_hierarchical,
    make_controller,
    retrain,
    transfer,
)
from rlsuite.apps.hierarchy.robot.model import load as load_model
from rlsuite.apps.hierarchy.robot.model import save as save_model
from rlsuite.platform.evaluation import evaluate, scenarios

ENV_ID = "rlsuite/PickPlace-v0"
REUSE_MODES = ("reuse", "retrain", "recreate", "scratch")
"""How the second task is learned: the first task's procedures as they are (a task with
a root of its own learns only that root from its demonstrations); all of them retrained
(``stack``: on both tasks' demonstrations; a task with a root of its own: on its own,
starting from the first task's weights); a new PLACE trained on the new task only (PICK
and the leaves kept); or a new hierarchy from the new task's demonstrations alone."""


@dataclass(frozen=True)
class TrainEvalSettings:
    """How the robot experiments train each model and evaluate it (each experiment's config
    subclasses it)."""

    episodes: int = 100
    """Evaluation episodes (seeds ``0..episodes-1``, disjoint from demonstration seeds)."""
    num_workers: int | None = None
    """Parallel evaluation / collection workers on Ray (None: one per CPU; 0: in process)."""
    train_steps: int = 300
    """Adam steps per network (flat cloning gets three times as many)."""
    seed: int = 0
    """Seeds the networks' initial weights."""

    def validate_train_eval(self) -> None:
        """Refuse a bad episode count, worker count or step count."""
        if not isinstance(self.episodes, int) or self.episodes < 1:
            raise ValueError(f"--episodes must be a positive int, got {self.episodes!r}")
        if self.num_workers is not None and self.num_workers < 0:
            raise ValueError(f"num_workers must be >= 0, got {self.num_workers}")
        if not isinstance(self.train_steps, int) or self.train_steps < 1:
            raise ValueError(f"train_steps must be a positive int, got {self.train_steps!r}")

    def train_config(self) -> TrainConfig:
        return TrainConfig(steps=self.train_steps, seed=self.seed)


@dataclass(frozen=True)
class RobotRunConfig(TrainEvalSettings):
    """One comparison: train on ``demos`` demonstrations, evaluate on ``episodes`` seeds."""

    demos: int = 20
    """Successful expert demonstrations to learn from."""
    supervision: tuple[str, ...] = ("strong",)
    """Hierarchical models to train: any of ``strong``, ``weak``."""
    flat: bool = True
    """Also train the flat behaviour-cloning baseline on the same demonstrations."""
    task: str = "pick_place"
    """One of ``pick_place``, ``stack``, ``sort``, ``tower``, ``clear_then_place``."""
    demo_path: str | None = None
    """Read demonstrations from this file (``hier-train robot-demos``) instead of recording."""
    imperfection: Imperfection = field(default_factory=Imperfection)
    """How the recorded demonstrations depart from the clean expert's (noise, retried
    grasps, a second expert); evaluation always runs the clean task."""

    def validate(self) -> RobotRunConfig:
        if not isinstance(self.demos, int) or self.demos < 1:
            raise ValueError(
                f"--demos must be a positive number of demonstrations, got {self.demos!r}"
            )
        self.validate_train_eval()
        bad = [s for s in self.supervision if s not in SUPERVISION]
        if bad:
            raise ValueError(
                f"unknown supervision {bad[0]!r}: choose from {', '.join(SUPERVISION)}"
            )
        if not self.supervision and not self.flat:
            raise ValueError("nothing to train: give a supervision or keep the flat baseline")
        T.get(self.task)
        self.imperfection.validate()
        if self.imperfection != Imperfection() and self.demo_path:
            raise ValueError(
                "--noise / --retry / --second-expert shape demonstrations as they are recorded; "
                "a --demo-file was recorded already (give them to `hier-train robot-demos`)"
            )
        return self


class ModelFactory:
    """A picklable zero-argument factory of a model's controller (built once per Ray worker)."""

    def __init__(self, model: ProcedureModel | FlatBC, name: str):
        buf = io.BytesIO()
        if isinstance(model, FlatBC):
            blob = {"kind": "flat", "config": asdict(model.config), "state": model.state_dict()}
        else:
            blob = {"kind": "hierarchical", "model": model.to_blob({})}
        torch.save(blob, buf)
        self.blob = buf.getvalue()
        self.name = name

    def __call__(self):
        torch.set_num_threads(1)
        b = torch.load(io.BytesIO(self.blob), weights_only=True)
        if b["kind"] == "flat":
            m = FlatBC(TrainConfig(**b["config"]))
            m.load_state_dict(b["state"])
        else:
            m = ProcedureModel.from_blob(b["model"])
        return make_controller(m, self.name)


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
) -> list[Trace]:
    n = cfg.demos if n is None else n
    task = task or cfg.task
    if cfg.demo_path:
        data = D.of_task(D.load(cfg.demo_path), task, f"the demonstrations in {cfg.demo_path}")
        if len(data) < n:
            raise ValueError(
                f"{cfg.demo_path} holds {len(data)} {task} demonstrations, fewer than "
                f"the {n} asked for: record more with `hier-train robot-demos --task {task} --n {n}`"
            )
        return data[:n]
    return D.collect(
        n, task, num_workers=cfg.num_workers, progress=progress, imperfection=cfg.imperfection
    )


def run(cfg: RobotRunConfig, progress: bool = False, save_dir: str | None = None) -> dict[str, Any]:
    """Train each requested model on ``cfg.demos`` demonstrations; their success rates."""
    return sweep([cfg.demos], cfg, progress=progress, save_dir=save_dir)[0]


def _train_all(data, base: RobotRunConfig) -> list[tuple[str, Any, float]]:
    models = []
    for sup in base.supervision:
        t = time.perf_counter()
        m = fit_hierarchical(data, base.train_config(), sup)
        models.append((f"hierarchical-{sup}", m, time.perf_counter() - t))
    if base.flat:
        t = time.perf_counter()
        models.append(("flat", FlatBC.fit(data, base.train_config()), time.perf_counter() - t))
    return models


def sweep(
    counts: Sequence[int], base: RobotRunConfig, progress: bool = True, save_dir: str | None = None
) -> list[dict[str, Any]]:
    """Train and evaluate at each number of demonstrations (the first ``n`` of one recorded set)."""
    base.validate()
    if not counts or any(not isinstance(c, int) or c < 1 for c in counts):
        raise ValueError(f"demonstration counts must be positive ints, got {list(counts)}")
    from rlsuite.platform.cluster import configure_driver_threads

    configure_driver_threads()
    pool = get_demos(replace(base, demos=max(counts)), progress=progress)
    rows = []
    for n in sorted(counts):
        t = time.perf_counter()
        res: dict[str, Any] = {"demos": n, "success": {}, "steps": {}, "train_wall_s": {}}
        for name, m, wall in _train_all(pool[:n], base):
            r = success_rate(m, base.task, base.episodes, base.num_workers, name)
            res["success"][name], res["steps"][name] = r["success"], r["steps"]
            res["train_wall_s"][name] = wall
            if save_dir:
                save_model(m, os.path.join(save_dir, f"{base.task}-{n}demos-{name}.pt"))
        res["wall_s"] = time.perf_counter() - t
        if progress:
            print(
                f"{n:>3} demos: " + ", ".join(f"{k} {v:.0%}" for k, v in res["success"].items()),
                flush=True,
            )
        rows.append(res)
    return rows


def print_sweep(rows: Sequence[dict[str, Any]], title: str = "success rate") -> None:
    """A rich table: one row per number of demonstrations, one column per model."""
    from rich.console import Console
    from rich.table import Table

    names = list(rows[0]["success"]) if rows else []
    t = Table(title=title)
    t.add_column("demos", justify="right")
    for n in names:
        t.add_column(n, justify="right")
    for r in rows:
        t.add_row(
            str(r["demos"]), *[f"{r['success'][n]:.0%} ({r['steps'][n]:.0f} steps)" for n in names]
        )
    Console().print(t)


def plot_sweep(rows: Sequence[dict[str, Any]], path: str, title: str = "") -> None:
    """PNG: success rate against number of demonstrations, one line per model."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    fig, ax = plt.subplots(figsize=(6, 4))
    xs = [r["demos"] for r in rows]
    for name in rows[0]["success"]:
        ax.plot(xs, [r["success"][name] for r in rows], marker="o", label=name)
    ax.set_xscale("symlog" if min(xs) < 1 else "log")
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_xticks(xs)
    ax.set_xticklabels([str(x) for x in xs])
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("demonstrations")
    ax.set_ylabel("success rate")
    ax.set_title(title or "success vs demonstrations")
    ax.grid(alpha=0.3)
    ax.legend()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


@dataclass(frozen=True)
class ReuseConfig(TrainEvalSettings):
    """Skill reuse: learn a second task with the procedures learned on ``pick_place``."""

    task: str = "stack"
    """The second task (any but ``pick_place``)."""
    first_demos: int = 20
    """Demonstrations of the first task (pick_place) behind the reused procedures."""
    counts: tuple[int, ...] = (1, 2, 5, 10)
    """Demonstrations of the second task to try."""
    modes: tuple[str, ...] = REUSE_MODES
    """Which of reuse / retrain / recreate / scratch to compare."""

    def validate(self) -> ReuseConfig:
        self.validate_train_eval()
        T.get(self.task)
        if self.task == "pick_place":
            raise ValueError("the second task must differ from pick_place, the first")
        bad = [m for m in self.modes if m not in REUSE_MODES]
        if bad:
            raise ValueError(f"unknown reuse mode {bad[0]!r}: choose from {', '.join(REUSE_MODES)}")
        if not self.counts or any(not isinstance(c, int) or c < 1 for c in self.counts):
            raise ValueError(f"counts must be positive ints, got {self.counts!r}")
        if self.first_demos < 1:
            raise ValueError(f"first_demos must be >= 1, got {self.first_demos}")
        return self


def reuse_experiment(cfg: ReuseConfig, progress: bool = True) -> dict[str, Any]:
    """Success on the second task against its number of demonstrations, per mode."""
    cfg.validate()
    from rlsuite.platform.cluster import configure_driver_threads

    configure_driver_threads()
    tc = cfg.train_config()
    task = cfg.task
    first = D.collect(cfg.first_demos, "pick_place", num_workers=cfg.num_workers)
    second_pool = D.collect(max(cfg.counts), task, num_workers=cfg.num_workers)
    base = fit_hierarchical(first, tc, "strong")
    root = T.get(task).root
    same_root = root == base.spec.root
    results: dict[str, dict[int, float]] = {m: {} for m in cfg.modes}
    if "reuse" in cfg.modes and same_root:
        r = success_rate(base, task, cfg.episodes, cfg.num_workers, "reuse")["success"]
        results["reuse"] = {0: r, **{n: r for n in cfg.counts}}  # uses no demos of the task
        if progress:
            print(f"reuse as is: {r:.0%} (no {task} demonstrations)", flush=True)
    for n in sorted(cfg.counts):
        second = second_pool[:n]
        for mode in cfg.modes:
            if mode == "reuse" and same_root:
                continue
            if mode == "reuse":  # the skills as they are; the new root learned alone
                m = retrain(transfer(base, task, tc), second, tc, only=(root,))
            elif mode == "retrain" and same_root:
                m = retrain(copy.deepcopy(base), [*first, *second], tc)
            elif mode == "retrain":
                m = retrain(transfer(base, task, tc), second, tc)
            elif mode == "recreate":
                m = transfer(base, task, tc)
                m.reset_procedure("PLACE", seed=tc.seed)
                m = retrain(m, second, tc, only=("PLACE",) if same_root else (root, "PLACE"))
            else:
                m = fit_hierarchical(second, tc, "strong")
            results[mode][n] = success_rate(m, task, cfg.episodes, cfg.num_workers, mode)["success"]
        if progress:
            print(
                f"{n:>3} {task} demos: "
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


def print_reuse(res: dict[str, Any]) -> None:
    """A rich table of the skill-reuse experiment."""
    from rich.console import Console
    from rich.table import Table

    counts = res["config"]["counts"]
    task = res["config"].get("task", "stack")
    t = Table(title=f"skill reuse: {task} success vs {task} demonstrations")
    t.add_column("mode")
    for n in counts:
        t.add_column(f"{n} demos", justify="right")
    t.add_column("demos to 90%", justify="right")
    for mode, curve in res["success"].items():
        need = res["demos_to_90"][mode]
        t.add_row(
            mode, *[f"{curve[str(n)]:.0%}" for n in counts], "-" if need is None else str(need)
        )
    Console().print(t)


def plot_reuse(res: dict[str, Any], path: str) -> None:
    """PNG: second-task success against its demonstrations, one line per mode."""
    rows = [
        {"demos": n, "success": {m: c[str(n)] for m, c in res["success"].items()}}
        for n in res["config"]["counts"]
    ]
    task = res["config"].get("task", "stack")
    plot_sweep(rows, path, title=f"skill reuse on {task} (PICK/PLACE from pick_place)")


def load(path: str):
    """A saved model (see :func:`rlsuite.apps.hierarchy.robot.model.load`)."""
    return load_model(path)


IMPERFECTIONS = ("clean", "noise", "retry", "second_expert", "all")
"""Conditions of the imperfect-demonstration experiment: one imperfection at a time, or all."""


@dataclass(frozen=True)
class ImperfectConfig(TrainEvalSettings):
    """Strong vs weak supervision on imperfect demonstrations (evaluated on the clean task)."""

    task: str = "pick_place"
    """The task."""
    demos: int = 50
    """Demonstrations per condition."""
    conditions: tuple[str, ...] = IMPERFECTIONS
    """Which of :data:`IMPERFECTIONS` to run."""
    noise: float = 0.2
    """Action noise of the ``noise`` and ``all`` conditions."""
    retry: float = 0.3
    """Missed-grasp probability of the ``retry`` and ``all`` conditions."""
    second_expert: float = 0.5
    """Second expert's share of the ``second_expert`` and ``all`` conditions."""

    def imperfection(self, condition: str) -> Imperfection:
        """The :class:`Imperfection` of ``condition``."""
        on = {
            "clean": (),
            "noise": ("noise",),
            "retry": ("retry",),
            "second_expert": ("second_expert",),
            "all": ("noise", "retry", "second_expert"),
        }[condition]
        return Imperfection(**{k: getattr(self, k) for k in on}).validate()

    def validate(self) -> ImperfectConfig:
        self.validate_train_eval()
        T.get(self.task)
        bad = [c for c in self.conditions if c not in IMPERFECTIONS]
        if bad:
            raise ValueError(
                f"unknown condition {bad[0]!r}: choose from {', '.join(IMPERFECTIONS)}"
            )
        Imperfection(self.noise, self.retry, self.second_expert).validate()
        if not isinstance(self.demos, int) or self.demos < 1:
            raise ValueError(f"demos must be a positive int, got {self.demos!r}")
        return self


def imperfect_experiment(cfg: ImperfectConfig, progress: bool = True) -> dict[str, Any]:
    """Per condition: the imperfect expert's own success, strong and weak hierarchical
    success on the clean task, and how much of the expert's skill calls weak EM recovered."""
    import functools

    from rlsuite.apps.hierarchy.robot.expert import make_expert
    from rlsuite.apps.hierarchy.robot.model import skill_calls
    from rlsuite.platform.cluster import configure_driver_threads

    cfg.validate()
    configure_driver_threads()
    tc = cfg.train_config()
    rows = []
    for cond in cfg.conditions:
        imp = cfg.imperfection(cond)
        t0 = time.perf_counter()
        expert = evaluate(
            functools.partial(make_expert, task=cfg.task, imperfection=imp),
            scenarios(ENV_ID, cfg.episodes, {"task": cfg.task}),
            num_workers=cfg.num_workers,
            name=f"expert ({cond})",
        ).summary["success"]["mean"]
        demos = D.collect(cfg.demos, cfg.task, num_workers=cfg.num_workers, imperfection=imp)
        truth = [skill_calls(d) for d in demos]
        row: dict[str, Any] = {
            "condition": cond,
            "imperfection": asdict(imp),
            "expert_success": expert,
            "demo_steps": sum(len(d.actions) for d in demos) / len(demos),
            "retried_picks": sum(c[0] == "PICK" and c[2] > 5 for t in truth for c in t),
            "second_expert_demos": sum(d.info.get("expert") == "second" for d in demos),
            "success": {},
            "steps": {},
        }
        for sup in ("strong", "weak"):
            m = fit_hierarchical(demos, tc, sup)
            r = success_rate(m, cfg.task, cfg.episodes, cfg.num_workers, f"{sup} ({cond})")
            row["success"][sup], row["steps"][sup] = r["success"], r["steps"]
            if sup == "weak":
                got = m.extra["meta"]["skill_calls"]
                row["weak_recovered"] = {
                    "calls_objects_and_lengths": sum(a == b for a, b in zip(got, truth))
                    / len(truth),
                    "calls_and_objects": sum(
                        [c[:2] for c in a] == [c[:2] for c in b] for a, b in zip(got, truth)
                    )
                    / len(truth),
                }
        row["wall_s"] = time.perf_counter() - t0
        if progress:
            print(
                f"{cfg.task} {cond}: expert {expert:.0%}, strong {row['success']['strong']:.0%}, "
                f"weak {row['success']['weak']:.0%} (EM recovered "
                f"{row['weak_recovered']['calls_and_objects']:.0%} of the skill-call sequences)",
                flush=True,
            )
        rows.append(row)
    return {"config": asdict(cfg), "rows": rows}


def plot_imperfect(results: Sequence[dict[str, Any]], path: str) -> None:
    """PNG: strong and weak success per condition, one panel per task."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, axes = plt.subplots(1, len(results), figsize=(5.5 * len(results), 4), squeeze=False)
    for ax, res in zip(axes[0], results):
        conds = [r["condition"] for r in res["rows"]]
        x = np.arange(len(conds))
        for i, sup in enumerate(("strong", "weak")):
            ax.bar(x + (i - 0.5) * 0.38, [r["success"][sup] for r in res["rows"]], 0.38, label=sup)
        ax.plot(x, [r["expert_success"] for r in res["rows"]], "k_", ms=18, label="expert")
        ax.set_xticks(x)
        ax.set_xticklabels(conds, rotation=20)
        ax.set_ylim(0, 1.05)
        ax.set_ylabel("success (clean task)")
        ax.set_title(f"{res['config']['task']}: {res['config']['demos']} imperfect demonstrations")
        ax.grid(alpha=0.3, axis="y")
        ax.legend(loc="lower left")
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
