"""``ESPlan.init_from``: an ES run warm-started from another run's policy, on real Ray actors."""

from __future__ import annotations

import numpy as np
import pytest

from rlsuite.platform.es import ESPlan, ESTrainer, load_controller
from tests.platform.es._envs import FAST

OBS = [np.array(o, np.float32) for o in ([0.01, -0.2, 0.03, 0.1], [0.1, 0.5, -0.05, -0.4])]


@pytest.fixture(scope="module")
def trained(ray_local, tmp_path_factory) -> tuple[str, list[dict]]:
    """A CartPole-v1 checkpoint after 8 generations, and its rows."""
    ckpt = str(tmp_path_factory.mktemp("init_from") / "source")
    t = ESTrainer(ESPlan(**FAST, population_size=32, seed=0, num_workers=1))
    try:
        rows = [t.train() for _ in range(8)]
        t.save_checkpoint(ckpt)
    finally:
        t.stop()
    assert rows[-1]["episode_return_mean"] >= 150, rows  # a policy worth starting from
    return ckpt, rows


def test_warm_start_takes_parameters_and_filter_not_optimizer(trained, tmp_path):
    ckpt, rows = trained
    source = load_controller(ckpt)
    # another env with the same spaces (CartPole-v0: 200 steps), another seed
    plan = ESPlan(
        **{**FAST, "env": "CartPole-v0"},
        population_size=32,
        seed=1,
        num_workers=1,
        eval_episodes=4,
    )
    warm = ESTrainer(plan.replace(init_from=ckpt))
    cold = ESTrainer(plan)
    try:
        assert np.array_equal(warm.theta, source.theta)
        assert not np.array_equal(cold.theta, source.theta)
        mean, std = warm.obs_stat.mean_std()
        assert np.allclose(mean, source.obs_mean) and np.allclose(std, source.obs_std)
        assert warm.generation == 0 and warm._opt.t == 0  # optimiser and count start fresh
        ctl = warm.controller()
        assert [ctl.act(o) for o in OBS] == [source.act(o) for o in OBS]
        first_warm, first_cold = warm.train(), cold.train()
        warm.save_checkpoint(str(tmp_path / "warm"))
    finally:
        warm.stop()
        cold.stop()
    # the warm start begins where the source ended; the cold start begins at random play
    assert first_warm["eval_return_mean"] >= 150, first_warm
    assert first_cold["eval_return_mean"] < 100, first_cold
    assert first_warm["generation"] == 1

    # resuming a warm-started run takes its own checkpoint, not init_from's parameters
    again = ESTrainer(plan.replace(init_from=ckpt))
    try:
        again.restore(str(tmp_path / "warm"))
        assert again.generation == 1 and again._opt.t == 1
        assert np.array_equal(again.theta, load_controller(str(tmp_path / "warm")).theta)
        assert not np.array_equal(again.theta, source.theta)
    finally:
        again.stop()


def test_warm_start_from_another_architecture_is_refused(trained):
    ckpt, _ = trained
    with pytest.raises(ValueError, match="cannot start from .* its policy .* differs"):
        ESTrainer(ESPlan(**{**FAST, "hidden": (8,)}, num_workers=1, init_from=ckpt))


def test_init_from_is_validated_and_recorded():
    plan = ESPlan(env="CartPole-v1", init_from="runs/x")
    assert ESPlan.from_dict(plan.to_dict()).init_from == "runs/x"
    assert ESPlan(env="CartPole-v1").to_dict()["init_from"] is None
    with pytest.raises(ValueError, match="init_from must be None or a checkpoint directory"):
        plan.replace(init_from="")
