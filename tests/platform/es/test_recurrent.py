"""The es plan's GRU policy: the torch twin, a memory task that only the GRU solves on
real Ray workers, and the checkpoint's controller carrying and resetting the state."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from rlsuite.platform import checkpoints, envs, evaluation, optimizers, training
from rlsuite.platform.es import ESPolicy
from tests.platform._fakes import CueEnv  # noqa: F401 - registered below by path
from tests.platform.es._envs import FAST

envs.register("rlsuite-test/EsCue-v0", "tests.platform._fakes:CueEnv", default_config={"delay": 3})

SEARCH = dict(population_size=32, episodes_per_eval=16, common_env_seeds=True)
"""32 perturbations a generation, each scored on the same 16 episodes."""
CUE = dict(FAST, env="rlsuite-test/EsCue-v0", hidden=(8,), eval_episodes=0, seed=0, **SEARCH)


def test_gru_policy_matches_its_torch_twin_step_by_step():
    import torch

    obs_space = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
    act_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    pol = ESPolicy(obs_space, act_space, (8,), "tanh", "gru", 5)
    ff = ESPolicy(obs_space, act_space, (8,), "tanh")
    assert pol.num_params == ff.num_params + 3 * 5 * (3 + 5 + 2) + 5 * 8  # GRU, wider input
    assert pol.architecture()["recurrent"] == "gru" and "recurrent" not in ff.architecture()
    theta = pol.init_params(np.random.default_rng(0)) + np.float32(0.2)
    pol.set_params(theta)
    net = pol.to_torch(theta)
    rng = np.random.default_rng(1)
    h, th = pol.initial_state(), torch.zeros(1, 5)
    outs = []
    for _ in range(10):
        x = rng.uniform(-1, 1, 3).astype(np.float32)
        out, h = pol.step(x, h)
        with torch.no_grad():
            ref, th = net(torch.from_numpy(x)[None], th)
        np.testing.assert_allclose(out, ref[0].numpy(), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(h, th[0].numpy(), rtol=1e-4, atol=1e-5)
        outs.append(out.copy())
    # The state matters: the same observation gives another output after a history.
    x = np.zeros(3, np.float32)
    assert not np.allclose(pol.step(x, pol.initial_state())[0], pol.step(x, h)[0])


def test_plan_offers_gru_and_refuses_lstm():
    plan = optimizers.make_plan("es", env="CartPole-v1", recurrent="gru", cell_size=4)
    assert plan.recurrent == "gru" and plan.cell_size == 4
    with pytest.raises(ValueError, match="recurrent must be one of 'gru' on plan 'es'"):
        optimizers.make_plan("es", env="CartPole-v1", recurrent="lstm")
    with pytest.raises(ValueError, match="cell_size must be an int >= 1"):
        optimizers.make_plan("es", env="CartPole-v1", recurrent="gru", cell_size=0)


def _cue_return(checkpoint: str, num_workers: int = 0) -> float:
    ev = evaluation.evaluate(
        checkpoint,
        evaluation.scenarios("rlsuite-test/EsCue-v0", range(40)),
        num_workers=num_workers,
    )
    return ev.summary["return"]["mean"]


@pytest.mark.slow
def test_gru_solves_the_memory_task_a_feed_forward_policy_cannot(ray_local, tmp_path):
    gru = optimizers.make_plan("es", **CUE, recurrent="gru", cell_size=4)
    res = training.train(
        gru, iterations=80, run_dir=str(tmp_path / "gru"), progress=False, stop_return=0.99
    )
    assert res.final_return >= 0.99, [m["episode_return_mean"] for m in res.metrics]
    meta = checkpoints.metadata(res.checkpoint)
    assert meta["recurrent"] == "gru" and meta["plan_config"]["cell_size"] == 4
    ctl = checkpoints.load_controller(res.checkpoint)
    assert ctl.recurrent
    # The controller carries the GRU's state step to step and resets it per episode,
    # in parallel evaluation workers.
    assert _cue_return(res.checkpoint, num_workers=2) == 1.0

    ff = optimizers.make_plan("es", **CUE)
    res_ff = training.train(ff, iterations=10, run_dir=str(tmp_path / "ff"), progress=False)
    assert max(m["episode_return_mean"] for m in res_ff.metrics) < 0.5
    assert _cue_return(res_ff.checkpoint) < 0.5
