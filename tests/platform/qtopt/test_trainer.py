"""The qt_opt backend on real Ray actors, with tiny budgets."""

from __future__ import annotations

import numpy as np

from rlsuite.platform.checkpoints.loading import load_controller
from rlsuite.platform.evaluation import evaluate, scenarios
from rlsuite.platform.optimizers import make_plan
from rlsuite.platform.qtopt import QTOptTrainer
from tests.platform.qtopt import _envs  # noqa: F401 - registers the test env

ENV = "rlsuite-test/MatchPoint-v0"
SMALL = dict(env=ENV, hidden=(32,), train_batch_size=64, lr=3e-3)


def _mean_return(ctrl) -> float:
    res = evaluate(ctrl, scenarios(ENV, range(100, 140)), num_workers=0)
    return float(np.mean([e["return"] for e in res.episodes]))


def test_learns_from_a_random_dataset_then_resumes_online(ray_local, tmp_path):
    # 300 one-step episodes of random actions, then sampling in the driver
    offline = dict(dataset="random:300", offline_updates=300, updates_per_iteration=300)
    online = dict(num_runners=0, env_steps_per_iteration=32, rollout_fragment_length=32)
    plan = make_plan("qt_opt", **SMALL, **offline, **online, learning_starts=0)
    a = QTOptTrainer(plan)
    try:
        row = a.train()
        assert row["offline"] == 1 and row["env_steps_this_iter"] == 0
        assert row["updates"] == 300 and row["dataset_size"] == row["replay_size"] == 300
        learned = _mean_return(a.controller())
        a.save(str(tmp_path / "a"))
    finally:
        a.stop()
    # random actions score about -2.7; the greedy CEM policy is near the optimum 0
    print("greedy return after the dataset:", learned)
    assert learned > -0.3
    b = QTOptTrainer(plan.replace(lr=1e-3))
    try:
        b.restore(str(tmp_path / "a"))
        assert b.updates == 300
        for x, y in zip(a.q.parameters(), b.q.parameters()):
            assert np.array_equal(x.detach().numpy(), y.detach().numpy())
        row = b.train()  # online now: samples, and goes on updating
        assert row["offline"] == 0 and row["env_steps_this_iter"] >= 32
        assert row["updates"] > 300 and row["replay_size"] >= 332
    finally:
        b.stop()


def test_runners_and_bellman_updaters_on_ray(ray_local, tmp_path):
    actors = dict(num_runners=1, cpus_per_runner=0.5, num_bellman_updaters=1, cpus_per_updater=0.5)
    online = dict(rollout_fragment_length=10, env_steps_per_iteration=40, learning_starts=20)
    updates = dict(train_batch_size=16, updater_sync_every=5, updates_per_env_step=0.5)
    plan = make_plan("qt_opt", **{**SMALL, **updates}, **actors, **online)
    trainer = QTOptTrainer(plan)
    try:
        row = trainer.train()
        # the runner's transitions arrived, and the learner stepped on updater-made targets
        assert row["env_steps_this_iter"] >= 40 and row["replay_size"] >= 40
        assert row["updates"] >= 10 and np.isfinite(row["loss"])
        assert np.isfinite(row["episode_return_mean"]) and row["episodes_total"] >= 40
        trainer.save(str(tmp_path / "ckpt"))
        mine = trainer.controller()
    finally:
        trainer.stop()
    loaded = load_controller(str(tmp_path / "ckpt"))
    obs = np.array([0.3, -0.6], np.float32)
    loaded.reset(5)
    mine.reset(5)
    np.testing.assert_allclose(loaded.act(obs), mine.act(obs))
    assert loaded.act(obs).shape == (2,) and np.abs(loaded.act(obs)).max() <= 2.0


def test_a_runners_transitions_keep_each_steps_own_observation():
    # MatchPoint returns the point it showed: in every transition obs == new_obs, and
    # the points of successive episodes differ (a row of the runner's observation
    # buffer, stored as it is overwritten, made every stored obs the last one)
    from rlsuite.platform import envs
    from rlsuite.platform.qtopt.actors import Runner

    arch = {"obs_dim": 2, "action_dim": 2, "hidden": [8], "activation": "relu"}
    cem = {"samples": 8, "elites": 2, "iterations": 1}
    runner = Runner(envs.spec(ENV), {}, 2, arch, cem, 0.1, 0.0, seed=3)
    try:
        out = runner.sample(None, 6)
    finally:
        runner.close()
    assert out["obs"].shape == (12, 2) and len(out["episodes"]) == 12
    np.testing.assert_array_equal(out["obs"], out["new_obs"])
    assert len({tuple(o) for o in out["obs"]}) == 12
