"""NPI's bubble sort on the shared procedure model: PHP strong / weak against NPI-style and a flat
LSTM, exact-match accuracy against array length."""

from rlsuite.bench import Benchmark, Row, Value

# fmt: off
BENCHMARK = Benchmark(script="hierarchy_sort.py", quick=dict(quick=True), rows=(
    Row("hierarchy", "bubble sort, 100 elements", "exact-match accuracy", "hierarchy_sort.json",
        Value(("results", {"model": "php"}, "accuracy", "100")), None,
        "rlsuite bench run hierarchy_sort", "`runs/bench/hierarchy-sort/php.pt`", fmt="{:.0%}"),
))
# fmt: on
