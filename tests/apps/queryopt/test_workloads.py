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
