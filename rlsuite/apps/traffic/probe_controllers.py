"""Probes: hand-written controllers that show what a scenario allows, neither baselines nor
used in training: the merge's entrance meter (``rlsuite bench run traffic_merge``) and the
two-lane ring's held lane requests (``traffic_ring_2lane``)."""

from __future__ import annotations

import numpy as np


class EntranceMeter:
    """The probe: each AV holds 4 m/s over the first 15% of the highway (IDM under a 10 m
    gap), then drives as the humans; the cars held behind it wait off the road."""

    def __init__(self):
        from rlsuite.apps.traffic import controllers
        from rlsuite.apps.traffic.envs.merge import baseline_options

        self.idm = controllers.IDMController(**baseline_options("idm"))

    def reset(self, seed=None) -> None:
        pass

    def act(self, obs: dict) -> dict:
        hold = {a: o[5] < 0.15 and o[2] * 270.0 > 10.0 for a, o in obs.items()}
        return {a: np.array([np.clip(4.0 - o[0] * 15.0, -1.5, 1.5)], np.float32) if hold[a]
                else self.idm.act(o) for a, o in obs.items()}  # fmt: skip


class WeaveProbe:
    """A probe, not a baseline and not used in training: PI on the acceleration, and every
    ``period`` steps it asks for the other lane for ``hold`` steps in a row (one request per
    step: SUMO changes lanes only when the gaps are safe). It shows what lane changes can add
    on this ring: a single request per change is nearly always refused in the dense lanes."""

    name = "pi + held lane requests (probe)"

    def __init__(self, hold: int = 150, period: int = 300):
        from rlsuite.apps.traffic import scenarios

        factory, _ = scenarios.controller_for(scenarios.get("ring_2lane"), "pi", {})
        self.pi, self.hold, self.period, self.t = factory(), hold, period, 0

    def reset(self, seed: int | None = None) -> None:
        self.pi.reset(seed)
        self.t = 0

    def act(self, obs):
        a = self.pi.act(obs)
        self.t += 1
        if self.t % self.period < self.hold:
            a[1] = -1.0 if obs[3] > 0.5 else 1.0  # obs[3]: the AV's lane / (lanes - 1)
        return a
