"""The rewrite MDP on the real database."""

from __future__ import annotations

import pytest

from rlsuite.apps.queryopt import rules as R
from rlsuite.apps.queryopt.workloads.joins import SEED_QUERY
from rlsuite.platform import envs

ENV = "rlsuite/QueryRewrite-v0"


def _seed_env(dsn: str, **config):
    """The env on the joins workload's seed query alone, two rewrites an episode unless
    ``config`` says otherwise."""
    return envs.make(ENV, {"dsn": dsn, "queries": [SEED_QUERY], "max_steps": 2, **config})


def test_env_is_registered_and_passes_check_env(db, dsn):
    assert ENV in envs.registered()
    envs.check(ENV, {"dsn": dsn, "num_queries": 3, "timeout_ms": 100})


def test_eager_aggregation_beats_stop_and_timeout_caps_reward(db, dsn):
    env = _seed_env(dsn, timeout_ms=150, measure_baseline=True)
    try:
        obs, info = env.reset(seed=0)
        assert obs.shape == env.observation_space.shape and info["sql"] == SEED_QUERY
        # STOP right away: PostgreSQL's plan, which runs past the 150 ms cap
        _, r_stop, term, trunc, _ = env.step(R.STOP)
        assert term and not trunc and r_stop == pytest.approx(-0.15)
        env.reset(seed=1)
        _, r0, term, _, _ = env.step(R.RULE_NAMES.index("eager_aggregation"))
        assert r0 == 0.0 and not term
        _, r1, term, _, info = env.step(R.STOP)
        assert term and -0.1 < r1 < 0
        m = env.episode_metrics()
        assert (
            m["rewrites"] == 1
            and m["speedup"] > 1.5
            and m["baseline_runtime_s"] == pytest.approx(0.15)
        )
    finally:
        env.close()
    assert env._db is None


def test_invalid_action_is_a_penalised_no_op_and_max_steps_terminates(db, dsn):
    env = _seed_env(dsn, timeout_ms=100, invalid_action_penalty=0.5)
    try:
        obs, _ = env.reset(seed=0)
        unnest = R.RULE_NAMES.index("unnest_subqueries")
        _, r, term, trunc, info = env.step(unnest)
        assert r == -0.5 and not term and not trunc and "no subqueries" in info["invalid"]
        assert env.query.applied == ()
        _, r, term, trunc, _ = env.step(R.RULE_NAMES.index("arm_no_nestloop"))
        assert term and not trunc and r <= -0.09
    finally:
        env.close()


def test_cost_reward_needs_no_execution(db, dsn):
    env = _seed_env(dsn, reward="cost", max_steps=1)
    try:
        env.reset(seed=0)
        _, r_base, *_ = env.step(R.STOP)
        env.reset(seed=0)
        _, r_eager, *_ = env.step(R.RULE_NAMES.index("eager_aggregation"))
        assert r_eager > r_base  # PostgreSQL's own estimate already prefers eager aggregation
        assert env._runtime == {}
    finally:
        env.close()


def test_relative_reward_is_one_for_postgres_own_plan(db, dsn):
    env = envs.make(
        ENV,
        {
            "dsn": dsn,
            "queries": [SEED_QUERY],
            "reward": "relative",
            "timeout_ms": 150,
            "max_steps": 1,
        },
    )
    try:
        env.reset(seed=0)
        assert env.step(R.STOP)[1] == pytest.approx(-1.0)
        env.reset(seed=0)
        _, r, *_ = env.step(R.RULE_NAMES.index("eager_aggregation"))
        assert -0.7 < r < 0
    finally:
        env.close()


def test_bad_env_config_is_refused():
    with pytest.raises(ValueError, match="reward must be"):
        envs.make(ENV, {"reward": "latency"})
    with pytest.raises(ValueError, match="unknown workload"):
        envs.make(ENV, {"workload": "nosuch"})
