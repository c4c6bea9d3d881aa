"""N two-lane rings in one SUMO simulation (Ring2LaneVectorEnv) on real SUMO: ring by ring
the same episodes as the scalar Ring2LaneEnv (observations, rewards, lane changes carried
out and refused, metrics), next-step autoreset, bad input, SUMO failures and teleport
storms, and the platform's vector path building it."""

from __future__ import annotations

import numpy as np
import pytest

from rlsuite.apps.traffic.envs.ring_2lane import Ring2LaneEnv
from rlsuite.apps.traffic.envs.ring_2lane_vector import Ring2LaneVectorEnv
from tests.apps.traffic._episodes import check_refusals, scalar_episode

SHORT = dict(warmup_steps=20, horizon=25)


def _actions(steps: int, rings: int, seed: int = 1) -> np.ndarray:
    a = np.random.default_rng(seed).uniform(-1, 1, (steps, rings, 2))
    a[..., 0] *= 3.5  # past the +-3 bounds too: both envs clip
    return a.astype(np.float32)


@pytest.mark.parametrize(
    "num_vehicles, counted", [(20, "lane_changes"), (42, "lane_changes_refused")]
)
def test_ring_i_is_the_scalar_ring_with_seed_plus_i(num_vehicles, counted):
    """Same noise stream, warm-up, lane changes (the AV's, carried out or refused, and the
    humans'), observation, reward and episode metrics per ring as Ring2LaneEnv reset with
    seed + i: 20 vehicles leave room for the AV's changes, 42 (the paper's dense ring)
    make SUMO refuse them."""
    cfg = dict(num_vehicles=num_vehicles, warmup_steps=100, horizon=200, measure_after=10,
               lane_change_cooldown_s=1.0)  # fmt: skip
    rings = 3
    actions = _actions(cfg["horizon"], rings)
    vec = Ring2LaneVectorEnv(num_envs=rings, **cfg)
    try:
        obs, _ = vec.reset(seed=11)
        vobs, vrew = [obs], []
        for a in actions:
            obs, r, term, trunc, _ = vec.step(a)
            assert not term.any()
            vobs.append(obs)
            vrew.append(r)
        assert trunc.all()
        vmetrics = vec.episode_metrics()
    finally:
        vec.close()
    vobs, vrew = np.array(vobs), np.array(vrew)
    assert vobs.shape == (cfg["horizon"] + 1, rings, 13)
    counts = 0.0
    for i in range(rings):
        env = Ring2LaneEnv(backend="traci", **cfg)  # libsumo may be held by another env
        sobs, srew, smetrics, _ = scalar_episode(env, 11 + i, actions[:, i])
        np.testing.assert_allclose(vobs[:, i], sobs, rtol=0, atol=1e-6)
        np.testing.assert_allclose(vrew[:, i], srew, rtol=0, atol=1e-12)
        assert vmetrics[i].keys() == smetrics.keys()
        for k, v in smetrics.items():
            assert vmetrics[i][k] == pytest.approx(v, abs=1e-9, nan_ok=True), k
        counts += smetrics[counted]
    assert counts > 0  # the lane logic was exercised, not only car following


def test_spaces_shapes_and_next_step_autoreset():
    env = Ring2LaneVectorEnv(num_envs=3, **SHORT)
    try:
        assert env.observation_space.shape == (3, 13) and env.action_space.shape == (3, 2)
        obs, info = env.reset(seed=0)
        assert env.observation_space.contains(obs) and list(info["ring_length"]) == [230.0] * 3
        a = np.zeros((3, 2), dtype=np.float32)
        for t in range(1, SHORT["horizon"] + 1):
            obs, r, term, trunc, _ = env.step(a)
            assert env.observation_space.contains(obs)
            assert r.shape == (3,) and term.shape == trunc.shape == (3,)
            assert not term.any() and (r > 0).all()
            assert trunc.all() == (t == SHORT["horizon"])  # all rings end together
        assert len(env.episode_metrics()) == 3
        # Next-step autoreset: the step after the end restarts every ring, zero reward.
        obs, r, term, trunc, _ = env.step(a)
        assert env.observation_space.contains(obs)
        assert not r.any() and not term.any() and not trunc.any() and env.t == 0
        env.step(a)
        assert env.t == 1
    finally:
        env.close()


def test_bad_options_give_clear_errors():
    bad = {
        "num_envs": {"num_envs": 0},
        "av_driver='sumo'.*Ring2Lane-v0": {"num_envs": 2, "av_driver": "sumo"},
        "record": {"num_envs": 2, "record": True},
        "lanes must be an integer within": {"num_envs": 2, "lanes": 7},
    }
    check_refusals(Ring2LaneVectorEnv, bad, **SHORT)


def test_sumo_failure_and_teleport_storm_end_the_episodes_and_reset_recovers():
    env = Ring2LaneVectorEnv(num_envs=2, warmup_steps=5, horizon=400, time_to_teleport=2.0,
                             max_teleports=0)  # fmt: skip
    try:
        env.reset(seed=0)
        env.sim.close()  # SUMO gone mid-episode, as after a crash
        _, r, term, trunc, info = env.step(np.zeros((2, 2), dtype=np.float32))
        assert term.all() and not trunc.any() and not r.any()
        assert all(s.startswith("SUMO failed") for s in info["termination_reason"])
        env.reset(seed=0)  # a fresh simulation
        stop = np.array([[-3.0, 0.0], [0.0, 0.0]], dtype=np.float32)  # ring 0's AV stands
        for _ in range(400):
            _, _, term, trunc, info = env.step(stop)
            if term.any() or trunc.any():
                break
        assert term[0] and not term[1] and trunc[1]  # ring 0 jammed; ring 1 cut short
        assert "teleport storm" in info["termination_reason"][0]
        assert env.episode_metrics()[0]["teleports"] > 0
        _, r, term, trunc, _ = env.step(stop)  # the autoreset step: a fresh simulation
        assert not r.any() and not term.any() and env.t == 0
        _, r, term, _, _ = env.step(np.zeros((2, 2), dtype=np.float32))
        assert not term.any() and (r > 0).all()
    finally:
        env.close()


def test_traci_and_libsumo_reads_give_the_same_episode():
    """The vector env reads through the adapter's vehicle_columns: libsumo's compiled
    getters, or TraCI's over the socket; the same rings either way."""
    actions = _actions(SHORT["horizon"], 2)
    out = []
    for backend in ("libsumo", "traci"):
        env = Ring2LaneVectorEnv(num_envs=2, backend=backend, num_vehicles=20, **SHORT)
        try:
            obs, _ = env.reset(seed=5)
            assert env.sim.backend == backend
            seen, rewards = [obs], []
            for a in actions:
                obs, r, *_ = env.step(a)
                seen.append(obs)
                rewards.append(r)
            out.append((np.array(seen), np.array(rewards)))
        finally:
            env.close()
    np.testing.assert_array_equal(out[0][0], out[1][0])
    np.testing.assert_array_equal(out[0][1], out[1][1])
