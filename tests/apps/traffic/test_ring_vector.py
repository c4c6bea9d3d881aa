"""N rings in one SUMO simulation (RingVectorEnv) on real SUMO: the same episodes as the
scalar RingEnv, ring by ring, and the platform's vector path builds it."""

from __future__ import annotations

import numpy as np
import pytest

from rlsuite.apps.traffic import kernel
from rlsuite.apps.traffic.controllers import IDMController
from rlsuite.apps.traffic.envs.ring import RingEnv
from rlsuite.apps.traffic.envs.ring_vector import RingVectorEnv
from tests.apps.traffic._episodes import check_refusals, scalar_episode

SHORT = dict(warmup_steps=60, horizon=40)


def test_spaces_shapes_and_next_step_autoreset():
    env = RingVectorEnv(num_envs=3, ring_length=(220, 270), **SHORT)
    try:
        assert env.observation_space.shape == (3, 3) and env.action_space.shape == (3, 1)
        obs, info = env.reset(seed=0)
        assert env.observation_space.contains(obs)
        assert len(info["ring_length"]) == 3 and all(220 <= x <= 270 for x in info["ring_length"])
        a = np.full((3, 1), 0.3, dtype=np.float32)
        for t in range(1, SHORT["horizon"] + 1):
            obs, r, term, trunc, _ = env.step(a)
            assert env.observation_space.contains(obs)
            assert r.shape == (3,) and term.shape == trunc.shape == (3,)
            assert not term.any()
            assert trunc.all() == (t == SHORT["horizon"])  # all rings end together
        metrics = env.episode_metrics()
        assert len(metrics) == 3 and all(0 < m["mean_speed"] < 30 for m in metrics)
        old = [m["ring_length"] for m in metrics]
        # Next-step autoreset: the step after the end restarts every ring, zero reward.
        obs, r, term, trunc, info = env.step(a)
        assert env.observation_space.contains(obs)
        assert not r.any() and not term.any() and not trunc.any() and env.t == 0
        assert [m["ring_length"] for m in env.episode_metrics()] != old  # lengths redrawn
        env.step(a)
        assert env.t == 1
    finally:
        env.close()


@pytest.mark.parametrize("memory_s", [0.0, 2.0])
def test_ring_i_is_the_scalar_ring_with_seed_plus_i(memory_s):
    """Same network shape, noise stream, warm-up, observation and reward per ring (and
    the same memory features: a 20-step window over 80 steps wraps around)."""
    cfg = dict(
        ring_length=(220, 270), warmup_steps=150, horizon=80, measure_after=10, memory_s=memory_s
    )
    vec = RingVectorEnv(num_envs=3, **cfg)
    actions = np.random.default_rng(1).uniform(-1, 1, (80, 3, 1)).astype(np.float32)
    try:
        obs, info = vec.reset(seed=11)
        vobs, vrew = [obs], []
        for a in actions:
            obs, r, *_ = vec.step(a)
            vobs.append(obs)
            vrew.append(r)
        vmetrics = vec.episode_metrics()
    finally:
        vec.close()
    vobs, vrew = np.array(vobs), np.array(vrew)
    assert vobs.shape == (81, 3, 5 if memory_s else 3)
    for i in (0, 2):
        env = RingEnv(backend="traci", **cfg)  # libsumo may be held by another test's env
        sobs, srew, smetrics, inf = scalar_episode(env, 11 + i, actions[:, i])
        assert inf["ring_length"] == info["ring_length"][i]
        np.testing.assert_allclose(vobs[:, i], sobs, atol=1e-5)
        np.testing.assert_allclose(vrew[:, i], srew, rtol=1e-9, atol=1e-9)
        for k, v in smetrics.items():
            assert vmetrics[i][k] == pytest.approx(v, abs=1e-9), k


def test_every_ring_forms_a_stop_and_go_wave():
    """All-human rings (the AV driven by the IDM), started bunched: a wave in every one."""
    env = RingVectorEnv(num_envs=4, ring_length=230, horizon=600, bunching=20.0)
    ctrls = [IDMController() for _ in range(4)]
    try:
        obs, _ = env.reset(seed=0)
        for i, c in enumerate(ctrls):
            c.reset(i)
        done = False
        while not done:
            a = np.stack([np.asarray(c.act(o), dtype=np.float32) for c, o in zip(ctrls, obs)])
            obs, _, term, trunc, _ = env.step(a.reshape(4, 1))
            done = bool(term.any() or trunc.any())
        rows = env.episode_metrics()
    finally:
        env.close()
    for row in rows:
        assert row["speed_std"] > 1.5, rows
        assert row["frac_below_0_5"] > 0.2, rows
        assert row["mean_speed"] < 3.2 and row["collisions"] == 0, rows
    assert len({round(r["mean_speed"], 6) for r in rows}) == 4  # each ring its own noise


def test_bad_options_give_clear_errors():
    bad = {
        "num_envs": {"num_envs": 0},
        "one AV per ring": {"num_envs": 2, "num_avs": 2},
        "record": {"num_envs": 2, "record": True},
        "out of range": {"num_envs": 2, "ring_length": 10},
    }
    check_refusals(RingVectorEnv, bad, **SHORT)


def test_closed_simulation_gives_clear_error_and_reset_recovers():
    env = RingVectorEnv(num_envs=2, **SHORT)
    try:
        env.reset(seed=0)
        env.sim.conn.close()  # the simulation ends under the env
        with pytest.raises(kernel.SimulationError, match="call reset"):
            env.step(np.zeros((2, 1), dtype=np.float32))
        obs, _ = env.reset(seed=0)
        obs, *_ = env.step(np.zeros((2, 1), dtype=np.float32))
        assert obs.shape == (2, 3)
    finally:
        env.close()
