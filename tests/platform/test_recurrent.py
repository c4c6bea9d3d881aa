"""Recurrent policies: a memory task that only the LSTM plan solves, state carried and
reset by the checkpoint's controller, and the plans that cannot carry one refuse it."""

import json
import os

import numpy as np
import pytest

from rlsuite.platform import checkpoints, envs, evaluation, optimizers, training
from tests._plans import ppo
from tests.platform._fakes import CueEnv

envs.register("rlsuite-test/Cue-v0", "tests.platform._fakes:CueEnv", default_config={"delay": 3})


def _cue_plan(num_env_runners: int = 2, **fields):
    """The sync plan on the cue task: ``num_env_runners`` runners of 4 envs, batches of 1000
    in minibatches of 250, 6 epochs; ``fields``: any other plan fields."""
    settings = dict(num_envs_per_env_runner=4, lr=3e-3, entropy_coeff=0.01, hidden=(32,), seed=0)
    return ppo("rlsuite-test/Cue-v0", 1000, 250, 6, num_env_runners, **settings, **fields)


def _cue_return(checkpoint: str, episodes: int = 40, num_workers: int = 0) -> float:
    ev = evaluation.evaluate(
        checkpoint,
        evaluation.scenarios("rlsuite-test/Cue-v0", range(episodes)),
        num_workers=num_workers,
    )
    return ev.summary["return"]["mean"]


@pytest.mark.slow
def test_lstm_solves_the_memory_task_a_feed_forward_policy_cannot(ray_local, tmp_path):
    lstm = _cue_plan(recurrent="lstm", cell_size=32, max_seq_len=8)
    res = training.train(
        lstm, iterations=25, run_dir=str(tmp_path / "lstm"), progress=False, stop_return=0.95
    )
    assert res.final_return >= 0.95, [m["episode_return_mean"] for m in res.metrics]
    meta = checkpoints.metadata(res.checkpoint)
    assert meta["recurrent"] == "lstm" and meta["plan_config"]["cell_size"] == 32
    # The checkpoint's controller carries the LSTM state step to step, in parallel workers.
    assert _cue_return(res.checkpoint, num_workers=2) == 1.0

    # the control samples in the driver (where it samples cannot help a policy that is
    # blind) and gets as many iterations as the LSTM needed
    ff = _cue_plan(num_env_runners=0)
    res_ff = training.train(
        ff, iterations=res.iterations, run_dir=str(tmp_path / "ff"), progress=False
    )
    # Blind at the answer, the feed-forward policy is at chance (return 0) at best.
    assert max(m["episode_return_mean"] for m in res_ff.metrics) < 0.5
    assert _cue_return(res_ff.checkpoint) < 0.5


@pytest.mark.slow
def test_recurrent_controller_resets_its_state_at_each_episode(ray_local, tmp_path):
    plan = _cue_plan(num_env_runners=0, recurrent="lstm", cell_size=8, max_seq_len=4)
    res = training.train(plan, iterations=1, run_dir=str(tmp_path), progress=False)
    ctl = checkpoints.load_controller(res.checkpoint)
    assert ctl.recurrent
    env = CueEnv(delay=3)

    def episode_logits(seed: int) -> list[np.ndarray]:
        ctl.reset(seed)
        obs, _ = env.reset(seed=seed)
        out, done = [], False
        while not done:
            out.append(ctl.action_values(obs))
            obs, _, done, _, _ = env.step(ctl.act(obs))
        return out

    first = episode_logits(1)
    episode_logits(2)  # another episode in between leaves its state behind...
    again = episode_logits(1)  # ...which reset() clears: the same episode, the same outputs
    assert all(np.allclose(a, b) for a, b in zip(first, again, strict=True))
    # The state does carry within an episode: the same blank observation, other outputs.
    assert not np.allclose(first[1], first[2])


@pytest.mark.slow
def test_async_plan_trains_an_lstm(ray_local, tmp_path):
    plan = optimizers.make_plan(
        "async",
        env="rlsuite-test/Cue-v0",
        num_env_runners=2,
        recurrent="lstm",
        cell_size=16,
        max_seq_len=4,
        min_time_s_per_iteration=1.0,
    )
    # APPO's first iterations report before a batch has arrived, for longer while the env
    # runners start on a loaded machine: train until the first episode's return is reported
    # (any return stops it; none reported is NaN, which stops nothing), at most 60 s
    res = training.train(
        plan, iterations=60, run_dir=str(tmp_path), progress=False, stop_return=-1e9
    )
    assert res.iterations < 60, "no episode finished within 60 iterations of >= 1 s"
    assert res.env_steps > 0
    assert checkpoints.load_controller(res.checkpoint).recurrent


@pytest.mark.parametrize("name", ["replay", "imitation", "apex"])
def test_plans_without_recurrent_support_name_those_that_have_it(name, tmp_path):
    extra = {"data": str(tmp_path)} if name == "imitation" else {}
    with pytest.raises(ValueError, match=r"cannot carry a recurrent policy.*async, es, r2d2, sync"):
        optimizers.make_plan(name, env="CartPole-v1", recurrent="lstm", **extra)


def test_unknown_recurrent_cell_is_refused():
    with pytest.raises(ValueError, match="recurrent must be one of 'lstm' on plan 'sync'"):
        optimizers.make_plan("sync", env="CartPole-v1", recurrent="gru")


def test_recurrent_demonstrations_warm_start_is_refused(tmp_path):
    demo = tmp_path / "demo"
    demo.mkdir()
    with pytest.raises(ValueError, match="drop recurrent= or demonstrations="):
        optimizers.make_plan("sync", env="CartPole-v1", recurrent="lstm", demonstrations=str(demo))


def test_checkpoint_on_an_env_with_another_observation_space_says_so(ray_local, tmp_path):
    plan = ppo("CartPole-v1", batch=200, minibatch=100, epochs=1)
    res = training.train(plan, iterations=1, run_dir=str(tmp_path), progress=False)
    with open(os.path.join(res.checkpoint, checkpoints.META)) as f:
        assert json.load(f)["recurrent"] == ""
    with pytest.raises(ValueError, match=r"trained on observations of shape \(4,\)"):
        evaluation.evaluate(
            res.checkpoint, evaluation.scenarios("rlsuite-test/Cue-v0", [0]), num_workers=0
        )
