# ruff: noqa: F811 - the plugin tests' fixtures are imported by name
"""``qopt-bench serve --learn`` over the rules the user names: with ``--rules`` of 3 rules
the store records those 3 and a retrain gives a model over exactly them, in their order (on
the real PostgreSQL 15 and the real plugin); with no model, the default rules, recorded by
name; ``--model`` with ``--rules`` other than the model's own is refused in one sentence."""

from __future__ import annotations

import json
import math
import os
import sqlite3

import pytest

from rlsuite.apps.queryopt import rules as R
from rlsuite.apps.queryopt.featurizer import Featurizer
from rlsuite.apps.queryopt.plugin import cli
from rlsuite.apps.queryopt.plugin.experience import ExperienceStore, StoreError

from .plugin.conftest import SCHEMA, plugin_dsn, plugin_lib, sock_dir  # noqa: F401 - fixtures
from .test_online import TWO_TABLES, _run, _wait
from .test_shipped_models import POLICIES

THREE = ("join_order_small_first", "eager_aggregation", "or_to_union_all")
"""Three rules, in an order other than the registry's (eager_aggregation is its first)."""
MODEL = os.path.join(POLICIES, "queryopt_tpcds_odd_dqn")
"""A shipped model over the default 14 rules."""


def _meta_rules(path) -> tuple[str, ...]:
    conn = sqlite3.connect(path)
    try:
        return tuple(
            json.loads(conn.execute("SELECT value FROM meta WHERE key='rules'").fetchone()[0])
        )
    finally:
        conn.close()


# ------------------------------------------------------------ pure logic (no database)
def test_serve_refuses_a_model_with_other_rules_in_one_sentence(capsys):
    argv = ["serve", "--model", MODEL, "--dsn", "host=/nowhere", "--workload", "tpcds"]
    assert cli.main([*argv, "--rules", ",".join(THREE)]) == 2
    out = " ".join(capsys.readouterr().out.split())
    assert "Traceback" not in out and out.count(". ") == 0, out
    assert "--rules names join_order_small_first, eager_aggregation, or_to_union_all, but" in out
    assert (
        "the model acts over the rules it was trained over, in their order, the MDP's "
        "default 14" in out
    ), out
    assert "drop --rules" in out and "leave out --model" in out, out
    # a model's own rules in another order are other actions: refused too
    with pytest.raises(ValueError, match=r"in their order, its own 3 \(join_order_small_first, "):
        cli.check_model_rules(THREE, THREE[::-1])
    # its own rules in its order only restate them: accepted (no database needed to tell)
    same = cli.build_parser().parse_args([*argv, "--rules", ",".join(R.RULE_NAMES)])
    assert cli.serve_chooser(same) == "model"
    with pytest.raises(ValueError, match="--chooser rules serves fixed rules: leave out --model"):
        cli.serve_chooser(cli.build_parser().parse_args([*argv, "--rules", "eager_aggregation",
                                                         "--chooser", "rules"]))  # fmt: skip


def test_a_store_records_the_default_rules_by_name(tmp_path):
    path = tmp_path / "default.sqlite"
    ExperienceStore(path, SCHEMA).close()
    assert _meta_rules(path) == R.RULE_NAMES
    ExperienceStore(path, SCHEMA, rules=R.RULE_NAMES).close()  # the same actions
    with pytest.raises(StoreError, match="over the default rules, this server acts over its own 3"):
        ExperienceStore(path, SCHEMA, rules=THREE)
    conn = sqlite3.connect(path)  # a store of an older rlsuite: no rules recorded
    conn.execute("DELETE FROM meta WHERE key='rules'")
    conn.commit()
    conn.close()
    assert ExperienceStore(path, SCHEMA).rules == R.RULE_NAMES


# ------------------------------------------------------------ real PostgreSQL + pg_qopt
def _sidecar_rules(ckpt: str) -> tuple[str, ...]:
    from rlsuite.apps.queryopt.train import model_actions

    return model_actions(ckpt)


@pytest.mark.slow
def test_serve_learn_with_rules_records_them_and_retrains_over_exactly_them(
    tmp_path, sock_dir, dsn, db, plugin_lib
):
    from rlsuite.apps.queryopt.engines.postgres import Database
    from rlsuite.apps.queryopt.plugin.online import OnlineConfig

    store_path, sock = tmp_path / "exp.sqlite", sock_dir / "named-rules.sock"
    argv = ["serve", "--learn", "--rules", ",".join(THREE), "--store", str(store_path),
            "--workload", "joins", "--socket", str(sock), "--dsn", dsn, "--wait-ms", "20000"]  # fmt: skip
    online = OnlineConfig(
        explore_share=0.3, explore_window=10, retry_after=1, retrain_every=10_000,
        iterations=2, env_steps_per_iteration=200,
        guard_margin=100.0,  # any finite candidate passes: this test is about its actions
    )  # fmt: skip
    srv = cli.build_server(cli.build_parser().parse_args(argv), dsn, online)
    store, session = srv.learner.store, None
    try:
        # the server's actions are the 3 rules, in their order: recorded, and retrained over
        assert _meta_rules(store_path) == THREE
        assert srv.decider.actions == THREE and srv.learner.rules == THREE
        srv.start()
        session = Database(plugin_dsn(dsn, sock, timeout_ms=20_000))
        for _ in range(12):  # the standard plan re-measured (explored) beside the served rules
            _run(session, TWO_TABLES.format(700), 6)
            session.close()  # the session's last runtime is sent as it ends
            session = Database(plugin_dsn(dsn, sock, timeout_ms=20_000))
            _wait(lambda: store.count() >= srv.stats.requests - srv.stats.not_ready)
            applied = {e.applied for e in store.recent()}
            if () in applied and len(applied) > 1:
                break
        rows = store.recent()
        assert () in {e.applied for e in rows} and len({e.applied for e in rows}) > 1, rows
        size = Featurizer(max_steps=2, rules=THREE).size
        assert all(len(v) == size for e in rows for v in e.features), size
        assert {n for e in rows for n in e.applied} <= set(THREE)  # explored only the 3
        out = srv.learner.retrain()
        assert out["swapped"] and out["version"] == 1, out
        assert math.isfinite(out["guard"]["new_predicted"])
        assert _sidecar_rules(out["checkpoint"]) == THREE
        assert srv.decider.actions == THREE and srv.decider.env.action_space.n == len(THREE) + 1
    finally:
        if session is not None:
            session.close()
        srv.close()
    # restarted over other rules, the store is refused; over the same 3, reopened
    with pytest.raises(StoreError, match="holds features over its own 3 rules join_order"):
        ExperienceStore(store_path, SCHEMA, rules=("eager_aggregation",))
    ExperienceStore(store_path, SCHEMA, rules=THREE).close()


def test_serve_learn_from_no_model_records_the_default_rules_by_name(tmp_path, sock_dir, dsn, db):
    from rlsuite.apps.queryopt.plugin.online import OnlineConfig

    store_path = tmp_path / "exp.sqlite"
    argv = ["serve", "--learn", "--store", str(store_path), "--workload", "joins",
            "--socket", str(sock_dir / "no-model.sock"), "--dsn", dsn]  # fmt: skip
    srv = cli.build_server(cli.build_parser().parse_args(argv), dsn, OnlineConfig())
    try:
        assert _meta_rules(store_path) == R.RULE_NAMES  # explicit, by name
        assert srv.decider.actions == R.RULE_NAMES and not srv.decider.rewrites
        assert srv.learner.rules == ()  # a retrain's default: the same 14
    finally:
        srv.close()
