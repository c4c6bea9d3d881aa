"""The baseline controllers' control laws (no simulator needed)."""

from __future__ import annotations

import numpy as np
import pytest

from rlsuite.apps.traffic import controllers
from rlsuite.apps.traffic.envs.ring import GAP_SCALE, SPEED_SCALE, decode_observation


def obs(v, v_lead, gap):
    return np.array([v / SPEED_SCALE, (v_lead - v) / SPEED_SCALE, gap / GAP_SCALE], np.float32)


def test_decode_observation_round_trips():
    v, vl, g = decode_observation(obs(3.0, 4.5, 12.0))
    assert (v, vl, g) == pytest.approx((3.0, 4.5, 12.0), abs=1e-5)


def test_idm_accelerates_on_free_road_and_brakes_when_close():
    idm = controllers.IDMController(noise=0.0)
    assert idm.act(obs(3.0, 3.0, 200.0))[0] == pytest.approx(1.0, abs=1e-3)  # clipped at max_accel
    assert idm.act(obs(5.0, 0.0, 3.0))[0] == pytest.approx(-1.0)  # clipped at -max_decel
    # equilibrium: IDM's s* = s0 + vT, so at gap s* (and v << v0) acceleration is ~0
    assert abs(idm.accel(3.0, 3.0, 2.0 + 3.0)) < 0.01


def test_idm_noise_is_seeded():
    a, b = controllers.IDMController(), controllers.IDMController()
    a.reset(5)
    b.reset(5)
    o = obs(3, 3, 6)
    assert [a.act(o)[0] for _ in range(5)] == [b.act(o)[0] for _ in range(5)]


def test_followerstopper_envelopes():
    fs = controllers.FollowerStopper(v_des=4.0)
    assert fs.command(3.0, 3.0, 4.0) == 0.0  # inside dx1: stop
    assert fs.command(3.0, 3.0, 100.0) == 4.0  # far: desired speed
    mid = fs.command(
        3.0, 3.0, (4.5 + 5.25) / 2
    )  # halfway between dx1 and dx2: half the leader speed
    assert mid == pytest.approx(1.5)
    # a faster-approaching leader (negative dv) widens the envelopes: slower command at the same gap
    assert fs.command(5.0, 1.0, 6.5) < fs.command(1.0, 1.0, 6.5)


def test_pi_saturation_tracks_own_average_and_follows_leader_when_close():
    pi = controllers.PISaturation()
    for _ in range(100):
        far = pi.command(3.0, 3.0, 50.0)
    assert far == pytest.approx(4.0, abs=0.05)  # own 38 s mean (3) + full catch-up (1)
    pi.reset()
    for _ in range(100):
        close = pi.command(3.0, 1.0, 3.0)
    assert close == pytest.approx(1.0, abs=0.05)  # inside the safe gap: the leader's speed


def test_per_agent_keeps_one_controller_per_av():
    ctrl = controllers.PerAgent(controllers.PISaturation)
    ctrl.reset(0)
    out = ctrl.act({"av_0": obs(3, 3, 20), "av_1": obs(1, 1, 20)})
    assert set(out) == {"av_0", "av_1"}
    assert ctrl.agents["av_0"] is not ctrl.agents["av_1"]
    assert out["av_0"].shape == (1,)


def test_unknown_baseline_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown controller 'pid'"):
        controllers.make_baseline("pid")
