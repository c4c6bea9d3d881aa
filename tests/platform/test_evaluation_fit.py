"""A checkpoint whose recorded spaces an env does not have is refused in the driver, before
any worker starts; a user-input error raised inside a worker arrives as itself."""

from __future__ import annotations

import json
import os
import pickle

import numpy as np
import pytest
from gymnasium import spaces

from rlsuite.platform import envs, evaluation
from rlsuite.platform.checkpoints import layout
from rlsuite.platform.checkpoints.fit import check_fits


def _checkpoint(path, env, recorded, multi_agent=False, policies="shared"):
    """A checkpoint's META and SPACES as every backend writes them (all the check reads)."""
    os.makedirs(path)
    meta = dict(format=layout.FORMAT, plan="es", env=env, env_config={}, multi_agent=multi_agent,
                policies=policies, iteration=1)  # fmt: skip
    with open(os.path.join(path, layout.META), "w") as f:
        json.dump(meta, f)
    with open(os.path.join(path, layout.SPACES), "wb") as f:
        pickle.dump(recorded, f)
    return str(path)


def _box(n):
    return spaces.Box(0.0, 1.0, (n,), np.float32)


def test_wrong_observation_size_is_refused_before_any_worker(tmp_path, monkeypatch):
    ckpt = _checkpoint(tmp_path / "id3", "rlsuite-test/Identity-v0",
                       {"default_policy": (_box(3), spaces.Discrete(3))})  # fmt: skip

    def no_workers(*a, **k):
        raise AssertionError("workers were started")

    monkeypatch.setattr(evaluation, "_evaluate_on_ray", no_workers)
    monkeypatch.setattr(evaluation, "_Worker", no_workers)
    scen = evaluation.scenarios("rlsuite-test/Identity-v0", 2, {"n": 5})
    with pytest.raises(ValueError) as e:
        evaluation.evaluate(ckpt, scen)
    msg = str(e.value)
    assert "observations of shape (5,) (5 values)" in msg
    assert "trained on observations of shape (3,) (3 values)" in msg
    assert "policy id3" in msg and msg.endswith("records the training env config)")


def test_what_fits_and_what_does_not(tmp_path):
    single = _checkpoint(tmp_path / "single", "rlsuite-test/Identity-v0",
                         {None: (_box(2), spaces.Discrete(2))})  # fmt: skip
    matching = envs.spaces("rlsuite-test/Matching-v0")
    # a single-agent policy may drive each agent that observes and acts as it was trained to
    check_fits(single, "rlsuite-test/Matching-v0", matching)
    check_fits(
        single, "rlsuite-test/Identity-v0", envs.spaces("rlsuite-test/Identity-v0", {"n": 2})
    )
    other_action = _checkpoint(tmp_path / "act3", "rlsuite-test/Identity-v0",
                               {None: (_box(2), spaces.Discrete(3))})  # fmt: skip
    with pytest.raises(ValueError, match=r"acts in Discrete\(3\).*agent 'a0'.*Discrete\(2\)"):
        check_fits(other_action, "rlsuite-test/Matching-v0", matching)
    multi = _checkpoint(tmp_path / "multi", "rlsuite-test/Matching-v0",
                        {"a0": (_box(2), spaces.Discrete(2))}, multi_agent=True)  # fmt: skip
    check_fits(multi, "rlsuite-test/Matching-v0", matching)  # shared: any number of agents
    with pytest.raises(ValueError, match="is a single-agent env"):
        check_fits(multi, "rlsuite-test/Identity-v0", envs.spaces("rlsuite-test/Identity-v0"))
    per_agent = _checkpoint(tmp_path / "per", "rlsuite-test/Matching-v0",
                            {"a0": (_box(2), spaces.Discrete(2))}, True, "per_agent")  # fmt: skip
    with pytest.raises(ValueError, match=r"one module per agent for 1 agents \(a0\).*\(a1\)"):
        check_fits(per_agent, "rlsuite-test/Matching-v0", matching)


class _Refuses:
    """A controller that finds out only on its first step that it cannot act on the env."""

    def act(self, obs):
        raise ValueError("this controller cannot act on Identity observations")


def test_user_error_in_a_worker_arrives_as_its_own_message(ray_local):
    scen = evaluation.scenarios("rlsuite-test/Identity-v0", 2)
    with pytest.raises(ValueError) as e:
        evaluation.evaluate(_Refuses, scen, num_workers=1)
    assert type(e.value) is ValueError  # not Ray's RayTaskError(ValueError) dual
    assert str(e.value) == "this controller cannot act on Identity observations"
    assert "ray::" not in str(e.value) and "actor_id" not in str(e.value)


def test_rlsuite_evaluate_refuses_a_policy_for_another_env_before_ray(monkeypatch, capsys):
    import ray

    from rlsuite.cli import main
    from rlsuite.platform import cluster

    def refuse(*a, **k):
        raise AssertionError("Ray was started for a policy that cannot act on the env")

    monkeypatch.setattr(cluster, "init", refuse)
    monkeypatch.setattr(ray, "init", refuse)
    ring = os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks", "policies",
                        "ring_es_gru_scratch_p025")  # fmt: skip
    # the ring's env options are not passed to CartPole: only the observation size is wrong
    assert main(["evaluate", "--controller", ring, "--env", "CartPole-v1", "--episodes", "1"]) == 2
    err = capsys.readouterr().err
    assert "observations of shape (4,) (4 values) from 'CartPole-v1' cannot go to policy" in err
    assert "ray::" not in err and len(err.strip().splitlines()) == 1
