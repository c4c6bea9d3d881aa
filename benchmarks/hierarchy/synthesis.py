"""PHP's Table 2 shape on long-hand addition: php with 3 strong traces (plus weak ones) reaches
100% at 500 and 1000 digits, training under 10 CPU-minutes; weak-only and the flat-LSTM and
NPI baselines reported beside it.

Demonstrations of 1-10 digits from one seeded teacher (as PHP); exact-match accuracy of
whole sums at 10, 100, 500 and 1000 digits, 100 problems each, through
rlsuite.platform.evaluation. ``--weak-only`` runs the weak-only row alone
(``hierarchy_synthesis_weak_only.json``).
"""

from dataclasses import dataclass

from rlsuite.apps.hierarchy.synthesis import benchmarking as B
from rlsuite.bench import Benchmark, Row, Value, pub

PAPER = [
    {"model": "NPI (Reed & de Freitas 2016)", "strong": 160, "500": "<100%", "1000": "<100%"},
    {"model": "NPL (Li et al. 2017)", "strong": 10, "500": "100%", "1000": "<100%"},
    {"model": "PHP (Fox et al. 2018)", "strong": 3, "500": "100%", "1000": "100%"},
]


@dataclass(frozen=True)
class Settings(B.SynthesisSettings):
    npi_strong: int = 100


def criteria(php: dict, lengths, cfg) -> dict[str, dict]:
    acc = php["accuracy"]
    return {
        "php_100pct_at_500_and_1000": {
            "value": {L: acc.get(L) for L in ("500", "1000")},
            "pass": all(acc.get(L) == 1.0 for L in ("500", "1000")),
            "strong_traces": php["strong"],
        },
        "php_training_under_10_cpu_min": {"value": php["train_cpu_s"], "pass": php["train_cpu_s"] < 600},
    }  # fmt: skip


def paper_rows(lengths) -> list[list[str]]:
    pad = ["-"] * (len(lengths) - 2)
    return [[f"[dim]{p['model']} (paper)[/]", str(p["strong"]), "-", "-", *pad, p["500"], p["1000"]] for p in PAPER] if len(lengths) > 1 else []  # fmt: skip


PROGRAM = B.ProgramBench(
    "addition", "hierarchy_synthesis", criteria, {"paper_table2": PAPER}, time_limit_s=540.0,
    weak_only_time_limit_s=300.0, quick_lengths=(10, 100), paper_rows=paper_rows,
    titles=("PHP Table 2 shape: exact-match accuracy of whole sums (ours)", "long-hand addition: exact-match accuracy by length"),
)  # fmt: skip

# fmt: off
BENCHMARK = Benchmark(run=lambda ctx: B.run(PROGRAM, ctx), settings=Settings, quick=dict(weak=20, npi_strong=0, problems=5, epochs=3), rows=(
    Row("hierarchy", "long-hand addition, 1000 digits", "exact-match accuracy", "hierarchy_synthesis.json",
        Value(("results", {"model": "php"}, "accuracy", "1000")),
        pub("PHP, Fox et al. 2018, 3 strong traces per length", 1.0),
        "rlsuite bench run hierarchy_synthesis --npi-strong 100", "`runs/bench/hierarchy-synthesis/php.pt`", fmt="{:.0%}"),
))
# fmt: on
