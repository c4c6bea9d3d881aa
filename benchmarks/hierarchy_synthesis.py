"""PHP's Table 2 shape on long-hand addition, with our numbers.

Models, all on demonstrations drawn by one seeded teacher (lengths 1-10 digits, as PHP):
  php                 3 strong + W weak (the target configuration)
  php (weak only)     0 strong + W weak
  php (strong only)   3 strong
  flat-lstm           3 strong + W weak (through their actions)
  npi                 3 strong (NPI needs the call stack); optionally N strong (--npi-strong N)

Evaluation: exact-match accuracy of whole sums at 10, 100, 500 and 1000 digits, 100 problems
each (seeds 1e9 + i), through rlsuite.platform.evaluation in parallel Ray workers.

Pass criteria:
  1. php with at most 3 strong traces (plus weak ones) reaches 100% at 500 and 1000 digits;
  2. its training takes under 10 CPU-minutes on this machine.
Reported, not judged: how far weak-only training gets; the baselines in the same table.

Usage:
    flock /tmp/rlsuite-heavy.lock .venv/bin/python benchmarks/hierarchy_synthesis.py [--weak 300] [--quick]

Writes benchmarks/results/hierarchy_synthesis.json and hierarchy_synthesis.png.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import replace

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
PAPER = [
    {"model": "NPI (Reed & de Freitas 2016)", "strong": 160, "500": "<100%", "1000": "<100%"},
    {"model": "NPL (Li et al. 2017)", "strong": 10, "500": "100%", "1000": "<100%"},
    {"model": "PHP (Fox et al. 2018)", "strong": 3, "500": "100%", "1000": "100%"},
]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--weak", type=int, default=300, help="weak demonstrations (default 300)")
    ap.add_argument(
        "--strong", type=int, default=3, help="strong demonstrations for php (default 3)"
    )
    ap.add_argument(
        "--npi-strong", type=int, default=100, help="strong demonstrations of the larger NPI run"
    )
    ap.add_argument("--problems", type=int, default=100, help="problems per length (default 100)")
    ap.add_argument(
        "--quick", action="store_true", help="lengths 10,100 with 20 problems, fewer models"
    )
    ap.add_argument(
        "--weak-only",
        action="store_true",
        help="run only the weak-only PHP row (its own JSON: hierarchy_synthesis_weak_only.json)",
    )
    ap.add_argument(
        "--workers", type=int, default=None, help="evaluation workers (default one per CPU)"
    )
    ap.add_argument("--out", default=os.path.join(RESULTS, "hierarchy_synthesis.json"))
    args = ap.parse_args(argv)

    from rich.console import Console
    from rich.table import Table

    from rlsuite.apps.hierarchy.synthesis.experiment import (
        SynthesisConfig,
        evaluate_saved,
        plot_accuracy,
        save_model,
        train_model,
    )
    from rlsuite.apps.hierarchy.synthesis.program import make_traces
    from rlsuite.platform import cluster

    con = Console()
    lengths = (10, 100) if args.quick else (10, 100, 500, 1000)
    problems = 20 if args.quick else args.problems
    cfg = SynthesisConfig(
        strong=args.strong,
        weak=args.weak,
        eval_lengths=lengths,
        eval_problems=problems,
        epochs=400,
        time_limit_s=540.0,
        out_dir="runs/bench/hierarchy-synthesis",
    ).validate()
    os.makedirs(cfg.out_dir, exist_ok=True)
    t0 = time.perf_counter()
    strong = make_traces(cfg.strong, seed=cfg.seed, lengths=cfg.train_lengths)
    weak = make_traces(cfg.weak, seed=cfg.seed + 1, lengths=cfg.train_lengths, strong=False)
    many_strong = make_traces(args.npi_strong, seed=cfg.seed + 2, lengths=cfg.train_lengths)
    con.print(
        f"demonstrations: {len(strong)} strong (lengths {[t.info['length'] for t in strong]}), "
        f"{len(weak)} weak ({sum(t.info['length'] for t in weak)} columns)"
    )

    runs = [
        ("php", "php", strong, weak),
        ("php (weak only)", "php", [], weak),
        ("php (strong only)", "php", strong, []),
        ("flat-lstm", "flat-lstm", strong, weak),
        ("npi", "npi", strong, []),
    ]
    if args.npi_strong > 0:
        runs.append((f"npi ({args.npi_strong} strong)", "npi", many_strong, []))
    if args.quick:
        runs = runs[:2] + runs[3:5]
    if args.weak_only:
        runs = [runs[1]]
        if args.out == os.path.join(RESULTS, "hierarchy_synthesis.json"):
            args.out = os.path.join(RESULTS, "hierarchy_synthesis_weak_only.json")

    def log(kind, ep, row):
        con.print(
            f"  {kind} epoch {ep}: "
            + ", ".join(f"{k}={v:.4g}" for k, v in row.items() if k != "epoch")
        )

    rows = []
    cluster.configure_driver_threads()
    with cluster.local_cluster():
        for label, kind, s, w in runs:
            con.rule(f"{label}: {len(s)} strong + {len(w)} weak")
            # weak-only EM from scratch gets a shorter leash than the target configuration
            run_cfg = replace(cfg, time_limit_s=300.0) if not s else cfg
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
            con.print(
                "  accuracy: "
                + ", ".join(f"{L}: {100 * row['accuracy'][str(L)]:.0f}%" for L in lengths)
            )

    php = rows[0]
    crit = (
        {}
        if args.weak_only
        else {
            "php_100pct_at_500_and_1000": {
                "value": {L: php["accuracy"].get(L) for L in ("500", "1000")},
                "pass": all(php["accuracy"].get(L) == 1.0 for L in ("500", "1000")),
                "strong_traces": php["strong"],
            },
            "php_training_under_10_cpu_min": {
                "value": php["train_cpu_s"],
                "pass": php["train_cpu_s"] < 600,
            },
        }
    )
    out = {
        "benchmark": "hierarchy_synthesis",
        "machine": "2-core CPU, no GPU (shared)",
        "command": "flock /tmp/rlsuite-heavy.lock .venv/bin/python benchmarks/hierarchy_synthesis.py"
        + (" --quick" if args.quick else "")
        + (" --weak-only" if args.weak_only else ""),
        "lengths": list(lengths),
        "problems_per_length": problems,
        "demonstrations": {
            "strong": len(strong),
            "weak": len(weak),
            "train_lengths": list(cfg.train_lengths),
        },
        "results": rows,
        "paper_table2": PAPER,
        "criteria": crit,
        "passed": all(c["pass"] for c in crit.values()),
        "wall_s": time.perf_counter() - t0,
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(out, f, indent=2, default=str)
    png = os.path.splitext(args.out)[0] + ".png"
    plot_accuracy(rows, lengths, png, title="long-hand addition: exact-match accuracy by length")

    t = Table(title="PHP Table 2 shape: exact-match accuracy of whole sums (ours)")
    for c in ("model", "strong", "weak", "train CPU-s", *[f"len {L}" for L in lengths]):
        t.add_column(c, justify="left" if c == "model" else "right")
    for r in rows:
        t.add_row(
            r["model"],
            str(r["strong"]),
            str(r["weak"]),
            f"{r['train_cpu_s']:.0f}",
            *[f"{100 * r['accuracy'][str(L)]:.0f}%" for L in lengths],
        )
    for p in PAPER:
        t.add_row(
            f"[dim]{p['model']} (paper)[/]",
            str(p["strong"]),
            "-",
            "-",
            *(["-"] * (len(lengths) - 2) + [p["500"], p["1000"]] if len(lengths) >= 2 else []),
        )
    con.print(t)
    for k, c in crit.items():
        con.print(f"{'PASS' if c['pass'] else 'FAIL'}  {k}: {c['value']}")
    con.print(f"wrote {args.out} and {png} ({out['wall_s']:.0f} s)")
    return 0 if out["passed"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
