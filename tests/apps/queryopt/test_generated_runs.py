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
