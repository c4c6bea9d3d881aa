"""What the program-synthesis benchmarks share (long-hand addition, NPI's bubble sort): their
settings, the demonstrations, training and evaluating each row, the JSON, the PNG and the
table, run by ``rlsuite bench run hierarchy_synthesis`` or ``hierarchy_sort``.

Each declaration states its program's own part in a :class:`ProgramBench`: the defaults, the
rows of its quick run, its pass criterion and the paper it is read against. The rows, in
this order (``--npi-strong 0`` leaves the last out):

  php                 S strong + W weak (the target configuration)
  php (weak only)     0 strong + W weak
  php (strong only)   S strong
  flat-lstm           S strong + W weak (through their actions)
  npi                 S strong (NPI needs the call stack)
  npi (N strong)      N strong
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

ROWS = ("php", "php (weak only)", "php (strong only)", "flat-lstm", "npi")
"""The rows every program runs (and ``npi (N strong)`` with ``--npi-strong N``)."""
QUICK_PROBLEMS = 20
"""Problems per length of a ``--quick`` run."""


@dataclass(frozen=True)
class SynthesisSettings:
    """The flags of a program-synthesis benchmark (a declaration subclasses it for its
    own defaults)."""

    strong: int = 3
    """strong demonstrations for php"""
    weak: int = 300
    """weak demonstrations"""
    npi_strong: int = 0
    """strong demonstrations of a larger NPI row (0: no such row)"""
    problems: int = 100
    """problems per evaluation length"""
    weak_only: bool = False
    """run only the weak-only PHP row (its own JSON, <stem>_weak_only)"""
    workers: int = 0
    """evaluation workers (0: one per CPU)"""
    epochs: int = 400
    """upper bound on training epochs per row"""


@dataclass(frozen=True)
class ProgramBench:
    """One program's benchmark: what differs between addition and sort."""

    program: str
    """The program family (``rlsuite.apps.hierarchy.synthesis.programs``)."""
    stem: str
    """Results file stem (``.json``, ``.png``)."""
    criteria: Callable[[dict[str, Any], Sequence[int], Any], dict[str, dict[str, Any]]]
    """``(php row, lengths, config) -> {name: {"value": ..., "pass": bool, ...}}``."""
    paper: dict[str, Any]
    """The paper's reference rows, under their JSON key."""
    time_limit_s: float = 420.0
    """Training wall-clock cap per row with strong traces."""
    weak_only_time_limit_s: float = 240.0
    """Training wall-clock cap of the weak-only row (EM from scratch)."""
    max_strong: int | None = None
    """Largest ``--strong`` the pass criterion allows (``None``: no bound)."""
    quick_lengths: tuple[int, ...] = (10, 20)
    """Evaluation lengths of ``--quick``."""
    quick_rows: tuple[str, ...] = ("php", "flat-lstm")
    """Rows of ``--quick`` (names from :data:`ROWS`)."""
    paper_rows: Callable[[Sequence[int]], list[list[str]]] = lambda lengths: []
    """Dimmed rows of the console table from the paper (``lengths`` -> table cells)."""
    titles: tuple[str, str] = ("exact-match accuracy (ours)", "exact-match accuracy by length")
    """Titles of the console table and of the PNG."""


def row_data(s: SynthesisSettings, strong, weak, many_strong) -> dict[str, tuple]:
    """Each row's model kind and its strong and weak demonstrations, in table order."""
    data = {
        "php": ("php", strong, weak),
        "php (weak only)": ("php", [], weak),
        "php (strong only)": ("php", strong, []),
        "flat-lstm": ("flat-lstm", strong, weak),
        "npi": ("npi", strong, []),
    }
    if s.npi_strong > 0:
        data[f"npi ({s.npi_strong} strong)"] = ("npi", many_strong, [])
    return data


def run(bench: ProgramBench, ctx) -> int:
    """Train and evaluate the rows, write the JSON and the PNG, print the table and the
    criteria; 0 when every criterion passes."""
    from rlsuite.apps.hierarchy.synthesis.experiment import (
        SynthesisConfig,
        evaluate_saved,
        plot_accuracy,
        results_table,
        save_model,
        train_model,
    )
    from rlsuite.apps.hierarchy.synthesis.programs import get_program
    from rlsuite.platform import cluster

    s = ctx.settings
    if bench.max_strong is not None and not 0 <= s.strong <= bench.max_strong:
        raise ValueError(f"--strong must be in 0..{bench.max_strong} (the target), got {s.strong}")
    fam = get_program(bench.program)
    lengths = bench.quick_lengths if ctx.quick else fam.eval_lengths
    cfg = SynthesisConfig.for_program(
        bench.program, strong=s.strong, weak=s.weak, eval_lengths=lengths,
        eval_problems=s.problems, epochs=s.epochs, time_limit_s=bench.time_limit_s,
        out_dir=ctx.run_dir(f"runs/bench/{bench.stem.replace('_', '-')}"),
    ).validate()  # fmt: skip
    strong = fam.make_traces(cfg.strong, seed=cfg.seed, lengths=cfg.train_lengths)
    weak = fam.make_traces(cfg.weak, seed=cfg.seed + 1, lengths=cfg.train_lengths, strong=False)
    many_strong = fam.make_traces(s.npi_strong, seed=cfg.seed + 2, lengths=cfg.train_lengths)
    ctx.say(
        f"demonstrations: {len(strong)} strong (lengths {[t.info['length'] for t in strong]}), "
        f"{len(weak)} weak ({sum(len(t) for t in weak)} actions)"
    )
    data = row_data(s, strong, weak, many_strong)
    labels = list(bench.quick_rows if ctx.quick else data)
    stem = bench.stem
    if s.weak_only:
        labels, stem = ["php (weak only)"], f"{bench.stem}_weak_only"

    def log(kind, ep, row):
        ctx.say(f"  {kind} epoch {ep}: " + ", ".join(f"{k}={v:.4g}" for k, v in row.items()))

    rows = []
    cluster.configure_driver_threads()
    with cluster.local_cluster():
        for label in labels:
            kind, st, wk = data[label]
            ctx.say(f"[bold]{label}[/]: {len(st)} strong + {len(wk)} weak")
            # weak-only EM from scratch gets a shorter leash than the target configuration
            run_cfg = replace(cfg, time_limit_s=bench.weak_only_time_limit_s) if not st else cfg
            model, rec = train_model(kind, st, wk, run_cfg, log=log)
            path = f"{cfg.out_dir}/{label.replace(' ', '_').replace('(', '').replace(')', '')}.pt"
            save_model(model, path)
            ev = evaluate_saved(path, label, lengths, s.problems, s.workers or None, progress=True)
            rows.append({**rec, **ev, "model": label, "path": path})
            ctx.save(f"{stem}.partial", {"results": rows})  # a run cut short leaves its rows
            ctx.say("  accuracy: " + ", ".join(f"{L}: {rows[-1]['accuracy'][str(L)]:.0%}" for L in lengths))  # fmt: skip

    php = next((r for r in rows if r["model"] == "php"), None)
    crit = {} if php is None else bench.criteria(php, lengths, cfg)
    out = {
        "lengths": list(lengths),
        "problems_per_length": s.problems,
        "demonstrations": {
            "strong": len(strong),
            "weak": len(weak),
            "train_lengths": list(cfg.train_lengths),
            "strong_lengths": [t.info["length"] for t in strong],
        },
        "results": rows,
        **bench.paper,
        "criteria": crit,
        "passed": all(c["pass"] for c in crit.values()),
    }
    ctx.save(stem, out)
    ctx.path(f"{stem}.partial").unlink(missing_ok=True)
    plot_accuracy(rows, lengths, str(ctx.path(stem, ".png")), title=bench.titles[1], unit=fam.unit)
    t = results_table(rows, lengths, title=bench.titles[0])
    for cells in bench.paper_rows(lengths):
        t.add_row(*cells)
    ctx.say(t)
    return ctx.verdict({f"{k}: {c['value']}": c["pass"] for k, c in crit.items()})
