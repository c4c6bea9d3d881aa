# ruff: noqa: F811 - the plugin tests' fixtures are imported by name
"""pg_qopt's online learning over a model's own actions: a model trained over 16 rules
(``decorrelate_scalar`` and ``not_in_exact`` besides the MDP's 14) is served, its
experience recorded and retrained over the same 16 in the same order, on the real
PostgreSQL 15 and the real plugin; the guard walks the model's own actions; a store and a
model over other rules are refused with a sentence that says what to do."""

from __future__ import annotations

import json
import math
import shutil

import pytest

from rlsuite.apps.queryopt import rules as R
from rlsuite.apps.queryopt.featurizer import Featurizer
from rlsuite.apps.queryopt.plugin.experience import Experience, ExperienceStore, StoreError
from rlsuite.apps.queryopt.plugin.guard import guard, walk

from .plugin.conftest import SCHEMA, plugin_dsn, plugin_lib, sock_dir  # noqa: F401 - fixtures
from .test_online import TWO_TABLES, _run, _wait
from .test_shipped_models import POLICIES

OWN = ("decorrelate_scalar", *R.RULE_NAMES, "not_in_exact")
"""16 actions, in an order other than the registry's: index 0 is not eager_aggregation."""


# ------------------------------------------------------------ pure logic (no database)
def test_the_guard_walks_the_models_own_actions():
    import numpy as np

    from rlsuite.apps.queryopt.envs.replay import ShapeExperience

    s0, s1 = np.zeros(3, np.float32), np.ones(3, np.float32)
    sx = ShapeExperience(
        states={(): s0, ("eager_aggregation",): s1},
        ms={(): [10.0], ("eager_aggregation",): [2.0]},
    )

    def prefers(name):  # one Q-value per own action and STOP
        best = OWN.index(name) if name else len(OWN)
        return lambda obs: [1.0 if i == best else 0.0 for i in range(len(OWN) + 1)]

    assert walk(prefers("eager_aggregation"), sx.states, 1, OWN)[0] == ("eager_aggregation",)
    assert walk(prefers("not_in_exact"), sx.states, 2, OWN)[0] == ("not_in_exact",)
    assert walk(prefers(None), sx.states, 2, OWN)[0] == ()  # index 16: STOP
    g = guard({"q": sx}, {}, {"q": ()}, prefers("eager_aggregation"), 2, 0.05, actions=OWN)
    assert g["passed"] and g["new_predicted"] == pytest.approx(0.2)
    # 17 values read as the default 14 rules and STOP: refused, never mis-mapped
    with pytest.raises(ValueError, match="17 action values, but its actions are 14 rules"):
        guard({"q": sx}, {}, {"q": ()}, prefers("eager_aggregation"), 2, 0.05)


def test_the_store_records_its_rules_and_refuses_a_model_over_others(tmp_path):
    own = tmp_path / "own.sqlite"
    ExperienceStore(own, "qopt_joins", rules=OWN).close()
    ExperienceStore(own, "qopt_joins", rules=OWN).close()  # the same model: reopened
    with pytest.raises(StoreError, match="over its own 16 rules decorrelate_scalar, eager"):
        ExperienceStore(own, "qopt_joins")
    old = tmp_path / "default.sqlite"  # a store of the default 14 (none recorded, as before)
    ExperienceStore(old, "qopt_joins").close()
    ExperienceStore(old, "qopt_joins").close()
    with pytest.raises(StoreError, match="holds features over the default rules, this server"):
        ExperienceStore(old, "qopt_joins", rules=OWN)


def test_a_decider_featurizes_over_its_models_actions():
    from rlsuite.apps.queryopt.plugin.decider import Decider

    class Rewriter:
        schema, name = SCHEMA, "fake"

    assert Decider(Rewriter(), None, {}).own_rules == ()
    assert Decider(Rewriter(), None, {}, actions=R.RULE_NAMES).own_rules == ()
    d = Decider(Rewriter(), None, {}, actions=OWN)
    assert d.actions == d.own_rules == OWN


def test_a_model_over_a_rule_this_build_lacks_is_refused_in_one_sentence(tmp_path, capsys):
    from rlsuite.apps.queryopt.plugin.cli import main

    model = tmp_path / "model"
    shutil.copytree(f"{POLICIES}/queryopt_tpcds_odd_dqn", model)
    side = json.loads((model / "queryopt.json").read_text())
    side["featurizer"]["rules"] = [*side["featurizer"]["rules"], "decorrelate_lateral"]
    (model / "queryopt.json").write_text(json.dumps(side))
    argv = ["serve", "--model", str(model), "--dsn", "host=/nowhere", "--workload", "tpcds"]
    assert main(argv) == 2
    out = " ".join(capsys.readouterr().out.split())
    assert "Traceback" not in out and out.count(". ") == 0, out
    assert "rule 'decorrelate_lateral', which this build of rlsuite does not know" in out, out
    assert "retrain it over this build's rules" in out, out


# ------------------------------------------------------------ real PostgreSQL + pg_qopt
def _sidecar_rules(ckpt: str) -> tuple[str, ...]:
    from rlsuite.apps.queryopt.train import _find_sidecar

    return tuple(_find_sidecar(ckpt, ckpt)["featurizer"]["rules"])


@pytest.mark.slow
def test_a_16_rule_model_is_served_and_retrained_over_its_own_16_rules(
    tmp_path, sock_dir, dsn, db, plugin_lib
):
    from rlsuite.apps.queryopt.engines.postgres import Database
    from rlsuite.apps.queryopt.envs.rewrite import QueryRewriteEnv
    from rlsuite.apps.queryopt.plugin import decider as D
    from rlsuite.apps.queryopt.plugin import modelserver as M
    from rlsuite.apps.queryopt.plugin.learner import OnlineLearner
    from rlsuite.apps.queryopt.plugin.online import OnlineConfig
    from rlsuite.apps.queryopt.plugin.retrainer import ProcessRetrainer

    size = Featurizer(max_steps=2, rules=OWN).size
    sql = TWO_TABLES.format(700)
    # what a served 16-rule model recorded: the states over its 16 rules, and runtimes
    env = QueryRewriteEnv(dsn=dsn, workload="joins", max_steps=2, rules=list(OWN))
    try:
        f0, f1 = ([float(x) for x in v] for v in env.observe(sql, ("eager_aggregation",)))
    finally:
        env.close()
    assert len(f0) == size
    store = ExperienceStore(tmp_path / "exp.sqlite", SCHEMA, rules=OWN)
    shp = "SELECT R.b, count(1) FROM R, S WHERE R.b = S.b AND R.a <= ? GROUP BY R.b"
    for _ in range(3):
        store.add(Experience(SCHEMA, shp, (), 10.0, "standard", (f0,)))
        store.add(Experience(SCHEMA, shp, ("eager_aggregation",), 2.0, "explore", (f0, f1)))
    cfg = OnlineConfig(
        explore_share=0.0, retrain_every=10_000, iterations=2, env_steps_per_iteration=200,
        guard_margin=100.0,  # any finite candidate passes: this test is about its actions
    )  # fmt: skip
    retrainer = ProcessRetrainer()
    swapped: list = []

    def learner(swap, current, version: int, rules) -> OnlineLearner:
        return OnlineLearner(
            cfg, store, str(tmp_path / "models"), dsn=dsn, workload="joins",
            workload_config={}, max_steps=2, start_version=version, retrainer=retrainer,
            make_decider=lambda ckpt: D.ModelDecider(ckpt, dsn, workload="joins"),
            swap=swap, current_choices=current, rules=rules,
        )  # fmt: skip

    srv = session = None
    try:
        # 1. a model trained over the 16 from that experience
        first = learner(lambda d, v, p: swapped.append(d), dict, 0, OWN).retrain()
        assert first["swapped"], first
        assert _sidecar_rules(first["checkpoint"]) == OWN
        model = swapped[0]
        assert model.actions == model.own_rules == OWN and model.env.action_names == OWN
        # 2. served through pg_qopt: its experience recorded over its 16 rules
        sock = sock_dir / "own-actions.sock"
        srv = M.ModelServer(str(sock), model, 20_000, online=cfg, store=store)
        srv.learner = learner(srv.swap, srv.current_choices, 1, model.own_rules)
        srv.version = 1
        srv.start()
        session = Database(plugin_dsn(dsn, sock, timeout_ms=20_000))
        _run(session, TWO_TABLES.format(650), 6)
        session.close()  # its last runtime is sent as it ends
        session = None
        _wait(lambda: store.count() >= 6 + 6 - srv.stats.not_ready)
        served = [e for e in store.recent() if e.version == 1]
        assert served and all(len(v) == size for e in served for v in e.features), served
        # 3. retrained over the same 16, in the same order, and swapped in
        out = srv.learner.retrain()
        assert out["swapped"] and out["version"] == 2, out
        assert out["guard"]["shapes"] >= 1 and math.isfinite(out["guard"]["new_predicted"])
        assert _sidecar_rules(out["checkpoint"]) == OWN
        assert srv.version == 2 and srv.decider.actions == OWN
        assert srv.decider.env.action_space.n == len(OWN) + 1
    finally:
        if session is not None:
            session.close()
        if srv is not None:
            srv.close()
        elif swapped:
            swapped[0].close()
        retrainer.close()
        store.close()
