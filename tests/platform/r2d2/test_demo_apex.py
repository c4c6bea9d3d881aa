"""R2D3's demonstrations inside the ``apex`` plan's replay, on real Ray."""

from __future__ import annotations

import numpy as np
import pytest

from rlsuite.platform import demo_sources, envs, evaluation, optimizers, training
from rlsuite.platform.r2d2.demo_apex import n_step_columns

ENV = "rlsuite-test/Identity-v0"
envs.register(ENV, "tests.platform._fakes:IdentityEnv", default_config={"n": 3, "horizon": 20})


class Expert:
    """The Identity env's optimum: the observed class."""

    def act(self, obs):
        return int(np.argmax(obs))


def _demo_plan(kind: str, rho: float, **fields):
    """A ``kind`` plan of ENV that learns fast on the Identity env, with 10 of the expert's
    episodes (200 steps) as ``rho`` of each batch; ``fields``: the plan's own settings."""
    return optimizers.make_plan(
        kind,
        env=ENV,
        demonstrations=f"{__name__}:Expert:10",
        demo_ratio=rho,
        learning_starts=100,
        target_update_freq=100,
        lr=1e-3,
        gamma=0.5,
        training_intensity=8.0,
        seed=0,
        **fields,
    )


def test_bad_demonstrations_are_refused_before_ray(tmp_path):
    with pytest.raises(ValueError, match="demo_ratio must be a number in"):
        optimizers.make_plan("apex", env=ENV, demo_ratio=1.5)
    path = str(tmp_path / "cartpole.parquet")
    demo_sources.record(demo_sources.RandomController(envs.spaces("CartPole-v1")[None][1]),
                        "CartPole-v1", 1, path)  # fmt: skip
    with pytest.raises(ValueError, match="observations of shape"):
        optimizers.make_plan("apex", env=ENV, demonstrations=path)
    with pytest.raises(ValueError, match="large_margin_coeff is DQfD's loss"):
        optimizers.make_plan("replay", env=ENV, large_margin_coeff=1)
    with pytest.raises(ValueError, match="neither an existing file"):
        optimizers.make_plan("apex", env=ENV, demonstrations="expert")


def test_n_step_columns_stop_at_each_episodes_end():
    data = {
        "episode": np.array([0, 0, 0, 1, 1]),
        "obs": np.arange(5, dtype=np.float32)[:, None],
        "new_obs": np.arange(1, 6, dtype=np.float32)[:, None],
        "actions": np.zeros(5, np.int64),
        "rewards": np.ones(5, np.float32),
        "terminateds": np.array([0, 0, 1, 0, 0], np.float32),
    }
    out = n_step_columns(data, n=2, gamma=0.5)
    np.testing.assert_allclose(out["rewards"], [1.5, 1.5, 1.0, 1.5, 1.0])
    np.testing.assert_array_equal(out["new_obs"][:, 0], [2, 3, 3, 5, 5])
    np.testing.assert_array_equal(out["terminateds"], [False, True, True, False, False])
    np.testing.assert_array_equal(out["n_step"], [2, 2, 1, 2, 1])


@pytest.mark.slow
def test_apex_learns_with_demonstrations_in_its_batches(ray_local, tmp_path):
    rho = 0.5
    plan = _demo_plan(
        "apex",
        rho,
        large_margin_coeff=1.0,  # DQfD's term on the demonstrated steps
        num_env_runners=1,
        num_envs_per_env_runner=2,
        rollout_fragment_length=25,
        num_replay_shards=1,
        n_step=1,
        buffer_size=2000,
        min_time_s_per_iteration=0.0,
        env_steps_per_iteration=300,
    )
    res = training.train(plan, 2, str(tmp_path / "run"), progress=False)
    rows = [r for r in res.metrics if r["learner_updates"] > 0]
    assert rows and all(r["demo_transitions"] == 200 for r in res.metrics)
    elements = sum(r["learner_updates"] for r in rows) * plan.train_batch_size / (1 - rho)
    share = np.mean([r["demo_share"] for r in rows])
    assert abs(share - rho) < 4 * np.sqrt(rho * (1 - rho) / elements), share
    assert all(np.isfinite(r["large_margin_loss"]) for r in rows)
    ev = evaluation.evaluate(res.checkpoint, evaluation.scenarios(ENV, 4), num_workers=0)
    print("demo share", share, "greedy return", ev.summary["return"]["mean"])
    assert ev.summary["return"]["mean"] >= 16, ev.episodes  # random play: ~6.7 of 20


@pytest.mark.slow
@pytest.mark.parametrize("prioritized", [True, False])
def test_replay_plan_mixes_demonstrations_into_rllibs_samples(ray_local, tmp_path, prioritized):
    rho = 0.25
    plan = _demo_plan(
        "replay",
        rho,
        prioritized=prioritized,
        large_margin_coeff=1.0,  # DQfD's term on the demonstrated steps
        num_env_runners=0,
        num_envs_per_env_runner=1,
        env_steps_per_iteration=200,
    )
    res = training.train(plan, 2, str(tmp_path / "run"), progress=False)
    rows = [r for r in res.metrics if np.isfinite(r.get("demo_share", np.nan))]
    assert rows and all(r["demo_transitions"] == 200 for r in rows)
    share = np.mean([r["demo_share"] for r in rows])
    assert abs(share - rho) < 0.08, share  # thousands of elements: a few points at most
    assert all(np.isfinite(r["large_margin_loss"]) for r in rows)
    ev = evaluation.evaluate(res.checkpoint, evaluation.scenarios(ENV, 4), num_workers=0)
    print("replay: demo share", share, "greedy return", ev.summary["return"]["mean"])
    assert ev.summary["return"]["mean"] >= 12, ev.episodes  # random play: ~6.7 of 20
