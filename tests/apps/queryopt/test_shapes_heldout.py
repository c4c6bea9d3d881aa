"""The generated-shapes split's per-shape totals and its shape names."""

import pytest

from rlsuite.apps.queryopt.shapes_heldout import by_shape, names


def test_held_out_results_are_summed_per_shape():
    held = [
        dict(query=0, orig_s=2.0, dqn=dict(s=1.0), oracle=dict(s=0.5)),
        dict(query=1, orig_s=1.0, dqn=dict(s=1.0), oracle=dict(s=0.25)),
        dict(query=2, orig_s=3.0, dqn=dict(s=0.1), oracle=dict(s=0.1)),
    ]
    qs = {0: ("not_in", "q0"), 1: ("not_in", "q1"), 2: ("exists", "q2")}
    assert by_shape(held, qs) == {
        "not_in": dict(queries=2, postgres_s=3.0, dqn_s=2.0, oracle_s=0.75),
        "exists": dict(queries=1, postgres_s=3.0, dqn_s=0.1, oracle_s=0.1),
    }


def test_shape_names_are_checked():
    assert names(" exists, in ,") == ["exists", "in"]
    with pytest.raises(ValueError):
        names("exist")


def _settings(**kw):
    from types import SimpleNamespace

    base = dict(n=3, query_seed=7, train_shapes="scalar_where,in", held_shapes="not_in")
    return SimpleNamespace(**{**base, **kw})


def test_split_ids_stay_when_n_grows(monkeypatch):
    from types import SimpleNamespace

    from rlsuite.apps.queryopt import shapes_heldout as SH
    from rlsuite.apps.queryopt.workloads import shapes

    monkeypatch.setattr(shapes, "planned_by", lambda db, schema: None)
    w = SimpleNamespace(schema="s")
    small, big = SH.split_queries(None, w, _settings(n=3)), SH.split_queries(None, w, _settings(n=5))  # fmt: skip
    assert sorted(small) == [0, 1, 2, SH.HELD_BASE, SH.HELD_BASE + 1, SH.HELD_BASE + 2]
    assert all(big[k] == v for k, v in small.items())
    assert {big[k][0] for k in big if k >= SH.HELD_BASE} == {"not_in"}


def test_resume_keeps_only_searches_of_the_same_sql():
    from rlsuite.apps.queryopt.shapes_heldout import still_valid

    old = {
        "queries": {"0": {"sql": "a"}, "1": {"sql": "b"}, "2": {"sql": "c"}},
        "searches": {"0": {"best": []}, "1": {"best": ["x"]}},
        "fast": {"2": 0.01},
    }
    qs = {0: ("in", "a"), 1: ("in", "b2"), 2: ("in", "c")}
    assert still_valid(old, qs) == {"searches": {"0": {"best": []}}, "fast": {"2": 0.01}}
    assert still_valid({}, qs) == {"searches": {}, "fast": {}}


def test_training_queries_below_min_train_s_are_not_searched(monkeypatch):
    from types import SimpleNamespace

    from rlsuite.apps.queryopt import oracle
    from rlsuite.apps.queryopt.shapes_heldout import search_split

    times = {"t_fast": 0.5, "t_slow": 2.0, "h_fast": 0.02, "h_slow": 3.0}
    runs = []

    def run(sql, schema, cap_ms):
        runs.append(sql)
        return SimpleNamespace(timed_out=False, runtime_s=times[sql])

    searched = []

    def search(db, schema, sql, *a, **k):
        searched.append(sql)
        return SimpleNamespace(sql=sql, best=(), best_s=times[sql])

    monkeypatch.setattr(oracle, "search", search)
    monkeypatch.setattr(oracle, "result_dict", lambda res: {"orig_s": times[res.sql]})
    s = _settings(cap_s=10.0, min_s=0.05, min_train_s=1.0, depth=1, beam=1, rules="")
    qs = {0: ("in", "t_fast"), 1: ("in", "t_slow"), 1000: ("not_in", "h_fast"), 1001: ("not_in", "h_slow")}  # fmt: skip
    payload = {"searches": {}, "fast": {}}
    search_split(s, SimpleNamespace(run=run), SimpleNamespace(schema="s"), qs, None, payload, lambda p: None, lambda m: None)  # fmt: skip
    assert searched == ["t_slow", "h_slow"]
    assert payload["fast"] == {"0": 0.5, "1000": 0.02}
    assert sorted(payload["searches"]) == ["1", "1001"]
    runs.clear()  # a rerun: the noted ones stay noted, unless the bound drops below them
    search_split(s, SimpleNamespace(run=run), SimpleNamespace(schema="s"), qs, None, payload, lambda p: None, lambda m: None)  # fmt: skip
    assert runs == []
    s2 = _settings(cap_s=10.0, min_s=0.05, min_train_s=0.4, depth=1, beam=1, rules="")
    search_split(s2, SimpleNamespace(run=run), SimpleNamespace(schema="s"), qs, None, payload, lambda p: None, lambda m: None)  # fmt: skip
    assert runs == ["t_fast", "t_fast"] and searched[-1] == "t_fast" and "0" in payload["searches"]
