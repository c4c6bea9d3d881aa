"""A model's own action set: the featurizer records its rules (the shipped models' 14 load as
before), the trainer's envs and the replay env act over them, the oracle searches them, and
a learned rewriter loaded from such a model acts over them again."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rlsuite.apps.queryopt import rules as R
from rlsuite.apps.queryopt import train as T
from rlsuite.apps.queryopt.featurizer import Featurizer

OWN = ("decorrelate_scalar", *R.RULE_NAMES, "not_in_exact")
TPCDS = "qopt_tpcds_sf0_01"


def test_featurizer_records_its_rules_and_the_default_is_the_mdps():
    base, own = Featurizer(max_steps=2), Featurizer(max_steps=2, rules=OWN)
    assert base.actions == R.RULE_NAMES and own.actions == OWN
    assert own.size == base.size + 4  # applicable and applied, per extra rule
    assert Featurizer.from_description(base.describe()) == base
    assert Featurizer.from_description(own.describe()) == own
    with pytest.raises(ValueError, match="'no_such_rule', which this build .* retrain it"):
        Featurizer.from_description({**own.describe(), "rules": [*OWN, "no_such_rule"]})
    with pytest.raises(ValueError, match="Retrain"):
        Featurizer.from_description({**own.describe(), "version": 1})
    with pytest.raises(ValueError, match="unknown rule"):
        R.named(("unnest_subqueries", "no_such_rule"))
    with pytest.raises(ValueError, match="twice"):
        R.named(("unnest_subqueries", "unnest_subqueries"))


def test_train_config_carries_its_rules_into_envs_and_refuses_bad_ones(tmp_path):
    cfg = T.TrainConfig(dsn="host=/nowhere", workload="tpcds", rules=OWN)
    cfg.validate()
    assert cfg.env_config()["rules"] == list(OWN)
    assert "rules" not in T.TrainConfig(dsn="host=/nowhere").env_config()
    store = tmp_path / "e.sqlite"
    store.write_bytes(b"")
    replay = T.TrainConfig(dsn="x", workload="tpcds", experience=str(store), rules=OWN)
    assert replay.env_config()["rules"] == list(OWN)
    with pytest.raises(ValueError, match="unknown rule"):
        T.TrainConfig(dsn="x", rules=("no_such_rule",)).validate()
    with pytest.raises(ValueError, match="actions are fixed"):
        T.TrainConfig(engine="spark", rules=("decorrelate_scalar",)).validate()


def _one_rewrite_store(tmp_path) -> tuple[str, int]:
    """An experience store over :data:`OWN` of one shape: its standard plan (1000 ms, states
    all 0.1) and ``decorrelate_scalar`` (10 ms, then states all 0.2); its path, state size."""
    from rlsuite.apps.queryopt.plugin.experience import Experience, ExperienceStore

    size = Featurizer(max_steps=2, rules=OWN).size
    s0, s1 = (tuple(float(x) for x in np.full(size, v)) for v in (0.1, 0.2))
    path = str(tmp_path / "x.sqlite")
    store = ExperienceStore(path, "qopt_tpcds")
    store.add(Experience("qopt_tpcds", "q", (), 1000.0, "standard", (s0,)))
    store.add(Experience("qopt_tpcds", "q", ("decorrelate_scalar",), 10.0, "explore", (s0, s1)))
    store.close()
    return path, size


def test_replay_env_acts_over_its_own_rules(tmp_path):
    from rlsuite.apps.queryopt.envs.replay import ReplayRewriteEnv

    path, size = _one_rewrite_store(tmp_path)
    env = ReplayRewriteEnv(experience=path, workload="tpcds", max_steps=2, rules=OWN)
    assert env.action_space.n == len(R.RULE_NAMES) + 3 and env.stop_action == len(OWN)
    obs, _ = env.reset(seed=0)
    assert obs.shape == (size,)
    _, r, done, _, _ = env.step(OWN.index("decorrelate_scalar"))
    assert not done and r == 0.0
    _, r, done, _, _ = env.step(env.stop_action)
    assert done and r == pytest.approx(-0.01)
    # the MDP's own env knows no decorrelate_scalar: its states are another size
    assert ReplayRewriteEnv(experience=path, workload="tpcds").action_space.n == R.STOP + 1


def test_replay_env_starts_a_share_of_episodes_at_a_logged_rewrite(tmp_path):
    """Exploring starts: with ``prefix_starts`` an episode may begin after a measured
    rewrite, where STOP scores that rewrite (what a tiny retrain learnt too rarely)."""
    from rlsuite.apps.queryopt.envs.replay import ReplayRewriteEnv

    path, _ = _one_rewrite_store(tmp_path)
    starts = {}
    env = ReplayRewriteEnv(experience=path, workload="tpcds", rules=OWN, prefix_starts=0.5)
    for seed in range(200):
        obs, _ = env.reset(seed=seed)
        later = bool(obs[0] == np.float32(0.2))
        starts[later] = starts.get(later, 0) + 1
        if later:  # one rewrite in of two: STOP ends it, scored as the rewrite
            _, r, done, _, _ = env.step(env.stop_action)
            assert done and r == pytest.approx(-0.01)
    assert 60 <= starts[True] <= 140 and 60 <= starts[False] <= 140, starts
    plain = ReplayRewriteEnv(experience=path, workload="tpcds", rules=OWN)
    assert all(plain.reset(seed=k)[0][0] == np.float32(0.1) for k in range(50))
    with pytest.raises(ValueError, match="prefix_starts must be in"):
        ReplayRewriteEnv(experience=path, workload="tpcds", prefix_starts=1.5)


class Ranked:
    """A policy valuing ``ranking`` (action indices, STOP included) highest first, the
    other actions below them all; ``act`` is its greedy action, ignoring applicability."""

    def __init__(self, ranking, n):
        self.q = np.zeros(n)
        for i, a in enumerate(ranking):
            self.q[a] = len(ranking) - i

    def action_values(self, obs):
        return self.q.copy()

    def act(self, obs):
        return int(np.argmax(self.q))


def test_the_policy_takes_its_best_applicable_action_on_both_engines():
    from rlsuite.apps.queryopt.spaces import space_of

    yes = object.__new__(R.Query)  # an action that applies: its rewrite of the query
    for engine in ("postgres", "spark"):
        space = space_of(engine)
        top, nxt, stop = 0, 1, len(space.names)
        pol = Ranked([top, nxt, stop], stop + 1)
        app = {space.names[top]: "does not apply", space.names[nxt]: yes}
        assert space.choose(pol, None, app) == nxt  # not the top action, which does not apply
        assert space.choose(pol, None, {**app, space.names[top]: yes}) == top
        assert space.choose(pol, None, {}) == stop  # nothing applies: STOP
        assert space.choose(Ranked([top], stop + 1), None, {}) == stop  # even valued last
    # a model's own action set: indices are its order, not the registry's
    sp = space_of("postgres")
    i, j = OWN.index("unnest_subqueries"), OWN.index("decorrelate_scalar")
    app = {"unnest_subqueries": "no", "decorrelate_scalar": yes}
    assert sp.choose(Ranked([i, j], len(OWN) + 1), None, app, OWN) == j


@pytest.fixture(scope="module")
def two_keys(tpcds):
    from rlsuite.apps.queryopt.workloads.shapes import generate, planned_by

    return generate(1, 7, ["scalar_two_keys"], accept=planned_by(tpcds, TPCDS))[0][1]


def test_env_and_oracle_search_a_models_own_rules(tpcds, two_keys, tmp_path):
    from rlsuite.apps.queryopt.envs.rewrite import QueryRewriteEnv
    from rlsuite.apps.queryopt.oracle import RuntimeCache, search

    env = QueryRewriteEnv(
        dsn=tpcds.dsn, workload="tpcds", workload_config={"scale": 0.01}, max_steps=2, rules=OWN
    )
    try:
        obs, _ = env.reset(seed=0, options={"sql": two_keys})
        assert obs.shape == (env.featurizer.size,) and env.action_space.n == len(OWN) + 1
        assert isinstance(env._applicable["decorrelate_scalar"], R.Query)
        env.step(OWN.index("decorrelate_scalar"))
        assert env.query.applied == ("decorrelate_scalar",)
    finally:
        env.close()
    orig = tpcds.run(two_keys, TPCDS, 10_000).runtime_s
    cache = RuntimeCache(str(tmp_path / "c.json"))
    res = search(tpcds, TPCDS, two_keys, cache, orig, 10_000, depth=1, rules=("decorrelate_scalar",))  # fmt: skip
    assert set(res.times) == {(), ("decorrelate_scalar",)}
    assert ("decorrelate_scalar",) not in search(tpcds, TPCDS, two_keys, cache, orig, 10_000, depth=1).times  # fmt: skip


def test_learned_rewriter_acts_over_the_rules_its_model_recorded(tpcds, two_keys, tmp_path, monkeypatch):  # fmt: skip
    from rlsuite.platform import checkpoints

    class Policy:  # decorrelate_scalar first, then STOP
        def action_values(self, obs):
            self.n = getattr(self, "n", 0) + 1
            best = OWN.index("decorrelate_scalar") if self.n == 1 else len(OWN)
            return np.eye(len(OWN) + 1)[best]

    side = {"engine": "postgres", "featurizer": Featurizer(max_steps=2, rules=OWN).describe()}
    (tmp_path / T.SIDECAR).write_text(json.dumps(side))
    meta = {"env_config": {"workload": "tpcds", "workload_config": {"scale": 0.01}}}
    monkeypatch.setattr(checkpoints, "resolve", lambda m: m)
    monkeypatch.setattr(checkpoints, "metadata", lambda p: meta)
    monkeypatch.setattr(checkpoints, "load_controller", lambda p: Policy())
    lr = T.LearnedRewriter(str(tmp_path), tpcds.dsn, timeout_ms=10_000)
    try:
        assert lr.env.action_names == OWN
        q, notes = lr.choose(two_keys)
        assert q.applied == ("decorrelate_scalar",) and not notes
    finally:
        lr.close()


def test_learned_rewriter_skips_a_top_action_that_does_not_apply(tpcds, two_keys, tmp_path, monkeypatch):  # fmt: skip
    """unnest_subqueries valued first does not apply to a scalar subquery correlated on two
    keys: the rewriter takes the next, decorrelate_scalar, instead of stopping there."""
    from rlsuite.platform import checkpoints

    i, j = OWN.index("unnest_subqueries"), OWN.index("decorrelate_scalar")
    side = {"engine": "postgres", "featurizer": Featurizer(max_steps=2, rules=OWN).describe()}
    (tmp_path / T.SIDECAR).write_text(json.dumps(side))
    meta = {"env_config": {"workload": "tpcds", "workload_config": {"scale": 0.01}}}
    monkeypatch.setattr(checkpoints, "resolve", lambda m: m)
    monkeypatch.setattr(checkpoints, "metadata", lambda p: meta)
    monkeypatch.setattr(checkpoints, "load_controller", lambda p: Ranked([i, j, len(OWN)], len(OWN) + 1))  # fmt: skip
    lr = T.LearnedRewriter(str(tmp_path), tpcds.dsn, timeout_ms=10_000)
    try:
        lr.env.reset(seed=0, options={"sql": two_keys})
        assert not isinstance(lr.env._applicable["unnest_subqueries"], R.Query)
        q, notes = lr.choose(two_keys)
        assert q.applied == ("decorrelate_scalar",) and not notes
        d = lr.rewrite(two_keys, check=True)
        assert d.applied == ("decorrelate_scalar",) and d.rows_match
    finally:
        lr.close()
