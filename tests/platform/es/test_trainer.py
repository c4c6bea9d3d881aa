"""The ES trainer (the ``es`` backend) on real Ray actors, with tiny budgets."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from rlsuite.platform.es import ESPlan, ESTrainer, load_controller
from tests.platform.es._envs import FAST


def _run(plan: ESPlan, generations: int) -> tuple[ESTrainer, list[dict]]:
    """Train ``generations`` generations and stop the workers (the 2 CPUs are shared)."""
    trainer = ESTrainer(plan)
    try:
        rows = [trainer.train() for _ in range(generations)]
    finally:
        trainer.stop()
    return trainer, rows


def test_improves_cartpole_within_a_tiny_budget(ray_local):
    _, rows = _run(ESPlan(**FAST, population_size=32, seed=0), 8)
    first, last = rows[0], rows[-1]
    print([round(r["episode_return_mean"], 1) for r in rows])
    assert last["env_steps"] < 60_000
    assert last["episode_return_mean"] >= 150, rows
    assert last["episode_return_mean"] >= 3 * first["episode_return_mean"], rows
    assert last["generation"] == 8 and last["worker_restarts_total"] == 0


def test_same_seed_same_result_on_any_number_of_workers(ray_local):
    plan = ESPlan(**FAST, population_size=12, seed=7, max_episode_steps=200)
    a, rows_a = _run(plan, 3)
    b, rows_b = _run(plan.replace(num_workers=1), 3)
    c, rows_c = _run(plan.replace(seed=8), 3)
    assert np.array_equal(a.theta, b.theta)
    assert np.array_equal(a.obs_stat.sum, b.obs_stat.sum)
    for key in ("episode_return_mean", "eval_return_mean", "env_steps"):
        assert [r[key] for r in rows_a] == [r[key] for r in rows_b]
    assert not np.array_equal(a.theta, c.theta)


@pytest.mark.slow
def test_worker_killed_mid_generation_does_not_stop_the_run(ray_local):
    import ray

    plan = ESPlan(
        **{**FAST, "env": "rlsuite-test/SlowCartPole-v0"},
        population_size=8,
        seed=3,
        max_episode_steps=30,
        eval_episodes=1,
    )
    ref, ref_rows = _run(plan, 2)

    trainer = ESTrainer(plan)
    try:
        trainer.train()
        victim = trainer.workers[0]
        ray.get([w.node_id.remote() for w in trainer.workers])  # both up before we start
        out: dict = {}
        th = threading.Thread(target=lambda: out.update(trainer.train()))
        th.start()
        time.sleep(0.4)  # the generation takes ~1.5 s: its first episodes are running
        assert th.is_alive(), "generation ended before the kill: the test lost its point"
        ray.kill(victim)
        th.join(timeout=120)
        assert not th.is_alive()
        assert out["worker_restarts"] == 1
        assert trainer.workers[0] is not victim and len(trainer.workers) == 2
        # the replaced worker's perturbations were run again: the result is unchanged
        assert out["episode_return_mean"] == ref_rows[1]["episode_return_mean"]
        assert np.array_equal(trainer.theta, ref.theta)
        # and the run goes on with the new worker
        assert trainer.train()["generation"] == 3
    finally:
        trainer.stop()


def test_checkpoint_restore_continues_same_generation_and_params(ray_local, tmp_path):
    plan = ESPlan(**FAST, population_size=8, seed=5, max_episode_steps=100, num_workers=1)
    ckpt = str(tmp_path / "ckpt")
    a = ESTrainer(plan)
    try:
        a.train()
        a.train()
        a.save_checkpoint(ckpt)
        saved_theta = a.theta.copy()
        next_a = a.train()
    finally:
        a.stop()

    b = ESTrainer(plan)
    try:
        b.restore(ckpt)
        assert b.generation == 2
        assert np.array_equal(b.theta, saved_theta)
        next_b = b.train()
    finally:
        b.stop()
    assert next_b["generation"] == next_a["generation"] == 3
    assert next_b["env_steps"] == next_a["env_steps"]
    assert np.array_equal(b.theta, a.theta)  # optimiser, filter and RNG came back too

    ctl = load_controller(ckpt)
    obs = np.array([0.01, -0.2, 0.03, 0.1], np.float32)
    assert ctl.act(obs) in (0, 1) and ctl.act(obs) == ctl.act(obs)
    assert np.array_equal(ctl.theta, saved_theta)

    with pytest.raises(ValueError, match="its policy .* differs"):
        other = ESTrainer(plan.replace(hidden=(8,)))
        try:
            other.restore(ckpt)
        finally:
            other.stop()


def test_multi_agent_env_with_shared_policy(ray_local, tmp_path):
    plan = ESPlan(
        env="rlsuite-test/MatchSign-v0",
        hidden=(),
        noise_table_size=10_000,
        population_size=16,
        sigma=0.5,
        lr=0.2,
        seed=0,
        eval_episodes=4,
    )
    trainer = ESTrainer(plan)
    try:
        rows = [trainer.train() for _ in range(6)]
        trainer.save_checkpoint(str(tmp_path / "ma"))
    finally:
        trainer.stop()
    assert rows[-1]["eval_return_mean"] >= 18, [r["eval_return_mean"] for r in rows]
    ctl = load_controller(str(tmp_path / "ma"))
    acts = ctl.act({"a0": np.array([0.5], np.float32), "a1": np.array([-0.5], np.float32)})
    assert acts == {"a0": 1, "a1": 0}


def test_broken_env_config_is_a_clear_error(ray_local):
    with pytest.raises(RuntimeError, match="could not build env 'CartPole-v1'.*no_such_kwarg"):
        ESTrainer(ESPlan(**FAST, env_config={"no_such_kwarg": 1}))
    with pytest.raises(ValueError, match="raise noise_table_size above"):
        ESTrainer(ESPlan(**{**FAST, "noise_table_size": 1000, "hidden": (64, 64)}))


def test_platform_training_resume_checkpoint_and_evaluation(ray_local, tmp_path):
    """The es plan through the platform: make_plan -> training.train (resume) ->
    checkpoints.load_controller -> evaluation.evaluate on the checkpoint path."""
    from rlsuite.platform.checkpoints import load_controller as load_any
    from rlsuite.platform.evaluation import evaluate, scenarios
    from rlsuite.platform.optimizers import make_plan
    from rlsuite.platform.training import train

    plan = make_plan("es", **FAST, population_size=16, num_workers=1)
    run = str(tmp_path / "run")
    first = train(plan, 3, run, progress=False, checkpoint_every=2)
    assert first.iterations == 3
    assert first.env_steps == first.metrics[-1]["env_steps"]
    assert first.env_steps == sum(m["env_steps_this_iter"] for m in first.metrics)
    again = train(plan, 5, run, resume=True, progress=False, checkpoint_every=2)
    assert [m["iteration"] for m in again.metrics] == [1, 2, 3, 4, 5]
    assert again.metrics[3]["generation"] == 4  # resumed at generation 3, not from scratch

    ctl = load_any(again.checkpoint)
    assert ctl.name == "es-CartPole-v1-g5"
    res = evaluate(again.checkpoint, scenarios("CartPole-v1", 3), num_workers=0)
    in_process = evaluate(ctl, scenarios("CartPole-v1", 3), num_workers=0)
    assert res.summary["return"] == in_process.summary["return"]  # deterministic controller
    assert res.summary["return"]["mean"] > 30  # a random CartPole policy scores ~20
