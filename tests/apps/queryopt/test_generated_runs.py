"""The generated-queries benchmark's summary and pass checks, and the online benchmark's verdicts."""

from rlsuite.apps.queryopt.generated_runs import checks, summary
from rlsuite.apps.queryopt.plugin.drift_runs import verdicts


def _row(postgres_s, s, rewrites=("r",), wrong=False, capped=False):
    return dict(postgres_s=postgres_s, s=s, rewrites=list(rewrites), wrong=wrong,
                postgres_capped=False, capped=capped, checked_on="full data")  # fmt: skip


def test_generated_summary_counts_the_slow_queries_fixed_2x_and_the_slower_ones():
    rows = [_row(20.0, 1.0), _row(12.0, 8.0), _row(0.5, 0.6, rewrites=())]
    summ = summary(rows, slow_s=10.0)
    assert (summ["slow"], summ["slow_fixed_2x"], summ["slow_fixed_share"]) == (2, 1, 0.5)
    assert (summ["rewritten"], summ["wrong"], summ["slower_10pct"]) == (2, 0, 1)
    assert summ["by_checked_on"] == {"full data": 3}
    assert list(checks(summ, 10.0).values()) == [False, True, False, True]


def test_online_verdicts_need_adaptation_or_a_window_above_10x():
    a = dict(pass_adapt=True, windows_slower=0, windows=[{}], wrong_results=0,
             pass_windows=True, pass_wrong=True)  # fmt: skip
    runs = {"none": dict(workload="udf", analysis=a),
            "joins-empty": dict(workload="joins", analysis=a, first_above_10x=None)}  # fmt: skip
    got = verdicts(runs)
    assert [k for k, ok in got.items() if not ok] == ["joins-empty: a 20-window above 10x (never)"]
    assert len(got) == 6


def test_a_fast_rewritten_query_is_timed_as_medians_of_alternating_runs(db, monkeypatch):
    """Real PostgreSQL at SF 0.01: 3 runs of the original and 3 of its served rewrite (rebuilt
    from its rules: here a planner arm), alternating; the single runs are kept. A row that is
    slow, or kept its plan, is left as it was."""
    import statistics
    from types import SimpleNamespace

    from rlsuite.apps.queryopt.generated_runs import retime
    from rlsuite.apps.queryopt.workloads.tpcds import TpcdsWorkload

    w = TpcdsWorkload(scale=0.01)
    w.ensure(db)
    sql = "SELECT count(*) FROM store_sales JOIN item ON ss_item_sk = i_item_sk"
    runs, run = [], db.run

    def recording(q, schema, timeout_ms, settings=None):
        res = run(q, schema, timeout_ms, settings)
        runs.append((dict(settings or {}), res.runtime_s))
        return SimpleNamespace(runtime_s=res.runtime_s)

    monkeypatch.setattr(db, "run", recording)
    row = {**_row(1.5, 0.9, rewrites=("arm_no_hashjoin",)), "sql": sql}
    retime(db, w, row, 10_000)
    assert [s for s, _ in runs] == [{}, {"enable_hashjoin": "off"}] * 3
    assert row["retimed"] and (row["postgres_s_once"], row["s_once"]) == (1.5, 0.9)
    assert row["postgres_s"] == statistics.median(t for _, t in runs[0::2])
    assert row["s"] == statistics.median(t for _, t in runs[1::2])
    runs.clear()
    for slow in ({**_row(30.0, 0.5), "sql": sql}, {**_row(1.0, 1.0, rewrites=()), "sql": sql}):
        retime(db, w, slow, 10_000)
        assert slow["retimed"] is False and "s_once" not in slow and runs == []
