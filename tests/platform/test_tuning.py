"""Any plan under Tune: ASHA stops bad trials early; the best trial's checkpoint works."""

import pytest
from ray import tune as rt

from rlsuite.platform import evaluation, optimizers, tuning
from tests._plans import ppo


@pytest.mark.slow
def test_asha_stops_bad_trials_early_and_reports_the_best(ray_local, tmp_path):
    plan = ppo("CartPole-v1", batch=1000, minibatch=250, epochs=5, num_envs_per_env_runner=4)
    # Good learning rates first: ASHA is asynchronous, a trial is compared with those
    # that already reached its rung.
    space = {"lr": rt.grid_search([1e-3, 3e-4, 1e-5, 3e-6])}
    res = tuning.tune(
        plan,
        space,
        scheduler="asha",
        num_samples=1,
        iterations=8,
        run_dir=str(tmp_path),
        grace_period=2,
        max_concurrent_trials=2,
    )
    assert len(res.trials) == 4
    iters = {t["params"]["lr"]: t["iterations"] for t in res.trials}
    assert min(iters.values()) < 8, iters  # someone was stopped early
    assert iters[1e-3] == 8 or iters[3e-4] == 8
    assert res.best_config["lr"] in (1e-3, 3e-4)
    assert res.best_metric > max(t["metric"] for t in res.trials if t["params"]["lr"] <= 1e-5)
    ev = evaluation.evaluate(
        res.best_checkpoint, evaluation.scenarios("CartPole-v1", 2), num_workers=0
    )
    assert ev.summary["return"]["mean"] > 0


@pytest.mark.slow
def test_pbt_runs_and_perturbs(ray_local, tmp_path):
    plan = ppo("CartPole-v1", batch=400, minibatch=200, epochs=2, num_envs_per_env_runner=2)
    res = tuning.tune(
        plan,
        {"lr": rt.loguniform(1e-5, 1e-2)},
        scheduler="pbt",
        num_samples=2,
        iterations=4,
        run_dir=str(tmp_path),
        perturbation_interval=2,
    )
    assert len(res.trials) == 2 and all(t["iterations"] == 4 for t in res.trials)
    assert 1e-5 <= res.best_config["lr"] <= 1.25e-2


def test_bad_search_space_is_explained():
    plan = optimizers.make_plan("sync", env="CartPole-v1")
    with pytest.raises(ValueError, match="unknown fields of plan 'sync': \\['learning_rate'\\]"):
        tuning.tune(plan, {"learning_rate": rt.uniform(0, 1)})
    with pytest.raises(ValueError, match="unknown scheduler"):
        tuning.tune(plan, {"lr": rt.uniform(1e-4, 1e-3)}, scheduler="hyperopt")
    with pytest.raises(ValueError, match="num_epochs must be >= 1"):
        tuning.tune(plan, {"num_epochs": 0})


@pytest.mark.slow
def test_trials_with_remote_runners_and_es_workers_get_their_actors_placed(ray_local, tmp_path):
    """A trial reserves one bundle per actor it starts (RLlib env runners, ES workers)."""

    def two_iterations(plan, field, values, name):
        """Each of ``values`` of ``field`` tried in turn (FIFO), two iterations a trial."""
        space, run_dir = {field: rt.grid_search(values)}, str(tmp_path / name)
        return tuning.tune(
            plan, space, scheduler="fifo", num_samples=1, iterations=2, run_dir=run_dir
        )

    plan = ppo("CartPole-v1", 200, 100, 1, num_env_runners=1, num_envs_per_env_runner=2)
    assert tuning.placement_bundles(plan) == [{"CPU": 1.0}, {"CPU": 1.0}]
    res = two_iterations(plan, "lr", [1e-3, 1e-4], "sync")
    assert [t["iterations"] for t in res.trials] == [2, 2]
    small = dict(num_workers=1, population_size=8, noise_table_size=200_000, max_episode_steps=100)
    # one ES trial: the sync trials above already show a trial's bundles freed for the next
    res = two_iterations(
        optimizers.make_plan("es", env="CartPole-v1", **small), "sigma", [0.05], "es"
    )
    assert [t["iterations"] for t in res.trials] == [2] and res.best_checkpoint
