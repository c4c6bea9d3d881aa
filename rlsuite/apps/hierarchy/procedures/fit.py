"""Training a :class:`~.model.ProcedureModel` from strong and weak traces: :func:`fit`.

Strong traces train with the model's strong loss. Weak traces (observations and actions
only) go one of two ways: the exact marginal over hidden call stacks
(:class:`~.weak.WeakLattice`, for argument-free hierarchies), or hard EM, where a
``weak_infer`` function (e.g. the robot's segmentation, built on :mod:`.segmentation`)
fills the call stacks in and the filled-in traces train with the strong loss.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np
import torch

from rlsuite.apps.hierarchy.procedures.model import ProcedureModel
from rlsuite.apps.hierarchy.procedures.traces import Trace
from rlsuite.apps.hierarchy.procedures.weak import WeakLattice

WeakInfer = Callable[[ProcedureModel, Sequence[Trace]], list[Trace]]
"""Fills in weak traces' call stacks (hard EM): ``(model, weak traces) -> strong traces``."""


def fit(
    model: ProcedureModel,
    strong: Sequence[Trace] = (),
    weak: Sequence[Trace] = (),
    epochs: int = 200,
    lr: float = 3e-3,
    weak_batch: int = 64,
    weak_weight: float = 1.0,
    seed: int = 0,
    progress: Callable[[int, dict[str, float]], None] | None = None,
    time_limit_s: float | None = None,
    target_loss: float | None = None,
    weak_infer: WeakInfer | None = None,
    only: Sequence[str] | None = None,
    cosine: bool = False,
) -> list[dict[str, float]]:
    """Adam on the strong NLL plus the weak traces' NLL: the one training entry point.

    Weak traces are used one of two ways:

    - ``weak_infer=None``: the exact marginal NLL over hidden call stacks
      (:class:`WeakLattice`, expectation-gradient). Needs procedures without
      arguments (the stacks must be enumerable): the synthesis side.
    - ``weak_infer=f``: hard EM. ``f(model, weak)`` fills in the traces' call stacks
      (it may train this model on partial stacks as it goes, e.g. leaf segmentation),
      returning strong traces, which then train the model with the strong loss like
      recorded ones. Any argument kind, continuous ones included: the robot side
      (:func:`rlsuite.apps.hierarchy.robot.model.infer_stacks`).

    ``only``: train these procedures alone (the others stay fixed). ``cosine``: cosine
    learning-rate decay over ``epochs``. Returns one row per epoch (``strong_nll``,
    ``weak_nll`` per decision / action). ``target_loss`` stops early once the combined
    per-item loss is below it.
    """
    if epochs < 0:
        raise ValueError(f"epochs must be >= 0, got {epochs}")
    if not strong and not weak:
        raise ValueError("fit needs at least one strong or weak trace")
    if only is not None:
        unknown = [n for n in only if n not in model.index]
        if unknown:
            raise ValueError(f"unknown procedures {unknown}; known: {sorted(model.index)}")
    from rlsuite.platform.cluster import configure_driver_threads

    configure_driver_threads()  # torch's one-thread-per-core default thrashes a busy machine
    if weak and weak_infer is not None:
        strong = [*strong, *weak_infer(model, weak)]
        weak = ()
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    model.train()
    sdata = model.prepare_strong(strong, only) if strong else None
    lattice = WeakLattice(model.spec) if weak else None
    if lattice is not None and (model.view is not None or model.separate_termination):
        raise ValueError(
            "the exact weak likelihood (WeakLattice) needs the default inputs and a shared "
            "termination head; give weak_infer (hard EM) for a model with a view"
        )
    wdata = lattice.prepare(weak) if lattice else None
    if only is None:
        params = list(model.parameters())
    else:
        keep = {str(model.index[n]) for n in only}
        params = [p for n in only for p in model.nets[model.index[n]].parameters()]
        params += [v for k, v in model.log_std.items() if k.split("_")[0] in keep]
    opt = torch.optim.Adam(params, lr=lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, max(epochs, 1)) if cosine else None
    history = []
    t0 = time.perf_counter()
    for ep in range(epochs):
        row: dict[str, float] = {"epoch": float(ep)}
        batches = [None]
        if wdata is not None:
            # batches of similar lengths (less padding), in random order
            order = np.argsort(wdata.lengths.numpy() + rng.random(wdata.n), kind="stable")
            batches = [order[i : i + weak_batch] for i in range(0, wdata.n, weak_batch)]
            batches = [batches[i] for i in rng.permutation(len(batches))]
        s_sum = w_sum = 0.0
        s_n = w_n = 0
        for bi, idx in enumerate(batches):
            opt.zero_grad()
            loss = torch.zeros(())
            if sdata is not None and bi == 0:
                sl, sn = model.strong_loss(sdata)
                loss = loss + sl / max(sn, 1)
                s_sum += float(sl.detach())
                s_n += sn
            if idx is not None:
                wl, wn = lattice.nll(model, wdata, idx)
                loss = loss + weak_weight * wl / max(wn, 1)
                w_sum += float(wl.detach())
                w_n += wn
            if loss.requires_grad:
                loss.backward()
                opt.step()
        if sched is not None:
            sched.step()
        if s_n:
            row["strong_nll"] = s_sum / s_n
        if w_n:
            row["weak_nll"] = w_sum / w_n
        row["wall_s"] = time.perf_counter() - t0
        history.append(row)
        if progress is not None:
            progress(ep, row)
        combined = row.get("strong_nll", 0.0) + row.get("weak_nll", 0.0)
        if target_loss is not None and combined < target_loss:
            break
        if time_limit_s is not None and row["wall_s"] > time_limit_s:
            break
    model.eval()
    return history
