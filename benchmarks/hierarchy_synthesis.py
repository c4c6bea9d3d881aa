"""PHP's Table 2 shape on long-hand addition, with our numbers.

Models, all on demonstrations drawn by one seeded teacher (lengths 1-10 digits, as PHP):
  php                 3 strong + W weak (the target configuration)
  php (weak only)     0 strong + W weak
  php (strong only)   3 strong
  flat-lstm           3 strong + W weak (through their actions)
  npi                 3 strong (NPI needs the call stack)
  npi (N strong)      N strong (--npi-strong N, default 100; 0 leaves the row out)

Evaluation: exact-match accuracy of whole sums at 10, 100, 500 and 1000 digits, 100 problems
each (seeds 1e9 + i), through rlsuite.platform.evaluation in parallel Ray workers.

Pass criteria:
  1. php with at most 3 strong traces (plus weak ones) reaches 100% at 500 and 1000 digits;
  2. its training takes under 10 CPU-minutes on this machine.
Reported, not judged: how far weak-only training gets; the baselines in the same table.

Usage:
    flock /tmp/rlsuite-heavy.lock .venv/bin/python benchmarks/hierarchy_synthesis.py [--weak 300] [--quick]

Writes benchmarks/results/hierarchy/hierarchy_synthesis.json and hierarchy_synthesis.png (with
--weak-only: hierarchy_synthesis_weak_only.json and .png). The rows, the flags and the
outputs are shared with benchmarks/hierarchy_sort.py (benchmarks/hierarchy_synthesis_common.py).
"""

from __future__ import annotations

from rlsuite.apps.hierarchy.synthesis import benchmarking as common  # noqa: E402

PAPER = (
    {"model": "NPI (Reed & de Freitas 2016)", "strong": 160, "500": "<100%", "1000": "<100%"},
    {"model": "NPL (Li et al. 2017)", "strong": 10, "500": "100%", "1000": "<100%"},
    {"model": "PHP (Fox et al. 2018)", "strong": 3, "500": "100%", "1000": "100%"},
)


def criteria(php: dict, lengths, cfg) -> dict[str, dict]:
    """100% at 500 and 1000 digits from 3 strong traces; training under 10 CPU-minutes."""
    return {
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


def paper_rows(lengths) -> list[list[str]]:
    """PHP's Table 2 (the 500 and 1000 digit columns)."""
    if len(lengths) < 2:
        return []
    return [
        [f"[dim]{p['model']} (paper)[/]", str(p["strong"]), "-", "-",
         *["-"] * (len(lengths) - 2), p["500"], p["1000"]]
        for p in PAPER
    ]  # fmt: skip


BENCH = common.ProgramBench(
    program="addition",
    stem="hierarchy_synthesis",
    doc=__doc__,
    command="flock /tmp/rlsuite-heavy.lock .venv/bin/python benchmarks/hierarchy_synthesis.py",
    weak=300,
    npi_strong=100,
    max_strong=None,
    time_limit_s=540.0,
    weak_only_time_limit_s=300.0,
    out_dir="runs/bench/hierarchy-synthesis",
    quick_lengths=(10, 100),
    quick_rows=("php", "php (weak only)", "flat-lstm", "npi"),
    criteria=criteria,
    paper_key="paper_table2",
    paper=PAPER,
    paper_rows=paper_rows,
    table_title="PHP Table 2 shape: exact-match accuracy of whole sums (ours)",
    plot_title="long-hand addition: exact-match accuracy by length",
)


def main(argv: list[str] | None = None) -> int:
    return common.main(BENCH, argv)


if __name__ == "__main__":
    raise SystemExit(main())
