"""PHP's Table 2 shape on long-hand addition, with our numbers."""

from rlsuite.bench import Benchmark, Row, Value, pub

# fmt: off
BENCHMARK = Benchmark(script="hierarchy_synthesis.py", quick=dict(quick=True), rows=(
    Row("hierarchy", "long-hand addition, 1000 digits", "exact-match accuracy", "hierarchy_synthesis.json",
        Value(("results", {"model": "php"}, "accuracy", "1000")),
        pub("PHP, Fox et al. 2018, 3 strong traces per length", 1.0),
        "rlsuite bench run hierarchy_synthesis --npi-strong 100", "`runs/bench/hierarchy-synthesis/php.pt`", fmt="{:.0%}"),
))
# fmt: on
