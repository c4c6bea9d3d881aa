"""N merges in one SUMO simulation (MergeVectorEnv, the vector path of rlsuite/Merge-v0) on
real SUMO: one copy is the scalar MergeEnv's episode exactly; with several copies every
copy's state and reward equal a reference computed step by step from plain per-vehicle
SUMO calls; autoreset, bad input, a SUMO failure, and the platform's vector path."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rlsuite.apps.traffic import networks
from rlsuite.apps.traffic.envs.merge import MergeEnv
from rlsuite.apps.traffic.envs.merge_road import MAX_GAP
from rlsuite.apps.traffic.envs.merge_vector import MergeVectorEnv, copy_of
from tests.apps.traffic._episodes import scalar_episode

SHORT = dict(horizon=40)


def _actions(steps: int, copies: int, slots: int = 5) -> np.ndarray:
    return np.random.default_rng(1).uniform(-1.7, 1.7, (steps, copies, slots)).astype(np.float32)


def test_one_copy_is_the_scalar_merge_env():
    cfg = dict(horizon=150, av_share=0.25)
    actions = _actions(cfg["horizon"], 1)
    vec = MergeVectorEnv(num_envs=1, **cfg)
    try:
        obs, _ = vec.reset(seed=7)
        vobs, vrew = [obs[0]], []
        for a in actions:
            obs, r, term, trunc, _ = vec.step(a)
            vobs.append(obs[0])
            vrew.append(r[0])
        assert trunc.all() and not term.any()
        vm = vec.episode_metrics()[0]
    finally:
        vec.close()
    env = MergeEnv(backend="traci", **cfg)  # libsumo may be held by another env
    sobs, srew, sm, _ = scalar_episode(env, 7, actions[:, 0])
    np.testing.assert_array_equal(np.array(vobs), sobs)
    np.testing.assert_array_equal(np.array(vrew), srew)
    assert vm == pytest.approx(sm, abs=1e-12)
    assert np.count_nonzero(sobs) > 100  # AVs were in the slots


def _reference(env: MergeVectorEnv, i: int, acting: list[str]) -> tuple[np.ndarray, float]:
    """Copy ``i``'s state and Flow's reward from per-vehicle SUMO calls (MergeEnv's formulas)."""
    cfg, call = env.cfg, env.core.sim.call
    vmax, gap0 = cfg.human_type.max_speed, cfg.human_type.min_gap
    length = 2 * networks.MERGE_INFLOW_LENGTH + cfg.pre_merge_length + cfg.post_merge_length
    length += cfg.merge_length
    mine = [v for v in call("vehicle", "getIDList") if copy_of(v) == i]
    speed = {v: call("vehicle", "getSpeed", v) for v in mine}
    obs = np.zeros(5 * cfg.num_rl, np.float32)
    cost = 0.0
    for j, a in enumerate(env.slots[i]):
        v = speed[a]
        lead = call("vehicle", "getLeader", a, MAX_GAP)
        has = bool(lead and lead[0] and lead[0] in speed)
        lead_v, lead_gap = (speed[lead[0]], max(min(lead[1] + gap0, MAX_GAP), 0.0)) if has else (vmax, length)  # fmt: skip
        fol = call("vehicle", "getFollower", a, MAX_GAP)
        if fol and fol[0] and fol[0] in speed:
            follow_v, follow_gap = speed[fol[0]], max(min(fol[1] + gap0, MAX_GAP), 0.0)
        else:
            follow_v, follow_gap = 0.0, MAX_GAP
        follow_gap = follow_gap if follow_gap < MAX_GAP else length
        obs[5 * j : 5 * j + 5] = [v / vmax, (lead_v - v) / vmax, lead_gap / length,
                                  (v - follow_v) / vmax, follow_gap / length]  # fmt: skip
        if a in acting and has and v > 0:
            cost += min((max(lead_gap / v, 0.0) - cfg.min_headway) / cfg.min_headway, 0.0)
    sp = env.single_observation_space
    v = np.array(list(speed.values()))
    t = cfg.target_velocity
    max_cost = t * math.sqrt(len(v))
    r = max(max_cost - float(np.linalg.norm(v - t)), 0.0) / max_cost if len(v) else 0.0
    return np.clip(obs, sp.low, sp.high), max(r + cfg.headway_penalty * cost, 0.0)


def test_every_copy_matches_a_per_vehicle_reference():
    copies, horizon = 3, 120
    actions = _actions(horizon, copies)
    env = MergeVectorEnv(num_envs=copies, horizon=horizon, av_share=0.25)
    try:
        env.reset(seed=3)
        checked = 0
        for a in actions:
            acting = [list(s) for s in env.slots]
            obs, r, term, trunc, _ = env.step(a)
            for i in range(copies):
                ref_obs, ref_r = _reference(env, i, acting[i])
                np.testing.assert_allclose(obs[i], ref_obs, rtol=0, atol=1e-6)
                assert r[i] == pytest.approx(ref_r, abs=1e-12)
                checked += len(env.slots[i])
        assert checked > 500 and trunc.all() and not term.any()
        metrics = env.episode_metrics()
    finally:
        env.close()
    assert len({round(m["mean_speed"], 9) for m in metrics}) == copies  # copies differ
    for m in metrics:
        assert 0 < m["mean_speed"] < 30 and m["vehicles"] > 5 and m["collisions"] == 0


def test_spaces_autoreset_bad_input_and_a_sumo_failure():
    with pytest.raises(ValueError, match="num_envs"):
        MergeVectorEnv(num_envs=0)
    with pytest.raises(ValueError, match="av_share must be within"):
        MergeVectorEnv(num_envs=2, av_share=2.0)
    env = MergeVectorEnv(num_envs=2, **SHORT)
    try:
        assert env.observation_space.shape == (2, 25) and env.action_space.shape == (2, 5)
        obs, _ = env.reset(seed=0)
        assert env.observation_space.contains(obs)
        with pytest.raises(ValueError, match="finite"):
            env.step(np.full((2, 5), np.nan, dtype=np.float32))
        z = np.zeros((2, 5), dtype=np.float32)
        for t in range(1, SHORT["horizon"] + 1):
            obs, r, term, trunc, _ = env.step(z)
            assert env.observation_space.contains(obs) and not term.any()
            assert trunc.all() == (t == SHORT["horizon"])
        obs, r, term, trunc, _ = env.step(z)  # next-step autoreset
        assert not r.any() and not term.any() and env.core.copies[0].t == 0
        env.core.sim.close()  # SUMO gone mid-episode, as after a crash
        _, r, term, trunc, info = env.step(z)
        assert term.all() and not trunc.any()
        assert all(s.startswith("SUMO failed") for s in info["reason"])
        env.step(z)  # the autoreset step: a fresh simulation
        _, r, term, _, _ = env.step(z)
        assert not term.any() and (r > 0).all()
    finally:
        env.close()
