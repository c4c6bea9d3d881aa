"""The imitation plan's offline data path (rlsuite.platform.offline) against RLlib's own:
the same training batches from a real recording, and a BC run that maps in the driver."""

import gymnasium as gym
import numpy as np
import pytest
from ray.rllib.algorithms.bc import BCConfig
from ray.rllib.offline.offline_prelearner import OfflinePreLearner

from rlsuite.platform import demonstrations, offline, optimizers
from tests.platform._fakes import CartPolePD, RandomCartPole


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    """A real CartPole recording: 3 expert episodes then 3 random ones (short ones end
    by termination, the expert's by truncation at 500)."""
    d = tmp_path_factory.mktemp("rec")
    demonstrations.record_episodes(CartPolePD(), "CartPole-v1", 3, str(d / "a.parquet"), seed=0)
    demonstrations.record_episodes(
        RandomCartPole(), "CartPole-v1", 3, str(d / "b.parquet"), seed=10
    )
    return str(d)


class PendulumDamper:
    """A hand-written Pendulum controller: a Box action recorded as a list column."""

    name = "damper"

    def act(self, obs):
        return np.clip(np.array([-2.0 * obs[2]], dtype=np.float32), -2.0, 2.0)


@pytest.fixture(scope="module")
def pendulum_recording(tmp_path_factory):
    path = tmp_path_factory.mktemp("pend") / "d.parquet"
    demonstrations.record_episodes(PendulumDamper(), "Pendulum-v1", 2, str(path), seed=0)
    return str(path)


def _prelearners(config, env_id="CartPole-v1"):
    env = gym.make(env_id)
    spaces = (env.observation_space, env.action_space)
    spec = config.get_multi_rl_module_spec(spaces={"default_policy": spaces})
    kw = {"config": config, "spaces": spaces, "module_spec": spec}
    return OfflinePreLearner(**kw), offline.EpisodeRunsPreLearner(**kw)


def _same(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for k in a:
        x, y = np.asarray(a[k]), np.asarray(b[k])
        assert x.dtype == y.dtype and np.array_equal(x, y), k


def test_run_bounds_cut_where_rows_do_not_continue():
    obs = np.arange(8, dtype=np.float32).reshape(8, 1)
    new_obs = obs + 1
    new_obs[4] = 99  # row 5 does not start where row 4 ended
    eps = np.array(["a"] * 6 + ["b"] * 2)
    term = np.zeros(8, bool)
    term[2] = True  # an episode end inside "a"
    trunc = np.zeros(8, bool)
    got = offline.run_bounds(eps, obs, new_obs, term, trunc)
    assert got == [(0, 3), (3, 5), (5, 6), (6, 8)]
    assert offline.run_bounds(eps[:0], obs[:0], new_obs[:0], term[:0], trunc[:0]) == []


@pytest.mark.parametrize("order", ["recorded", "shuffled", "one-row-runs"])
def test_runs_prelearner_gives_rllibs_batch(recording, order):
    rows = offline.read_rows([recording])
    n = len(rows["obs"])
    assert n > 1500 and rows["terminateds"].any() and rows["truncateds"].any()
    if order == "shuffled":  # no two neighbours continue one another: one-step episodes
        idx = np.random.default_rng(0).permutation(n)[:700]
    elif order == "one-row-runs":  # every other row: new_obs never matches the next obs
        idx = np.arange(0, n, 2)
    else:
        idx = np.arange(n)
    batch = {k: v[idx] for k, v in rows.items()}
    config = BCConfig().environment("CartPole-v1").offline_data(input_=[recording])
    assert "obs" in config.input_compress_columns  # BC's default: unpack if packed
    rllib, ours = _prelearners(config)
    _same(rllib(batch), ours(batch))


def test_runs_prelearner_gives_rllibs_batch_for_box_actions(pendulum_recording):
    rows = offline.read_rows([pendulum_recording])
    assert rows["actions"].dtype == object  # one array per row, as Ray Data hands them
    config = BCConfig().environment("Pendulum-v1").offline_data(input_=[pendulum_recording])
    rllib, ours = _prelearners(config, "Pendulum-v1")
    for idx in (np.arange(len(rows["obs"])), np.arange(0, len(rows["obs"]), 3)):
        batch = {k: v[idx] for k, v in rows.items()}
        out = ours(batch)
        _same(rllib(batch), out)
        assert np.asarray(out["default_policy/actions"]).shape == (len(idx), 1)


def test_runs_prelearner_leaves_other_inputs_to_rllib(recording):
    rows = offline.read_rows([recording])
    batch = {k: v[:300] for k, v in rows.items()}
    config = (
        BCConfig()
        .environment("CartPole-v1")
        .offline_data(input_=[recording], ignore_final_observation=True)
    )
    rllib, ours = _prelearners(config)
    out = ours(batch)
    _same(rllib(batch), out)
    assert not np.asarray(out["default_policy/new_obs"]).any()  # RLlib's zeros


def test_imitation_plan_maps_in_the_driver(ray_local, recording):
    plan = optimizers.make_plan(
        "imitation", env="CartPole-v1", data=recording, seed=0, updates_per_iteration=2
    )
    config = optimizers.to_rllib(plan)
    algo = config.build_algo()
    try:
        data = algo.offline_data
        assert isinstance(data, offline.DriverMappedOfflineData) and data.maps_in_driver(0)
        assert not data.data_is_mapped
        result = algo.train()
        assert data.data_is_mapped
        rows = offline.read_rows([recording])
        assert data.data.count() == len(rows["obs"])  # every row, mapped once
        mapped = data.data.take_batch(len(rows["obs"]))
        np.testing.assert_array_equal(
            np.sort(mapped["default_policy/actions"]), np.sort(rows["actions"])
        )
        learner = result["learners"]["default_policy"]
        assert np.isfinite(learner["policy_loss"])
        # the learner's batch generator is closed while Ray is up (else Ray Data logs a
        # traceback at exit, after Ray is shut down)
        gen = algo.learner_group._learner.iterator._epoch_iterator
        assert gen.gi_frame is not None
        offline.close_batch_iterators(algo)
        assert gen.gi_frame is None
    finally:
        algo.stop()
