"""The qt_opt plan's checks: bad input gets a clear error before Ray starts."""

from __future__ import annotations

import numpy as np
import pytest

from rlsuite.platform.demonstrations import record_episodes
from rlsuite.platform.optimizers import describe, make_plan
from tests.platform.qtopt import _envs  # noqa: F401 - registers the test env


def test_defaults_are_the_papers_cem_and_the_plan_is_reachable_by_name():
    plan = make_plan("qt_opt", env="Pendulum-v1")
    assert (plan.cem_samples, plan.cem_elites, plan.cem_iterations) == (64, 10, 3)
    assert plan.backend == "qt_opt" and "cem_samples = 64" in describe(plan)


def test_discrete_actions_are_refused():
    with pytest.raises(ValueError, match="continuous actions by CEM.*Use 'replay'"):
        make_plan("qt_opt", env="CartPole-v1")


def test_unknown_key_gets_did_you_mean():
    with pytest.raises(ValueError, match="did you mean 'cem_elites'"):
        make_plan("qt_opt", env="Pendulum-v1", cem_elite=5)


@pytest.mark.parametrize(
    ("values", "match"),
    [
        ({"cem_elites": 64}, "cem_elites < cem_samples"),
        ({"offline_updates": 10}, "set dataset="),
        ({"dataset": "nowhere.parquet"}, "neither an existing file"),
        ({"dataset": "random:0"}, "at least one episode"),
        ({"target_tau": 0.0}, "target_tau"),
    ],
)
def test_bad_values_are_refused(values, match):
    with pytest.raises(ValueError, match=match):
        make_plan("qt_opt", env="Pendulum-v1", **values)


def test_a_dataset_recorded_on_another_env_is_refused(tmp_path):
    path = str(tmp_path / "cp.parquet")
    record_episodes(lambda: _Zero(), "MountainCarContinuous-v0", 1, path)
    with pytest.raises(ValueError, match="observations of shape"):
        make_plan("qt_opt", env="Pendulum-v1", dataset=path)
    # the right env takes it
    assert make_plan("qt_opt", env="MountainCarContinuous-v0", dataset=path).dataset == path


class _Zero:
    def act(self, obs):
        return np.zeros(1, np.float32)
