"""The ``async_grad`` plan: its checks, its parameter server's rules, and real runs on Ray
(gradients from several runner processes, a killed runner and a killed shard, learning,
checkpoints, resume and the controller)."""

import os

import numpy as np
import pytest

from rlsuite import cli
from rlsuite.platform import checkpoints, evaluation, metrics, optimizers, training, tuning
from rlsuite.platform.async_grad import model
from rlsuite.platform.async_grad.losses import advantages
from rlsuite.platform.async_grad.param_server import ParamShard
from rlsuite.platform.backends.registry import backend_class, make_backend
from tests._plans import tune_one_trial

# Two runner processes and two shards fit a 2-CPU Ray; a net of a few dozen parameters.
SMALL = dict(
    env="rlsuite-test/Identity-v0",
    hidden=(8,),
    num_runners=2,
    cpus_per_runner=0.5,
    num_shards=2,
    cpus_per_shard=0.25,
    gradients_per_call=4,
)


# -- the plan, without Ray ----------------------------------------------------------------
def test_the_plan_is_registered_with_its_own_backend():
    plan = optimizers.make_plan("async_grad", env="CartPole-v1", gamma=0.95, num_runners=1)
    assert (plan.name, plan.loss, plan.gamma, plan.num_runners) == ("async_grad", "a3c", 0.95, 1)
    assert backend_class(plan).__name__ == "AsyncGradBackend"
    args = cli.build_parser().parse_args(
        ["train", "--plan", "async_grad", "--env", "CartPole-v1", "--run-dir", "r",
         "--stop-return", "150", "--set", "gamma=0.95", "--set", "loss=dqn"]
    )  # fmt: skip
    assert args.stop_return == 150.0
    parsed = optimizers.make_plan(args.plan, env=args.env, **cli.parse_sets(args.set))
    assert (parsed.name, parsed.gamma, parsed.loss) == ("async_grad", 0.95, "dqn")


@pytest.mark.parametrize(
    "values, match",
    [
        ({"num_shard": 2}, "did you mean 'num_shards'"),
        ({"env": "Pendulum-v1", "loss": "dqn"}, r"needs Discrete actions .*use loss='a3c'"),
        ({"num_shards": 10_000, "hidden": (4,)}, r"more than the network's 55 parameters.*<= 55"),
        ({"loss": "ppo"}, "loss must be one of a3c, dqn"),
        ({"max_staleness": -1}, "max_staleness must be an int >= 0"),
        ({"gradients_per_update": 0}, "gradients_per_update must be an int >= 1"),
        ({"optimizer": "sgd"}, "optimizer must be one of adam, rmsprop"),
        ({"env": "rlsuite-test/Matching-v0"}, "is multi-agent; use the sync, async or replay"),
        ({"loss": "dqn", "train_batch_size": 64, "buffer_size": 32}, "must fit in buffer_size"),
    ],
)
def test_bad_settings_are_refused_with_the_fix(values, match):
    with pytest.raises(ValueError, match=match):
        optimizers.make_plan("async_grad", **{"env": "CartPole-v1", **values})


def test_bad_plan_key_on_the_command_line_exits_2(capsys, tmp_path):
    argv = ["train", "--plan", "async_grad", "--env", "Pendulum-v1", "--set", "loss=dqn",
            "--run-dir", str(tmp_path / "r")]  # fmt: skip
    assert cli.main(argv) == 2
    assert "use loss='a3c'" in capsys.readouterr().err


def test_shards_split_the_vector_into_contiguous_slices():
    assert model.shard_bounds(10, 3) == [(0, 4), (4, 7), (7, 10)]
    assert model.shard_bounds(5, 5) == [(i, i + 1) for i in range(5)]
    with pytest.raises(ValueError, match="cannot split 3 parameters into 4 shards"):
        model.shard_bounds(3, 4)


def test_a3c_advantages_bootstrap_where_the_episode_was_cut_not_where_it_ended():
    rewards = np.ones((2, 2), np.float32)
    values = np.zeros((2, 2), np.float32)
    next_values = np.array([[0.0, 0.0], [0.0, 10.0]], np.float32)  # env 1 truncated at t=1
    ends = np.array([[False, False], [True, True]])
    adv, ret = advantages(rewards, values, next_values, np.full(2, 99.0), ends, 0.5, 1.0)
    assert ret[:, 0].tolist() == [1.5, 1.0]  # terminated: no bootstrap (not the 99)
    assert ret[:, 1].tolist() == [4.0, 6.0]  # truncated: 1 + 0.5 * V(final obs) = 6


def _shard(**kw):
    state = {"params": np.zeros(3, np.float32), "optimizer": None, "version": 0}
    return dict(index=0, state=state, optimizer="adam", lr=0.1, epoch=0, **kw)


def test_dppo_rule_applies_once_d_gradients_have_arrived():
    shard = ParamShard(**_shard(max_staleness=None, gradients_per_update=2))
    w, v, _ = shard.push(np.ones(3, np.float32), 0, 0)
    assert v == 0 and not w.any()  # one of two: nothing applied yet
    w, v, _ = shard.push(np.ones(3, np.float32), 0, 0)
    assert v == 1 and (w < 0).all()  # the second arrives: one Adam step against the mean


def test_a_gradient_older_than_max_staleness_is_dropped_and_one_on_current_weights_applied():
    shard = ParamShard(**_shard(max_staleness=0, gradients_per_update=1))
    g = np.ones(3, np.float32)
    _, v1, _ = shard.push(g, 0, 0)  # two runners pulled version 0; the first moves it to 1
    w_before = shard.pull()[0]
    w_after, v2, _ = shard.push(g, 0, 0)  # computed on 0, one update behind: dropped
    assert (v1, v2) == (1, 1) and np.array_equal(w_before, w_after)
    _, v3, _ = shard.push(g, 1, 0)  # computed on the current weights: applied
    stats = shard.stats()
    assert v3 == 2 and (stats["applied"], stats["dropped"], stats["staleness_max"]) == (2, 1, 1)


def test_the_progress_bar_shows_the_learners_numbers():
    row = {"episode_return_mean": 9.0, "env_steps_this_iter": 100, "time_this_iter_s": 1.0,
           "updates_per_s": 12.0, "learner_utilisation": 0.25, "staleness_mean": 0.5,
           "learner/replay_size": 640.0}  # fmt: skip
    info = metrics.progress_info(row)
    assert "12 updates/s" in info and "25% busy" in info
    assert "staleness 0.5" in info and "replay 640" in info


# -- on Ray ------------------------------------------------------------------------------
@pytest.mark.slow
def test_two_runners_change_every_shard_stale_gradients_drop_and_a_killed_runner_and_shard_are_survived(
    ray_local, tmp_path
):
    import ray

    plan = optimizers.make_plan(
        "async_grad", **SMALL, loss="dqn", learning_starts=40, train_batch_size=16,
        rollout_length=4, env_steps_per_iteration=400, target_update_freq=20, max_staleness=20,
    )  # fmt: skip
    backend = make_backend(plan)
    try:
        start = [s["params"].copy() for s in backend._snapshot]
        row = backend.train()
        assert row["env_steps_this_iter"] >= 400 and row["gradients_this_iter"] > 0
        assert all(n > 0 for n in backend.gradients_by_runner), backend.gradients_by_runner
        backend.save(str(tmp_path / "ckpt"))  # the state a shard's death goes back to
        saved = [s["params"] for s in backend._snapshot]
        assert all(not np.array_equal(a, b) for a, b in zip(start, saved))
        assert min(s["version"] for s in backend._snapshot) > 20
        # a gradient computed on the starting weights, more than max_staleness updates ago
        old = np.zeros(backend.bounds[0][1], np.float32)
        ray.get(backend.shards[0].push.remote(old, 0, backend.epoch))
        assert backend.train()["dropped_stale"] >= 1
        ray.kill(backend.runners[0], no_restart=True)
        ray.kill(backend.shards[1], no_restart=True)
        rows = [backend.train(), backend.train()]
        last = rows[-1]
        assert last["runner_restarts_total"] == 1 and last["shard_restarts_total"] == 1
        assert last["updates_rolled_back_total"] > 0  # counted, not silently lost
        assert last["env_steps_this_iter"] >= 400
        assert last["gradients_this_iter"] > 0 and last["updates_this_iter"] > 0
        assert ray.get(backend.shards[1].stats.remote())["applied"] > 0  # the new shard works
    finally:
        backend.stop()


def test_a3c_learns_the_identity_env_resumes_and_its_checkpoint_acts(ray_local, tmp_path):
    plan = optimizers.make_plan(
        "async_grad", **{**SMALL, "num_shards": 1, "num_runners": 1}, lr=0.02, entropy_coeff=0.0,
        env_steps_per_iteration=600,
    )  # fmt: skip
    run = str(tmp_path / "run")
    res = training.train(plan, 12, run, progress=False, checkpoint_every=2, stop_return=17.0)
    # random play scores 20/3; the optimum is 20
    assert res.final_return >= 17.0, [r["episode_return_mean"] for r in res.metrics]
    row = res.metrics[-1]
    for key in ("samples_per_s", "updates_per_s", "learner_utilisation", "staleness_mean",
                "staleness_max", "dropped_gradients"):  # fmt: skip
        assert key in row, key
    assert row["dropped_gradients"] == 0 and 0 < row["learner_utilisation"] < 1
    # resumed in a new backend: the shard goes on from its saved state
    more = training.train(plan, res.iterations + 1, run, resume=True, progress=False)
    assert (
        more.iterations == res.iterations + 1
        and more.metrics[-1]["update_version"] > (row["update_version"])
    )
    scen = evaluation.scenarios("rlsuite-test/Identity-v0", range(3))
    out = evaluation.evaluate(run, scen, num_workers=0)
    assert out.summary["return"]["mean"] >= 17.0
    exported = checkpoints.export_policy(run, str(tmp_path / "policy"))
    assert sorted(os.listdir(exported)) == ["learner_group", "rlsuite.json", "spaces.pkl"]
    assert checkpoints.load_controller(exported).act(np.array([0, 0, 1], np.float32)) == 2


@pytest.mark.slow
def test_tune_runs_async_grad_trials_in_their_placement_groups(ray_local, tmp_path):
    plan = optimizers.make_plan(
        "async_grad",
        **{**SMALL, "num_shards": 1, "num_runners": 1, "env": "CartPole-v1"},
        env_steps_per_iteration=200,
    )  # a Tune trial's process knows gymnasium's envs, not the tests' own
    assert tuning.placement_bundles(plan) == [{"CPU": 1.0}, {"CPU": 0.5}, {"CPU": 0.25}]
    tune_one_trial(plan, 1e-2, str(tmp_path))
