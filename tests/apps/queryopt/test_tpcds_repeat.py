"""The alternating repeated runs of ``rlsuite bench run queryopt_tpcds_repeat`` on the real
PostgreSQL: the run order, a run past the cap counted at the cap, the verdicts under the
medians, and the whole benchmark on TPC-DS at SF 0.01 (wins only, a pair, rows compared)."""

from __future__ import annotations

import json
import time

import pytest

from rlsuite.apps.queryopt import repeat as rep
from rlsuite.apps.queryopt.workloads.tpcds import TpcdsWorkload
from rlsuite.bench import registry, runner
from rlsuite.bench.declare import RESULTS_ENV

SMALL = TpcdsWorkload(scale=0.01)


def bench_run(argv, results, monkeypatch) -> int:
    """``rlsuite bench run queryopt_tpcds_repeat ARGV`` writing under ``results``/queryopt."""
    monkeypatch.setenv(RESULTS_ENV, str(results))
    decl = registry.load()
    name = "queryopt_tpcds_repeat"
    return runner.run(decl.get(name), decl.modules[name], [*argv, "--no-lock"])


@pytest.fixture(scope="module")
def tpcds(db):
    SMALL.ensure(db)
    return db


def test_alternate_runs_in_turn_after_the_warmup_and_counts_a_capped_run_at_the_cap(tpcds):
    plans = {"O": ("SELECT pg_sleep(0.5), 1", {}), "R": ("SELECT 1 AS x, 2 AS y", {})}
    runs, rows = rep.alternate(tpcds, SMALL.schema, plans, 3, 100, warmup=1, no_warmup=("O",))
    assert runs["order"] == ["R*", "O", "R", "O", "R", "O", "R"]
    assert runs["O"]["s"] == [0.1, 0.1, 0.1] and runs["O"]["capped"] == [True] * 3
    assert runs["R"]["capped"] == [False] * 3 and all(s < 0.1 for s in runs["R"]["s"])
    assert len(runs["R"]["warmup_s"]) == 1 and runs["O"]["warmup_s"] == []
    assert rows["O"] is None and rows["R"] == [(1, 2)]


def test_the_verdicts_hold_under_the_medians_not_the_best_round():
    v = rep.verdict([2.0, 2.1, 9.0], [1.0, 1.2, 0.9])  # one noisy original round
    assert v["original_median_s"] == 2.1 and v["rewrite_median_s"] == 1.0
    assert v["speedup_median"] == 2.1 and v["verdict"] == ">= 2x"
    assert v["speedup_min"] == 1.75 and v["speedup_max"] == 10.0
    v = rep.verdict([1.0, 1.0, 1.0], [1.05, 1.08, 0.5])
    assert v["verdict"] == "not slower" and v["not_slower"] and not v["at_least_2x"]
    assert rep.verdict([1.0, 1.0, 1.0], [1.2, 1.3, 1.2])["verdict"] == "slower"


def test_the_benchmark_repeats_the_wins_only_with_a_pair_and_the_rows_compared(
    tpcds, dsn, tmp_path, monkeypatch
):
    def row(n, pg, rules, s, capped=False):
        m = {"rules": rules, "s": s, "capped": False, "rows": True, "checked_on": SMALL.schema}
        return {"query": n, "postgres_s": pg, "postgres_capped": capped, "measured": m}

    src = tmp_path / "prev.json"
    prev = [
        row(7, 0.2, ["arm_no_nestloop"], 0.1),
        row(30, 5.0, ["unnest_subqueries", "arm_no_nestloop"], 0.05, capped=True),
        row(3, 0.05, [], 0.05),  # left alone: not repeated
        row(19, 0.05, ["arm_no_hashjoin"], 0.06),  # served but not faster: not repeated
    ]
    src.write_text(json.dumps({"scale": 0.01, "cap_s": 10.0, "time": "t", "queries": prev}))
    argv = [
        "--scale",
        "0.01",
        "--repeat",
        "2",
        "--originals",
        str(src),
        "--dsn",
        dsn,
        "--out-name",
        "rep",
        "--pair",
        "30:unnest_subqueries,arm_no_mergejoin",
    ]
    assert bench_run(argv, tmp_path, monkeypatch) == 0
    out = json.loads((tmp_path / "queryopt" / "rep.json").read_text())
    assert [e["query"] for e in out["queries"]] == [7, 30]
    q7, q30 = out["queries"]
    assert q7["runs"]["order"] == ["O*", "R*", "O", "R", "O", "R"]
    assert q7["same_rows"] is True and q7["rows_vs"] == "O" and q7["not_applied"] == {}
    # Q30 was past the cap in the results file: no warm-up of its original
    assert q30["warmup_skipped"] == ["O"]
    assert q30["runs"]["order"] == ["R*", "P*", "O", "R", "P", "O", "R", "P"]
    assert q30["same_rows"] is True and q30["pair"]["same_rows"] is True
    assert q30["pair"]["rules"] == ["unnest_subqueries", "arm_no_mergejoin"]
    assert len(q30["runs"]["P"]["s"]) == 2 and q30["pair"]["not_applied"] == {}
    s = out["summary"]
    assert s["queries"] == 2 and s["workload_queries"] == 4 and s["wrong"] == 0
    assert s["workload_total_postgres_s"] == pytest.approx(
        q7["original_median_s"] + q30["original_median_s"] + 0.1, abs=0.01
    )
    assert (tmp_path / "queryopt" / "rep.png").stat().st_size > 0


def test_pair_candidates_add_a_shape_rule_with_a_planner_arm(tpcds):
    from rlsuite.apps.queryopt import benchmarking as T
    from rlsuite.apps.queryopt import rules as R
    from rlsuite.apps.queryopt.rewriter import catalog
    from rlsuite.apps.queryopt.workloads.tpcds import queries

    q0 = R.Query.parse(queries()[4], catalog(tpcds, SMALL.schema))
    plain = T.candidates(q0, [], new_rules=True)
    paired = T.candidates(q0, [], new_rules=True, pairs=True)
    pair = ("cte_not_materialized", "arm_no_nestloop")
    assert pair not in plain and pair in paired
    assert paired[pair].settings_dict == {"enable_nestloop": "off"}
    assert "MATERIALIZED" in paired[pair].sql().upper()
    assert ("unnest_subqueries", "arm_no_nestloop") not in paired  # Q4 has no subquery to unnest
    assert set(plain) < set(paired)


def test_stop_at_skips_the_queries_that_would_end_after_it(tpcds, dsn, tmp_path, monkeypatch):
    m = {"rules": ["arm_no_nestloop"], "s": 0.1, "capped": False, "rows": True}
    prev = [
        {"query": 7, "postgres_s": 0.2, "postgres_capped": False, "measured": m},
        {"query": 1, "postgres_s": 10.0, "postgres_capped": True, "measured": m},
    ]
    # 3 rounds and 1 warm-up: Q7 runs 4 x (0.2 + 0.1); Q1's capped original has no warm-up
    assert rep.estimate_s(prev[0], 3, 1, False, False) == pytest.approx(2.2)
    assert rep.estimate_s(prev[1], 3, 1, False, True) == pytest.approx(30 + 0.8 + 1)
    src = tmp_path / "prev.json"
    src.write_text(json.dumps({"scale": 0.01, "cap_s": 10.0, "time": "t", "queries": prev}))
    argv = ["--scale", "0.01", "--originals", str(src), "--dsn", dsn]
    assert bench_run([*argv, "--stop-at", str(time.time() + 20)], tmp_path, monkeypatch) == 0
    out = json.loads((tmp_path / "queryopt" / "queryopt_tpcds_repeat.json").read_text())
    assert [e["query"] for e in out["queries"]] == [7] and out["skipped_stop_at"] == [1]


def test_a_lower_search_bar_reruns_only_the_queries_between_the_bars():
    from rlsuite.apps.queryopt import benchmarking as T

    rows = [{"query": n, "postgres_s": s} for n, s in ((1, 0.3), (2, 0.5), (3, 0.9), (4, 1.0))]
    kept, redo = T.between_bars(rows, 0.5, 1.0)
    assert redo == {2, 3}
    assert [r["query"] for r in kept] == [1, 4]  # under both bars, or searched already


def test_the_tpcds_benchmark_decides_with_the_default_chooser(tpcds):
    # the benchmark's "measured" column is MeasuredChooser's decision over its candidate set
    from rlsuite.apps.queryopt import benchmarking as T
    from rlsuite.apps.queryopt import rules as R
    from rlsuite.apps.queryopt.rewriter import catalog
    from rlsuite.apps.queryopt.workloads.tpcds import queries

    row = T.measure_query(tpcds, SMALL, 7, queries()[7], 5000, 0.0)
    m = row["measured"]
    assert row["postgres_s"] > 0 and not row["postgres_capped"]
    q0 = R.Query.parse(queries()[7], catalog(tpcds, SMALL.schema))
    seqs = {",".join(s) for s in T.candidates(q0, row["greedy"]["rules"])}
    assert m["tried"] and set(m["tried"]) <= seqs
    if m["rules"]:
        assert m["rows"] is True and m["checked_on"] == SMALL.schema and m["s"] < row["postgres_s"]
    else:
        assert "kept the original" in m["note"]


def test_the_tpcds_benchmark_can_decide_with_the_commands_own_chooser(tpcds):
    # --default-chooser: the chooser `rewrite` builds, over its own candidates (rules the
    # fixed set leaves out among them), and its decision alone is the measured column
    from rlsuite.apps.queryopt import benchmarking as T
    from rlsuite.apps.queryopt.choosers import MeasuredChooser
    from rlsuite.apps.queryopt.workloads.tpcds import queries

    ch = MeasuredChooser(tpcds, SMALL.schema, timeout_ms=5000, check_schema=None, budget_s=30)
    row = T.measure_query(tpcds, SMALL, 1, queries()[1], 5000, 0.0, chooser=ch)
    m = row["measured"]
    assert set(m["tried"]) == {",".join(k) for k in ch.last.tried}
    assert any(k.startswith("decorrelate_scalar") for k in m["tried"])  # not in the fixed set
    if m["rules"]:
        assert m["rows"] is True and m["s"] == ch.last.chosen_s < row["postgres_s"]
    else:
        assert "kept the original" in m["note"] and m["s"] == row["postgres_s"]
