"""Workload generators: seeded, train/test disjoint, and every query runs on the real database."""

from __future__ import annotations

import numpy as np
import pytest
import sqlglot

from rlsuite.apps.queryopt.workloads import get
from rlsuite.apps.queryopt.workloads.tpch import instantiate, templates


@pytest.mark.parametrize("name", ["joins", "udf", "tpch"])
def test_generators_are_seeded_and_splits_disjoint(name):
    w = get(name)
    n = 30 if name != "tpch" else 44
    train = w.queries("train", n, seed=3)
    assert train == w.queries("train", n, seed=3)
    assert len(set(train)) == n
    test = w.queries("test", 10, seed=3)
    assert not set(test) & set(train)
    with pytest.raises(ValueError, match="split must be"):
        w.queries("validation", 2)


def test_joins_and_udf_queries_run(db):
    for name in ("joins", "udf"):
        w = get(name)
        for q in w.queries("train", 5, seed=1):
            res = db.explain(q, w.schema, w.settings())
            assert res["Plan"]["Total Cost"] > 0


def test_tpch_templates_parse_and_vary():
    tpl = templates()
    assert sorted(tpl) == list(range(1, 23))
    rng = np.random.default_rng(0)
    for n, sql in tpl.items():
        q = instantiate(n, rng, sql)
        sqlglot.parse_one(q, read="postgres")
    a = {instantiate(17, np.random.default_rng(s)) for s in range(20)}
    assert len(a) > 10 and all("Brand#" in q for q in a)
    q1 = instantiate(1, np.random.default_rng(1))
    assert "1998-12-31" >= q1.split("CAST('")[1][:10] >= "1992-01-01"


def test_bad_workload_arguments():
    with pytest.raises(ValueError, match="unknown workload"):
        get("nosuch")
    with pytest.raises(ValueError, match="scale"):
        get("tpch", scale=0)
    with pytest.raises(ValueError, match="udf_cost"):
        get("udf", udf_cost=-1)


def test_data_loaded_with_another_config_is_reloaded(db):
    """A schema loaded with other sizes is not reused silently: ``ensure`` reloads it."""
    from rlsuite.apps.queryopt.workloads.joins import JoinsWorkload

    class Small(JoinsWorkload):
        name = "joins_keytest"

    sizes = dict(r_rows=20, s_rows=40, t_rows=40)
    first, second = Small(distinct_b=3, **sizes), Small(distinct_b=7, **sizes)
    try:
        first.ensure(db)
        assert first.is_loaded(db) and not second.is_loaded(db)
        assert not first.is_loaded(db, seed=1)
        second.ensure(db)
        assert second.is_loaded(db) and not first.is_loaded(db)
        res = db.run("SELECT count(DISTINCT b) FROM s", second.schema, 5000)
        assert 3 < res.rows[0][0] <= 7
    finally:
        with db.conn.cursor() as cur:
            cur.execute("DROP SCHEMA IF EXISTS qopt_joins_keytest CASCADE")
        db.conn.commit()
