"""The queryopt benchmarks' scoring on hand-made records (pure logic): the online stream's
windows and adaptation, the held-out split's share of the oracle's gain, and Spark against
PostgreSQL per query."""

from rlsuite.apps.queryopt import heldout, spark_tpcds
from rlsuite.apps.queryopt.plugin import drift


def _stream(speedups: list[tuple[int, float]]) -> list[dict]:
    """A trace: per (cost, speed-up) one execution of 10 ms standard time, rows right."""
    costs = list(dict.fromkeys(c for c, _ in speedups))
    return [
        dict(
            i=i,
            t=0.01 * i,
            wall=0.0,
            phase=costs.index(c),
            cost=c,
            query=0,
            s=0.01 / x,
            standard_s=0.01,
            same_rows=True,
        )  # fmt: skip
        for i, (c, x) in enumerate(speedups)
    ]


def test_the_stream_adapts_after_a_drift_when_a_20_window_reaches_90_percent_of_offline():
    trace = _stream([(100, 6.0)] * 50 + [(30000, 2.0)] * 30 + [(30000, 7.5)] * 70)
    a = drift.analyse(trace, [100, 30000], 50)
    late = a["phases"][1]
    assert late["drift"] and late["target_speedup"] == 0.9 * drift.OFFLINE[30000]
    assert late["adapted_after_executions"] == 50 and late["passed"]  # 30 slow, then 20 fast
    assert a["pass_adapt"] and a["pass_windows"] and a["pass_wrong"]
    assert [w["start"] for w in a["windows"]] == [0, 50, 100]
    slow = drift.analyse(_stream([(100, 0.5)] * 50), [100], 50)
    assert slow["windows_slower"] == 1 and not slow["pass_windows"]
    assert drift.first_above(trace, 7.0)["executions"] == 100


def test_the_held_out_split_passes_at_80_percent_of_the_oracles_gain_with_nothing_slower():
    def row(orig, dqn, oracle, served=True):
        return {"orig_s": orig, "dqn": {"s": dqn, "served": served}, "oracle": {"s": oracle, "served": True}, "greedy": {"s": orig}}  # fmt: skip

    s = heldout.split_summary([row(10.0, 2.0, 1.0), row(5.0, 5.0, 4.0, served=False)])
    assert s["oracle_gain_s"] == 10.0 and s["dqn_gain_s"] == 8.0
    assert s["dqn_over_oracle"] == 0.8 and s["passed"] and s["served_slower"] == 0
    assert not heldout.split_summary([row(1.0, 1.5, 0.5)])["passed"]  # a served rewrite slower


def test_spark_against_postgres_picks_the_faster_engine_per_query_and_ties_within_10_percent():
    def spark(n, s, capped=False):
        return {"query": n, "spark_s": s, "spark_capped": capped}

    def pg(n, s, capped=False):
        return {"query": n, "postgres_s": s, "postgres_capped": capped, "measured": {"rules": [], "s": s, "capped": capped}}  # fmt: skip

    rows = [spark(1, 1.0), spark(2, 5.0), spark(3, 2.0), spark(4, 30.0, True), {"query": 5, "error": "x"}]  # fmt: skip
    v = spark_tpcds.versus(
        rows, {"queries": [pg(1, 3.0), pg(2, 1.0), pg(3, 2.1), pg(4, 30.0, True)]}
    )
    assert {e["query"]: e["winner_best"] for e in v["queries"]} == {1: "Spark", 2: "PostgreSQL", 3: "tie", 4: "neither finished"}  # fmt: skip
    assert v["compared"] == 4 and v["both_finished_own"] == 3
    s = spark_tpcds.summary(rows, 30.0)
    assert (
        s["queries"] == 4
        and s["searched"] == 0
        and s["at_cap_spark"] == 1
        and s["wrong_results"] == 0
    )
