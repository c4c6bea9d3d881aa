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


def test_on_the_99_the_dqn_meets_the_searched_oracle_through_a_copy_of_its_cache(tmp_path, monkeypatch):  # fmt: skip
    import json
    from types import SimpleNamespace

    from rlsuite.apps.queryopt import heldout as H
    from rlsuite.apps.queryopt.shapes_heldout import on_searched

    src, cache = tmp_path / "learn.json", tmp_path / "learn_cache.json"
    mine = tmp_path / "mine_99_cache.json"
    with pytest.raises(FileNotFoundError, match="queryopt_tpcds_learn"):
        on_searched(None, SimpleNamespace(scale=1.0), None, src, mine, False, print)
    search = {"orig_s": 30.0, "orig_capped": True, "best": ["unnest_subqueries"], "best_s": 0.12}
    src.write_text(json.dumps({"scale": 1.0, "cap_s": 30.0, "searches": {"1": search}}))
    cache.write_text(json.dumps({"k": {"runs": [0.1], "censored": False}}))
    calls = []

    def held_out(db, w, rc, check, rw, searched, qs, train_q, cap_ms, say):
        calls.append((sorted(searched), "customer_total_return" in qs[1].lower(), train_q, cap_ms, dict(rc.entries)))  # fmt: skip
        rc.entries["new"] = {"runs": [1.0], "censored": False}
        rc.save()
        return [dict(query=1, orig_s=30.0, dqn=dict(s=0.2), oracle=dict(s=0.12), greedy=dict(s=30.0))]  # fmt: skip

    monkeypatch.setattr(H, "held_out", held_out)
    monkeypatch.setattr(H, "RowChecker", lambda *a: SimpleNamespace(close=lambda: None))
    with pytest.raises(ValueError, match="--scale 1"):
        on_searched(None, SimpleNamespace(scale=0.1), None, src, mine, False, print)
    out = on_searched(None, SimpleNamespace(scale=1.0), None, src, mine, False, print)
    assert calls[0] == ([1], True, (), 30000, {"k": {"runs": [0.1], "censored": False}})
    assert out["summary"]["queries"] == 1 and abs(out["summary"]["dqn_over_oracle"] - 29.8 / 29.88) < 1e-9  # fmt: skip
    assert "new" not in json.loads(cache.read_text()) and "new" in json.loads(mine.read_text())
    on_searched(
        None, SimpleNamespace(scale=1.0), None, src, mine, True, print
    )  # resumed: its own cache
    assert "new" in calls[1][4]
    on_searched(
        None, SimpleNamespace(scale=1.0), None, src, mine, False, print
    )  # afresh: the source's
    assert "new" not in calls[2][4]
