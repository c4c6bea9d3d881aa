"""What the program-synthesis benchmarks share (long-hand addition, NPI's bubble sort): the
flags, the demonstrations, training and evaluating each row, the JSON, the PNG and the table.

Each script states its program's own part in a :class:`ProgramBench`: the defaults, the
rows of its quick run, its pass criterion and the paper it is read against; ``main`` runs it.
The rows, in this order (``--npi-strong 0`` leaves the last out):

  php                 S strong + W weak (the target configuration)
  php (weak only)     0 strong + W weak
  php (strong only)   S strong
  flat-lstm           S strong + W weak (through their actions)
  npi                 S strong (NPI needs the call stack)
  npi (N strong)      N strong
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from rlsuite.bench import results_dir

RESULTS = results_dir("hierarchy")
ROWS = ("php", "php (weak only)", "php (strong only)", "flat-lstm", "npi")
"""The rows every program runs (and ``npi (N strong)`` with ``--npi-strong N``)."""


@dataclass(frozen=True)
class ProgramBench:
    """One program's benchmark: what differs between addition and sort."""

    program: str
    """The program family (``rlsuite.apps.hierarchy.synthesis.programs``)."""
    stem: str
    """Results file stem under ``benchmarks/results`` (``.json``, ``.png``)."""
    doc: str
    """The script's docstring (``--help``)."""
    command: str
    """The command line as RESULTS.md lists it (flags are appended)."""
    weak: int
    """Default number of weak demonstrations."""
    npi_strong: int
    """Default strong demonstrations of the larger NPI row (0: no such row)."""
    max_strong: int | None
    """Largest ``--strong`` the pass criterion allows (``None``: no bound)."""
    time_limit_s: float
    """Training wall-clock cap per row with strong traces."""
    weak_only_time_limit_s: float
    """Training wall-clock cap of the weak-only row (EM from scratch)."""
    out_dir: str
    """Where the trained models go."""
    quick_lengths: tuple[int, ...]
    """Evaluation lengths of ``--quick`` (20 problems each)."""
    quick_rows: tuple[str, ...]
    """Rows of ``--quick`` (names from :data:`ROWS`)."""
    criteria: Callable[[dict[str, Any], Sequence[int], Any], dict[str, dict[str, Any]]]
    """``(php row, lengths, config) -> {name: {"value": ..., "pass": bool, ...}}``."""
    paper_key: str
    """JSON key of the paper's reference rows."""
    paper: tuple[dict[str, Any], ...]
    """The paper's reference rows (JSON)."""
    paper_rows: Callable[[Sequence[int]], list[list[str]]] = lambda lengths: []
    """Dimmed rows of the console table from the paper (``lengths`` -> table cells)."""
    table_title: str = ""
    """Title of the console table."""
    plot_title: str = ""
    """Title of the PNG."""


def parser(bench: ProgramBench) -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        description=bench.doc, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--strong", type=int, default=3, help="strong demonstrations for php (default 3)"
    )
    ap.add_argument(
        "--weak", type=int, default=bench.weak, help=f"weak demonstrations (default {bench.weak})"
    )
    ap.add_argument(
        "--npi-strong",
        type=int,
        default=bench.npi_strong,
        help=f"strong demonstrations of a larger NPI row (default {bench.npi_strong}; 0: no row)",
    )
    ap.add_argument("--problems", type=int, default=100, help="problems per length (default 100)")
    ap.add_argument(
        "--quick",
        action="store_true",
        help=f"lengths {','.join(map(str, bench.quick_lengths))} with 20 problems, "
        f"{len(bench.quick_rows)} rows",
    )
    ap.add_argument(
        "--weak-only",
        action="store_true",
        help=f"run only the weak-only PHP row (its own JSON: {bench.stem}_weak_only.json)",
    )
    ap.add_argument(
        "--workers", type=int, default=None, help="evaluation workers (default one per CPU)"
    )
    ap.add_argument("--out", default=os.path.join(RESULTS, bench.stem + ".json"))
    return ap


def _write_partial(path: str, rows: list[dict]) -> None:
    """The rows so far, next to the final JSON (a long run leaves something if cut short)."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(os.path.splitext(path)[0] + ".partial.json", "w") as f:
        json.dump({"results": rows}, f, indent=2, default=str)


def main(bench: ProgramBench, argv: list[str] | None = None) -> int:
    """Parse ``argv``, train and evaluate the rows, write the JSON and the PNG, print the
    table and the criteria; 0 when every criterion passes."""
    ap = parser(bench)
    args = ap.parse_args(argv)
    if bench.max_strong is not None and not 0 <= args.strong <= bench.max_strong:
        ap.error(
            f"--strong must be in 0..{bench.max_strong} (the target is at most "
            f"{bench.max_strong}), got {args.strong}"
        )

    from rich.console import Console

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

    con = Console()
    fam = get_program(bench.program)
    lengths = bench.quick_lengths if args.quick else fam.eval_lengths
    problems = 20 if args.quick else args.problems
    cfg = SynthesisConfig.for_program(
        bench.program,
        strong=args.strong,
        weak=args.weak,
        eval_lengths=lengths,
        eval_problems=problems,
        epochs=400,
        time_limit_s=bench.time_limit_s,
        out_dir=bench.out_dir,
    ).validate()
    os.makedirs(cfg.out_dir, exist_ok=True)
    t0 = time.perf_counter()
    strong = fam.make_traces(cfg.strong, seed=cfg.seed, lengths=cfg.train_lengths)
    weak = fam.make_traces(cfg.weak, seed=cfg.seed + 1, lengths=cfg.train_lengths, strong=False)
    many_strong = fam.make_traces(args.npi_strong, seed=cfg.seed + 2, lengths=cfg.train_lengths)
    con.print(
        f"demonstrations: {len(strong)} strong (lengths {[t.info['length'] for t in strong]}, "
        f"{sum(len(t) for t in strong)} actions), {len(weak)} weak "
        f"({sum(len(t) for t in weak)} actions)"
    )

    data = {
        "php": ("php", strong, weak),
        "php (weak only)": ("php", [], weak),
        "php (strong only)": ("php", strong, []),
        "flat-lstm": ("flat-lstm", strong, weak),
        "npi": ("npi", strong, []),
    }
    labels = list(ROWS)
    if args.npi_strong > 0:
        label = f"npi ({args.npi_strong} strong)"
        data[label] = ("npi", many_strong, [])
        labels.append(label)
    if args.quick:
        labels = list(bench.quick_rows)
    out_path = args.out
    if args.weak_only:
        labels = ["php (weak only)"]
        if out_path == os.path.join(RESULTS, bench.stem + ".json"):
            out_path = os.path.join(RESULTS, bench.stem + "_weak_only.json")

    def log(kind, ep, row):
        con.print(
            f"  {kind} epoch {ep}: "
            + ", ".join(f"{k}={v:.4g}" for k, v in row.items() if k != "epoch")
        )

    rows = []
    cluster.configure_driver_threads()
    with cluster.local_cluster():
        for label in labels:
            kind, s, w = data[label]
            con.rule(f"{label}: {len(s)} strong + {len(w)} weak")
            # weak-only EM from scratch gets a shorter leash than the target configuration
            run_cfg = replace(cfg, time_limit_s=bench.weak_only_time_limit_s) if not s else cfg
            model, rec = train_model(kind, s, w, run_cfg, log=log)
            path = os.path.join(
                cfg.out_dir, label.replace(" ", "_").replace("(", "").replace(")", "") + ".pt"
            )
            save_model(model, path)
            con.print(
                f"  trained in {rec['train_cpu_s']:.0f} CPU-s ({rec['epochs']} epochs); evaluating"
            )
            ev = evaluate_saved(path, label, lengths, problems, args.workers, progress=True)
            row = {**rec, **ev, "model": label, "path": path}
            rows.append(row)
            _write_partial(out_path, rows)
            con.print(
                "  accuracy: "
                + ", ".join(f"{L}: {100 * row['accuracy'][str(L)]:.0f}%" for L in lengths)
                + f"; {fam.detail_metric.replace('_', ' ')}: "
                + ", ".join(f"{L}: {100 * row[fam.detail_metric][str(L)]:.0f}%" for L in lengths)
            )

    php = next((r for r in rows if r["model"] == "php"), None)
    crit = {} if php is None else bench.criteria(php, lengths, cfg)
    flags = (" --quick" if args.quick else "") + (" --weak-only" if args.weak_only else "")
    out = {
        "benchmark": bench.stem,
        "machine": "2-core CPU, no GPU (shared with other jobs)",
        "command": bench.command + flags,
        "lengths": list(lengths),
        "problems_per_length": problems,
        "demonstrations": {
            "strong": len(strong),
            "weak": len(weak),
            "train_lengths": list(cfg.train_lengths),
            "strong_lengths": [t.info["length"] for t in strong],
        },
        "results": rows,
        bench.paper_key: list(bench.paper),
        "criteria": crit,
        "passed": all(c["pass"] for c in crit.values()),
        "wall_s": time.perf_counter() - t0,
    }
    os.makedirs(os.path.dirname(os.path.abspath(out_path)), exist_ok=True)
    with open(out_path, "w") as f:
        json.dump(out, f, indent=2, default=str)
    png = os.path.splitext(out_path)[0] + ".png"
    plot_accuracy(rows, lengths, png, title=bench.plot_title, unit=fam.unit)

    t = results_table(rows, lengths, title=bench.table_title)
    for cells in bench.paper_rows(lengths):
        t.add_row(*cells)
    con.print(t)
    for k, c in crit.items():
        con.print(f"{'PASS' if c['pass'] else 'FAIL'}  {k}: {c['value']}")
    con.print(f"wrote {out_path} and {png} ({out['wall_s']:.0f} s)")
    return 0 if out["passed"] else 1
