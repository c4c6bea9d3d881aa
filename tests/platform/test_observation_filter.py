"""The sync plan's observation filter and learning-rate annealing, with real Ray."""

import numpy as np
import pytest

from rlsuite.platform import checkpoints, envs, optimizers
from rlsuite.platform.checkpoints.export import export_policy
from rlsuite.platform.checkpoints.layout import OBS_FILTER, write_meta
from tests._plans import ppo


def test_bad_filter_and_anneal_are_refused_and_anneal_is_rllibs_schedule():
    with pytest.raises(ValueError, match="observation_filter must be one of none, meanstd"):
        optimizers.make_plan("sync", env="Pendulum-v1", observation_filter="zscore")
    with pytest.raises(ValueError, match="clones the policy on raw observations"):
        optimizers.make_plan(
            "sync", env="Pendulum-v1", observation_filter="meanstd", demonstrations="/d.parquet"
        )
    with pytest.raises(ValueError, match="lr_anneal_steps must be >= 0"):
        optimizers.make_plan("sync", env="Pendulum-v1", lr_anneal_steps=-1)
    cfg = optimizers.to_rllib(
        optimizers.make_plan("sync", env="Pendulum-v1", lr=1e-3, lr_anneal_steps=5000)
    )
    assert cfg.lr == [[0, 1e-3], [5000, 0.0]]
    assert optimizers.to_rllib(optimizers.make_plan("sync", env="Pendulum-v1")).lr == 3e-4


@pytest.mark.parametrize("runners", [0, 1])
def test_meanstd_filter_normalises_and_travels_with_the_checkpoint(ray_local, tmp_path, runners):
    """The runners normalise observations (the filter's statistics move off their start),
    the checkpoint keeps the statistics, and its controller (and a policy-only export's)
    applies them: the running mean maps to ~0 and acting uses the normalised input."""
    from rlsuite.platform.backends.rllib import RLlibBackend

    plan = ppo(
        "Pendulum-v1",
        batch=400,
        minibatch=200,
        epochs=1,
        num_env_runners=runners,
        num_envs_per_env_runner=2,
        observation_filter="meanstd",
        lr_anneal_steps=800,
        seed=0,
    )
    backend = RLlibBackend(plan)
    try:
        rows = [backend.train() for _ in range(2)]
        assert rows[-1]["env_steps_this_iter"] >= 400
        backend.save(str(tmp_path / "ckpt"))
        write_meta(str(tmp_path / "ckpt"), plan, 2, 800, backend)
    finally:
        backend.stop()
    assert (tmp_path / "ckpt" / OBS_FILTER).exists()
    export_policy(str(tmp_path / "ckpt"), str(tmp_path / "policy"))
    for path in (tmp_path / "ckpt", tmp_path / "policy"):
        ctl = checkpoints.load_controller(str(path))
        stats = ctl.obs_filter.connector._filters[None].running_stats
        assert stats.n >= 800  # every sampled observation was pushed
        mean = np.asarray(stats.mean, dtype=np.float32)
        assert np.allclose(ctl.obs_filter(mean), 0.0, atol=1e-5)
        obs, _ = envs.make("Pendulum-v1").reset(seed=0)
        assert not np.allclose(ctl._obs(obs, None), obs)  # the module sees normalised input
        a = ctl.act(obs)
        assert a.shape == (1,) and -2.0 <= float(a[0]) <= 2.0
