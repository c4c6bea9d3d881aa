"""The robot's learned controllers: the shared procedure model trained on demonstrations,
flat cloning, and their files.

The hierarchical controller IS a :class:`~rlsuite.apps.hierarchy.procedures.model.ProcedureModel`
of a task's hierarchy (:func:`program.spec_for`, :func:`program.make_model`), run by the shared
:class:`~rlsuite.apps.hierarchy.procedures.executor.Executor` (:func:`controller`). Its
per-procedure view (:class:`program.RobotView`) lets a skill see the scene from the object
it was called with and output MOVE_TO goals relative to it; the leaves emit continuous STEP
commands (a Gaussian head) and learn when to stop.

Strong supervision: :func:`~rlsuite.apps.hierarchy.procedures.fit.fit` on the recorded
traces (the strong loss). Weak supervision (observations and actions only): the same
``fit`` with ``weak_infer=`` :func:`infer_stacks`, hard EM over leaf calls and then skill
calls (:mod:`rlsuite.apps.hierarchy.robot.weak`). :class:`TrainConfig`
(:mod:`rlsuite.apps.hierarchy.robot.train_config`) and :func:`infer_stacks` are importable
from here too.

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

:func:`transfer` moves a model's skills and leaves into another task's hierarchy (skill
reuse across tasks).
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from rlsuite.apps.hierarchy.procedures.calls import call_tree
from rlsuite.apps.hierarchy.procedures.fit import fit
from rlsuite.apps.hierarchy.procedures.model import ProcedureModel
from rlsuite.apps.hierarchy.procedures.traces import Trace
from rlsuite.apps.hierarchy.robot.program import Controller, make_model
from rlsuite.apps.hierarchy.robot.recording import commands
from rlsuite.apps.hierarchy.robot.tasks import OBS_DIM
from rlsuite.apps.hierarchy.robot.train_config import TrainConfig
from rlsuite.apps.hierarchy.robot.weak import infer_stacks

SUPERVISION = ("strong", "weak")
FORMAT_VERSION = 3
"""3: a root sees the scene (:func:`program.scene_features`); 2: its pc and the slots in use."""


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
    model = make_model(cfg.hidden, cfg.seed, task_of(demos))
    with _one_thread():
        if supervision == "strong":
            if any(d.events is None for d in demos):
                raise ValueError(
                    "strong supervision needs demonstrations with call stacks; these are weak "
                    "(use supervision='weak')"
                )
            fit(model, strong=demos, epochs=cfg.steps, lr=cfg.lr, seed=cfg.seed, cosine=True)
        else:
            inferred: list[Trace] = []

            def infer(m: ProcedureModel, weak: Sequence[Trace]) -> list[Trace]:
                inferred[:] = infer_stacks(m, weak, cfg)
                return inferred

            fit(
                model,
                weak=D_weak(demos),
                epochs=cfg.steps,
                lr=cfg.lr,
                seed=cfg.seed,
                cosine=True,
                weak_infer=infer,
            )
    model.extra["meta"] = dict(
        supervision=supervision, demos=len(demos), tasks=sorted({d.info["task"] for d in demos})
    )
    if supervision == "weak":  # what EM filled in, to compare with the expert's calls
        model.extra["meta"]["skill_calls"] = [skill_calls(t) for t in inferred]
    model.extra["config"] = asdict(cfg)
    return model


def skill_calls(trace: Trace) -> list[list]:
    """The root's calls of a strong trace: ``[skill, object, number of leaf calls]`` each."""
    return [[c.proc, int(c.args[0]), len(c.children)] for c in call_tree(trace).children]


def task_of(demos: Sequence[Trace]) -> str:
    """The one task all ``demos`` were recorded on (a model learns one task's root)."""
    found = sorted({str(d.info.get("task")) for d in demos})
    if len(found) != 1:
        raise ValueError(f"demonstrations of one task at a time, got tasks {found}")
    return found[0]


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


def transfer(source: ProcedureModel, task: str, config: TrainConfig) -> ProcedureModel:
    """A fresh model of ``task`` holding ``source``'s skills and leaves (PICK, PLACE,
    MOVE_TO, OPEN, CLOSE: same networks, same view of the observation); only the root is
    new (untrained) when the tasks' roots differ, otherwise a copy of ``source``."""
    model = make_model(config.hidden, config.seed, task)
    shared = [p.name for p in model.spec.procedures if p.name in source.index]
    for name in shared:
        si, di = source.index[name], model.index[name]
        model.nets[di].load_state_dict(source.nets[si].state_dict())
        for k, v in source.log_std.items():
            if k.split("_")[0] == str(si):
                model.log_std[f"{di}_{k.split('_', 1)[1]}"].data.copy_(v.data)
    model.extra = {"meta": {**source.extra.get("meta", {}), "transferred_to": task}}
    return model


def controller(model: ProcedureModel, name: str = "hierarchical") -> Controller:
    """A deterministic controller (``reset``/``act``) running the model through the Executor."""
    return Controller(model.eval(), name=name, spec=model.spec)


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
