"""The program-synthesis experiment: demonstrations -> PHP and baselines -> accuracy by length.

Reproduces the shape of PHP's Table 2 (Fox et al., ICLR 2018): exact-match accuracy of whole
results (sums for ``addition``, sorted arrays for ``sort``) at several input lengths, per
model, with the number of strong (call stack visible) and weak (actions only)
demonstrations each model was trained on. The program family
(:mod:`rlsuite.apps.hierarchy.synthesis.programs`) gives the hierarchy, the teacher and the
env; saved models carry its name. Evaluation goes through
:func:`rlsuite.platform.evaluation.evaluate` (parallel Ray workers, fixed seeds).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import torch

ENV_ID = "rlsuite/Addition-v0"
"""The default program's env (``addition``); other programs name their own."""
MODELS = ("php", "flat-lstm", "npi")
EVAL_SEED0 = 1_000_000_000
"""Evaluation problems use seeds ``EVAL_SEED0 + i`` (training draws its own from ``seed``)."""


@dataclass(frozen=True)
class SynthesisConfig:
    """One run of the synthesis experiment (:meth:`for_program` fills a program's default
    lengths)."""

    program: str = "addition"
    """The program family: ``addition`` (long-hand addition) or ``sort`` (NPI's bubble sort)."""
    strong: int = 3
    """Strongly supervised demonstrations (call stack, arguments and pcs visible), in total."""
    weak: int = 300
    """Weakly supervised demonstrations (observations and actions only)."""
    models: tuple[str, ...] = MODELS
    """Which models to train: ``php``, ``flat-lstm``, ``npi`` (NPI needs strong traces)."""
    train_lengths: tuple[int, ...] = tuple(range(1, 11))
    """Lengths of the demonstrations (drawn uniformly): addition as PHP, 1-10 digits; sort
    2-10 elements (:meth:`for_program`)."""
    eval_lengths: tuple[int, ...] = (10, 100, 500, 1000)
    """Lengths at evaluation: addition 10-1000 digits; sort 10-100 elements."""
    eval_problems: int = 100
    """Problems per evaluation length (seeds ``EVAL_SEED0 + i``)."""
    seed: int = 0
    """Seeds the demonstrations and the networks' initialisation."""
    epochs: int = 400
    """Upper bound on training epochs per model."""
    lr: float = 1e-2
    """Adam step size."""
    hidden: tuple[int, ...] = (64, 64)
    """Hidden layers of each procedure's network (PHP)."""
    time_limit_s: float = 420.0
    """Wall-clock cap on each model's training (seconds)."""
    curriculum_length: int = 3
    """Weak-only PHP training first fits the demonstrations of at most this many digits."""
    target_loss: float = 2e-3
    """Stop training once the per-decision / per-action NLL is below this."""
    num_workers: int | None = None
    """Ray evaluation workers (default one per CPU); 0 evaluates in this process."""
    out_dir: str = "runs/hierarchy/synthesis"
    """Where models, the JSON and the PNG go."""

    @classmethod
    def for_program(cls, program: str = "addition", **fields: Any) -> SynthesisConfig:
        """A config for ``program`` whose lengths, where not given, are the program's own."""
        from rlsuite.apps.hierarchy.synthesis.programs import get_program

        fam = get_program(program)
        fields.setdefault("train_lengths", fam.train_lengths)
        fields.setdefault("eval_lengths", fam.eval_lengths)
        return cls(program=program, **fields)

    def validate(self) -> SynthesisConfig:
        from rlsuite.apps.hierarchy.synthesis.programs import get_program

        get_program(self.program)  # an unknown program is refused with the valid ones
        if self.strong < 0:
            raise ValueError(
                f"--strong must be >= 0 (number of strong demonstrations), got {self.strong}"
            )
        if self.weak < 0:
            raise ValueError(
                f"--weak must be >= 0 (number of weak demonstrations), got {self.weak}"
            )
        if self.strong + self.weak == 0:
            raise ValueError("no demonstrations: give --strong and/or --weak a positive count")
        if not self.models:
            raise ValueError(f"choose at least one model from {', '.join(MODELS)}")
        for m in self.models:
            if m not in MODELS:
                raise ValueError(f"unknown model {m!r}; choose from {', '.join(MODELS)}")
        for name, ls in (
            ("train_lengths", self.train_lengths),
            ("eval_lengths", self.eval_lengths),
        ):
            if not ls or min(ls) < 1:
                raise ValueError(f"{name} must be positive lengths, got {list(ls)}")
        if self.eval_problems < 1:
            raise ValueError(f"eval_problems must be >= 1, got {self.eval_problems}")
        if self.curriculum_length < 1:
            raise ValueError(f"curriculum_length must be >= 1, got {self.curriculum_length}")
        if self.epochs < 1:
            raise ValueError(f"epochs must be >= 1, got {self.epochs}")
        if not self.lr > 0:
            raise ValueError(f"lr must be > 0, got {self.lr}")
        if self.num_workers is not None and self.num_workers < 0:
            raise ValueError(f"num_workers must be >= 0, got {self.num_workers}")
        return self


class SavedController:
    """A picklable zero-argument factory: loads a saved model in each evaluation worker."""

    def __init__(self, path: str, name: str):
        self.path = path
        self.name = name

    def __call__(self) -> Any:
        torch.set_num_threads(1)
        return load_controller(self.path)


def save_model(model: Any, path: str, extra: dict[str, Any] | None = None) -> None:
    from rlsuite.apps.hierarchy.procedures.model import ProcedureModel

    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    if isinstance(model, ProcedureModel):
        model.save(path, extra={"kind": "php", **model.extra, **(extra or {})})
    else:
        model.save(path)


def load_model(path: str) -> Any:
    """A model saved by :func:`save_model` (PHP, flat LSTM or NPI), kind and program read
    from the file."""
    from rlsuite.apps.hierarchy.procedures.model import ProcedureModel
    from rlsuite.apps.hierarchy.synthesis.baselines import FlatLSTM, NPICore

    if not os.path.exists(path):
        raise FileNotFoundError(
            f"no saved model at {path!r}: train one with `hier-train synthesis`"
        )
    blob = torch.load(path, map_location="cpu", weights_only=False)
    kind = blob.get("kind") or blob.get("extra", {}).get("kind")
    if kind == "php" or "spec" in blob:
        return ProcedureModel.load(path)
    program = blob.get("program", "addition")  # models saved before sort existed: addition
    if kind == "flat-lstm":
        m = FlatLSTM(obs_dim=blob["obs_dim"], hidden=blob["hidden"], program=program)
    elif kind == "npi":
        m = NPICore(hidden=blob["hidden"], program=program)
    else:
        raise ValueError(f"{path!r} is not a hierarchy synthesis model (kind {kind!r})")
    m.load_state_dict(blob["state"])
    m.eval()
    return m


def program_of(model: Any) -> Any:
    """The program family a loaded model belongs to."""
    from rlsuite.apps.hierarchy.procedures.model import ProcedureModel
    from rlsuite.apps.hierarchy.synthesis.programs import get_program, program_of_spec

    if isinstance(model, ProcedureModel):
        name = model.extra.get("program")
        return get_program(name) if name else program_of_spec(model.spec.root)
    return model.family


def controller_for(model: Any) -> Any:
    from rlsuite.apps.hierarchy.procedures.model import ProcedureModel

    if isinstance(model, ProcedureModel):
        return program_of(model).controller(model, name="php")
    return model.controller()


def load_controller(path: str) -> Any:
    return controller_for(load_model(path))


def train_model(
    kind: str, strong: list, weak: list, cfg: SynthesisConfig, log=None
) -> tuple[Any, dict[str, Any]]:
    """Train one model on the demonstrations it can use; returns it and its training record."""
    from rlsuite.apps.hierarchy.procedures.fit import fit
    from rlsuite.apps.hierarchy.procedures.model import ProcedureModel
    from rlsuite.apps.hierarchy.synthesis.baselines import FlatLSTM, NPICore
    from rlsuite.apps.hierarchy.synthesis.programs import get_program

    spec = get_program(cfg.program).spec
    torch.set_num_threads(1)
    t_cpu, t_wall = time.process_time(), time.perf_counter()

    def progress(ep, row):
        if log is not None and (ep % 25 == 0):
            log(kind, ep, row)

    full = {"epochs": cfg.epochs, "lr": cfg.lr, "seed": cfg.seed, "progress": progress}
    baselines = {"flat-lstm": FlatLSTM, "npi": NPICore}
    if kind == "php":
        model = ProcedureModel(spec, hidden=cfg.hidden)
        model.extra["program"] = cfg.program
        hist: list[dict] = []
        if strong:  # fit the few strong traces first: it pins the call structure for EM
            hist += fit(
                model,
                strong=strong,
                epochs=min(200, cfg.epochs),
                lr=3e-3,
                seed=cfg.seed,
                target_loss=cfg.target_loss,
            )
        if weak and not strong:
            # without strong traces, EM starts on the shortest demonstrations (a curriculum):
            # their call stacks are the least ambiguous, and the structure found there
            # carries over to the long ones
            short = [t for t in weak if t.info.get("length", 99) <= cfg.curriculum_length]
            if short and len(short) < len(weak):
                hist += fit(
                    model, weak=short, **full, time_limit_s=cfg.time_limit_s / 3, target_loss=0.05
                )
        if weak:
            hist += fit(
                model,
                strong=strong,
                weak=weak,
                **full,
                time_limit_s=cfg.time_limit_s,
                target_loss=cfg.target_loss,
            )
        used = {"strong": len(strong), "weak": len(weak)}
    elif kind in baselines:
        model = baselines[kind](program=cfg.program)
        demos = strong + weak if model.uses_weak else strong
        hist = model.fit(demos, **full, time_limit_s=cfg.time_limit_s, target_loss=cfg.target_loss)
        used = {"strong": len(strong), "weak": len(weak) if model.uses_weak else 0}
    else:
        raise ValueError(f"unknown model {kind!r}; choose from {', '.join(MODELS)}")
    last = hist[-1] if hist else {}
    rec = {
        "model": kind,
        **used,
        "epochs": len(hist),
        "final_loss": {k: v for k, v in last.items() if k not in ("epoch", "wall_s")},
        "train_cpu_s": time.process_time() - t_cpu,
        "train_wall_s": time.perf_counter() - t_wall,
    }
    return model, rec


def evaluate_saved(
    path: str, name: str, lengths, problems: int, num_workers: int | None, progress: bool = False
) -> dict[str, Any]:
    """Exact-match accuracy per length of a saved model (on its program's env) through the
    platform's evaluation."""
    from rlsuite.platform.evaluation import evaluate, scenarios

    fam = program_of(load_model(path))
    scen = []
    for L in lengths:
        scen += scenarios(
            fam.env_id, [EVAL_SEED0 + i for i in range(problems)], {"length": int(L)}, name=f"{L}"
        )
    res = evaluate(
        SavedController(path, name), scen, num_workers=num_workers, progress=progress, name=name
    )
    per = res.by_scenario()
    return {
        "accuracy": {str(L): per[str(L)]["correct"]["mean"] for L in lengths},
        fam.detail_metric: {str(L): per[str(L)][fam.detail_metric]["mean"] for L in lengths},
        "program": fam.name,
        "problems": problems,
        "eval_wall_s": res.wall_time_s,
    }


def run_synthesis(cfg: SynthesisConfig, console=None) -> dict[str, Any]:
    """Demonstrations, training of each model, evaluation; writes models, JSON and PNG to out_dir."""
    from rich.console import Console

    from rlsuite.apps.hierarchy.synthesis.programs import get_program

    cfg.validate()
    fam = get_program(cfg.program)
    console = console or Console()
    os.makedirs(cfg.out_dir, exist_ok=True)
    t0 = time.perf_counter()
    strong = fam.make_traces(cfg.strong, seed=cfg.seed, lengths=cfg.train_lengths)
    weak = fam.make_traces(cfg.weak, seed=cfg.seed + 1, lengths=cfg.train_lengths, strong=False)
    n_cols = sum(t.info["length"] for t in strong + weak)
    console.print(
        f"{fam.title} demonstrations: {len(strong)} strong + {len(weak)} weak "
        f"({n_cols} {fam.unit.split()[0]}, "
        f"{sum(len(t) for t in strong + weak)} actions)"
    )

    def log(kind, ep, row):
        console.print(
            f"  {kind} epoch {ep}: "
            + ", ".join(f"{k}={v:.4g}" for k, v in row.items() if k != "epoch")
        )

    rows = []
    for kind in cfg.models:
        if kind == "npi" and not strong:
            console.print("[yellow]npi: skipped (it needs strong demonstrations)[/]")
            continue
        console.print(f"[bold]training {kind}[/]")
        model, rec = train_model(kind, strong, weak, cfg, log=log)
        path = os.path.join(cfg.out_dir, f"{kind}.pt")
        save_model(model, path, extra={"config": _jsonable(asdict(cfg))})
        console.print(
            f"  {kind}: {rec['epochs']} epochs, {rec['train_cpu_s']:.0f} CPU-s; evaluating"
        )
        ev = evaluate_saved(
            path, kind, cfg.eval_lengths, cfg.eval_problems, cfg.num_workers, progress=True
        )
        rows.append({**rec, **ev, "path": path})
    result = {
        "config": _jsonable(asdict(cfg)),
        "results": rows,
        "wall_s": time.perf_counter() - t0,
        "machine": "2-core CPU, no GPU",
    }
    with open(os.path.join(cfg.out_dir, "synthesis.json"), "w") as f:
        json.dump(result, f, indent=2)
    plot_accuracy(
        rows,
        cfg.eval_lengths,
        os.path.join(cfg.out_dir, "accuracy_vs_length.png"),
        title=f"{fam.title}: {cfg.strong} strong + {cfg.weak} weak demonstrations",
        unit=fam.unit,
    )
    console.print(results_table(rows, cfg.eval_lengths, title=f"{fam.title}: exact-match accuracy"))
    return result


def _jsonable(d: dict) -> dict:
    return json.loads(json.dumps(d, default=lambda o: list(o) if isinstance(o, tuple) else str(o)))


def results_table(rows: list[dict], lengths, title: str = "exact-match accuracy of whole sums"):
    from rich.table import Table

    t = Table(title=title)
    for c in ("model", "strong", "weak", "train CPU-s"):
        t.add_column(c, justify="right" if c != "model" else "left")
    for L in lengths:
        t.add_column(f"len {L}", justify="right")
    for r in rows:
        t.add_row(
            r["model"],
            str(r["strong"]),
            str(r["weak"]),
            f"{r['train_cpu_s']:.0f}",
            *[f"{100 * r['accuracy'][str(L)]:.0f}%" for L in lengths],
        )
    return t


def plot_accuracy(
    rows: list[dict], lengths, path: str, title: str = "", unit: str = "digits per number"
) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for r in rows:
        ax.plot(
            list(lengths),
            [100 * r["accuracy"][str(L)] for L in lengths],
            marker="o",
            label=f"{r['model']} ({r['strong']} strong, {r['weak']} weak)",
        )
    ax.set_xscale("log")
    ax.set_xticks(list(lengths))
    ax.set_xticklabels([str(L) for L in lengths])
    ax.minorticks_off()
    ax.set_xlabel(unit)
    ax.set_ylabel("exact-match accuracy (%)")
    ax.set_ylim(-5, 105)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


__all__ = [
    "SynthesisConfig",
    "run_synthesis",
    "train_model",
    "evaluate_saved",
    "load_model",
    "load_controller",
    "save_model",
    "results_table",
    "plot_accuracy",
    "np",
]
