"""A tiny DQN training where the optimum is known: eager aggregation on a two-query workload."""

from __future__ import annotations

import pytest

from rlsuite.apps.queryopt import train as T

QUERIES = (
    "SELECT R.b, R.c, count(1) FROM R, S, T WHERE R.b = S.b AND R.c = T.c GROUP BY R.b, R.c",
    "SELECT R.a, count(*) FROM R, S, T WHERE R.b = S.b AND R.c = T.c GROUP BY R.a",
)


def test_train_config_validates(dsn):
    with pytest.raises(ValueError, match="2 hidden layers"):
        T.TrainConfig(dsn=dsn, hidden=(8, 8, 8)).validate()
    with pytest.raises(ValueError, match="workload must be"):
        T.TrainConfig(dsn=dsn, workload="nope").validate()
    with pytest.raises(ValueError, match="iterations must be"):
        T.TrainConfig(dsn=dsn, iterations=0).validate()
    plan = T.make_plan(T.TrainConfig(dsn=dsn, num_env_runners=3))
    assert plan.name == "replay" and plan.num_env_runners == 3 and len(plan.hidden) == 2


@pytest.mark.slow
def test_dqn_learns_eager_aggregation(ray_local, db, dsn, tmp_path):
    cfg = T.TrainConfig(
        dsn=dsn,
        queries=QUERIES,
        max_steps=1,
        timeout_ms=300,
        iterations=3,
        learning_starts=50,
        epsilon_timesteps=300,
        target_update_freq=50,
        env_steps_per_iteration=300,
    )
    res = T.train(cfg, str(tmp_path / "run"), progress=False)
    assert res.iterations == 3
    # the optimum is about -0.005 s; PostgreSQL's own plan is capped at -0.3 s
    assert res.final_return > -0.1
    # load -> decide, twice: the same decision (the checkpoint carries the featurizer). The
    # first load checks the rows of the first query's rewrite (its original takes ~4 s
    # here); the second load gives the same SQL for both, unchecked.
    first = {}
    for load in (1, 2):
        lr = T.LearnedRewriter(str(tmp_path / "run"), dsn)
        try:
            for i, q in enumerate(QUERIES):
                check = load == 1 and i == 0
                d = lr.rewrite(q, check=check)
                assert d.applied == ("eager_aggregation",), (load, i, d.reasons)
                if check:
                    assert d.rows_match is True
                if load == 1:
                    first[q] = d.sql
                else:
                    assert d.sql == first[q]
        finally:
            lr.close()
