"""The runtime cache and the oracle search on real PostgreSQL (TPC-DS SF 0.01)."""

from __future__ import annotations

import math

import pytest

from rlsuite.apps.queryopt import rules as R
from rlsuite.apps.queryopt.oracle import RuntimeCache, experience_rows, search

TPCDS = "qopt_tpcds_sf0_01"


@pytest.fixture(scope="module")
def q1():
    from rlsuite.apps.queryopt.workloads.tpcds import queries

    return queries()[1]


def test_search_times_each_plan_once_and_a_second_search_runs_nothing(tpcds, q1, tmp_path):
    db = tpcds
    cache = RuntimeCache(str(tmp_path / "c.json"))
    orig = db.run(q1, TPCDS, 10_000).runtime_s
    res = search(db, TPCDS, q1, cache, orig_s=orig, cap_ms=10_000, depth=2, beam=2)
    assert res.distinct_plans >= 3  # the arms and unnest_subqueries apply to Q1
    # one run per distinct plan, plus at most one rerun per new fastest plan
    assert res.distinct_plans <= cache.timings <= 2 * res.distinct_plans
    assert len(cache.entries) == res.distinct_plans
    assert res.best_s <= orig
    assert all(len(s) <= 2 for s in res.times)
    if res.best:
        assert not res.times[res.best][1] and res.times[res.best][0] == res.best_s
        assert len(cache.entries[_key(db, q1, res.best)]["runs"]) == 2  # rerun, second kept
    # the cache file is shared: a new search over it runs no query
    again = RuntimeCache(str(tmp_path / "c.json"))
    res2 = search(db, TPCDS, q1, again, orig_s=orig, cap_ms=10_000, depth=2, beam=2)
    assert again.timings == 0
    assert res2.best == res.best


def test_search_rows_train_the_replay_env_toward_the_fastest_sequence(tpcds, q1, tmp_path):
    from rlsuite.apps.queryopt.envs.replay import ReplayRewriteEnv
    from rlsuite.apps.queryopt.envs.rewrite import QueryRewriteEnv
    from rlsuite.apps.queryopt.oracle import SearchResult
    from rlsuite.apps.queryopt.plugin.experience import ExperienceStore

    db = tpcds
    res = SearchResult(orig_s=1.0, best=("arm_no_nestloop",), best_s=0.25)
    res.times = {
        (): (1.0, False),
        ("arm_no_nestloop",): (0.25, False),
        ("arm_no_hashjoin",): (3.0, True),
    }
    env = QueryRewriteEnv(
        dsn=db.dsn, workload="tpcds", workload_config={"scale": 0.01}, max_steps=2
    )
    rows = experience_rows(env, "q1", q1, res)
    kept = experience_rows(env, "q1", q1, res, censored=True)
    env.close()
    # the censored time (a lower bound) is left out unless asked for
    assert [r.applied for r in rows] == [(), ("arm_no_nestloop",)]
    assert [r.applied for r in kept][2] == ("arm_no_hashjoin",) and len(kept) == 3
    assert all(len(r.features) == len(r.applied) + 1 for r in rows)
    path = str(tmp_path / "x.sqlite")
    store = ExperienceStore(path, "qopt_tpcds")
    for r in rows:
        store.add(r)
    store.close()
    renv = ReplayRewriteEnv(experience=path, workload="tpcds", max_steps=2)
    renv.reset(seed=0)
    nl = R.RULE_NAMES.index("arm_no_nestloop")
    _, r0, done, _, _ = renv.step(nl)
    assert not done and r0 == 0.0
    _, r, done, _, _ = renv.step(R.STOP)
    assert done and r == pytest.approx(-0.25)
    renv.reset(seed=0)
    _, r, done, _, _ = renv.step(R.RULE_NAMES.index("cte_materialized"))  # never measured
    assert done and r == pytest.approx(-1.1)
    renv.reset(seed=0)  # censored: scored as never measured, not as its 3 s lower bound
    _, r, done, _, _ = renv.step(R.RULE_NAMES.index("arm_no_hashjoin"))
    assert done and r == pytest.approx(-1.1)
    lenv = ReplayRewriteEnv(experience=path, workload="tpcds", max_steps=2, log_reward=True)
    lenv.reset(seed=0)
    lenv.step(nl)
    assert lenv.step(R.STOP)[1] == pytest.approx(math.log(4.0))  # 4x faster: -log(0.25)
    lenv.reset(seed=0)
    assert lenv.step(R.RULE_NAMES.index("arm_no_hashjoin"))[1] == pytest.approx(-math.log(1.1))


def test_plan_structure_features_see_correlated_subplans_and_self_joined_ctes(tpcds):
    from rlsuite.apps.queryopt.featurizer import STRUCT_KEYS, Featurizer, plan_features
    from rlsuite.apps.queryopt.rewriter import apply_rules
    from rlsuite.apps.queryopt.workloads.tpcds import queries

    db, qs = tpcds, queries()

    def struct(sql, seq=()):
        q, _ = apply_rules(R.Query.parse(sql, _catalog(db)), seq)
        pf = plan_features(db.explain(q.sql(), TPCDS, settings=q.settings_dict))
        return {k: pf[k] for k in STRUCT_KEYS}

    q1 = struct(qs[1])  # a correlated scalar subquery over a CTE scanned twice
    assert q1["subplans"] >= 1 and q1["max_cte_scans"] == 2
    assert struct(qs[1], ("unnest_subqueries",))["subplans"] == 0  # decorrelated
    q9 = struct(qs[9])  # 15 uncorrelated scalar subqueries: init plans, no subplan
    assert q9["subplans"] == 0 and q9["initplans"] >= 5
    assert struct(qs[4])["max_cte_scans"] >= 4  # year_total self-joined
    f = Featurizer(max_steps=2)
    assert f.describe()["struct_keys"] == list(STRUCT_KEYS)
    assert f.describe()["size"] == f.size


def _catalog(db):
    from rlsuite.apps.queryopt.rewriter import catalog

    return catalog(db, TPCDS)


def _key(db, sql, seq):
    from rlsuite.apps.queryopt.rewriter import apply_rules, catalog

    q, _ = apply_rules(R.Query.parse(sql, catalog(db, TPCDS)), seq)
    return q.key()
