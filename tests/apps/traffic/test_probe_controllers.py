"""The probes' own rules: the merge's entrance meter and the two-lane ring's lane requests."""

import numpy as np

from rlsuite.apps.traffic.probe_controllers import EntranceMeter, WeaveProbe


def test_the_entrance_meter_holds_4_m_s_near_the_entrance_and_drives_as_idm_past_it():
    def obs(position):  # speed 7.5 m/s, a 20 m gap
        return np.array([0.5, 0.0, 20 / 270, 0.0, 0.0, position, 0.0, 0.0], np.float32)

    meter = EntranceMeter()
    out = meter.act({"near": obs(0.1), "far": obs(0.5)})
    assert out["near"].tolist() == [-1.5]  # 4 - 7.5 m/s, clipped
    assert out["far"].tolist() == meter.idm.act(obs(0.5)).tolist()


def test_the_weave_probe_asks_for_the_other_lane_for_hold_steps_each_period():
    probe = WeaveProbe(hold=2, period=4)
    probe.reset(0)
    upper = np.array([0.3, 0.4, 0.2, 1.0, 0.0], np.float32)  # obs[3]: in the upper lane
    lanes = [probe.act(upper.copy())[1] for _ in range(6)]
    assert lanes == [-1.0, 0.0, 0.0, -1.0, -1.0, 0.0]
