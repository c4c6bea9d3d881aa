"""pg_qopt inside the real embedded PostgreSQL 15: rewrites, arms, and every failure is safe."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from rlsuite.apps.queryopt.verify import same_rows
from rlsuite.apps.queryopt.workloads.joins import SEED_QUERY

from .conftest import SCHEMA, SMALL_QUERY, pgoptions, plugin_dsn, psql, rules_server


def _rows(out: str) -> list[tuple]:
    return [tuple(int(x) for x in line.split("|")) for line in out.strip().splitlines() if line]


@pytest.fixture(scope="module")
def model_server(sock_dir, dsn, db, plugin_lib):
    """The real model server (rules backend: eager aggregation), in this process."""
    with rules_server(sock_dir / "model.sock", dsn, "joins") as srv:
        yield srv


def test_gucs_default_off_and_server_is_local_only(dsn, plugin_lib):
    rc, out, err = psql(
        dsn,
        "LOAD 'pg_qopt'; SELECT name || '=' || setting FROM pg_settings "
        "WHERE name LIKE 'qopt.%' ORDER BY name",
    )
    assert rc == 0, err
    got = dict(line.split("=", 1) for line in out.split())
    assert got == {
        "qopt.enabled": "off",
        "qopt.mode": "rewrite",
        "qopt.reward_batch": "32",
        "qopt.send_rewards": "on",
        "qopt.server": "",
        "qopt.timeout_ms": "50",
    }
    rc, _, err = psql(dsn, "LOAD 'pg_qopt'; SET qopt.server = 'example.com:5000'")
    assert rc != 0 and "localhost" in err
    rc, _, err = psql(dsn, "LOAD 'pg_qopt'; SET qopt.mode = 'bogus'")
    assert rc != 0 and "rewrite" in err


def test_disabled_plugin_asks_nobody(dsn, fake_server, plugin_lib):
    fs = fake_server(lambda m: b'{"sql": null}\n')
    rc, out, err = psql(
        dsn,
        SMALL_QUERY,
        pgoptions=f"-c session_preload_libraries=pg_qopt -c qopt.server={fs.path} "
        f"-c search_path={SCHEMA},public",
    )
    assert rc == 0, err
    assert fs.plans() == []


def test_seed_query_gets_eager_aggregation_through_psql(dsn, model_server, seed_rows):
    opts = pgoptions(model_server.address, timeout_ms=20_000)
    rc, plain_plan, err = psql(dsn, f"EXPLAIN {SEED_QUERY}", pgoptions=f"-c search_path={SCHEMA}")
    assert rc == 0, err
    rc, plan, err = psql(dsn, f"EXPLAIN {SEED_QUERY}", pgoptions=opts)
    assert rc == 0, err
    assert "Query Optimizer: rewritten: eager_aggregation" in plan
    assert "Query Optimizer" not in plain_plan
    # eager aggregation: S and T are aggregated below the joins
    assert plan.count("HashAggregate") + plan.count("GroupAggregate") >= 3
    assert plain_plan.count("HashAggregate") + plain_plan.count("GroupAggregate") == 1

    t0 = time.perf_counter()
    rc, out, err = psql(dsn, SEED_QUERY, pgoptions=opts)
    took = time.perf_counter() - t0
    assert rc == 0, err
    assert "WARNING" not in err
    assert same_rows(_rows(out), seed_rows)
    assert took < 2.0  # the standard plan takes about 3 s on this machine
    # the runtime came back as a reward for the decision
    deadline = time.time() + 5
    while model_server.stats.rewards == 0 and time.time() < deadline:
        time.sleep(0.05)
    assert model_server.stats.rewards >= 1
    assert any(d["applied"] == ["eager_aggregation"] for d in model_server.decisions.values())


def test_explain_json_carries_the_note(dsn, model_server):
    rc, out, err = psql(
        dsn, f"EXPLAIN (FORMAT JSON) {SMALL_QUERY}", pgoptions=pgoptions(model_server.address)
    )
    assert rc == 0, err
    doc = json.loads(out)
    assert doc[0]["Query Optimizer"].startswith("rewritten: eager_aggregation")
    assert "Plan" in doc[0]


def test_column_names_and_multi_statement_strings(dsn, model_server):
    q = "SELECT R.b AS key, count(1) AS n FROM R, S WHERE R.b = S.b AND R.a <= 200 GROUP BY R.b"
    rc, out, err = psql(dsn, f"SELECT 1; {q} ORDER BY 1", pgoptions=pgoptions(model_server.address))
    assert rc == 0, err
    rc2, out2, _ = psql(dsn, f"SELECT 1; {q} ORDER BY 1", pgoptions=f"-c search_path={SCHEMA}")
    assert out == out2
    env = dict(os.environ, PGOPTIONS=pgoptions(model_server.address))
    p = subprocess.run(
        ["psql", dsn, "-X", "-c", f"{q} ORDER BY 1 LIMIT 1"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert p.stdout.splitlines()[0].split("|")[0].strip() == "key"


def test_killed_model_server_every_query_still_succeeds(dsn, db, sock_dir, plugin_lib):
    from rlsuite.apps.queryopt.engines.postgres import Database

    sock = sock_dir / "killme.sock"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rlsuite.apps.queryopt.plugin.cli",
            "serve",
            "--rules",
            "eager_aggregation",
            "--socket",
            str(sock),
            "--dsn",
            dsn,
            "--wait-ms",
            "20000",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        from rlsuite.apps.queryopt.plugin.protocol import alive

        deadline = time.time() + 60
        while not alive(str(sock)):
            assert proc.poll() is None, proc.stdout.read()
            assert time.time() < deadline, "model server did not come up"
            time.sleep(0.2)
        queries = [
            f"SELECT R.b, {agg} FROM R, S WHERE R.b = S.b AND R.a <= {lim} GROUP BY R.b"
            for agg, lim in [
                ("count(1)", 300),
                ("max(R.a)", 400),
                ("count(1)", 500),
                ("min(R.a)", 600),
                ("count(1)", 700),
                ("min(R.a)", 800),
            ]
        ]
        expected = [db.run(q, SCHEMA).rows for q in queries]
        session = Database(plugin_dsn(dsn, sock, timeout_ms=20_000))
        try:
            notes = []
            for i, q in enumerate(queries):
                if i == 3:
                    proc.send_signal(signal.SIGKILL)
                    proc.wait(10)
                plan = session.explain(q, SCHEMA)
                notes.append(plan.get("Query Optimizer", ""))
                got = session.run(q, SCHEMA).rows
                assert same_rows(got, expected[i]), q
            assert all(n.startswith("rewritten") for n in notes[:3]), notes
            assert all(n.startswith("standard plan") for n in notes[3:]), notes
            warnings = [n for n in session.conn.notices if "pg_qopt" in n]
            assert len(warnings) == 1, session.conn.notices
        finally:
            session.close()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


BAD_ANSWERS = {
    "not json": b"this is not json\n",
    "not an object": b"[1, 2]\n",
    "error": b'{"error": "model exploded"}\n',
    "bad sql": b'{"sql": "SELECT nonsense FROM nowhere", "key": "k"}\n',
    "two statements": b'{"sql": "SELECT 1; SELECT 2", "key": "k"}\n',
    "wrong columns": b'{"sql": "SELECT 1", "key": "k"}\n',
    "wrong types": b'{"sql": "SELECT b::text, count(1) FROM r GROUP BY b", "key": "k"}\n',
    "forbidden arm": b'{"sql": null, "arm": {"work_mem": "1GB"}, "key": "k"}\n',
    "bad arm value": b'{"sql": null, "arm": {"enable_hashjoin": "maybe"}, "key": "k"}\n',
    "unknown arm": b'{"sql": null, "arm": {"enable_teleport": "on"}, "key": "k"}\n',
    "closed": None,
}


@pytest.mark.parametrize("name", sorted(BAD_ANSWERS))
def test_malformed_answers_are_survived(name, dsn, db, fake_server):
    answer = BAD_ANSWERS[name]
    fs = fake_server(lambda m: answer)
    expected = db.run(SMALL_QUERY, SCHEMA).rows
    rc, out, err = psql(
        dsn,
        f"EXPLAIN {SMALL_QUERY}; {SMALL_QUERY}; {SMALL_QUERY}; SHOW enable_hashjoin;",
        pgoptions=pgoptions(fs.path, timeout_ms=2000),
    )
    assert rc == 0, err
    lines = out.strip().splitlines()
    assert any("Query Optimizer: standard plan" in line for line in lines), out
    assert lines[-1] == "on"  # settings of a failed arm do not leak
    body = [line for line in lines if "|" in line and "Query Optimizer" not in line]
    half = len(body) // 2
    assert same_rows(_rows("\n".join(body[:half])), expected)
    assert same_rows(_rows("\n".join(body[half:])), expected)
    assert err.count("WARNING") == 1, err  # once per session
    assert len(fs.plans()) == 3


def test_slow_server_past_timeout_is_survived(dsn, db, fake_server):
    fs = fake_server(lambda m: b'{"sql": "SELECT 1"}\n', delay_s=3.0)
    t0 = time.perf_counter()
    rc, out, err = psql(
        dsn, f"EXPLAIN {SMALL_QUERY}; {SMALL_QUERY}", pgoptions=pgoptions(fs.path, 150)
    )
    took = time.perf_counter() - t0
    assert rc == 0, err
    assert "no answer within qopt.timeout_ms = 150 ms" in out
    assert took < 2.5
    assert err.count("WARNING") == 1
    body = [ln for ln in out.strip().splitlines() if "|" in ln and "Query Optimizer" not in ln]
    assert same_rows(_rows("\n".join(body)), db.run(SMALL_QUERY, SCHEMA).rows)


def test_server_down_means_standard_plan(dsn, db, sock_dir, plugin_lib):
    rc, out, err = psql(
        dsn, f"{SMALL_QUERY}; {SMALL_QUERY}", pgoptions=pgoptions(sock_dir / "nobody.sock")
    )
    assert rc == 0, err
    assert err.count("WARNING") == 1 and "cannot connect" in err
    assert len(_rows(out)) == 2 * len(db.run(SMALL_QUERY, SCHEMA).rows)


def test_arms_mode_sets_and_restores_planner_settings(dsn, fake_server):
    fs = fake_server(
        lambda m: (
            b'{"sql": "SELECT 1", "arm": {"enable_hashjoin": "off", "enable_hashagg": false},'
            b' "key": "arm1", "note": "no hash"}\n'
        )
    )
    rc, out, err = psql(
        dsn,
        f"EXPLAIN {SMALL_QUERY}; SHOW enable_hashjoin; SHOW enable_hashagg;",
        pgoptions=pgoptions(fs.path, extra="-c qopt.mode=arms"),
    )
    assert rc == 0, err
    assert "Query Optimizer: planner arm: no hash" in out
    assert "Hash Join" not in out and "HashAggregate" not in out
    assert out.strip().splitlines()[-2:] == ["on", "on"]
    assert fs.plans()[0]["mode"] == "arms"


def test_only_top_level_selects_without_parameters_are_asked(dsn, fake_server):
    fs = fake_server(lambda m: b'{"sql": null}\n')
    sql = (
        "DO $$ BEGIN PERFORM count(*) FROM r; END $$; "
        "PREPARE p(int) AS SELECT count(*) FROM r WHERE a < $1; EXECUTE p(10); "
        "SELECT (SELECT count(*) FROM r) FROM s LIMIT 1 FOR UPDATE; "
        "SELECT count(*) FROM r WHERE a < 10;"
    )
    rc, out, err = psql(dsn, f"BEGIN; {sql} ROLLBACK;", pgoptions=pgoptions(fs.path))
    assert rc == 0, err
    asked = [p["sql"] for p in fs.plans()]
    assert asked == ["SELECT count(*) FROM r WHERE a < 10"]
    assert fs.plans()[0]["search_path"].startswith(SCHEMA)


@pytest.mark.parametrize("keep,newline", [(True, True), (False, True), (False, False)])
def test_a_session_keeps_one_connection_for_its_plan_requests(dsn, fake_server, keep, newline):
    """A session's plan requests go over one connection (one send and one receive each).
    A server that closes it after each answer gets a new one each time, and no request is
    lost, even when the close races with the next request; an answer ended by the close
    instead of a newline counts."""
    n = [0]

    def reply(m: dict) -> bytes | None:
        n[0] += 1
        out = json.dumps({"sql": None, "arm": {}, "key": f"k{n[0]}", "note": "x"}).encode()
        return out + (b"\n" if newline else b"")

    fs = fake_server(reply, name=f"keep{int(keep)}{int(newline)}.sock", keep=keep)
    stmts = "; ".join(f"SELECT count(*) FROM r WHERE a < {10 + i}" for i in range(6))
    rc, out, err = psql(dsn, stmts, pgoptions=pgoptions(fs.path, extra="-c qopt.send_rewards=off"))
    assert rc == 0 and "WARNING" not in err, err  # every request was answered
    assert len(fs.plans()) == 6
    assert fs.connections == (1 if keep else 6)


@pytest.mark.parametrize("batch", [32, 1])
def test_rewards_ride_with_the_next_plan_request_and_none_is_lost(dsn, fake_server, batch):
    """A busy session's rewards come with its next plan request (no connection of their
    own); the last one comes when the session ends. ``qopt.reward_batch = 1``: each on its
    own, at once."""
    n = [0]

    def reply(m: dict) -> bytes | None:
        if m.get("op") != "plan":
            return None
        n[0] += 1
        return json.dumps({"sql": None, "arm": {}, "key": f"k{n[0]}", "note": "x"}).encode() + b"\n"

    fs = fake_server(reply)
    stmts = "; ".join(f"SELECT count(*) FROM r WHERE a < {10 + i}" for i in range(6))
    rc, out, err = psql(
        dsn, stmts, pgoptions=pgoptions(fs.path, extra=f"-c qopt.reward_batch={batch}")
    )
    assert rc == 0, err
    deadline = time.time() + 5
    while time.time() < deadline:
        got = [r["key"] for m in fs.requests for r in m.get("rewards") or m.get("items") or []]
        if len(got) == 6:
            break
        time.sleep(0.05)
    assert sorted(got) == sorted(f"k{i}" for i in range(1, 7))  # every execution, once
    plans = fs.plans()
    riding = sum(len(p.get("rewards") or []) for p in plans)
    alone = [m for m in fs.requests if m.get("op") == "rewards"]
    if batch == 1:
        assert riding == 0 and len(alone) == 6
    else:  # the first at once (nothing sent for a second), 4 with plan requests, 1 at exit
        assert riding >= 4 and len(alone) <= 2, fs.requests
        assert all(r["ms"] >= 0 for p in plans for r in p.get("rewards") or [])
