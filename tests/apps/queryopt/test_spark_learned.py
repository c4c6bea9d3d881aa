"""Each Spark workload's target, as the Spark benchmark judges it."""

from rlsuite.apps.queryopt.spark_learned import passed


def _s(**kw):
    return dict(geomean_speedup=1.0, total_rewritten_s=1.0, total_postgres_s=1.0,
                regressions=0, wrong_results=0) | kw  # fmt: skip


def test_each_workload_has_its_own_target_and_a_wrong_result_fails_all():
    assert passed("joins", _s(geomean_speedup=12.0))
    assert not passed("joins", _s(geomean_speedup=9.0))
    assert passed("tpch", _s(total_rewritten_s=0.9)) and not passed("tpch", _s(regressions=1))
    assert passed("udf", _s(), cheap=True) and not passed("udf", _s())
    assert passed("udf", _s(geomean_speedup=4.0))
    assert not passed("joins", _s(geomean_speedup=12.0, wrong_results=1))
