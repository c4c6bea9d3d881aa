"""The replay plan's DQN syncs a driver-local env runner by copying tensors in place
(``rlsuite.platform.local_sync``), and leaves every other sync to RLlib."""

import numpy as np
import pytest
import torch
from ray.rllib.env.env_runner_group import EnvRunnerGroup

from rlsuite.platform import optimizers, resources
from tests._plans import replay


def _plan(runners: int, **values):
    small = dict(num_envs_per_env_runner=1, hidden=(16,), seed=0)
    return replay("CartPole-v1", 16, 40, runners, **{**small, **values})


@pytest.fixture
def rllib_syncs(monkeypatch):
    """Counts the calls that reach RLlib's own ``EnvRunnerGroup.sync_weights``."""
    calls = []
    original = EnvRunnerGroup.sync_weights

    def counting(self, *args, **kwargs):
        calls.append(kwargs.get("from_worker_or_learner_group"))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(EnvRunnerGroup, "sync_weights", counting)
    return calls


def test_local_runner_gets_the_learners_weights_without_rllibs_round_trip(ray_local, rllib_syncs):
    algo = optimizers.to_rllib(_plan(0), resources.resolve(_plan(0), log=False)).build_algo()
    try:
        rllib_syncs.clear()  # the sync at build time went through RLlib's method
        runner = algo.env_runner_group.local_env_runner
        before = {k: v.clone() for k, v in runner.module.state_dict().items()}
        for _ in range(2):
            algo.train()
        learner = algo.learner_group._learner
        source = learner.module["default_policy"].state_dict()
        target = runner.module.state_dict()
        # one sync per training step, each one the in-place copy
        assert learner._weights_seq_no > 10
        assert rllib_syncs == []
        assert runner._weights_seq_no == learner._weights_seq_no
        assert any(not torch.equal(before[k], target[k]) for k in target)
        for name, tensor in target.items():
            assert torch.equal(tensor, source[name]), name
    finally:
        algo.stop()


def test_remote_runners_still_sync_through_rllib(ray_local, rllib_syncs):
    algo = optimizers.to_rllib(_plan(1), resources.resolve(_plan(1), log=False)).build_algo()
    try:
        rllib_syncs.clear()
        algo.train()
        learner_group = algo.learner_group
        assert len(rllib_syncs) >= 10
        assert all(source is learner_group for source in rllib_syncs)
        assert not algo._defers_metrics()
    finally:
        algo.stop()


def _counts(algo, iterations: int) -> tuple[list, list]:
    """Per iteration: the lifetime counts RLlib reports, and the training-step calls."""
    counts, calls = [], []
    for _ in range(iterations):
        result = algo.train()
        runners, learners = result["env_runners"], result["learners"]
        counts.append(
            (
                runners["num_env_steps_sampled_lifetime"],
                (runners["num_episodes_lifetime"], runners.get("num_episodes")),
                learners["__all_modules__"]["num_env_steps_trained_lifetime"],
                learners["default_policy"].get("num_target_updates"),
                result["replay_buffer"]["num_env_steps_sampled_lifetime"],
            )
        )
        calls.append(result["num_training_step_calls_per_iteration"])
        assert "td_error" not in learners["default_policy"]
        assert "total_loss" in learners["default_policy"]
    return counts, calls


def test_metrics_reduced_once_per_iteration_give_rllibs_counts(ray_local):
    """With nothing remote, one training step runs the iteration's rounds and reduces
    the metrics once; the counts the plan fixes (sampled, trained, target updates, the
    buffer's) match RLlib's step, the episodes add up, and every update's TD errors reach
    the prioritized buffer."""
    plan = _plan(0, learning_starts=100, env_steps_per_iteration=200, target_update_freq=400)
    assert plan.prioritized
    runs = {}
    priorities: list[int] = []
    for mode in ("rllib", "deferred"):
        algo = optimizers.to_rllib(plan, resources.resolve(plan, log=False)).build_algo()
        try:
            if mode == "rllib":
                algo._defers_metrics = lambda: False
            else:
                assert algo._defers_metrics()
                buffer = algo.local_replay_buffer
                update = buffer.update_priorities

                def recording(
                    new_priorities, *args, update=update, priorities=priorities, **kwargs
                ):
                    priorities.append(len(new_priorities))
                    return update(new_priorities, *args, **kwargs)

                buffer.update_priorities = recording
            runs[mode] = _counts(algo, 4)
        finally:
            algo.stop()
    (rllib_counts, rllib_calls), (counts, calls) = runs["rllib"], runs["deferred"]
    # the counts the plan fixes: sampled, trained, target updates, the buffer's
    plan_fixed = [(c[0], *c[2:]) for c in counts]
    assert plan_fixed == [(c[0], *c[2:]) for c in rllib_counts]
    # episodes follow the policy, whose training the two runs do not repeat bit for bit
    # (41 against 43 after 800 steps once): each iteration's episodes add up to the
    # lifetime count, and both sides end about as many
    lifetime = [c[1][0] for c in counts]
    assert lifetime == list(np.cumsum([c[1][1] for c in counts]))
    for ours, theirs in zip(lifetime, (c[1][0] for c in rllib_counts)):
        assert abs(ours - theirs) <= 0.15 * theirs, (lifetime, rllib_counts)
    assert counts[-1][0] == 800 and counts[-1][3] >= 1
    assert calls == [1, 1, 1, 1] and min(rllib_calls) > 1
    # one priority update of a full batch per update
    assert len(priorities) == counts[-1][2] // 16 > 0 and set(priorities) == {16}
