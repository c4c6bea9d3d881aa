"""The ``apex`` plan: Ape-X's asynchronous prioritised replay, on real Ray with runner and
replay-shard processes."""

import os
import signal
import time

import numpy as np
import pytest

from rlsuite.platform import checkpoints, envs, evaluation, optimizers
from rlsuite.platform.apex.actors import n_step_transitions
from rlsuite.platform.apex.plan import runner_epsilon
from rlsuite.platform.apex.replay import PrioritizedStorage, ReplayShard
from tests._plans import tune_one_trial


def _plan(**kw):
    values = dict(
        env="rlsuite-test/Identity-v0",
        num_env_runners=2,
        num_envs_per_env_runner=2,
        rollout_fragment_length=25,
        learning_starts=200,
        target_update_freq=100,
        lr=1e-3,
        gamma=0.5,  # a contextual bandit: the right answer's Q-value stands out
        n_step=1,
        buffer_size=4000,
        # updates tied to env steps (8 replayed per sampled), so the test learns as much
        # on a loaded machine as on an idle one
        training_intensity=8.0,
        min_time_s_per_iteration=0.0,
        env_steps_per_iteration=400,
        seed=0,
    )
    return optimizers.make_plan("apex", **{**values, **kw})


# -- the plan and its bad input (no Ray) ------------------------------------------------
def test_make_plan_apex_and_its_epsilons():
    plan = optimizers.make_plan("apex", env="CartPole-v1")
    assert plan.name == "apex" and plan.backend == "rllib" and "apex" in optimizers.plan_names()
    assert (plan.n_step, plan.double_q, plan.dueling, plan.num_replay_shards) == (3, True, True, 2)
    # Ape-X: eps_i = eps ** (1 + 7 i / (N - 1)), eps = 0.4
    eps = optimizers.make_plan("apex", env="CartPole-v1", num_env_runners=8).runner_epsilons()
    assert eps[0] == pytest.approx(0.4) and eps[-1] == pytest.approx(0.4**8)
    assert eps == pytest.approx([0.4 ** (1 + 7 * i / 7) for i in range(8)])
    assert runner_epsilon(0.4, 7.0, 0, 1) == 0.4  # one runner: the base epsilon


@pytest.mark.parametrize(
    "values, message",
    [
        ({"replay_shards": 2}, "did you mean 'num_replay_shards'"),
        ({"num_replay_shards": 0}, "num_replay_shards must be an int >= 1"),
        ({"num_replay_shards": 4, "buffer_size": 100}, "fewer than one batch"),
        ({"num_env_runners": 0}, "needs num_env_runners >= 1"),
        ({"epsilon": 0.0}, "epsilon must be in (0, 1]"),
        ({"broadcast_every": 0}, "broadcast_every must be >= 1"),
        ({"training_intensity": -1.0}, "training_intensity must be > 0"),
        ({"env": "Pendulum-v1"}, "needs a Discrete action space"),
        ({"recurrent": "lstm"}, "cannot carry a recurrent policy"),
    ],
)
def test_bad_apex_input_is_one_clear_error(values, message):
    with pytest.raises(ValueError) as e:
        optimizers.make_plan("apex", **{"env": "CartPole-v1", **values})
    assert message in str(e.value)


def test_n_step_transitions_bootstrap_and_terminate_where_the_episode_does():
    from ray.rllib.env.single_agent_episode import SingleAgentEpisode

    ep = SingleAgentEpisode(
        observations=[np.array([float(i)]) for i in range(5)],
        actions=[0, 1, 0, 1],
        rewards=[1.0, 2.0, 3.0, 4.0],
        terminated=True,
        len_lookback_buffer=0,
    )
    t = n_step_transitions([ep], n=3, gamma=0.5)
    assert t["rewards"].tolist() == [1 + 1 + 0.75, 2 + 1.5 + 1, 3 + 2, 4]
    assert t["new_obs"][:, 0].tolist() == [3, 4, 4, 4]
    assert t["n_step"].tolist() == [3, 3, 2, 1]
    assert t["terminateds"].tolist() == [False, True, True, True]


def test_storage_skips_priority_updates_of_overwritten_slots():
    s = PrioritizedStorage(capacity=4, alpha=1.0, seed=0)
    s.add({"x": np.arange(4.0)}, np.ones(4))
    _, slots, stamps, weights = s.sample(4, beta=0.4)
    assert np.all(weights <= 1.0 + 1e-6)
    s.add({"x": np.array([9.0])}, np.ones(1))  # overwrites slot 0
    assert s.update(slots, stamps, np.full(4, 5.0)) == len(slots) - int((slots == 0).sum())
    assert s.priorities(np.array([0]))[0] == pytest.approx(1.0, rel=1e-3)


def test_priorities_go_back_by_ticket_to_the_shard_that_gave_the_sample():
    """The learner sends back only a sample's ticket: the shard that gave it applies the
    priorities to the slots it drew; another shard refuses and counts it; a ticket is
    used once. (The same on real Ray: test_apex_learns_survives_kills_and_resumes.)"""
    a, b = ReplayShard(0, 100, 1.0, 0), ReplayShard(1, 100, 1.0, 1)
    for s in (a, b):
        s.add({"x": np.arange(50.0)}, np.ones(50))
    out = a.sample(8, 0.4)
    assert out["ticket"][:2] == (0, 0)
    slots = a.ticket_slots(out["ticket"][2])
    assert b.update_priorities(out["ticket"], np.full(8, 3.0)) == 0
    assert b.stats()["misrouted"] == 1
    assert a.update_priorities(out["ticket"], np.full(8, 3.0)) == 8
    assert a.priorities(slots) == pytest.approx([3.0] * 8, rel=1e-4)
    assert a.update_priorities(out["ticket"], np.ones(8)) == 0  # used once


# -- on real Ray ---------------------------------------------------------------------------
def weights(algo):
    return {k: np.asarray(v) for k, v in algo.learner_group.get_weights()["default_policy"].items()}


@pytest.mark.slow
def test_apex_learns_survives_kills_and_resumes(ray_local, tmp_path):
    """A small-budget run: each runner explores with its own Ape-X epsilon; the
    learner's priorities reach each shard and no other; a killed replay shard is
    replaced by an empty one, what it held is counted as lost and training goes on; a
    killed runner is replaced; the bandit is learnt; the checkpoint evaluates, exports
    and restores (a resumed run's path: test_resilience.py resumes RLlib's plans)."""
    from rlsuite.platform.backends.rllib import RLlibBackend
    from rlsuite.platform.checkpoints.layout import write_checkpoint

    plan = _plan()
    backend = RLlibBackend(plan)
    algo = backend.algo
    rows = []
    try:
        rows += [backend.train(), backend.train()]
        assert rows[-1]["learner_updates"] > 0
        eps = dict(
            algo.env_runner_group.foreach_env_runner(
                lambda r: (r.worker_index - 1, r._apex_epsilon), local_env_runner=False
            )
        )
        assert [eps[i] for i in range(2)] == pytest.approx(plan.runner_epsilons())
        stats = algo.shards.stats()
        assert all(s["updated"] > 0 and s["misrouted"] == 0 for s in stats), stats
        # the runners take weights at most broadcast_every updates old: broadcast when a
        # runner starts a sample call and the last broadcast is that old, not more often
        assert algo.env_runner_group._worker_manager._max_remote_requests_in_flight_per_actor == 1
        at = [algo._broadcast_at[v] for v in sorted(algo._broadcast_at)]
        assert len(at) > 1 and all(b - a >= plan.broadcast_every for a, b in zip(at, at[1:]))
        held = algo.shards.sizes[0]
        assert held > 0
        import ray

        ray.kill(algo.shards.handles[0], no_restart=True)
        pid = algo.env_runner_group.foreach_env_runner(
            lambda r: os.getpid(), local_env_runner=False
        )[0]
        os.kill(pid, signal.SIGKILL)
        deadline = time.time() + 120
        while time.time() < deadline and (
            len(rows) < 5
            or rows[-1]["num_env_runners_healthy"] < 2
            or rows[-1]["replay_shard_restarts"] < 1
        ):
            rows.append(backend.train())
        last = rows[-1]
        assert last["replay_shard_restarts"] == 1
        assert last["replay_lost_transitions"] >= held
        assert last["num_env_runners_healthy"] == 2 and last["num_env_runner_restarts"] >= 1
        assert all(r["env_steps_this_iter"] > 0 for r in rows)  # training went on
        new = algo.shards.stats()[0]
        assert new["generation"] == 1 and new["added"] > 0  # the new shard fills again
        for key in ("samples_per_s", "updates_per_s", "learner_utilisation", "weight_staleness"):
            assert np.isfinite(last[key]), key
        assert 0 < last["learner_utilisation"] <= 1 and last["replay_size"] > 0
        ckpt = write_checkpoint(
            backend, plan, str(tmp_path), len(rows), sum(r["env_steps_this_iter"] for r in rows)
        )
        saved = weights(algo)
        backend.train()
        backend.restore(ckpt)  # the checkpoint's weights, broadcast to the runners
        assert all(np.array_equal(v, saved[k]) for k, v in weights(algo).items())
        assert backend.train()["env_steps_this_iter"] > 0
    finally:
        backend.stop()
    ev = evaluation.evaluate(
        ckpt, evaluation.scenarios("rlsuite-test/Identity-v0", 4), num_workers=0
    )
    assert ev.summary["return"]["mean"] >= 16, ev.episodes  # random play: ~6.7 of 20
    ctl = checkpoints.load_controller(ckpt)
    obs, _ = envs.make("rlsuite-test/Identity-v0").reset(seed=0)
    assert int(np.argmax(ctl.action_values(obs))) == ctl.act(obs)
    export = checkpoints.export_policy(ckpt, str(tmp_path / "policy"))
    assert checkpoints.load_controller(export).act(obs) == ctl.act(obs)


def test_sum_tree_samples_in_proportion_to_priority():
    from rlsuite.platform.apex.replay import SumTree

    t = SumTree(5)
    t.set(np.arange(5), np.array([1.0, 0.0, 2.0, 0.0, 1.0]))
    t.set(np.array([4, 4]), np.array([3.0, 1.0]))  # the last value of a repeated slot
    assert t.total == pytest.approx(4.0)
    assert t.find(np.array([0.5, 1.5, 2.9, 3.5])).tolist() == [0, 2, 2, 4]
    s = PrioritizedStorage(capacity=3, alpha=1.0, seed=0)
    s.add({"x": np.arange(3.0)}, np.array([1.0, 3.0, 0.0]))
    drawn = np.concatenate([s.sample(4, beta=0.0)[1] for _ in range(500)])
    assert np.bincount(drawn, minlength=3)[2] == 0  # ~zero priority: never drawn
    assert np.mean(drawn == 1) == pytest.approx(0.75, abs=0.03)


@pytest.mark.slow
def test_tune_runs_an_apex_trial_in_its_placement_group(ray_local, tmp_path):
    from rlsuite.platform import tuning

    # a Tune trial's process knows gymnasium's envs, not the tests' own
    plan = _plan(env="CartPole-v1", num_env_runners=1, num_replay_shards=1)
    # the driver's learner and the runner; a replay shard reserves no CPU (num_cpus=0)
    assert tuning.placement_bundles(plan) == [{"CPU": 1.0}, {"CPU": 1.0}]
    tune_one_trial(plan, 1e-3, str(tmp_path))
