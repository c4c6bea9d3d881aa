"""Hand-written AV controllers for the ring and the figure-eight (the baselines).

Each is a platform controller: ``reset(seed)`` and ``act(obs) -> acceleration``
for the single-AV envs (observation ``[v/15, (v_lead - v)/15, gap/270]``, see
:func:`rlsuite.apps.traffic.envs.ring.decode_observation`). Wrap one in
:class:`PerAgent` for the multi-AV envs (a dict of observations in, a dict of
actions out).

* :class:`IDMController`: the AV drives like the humans (IDM with Flow's
  parameters and acceleration noise): the all-human, uncontrolled baseline.
* :class:`FollowerStopper`: Stern et al. (2018)'s velocity controller with
  quadratic safety envelopes around a desired speed ``v_des``.
* :class:`PISaturation`: Stern et al. (2018)'s proportional-integral controller
  with saturation: tracks the AV's own 38 s average speed, falls back to the
  leader's speed at short gaps.
* :class:`Snake`: the figure-eight's platoon rule for one AV: stand still until
  the humans have queued behind it, then lead them round at a steady speed;
  :class:`LeadSnake` has one AV of several do it and the others follow.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from typing import Any

import numpy as np

from rlsuite.apps.traffic.envs.ring import decode_observation


def _accel_to(v_cmd: float, v: float, dt: float, lo: float, hi: float) -> np.ndarray:
    return np.array([np.clip((v_cmd - v) / dt, -lo, hi)], dtype=np.float32)


@dataclass
class _OneAV:
    """What the single-AV controllers share: the step and the env's action bounds, and
    acting through ``command(v, v_lead, gap)``, the speed to reach in one step."""

    sim_step: float = 0.1
    """Simulation step (s)."""
    max_accel: float = 1.0
    """Action bound (the env's max_accel)."""
    max_decel: float = 1.0
    """Action bound (the env's max_decel)."""

    def act(self, obs: Any) -> np.ndarray:
        v, v_lead, gap = decode_observation(obs)
        return _accel_to(
            self.command(v, v_lead, gap), v, self.sim_step, self.max_decel, self.max_accel
        )


@dataclass
class IDMController(_OneAV):
    """The intelligent driver model with Flow's human parameters and noise."""

    v0: float = 30.0
    """Desired speed (m/s)."""
    T: float = 1.0
    """Time headway (s)."""
    a: float = 1.0
    """Maximum acceleration (m/s^2)."""
    b: float = 1.5
    """Comfortable deceleration (m/s^2)."""
    delta: float = 4.0
    """Acceleration exponent."""
    s0: float = 2.0
    """Standstill gap (m)."""
    noise: float = 0.2
    """Std of the acceleration noise, applied as sqrt(dt) * N(0, noise)."""
    name: str = "idm (all human)"

    def __post_init__(self) -> None:
        self.rng = np.random.default_rng(0)

    def reset(self, seed: int | None = None) -> None:
        self.rng = np.random.default_rng(None if seed is None else seed + 7919)

    def accel(self, v: float, v_lead: float, gap: float) -> float:
        s_star = self.s0 + max(
            0.0, v * self.T + v * (v - v_lead) / (2 * math.sqrt(self.a * self.b))
        )
        acc = self.a * (1 - (v / self.v0) ** self.delta - (s_star / max(gap, 0.1)) ** 2)
        if self.noise > 0:
            acc += math.sqrt(self.sim_step) * self.rng.normal(0.0, self.noise)
        return acc

    def act(self, obs: Any) -> np.ndarray:
        v, v_lead, gap = decode_observation(obs)
        acc = self.accel(v, v_lead, gap)
        return np.array([np.clip(acc, -self.max_decel, self.max_accel)], dtype=np.float32)


@dataclass
class FollowerStopper(_OneAV):
    """Stern et al. (2018)'s FollowerStopper: drive at ``v_des`` unless a gap envelope says slower."""

    v_des: float = 4.0
    """Desired speed U (m/s); below the ring's jam-free equilibrium it smooths the wave."""
    dx0: tuple[float, float, float] = (4.5, 5.25, 6.0)
    """Envelope offsets dx1, dx2, dx3 at zero relative speed (m)."""
    d: tuple[float, float, float] = (1.5, 1.0, 0.5)
    """Envelope curvatures d1, d2, d3 (m/s^2)."""
    name: str = "followerstopper"

    def reset(self, seed: int | None = None) -> None:
        pass

    def command(self, v: float, v_lead: float, gap: float) -> float:
        dv = min(v_lead - v, 0.0)
        dx1, dx2, dx3 = (x + dv * dv / (2 * d) for x, d in zip(self.dx0, self.d))
        u = min(max(v_lead, 0.0), self.v_des)
        if gap <= dx1:
            return 0.0
        if gap <= dx2:
            return u * (gap - dx1) / (dx2 - dx1)
        if gap <= dx3:
            return u + (self.v_des - u) * (gap - dx2) / (dx3 - dx2)
        return self.v_des


@dataclass
class PISaturation(_OneAV):
    """Stern et al. (2018)'s PI controller with saturation."""

    history_s: float = 38.0
    """Window of the AV's own speed average, the target speed (s)."""
    g_l: float = 7.0
    """Gap below which no catch-up speed is added (m)."""
    g_u: float = 30.0
    """Gap at which the full catch-up speed is added (m)."""
    v_catch: float = 1.0
    """Catch-up speed added at large gaps (m/s)."""
    gamma: float = 2.0
    """Width of the blend between target and leader speed (m)."""
    labelling: bool = False
    """Label another driver's steps (DAgger): the previous command is taken as the speed
    the AV has, not as this controller's own last answer, which did not drive."""
    name: str = "pi-saturation"

    def __post_init__(self) -> None:
        self.reset()

    def reset(self, seed: int | None = None) -> None:
        self.history: deque[float] = deque(
            maxlen=max(1, int(round(self.history_s / self.sim_step)))
        )
        self.v_cmd: float | None = None

    def command(self, v: float, v_lead: float, gap: float) -> float:
        self.history.append(v)
        if self.v_cmd is None or self.labelling:
            self.v_cmd = v
        dx_s = max(2.0 * (v_lead - v), 4.0)  # safe gap grows when the leader pulls away
        target = float(np.mean(self.history)) + self.v_catch * min(
            max((gap - self.g_l) / (self.g_u - self.g_l), 0.0), 1.0
        )
        alpha = min(max((gap - dx_s) / self.gamma, 0.0), 1.0)
        beta = 1.0 - 0.5 * alpha
        self.v_cmd = beta * (alpha * target + (1 - alpha) * v_lead) + (1 - beta) * self.v_cmd
        return self.v_cmd


@dataclass
class Snake(_OneAV):
    """The figure-eight's platoon rule for one AV: stand still for ``wait_s``, then cruise.

    While the AV stands, the humans behind it queue up and those ahead drive on round
    the loop to the back of the queue, so one compact platoon ("snake") forms behind
    it; then it leads the platoon at ``v_cruise``, short enough to clear the crossing
    before its own tail gets there. :class:`LeadSnake` runs it for one AV of several.
    """

    wait_s: float = 25.0
    """Seconds at a standstill before cruising (s)."""
    v_cruise: float = 7.0
    """Speed the platoon is led at (m/s)."""
    max_accel: float = 3.0
    """Action bound (the figure-eight's max_accel)."""
    max_decel: float = 3.0
    """Action bound (the figure-eight's max_decel)."""
    name: str = "snake"

    def __post_init__(self) -> None:
        self.reset()

    def reset(self, seed: int | None = None) -> None:
        self.t = 0

    def act(self, obs: Any) -> np.ndarray:
        v, _, _ = decode_observation(obs)
        v_cmd = 0.0 if self.t * self.sim_step < self.wait_s else self.v_cruise
        self.t += 1
        return _accel_to(v_cmd, v, self.sim_step, self.max_decel, self.max_accel)


class LeadSnake:
    """The figure-eight's "snake" for k AVs: one AV leads (:class:`Snake`), the others
    follow with the IDM without noise, so that all 14 vehicles form one platoon.

    The leader is the AV in the last start slot (Flow's lone AV of figureeight0). With
    Flow's humans (figure-eight ``human_model="flow"``) and the defaults it keeps
    6.37 m/s over Flow's 1500 steps with 1, 7 or 14 AVs, 7.0 once the platoon has
    formed, against 4.20 all-human. Acts on the multi-agent figure-eight's dict of
    observations (agents ``av_0``... in loop order) or on the centralised one's
    stacked observation (3 numbers per AV first).
    """

    def __init__(self, num_avs: int = 1, name: str = "snake", **kwargs: Any):
        self.num_avs = num_avs
        self.name = name
        self.kwargs = kwargs  # bounds (max_accel, max_decel) and sim_step, for all the AVs
        self.reset()

    def reset(self, seed: int | None = None) -> None:
        self.lead = Snake(**self.kwargs)
        self.follow = IDMController(noise=0.0, **self.kwargs)

    def act(self, obs: Any) -> Any:
        if isinstance(obs, dict):
            lead = max(obs, key=lambda a: int(str(a).rsplit("_", 1)[-1]))
            return {a: (self.lead if a == lead else self.follow).act(o) for a, o in obs.items()}
        o = np.asarray(obs, dtype=np.float32).reshape(-1)
        k = self.num_avs
        acts = [self.follow.act(o[3 * i : 3 * i + 3]) for i in range(k - 1)]
        acts.append(self.lead.act(o[3 * (k - 1) : 3 * k]))
        return np.concatenate(acts).astype(np.float32)


class PerAgent:
    """One copy of a single-AV controller per agent, for the multi-AV envs."""

    def __init__(self, factory: Any, name: str | None = None):
        self.factory = factory
        self.name = name or f"{getattr(factory(), 'name', 'controller')} (per AV)"
        self.agents: dict[str, Any] = {}
        self.seed: int | None = None

    def reset(self, seed: int | None = None) -> None:
        self.seed = seed
        self.agents = {}

    def act(self, obs: dict[str, Any]) -> dict[str, Any]:
        out = {}
        for i, (aid, o) in enumerate(sorted(obs.items())):
            c = self.agents.get(aid)
            if c is None:
                c = self.agents[aid] = self.factory()
                if hasattr(c, "reset"):
                    c.reset(None if self.seed is None else self.seed * 1000 + i)
            out[aid] = c.act(o)
        return out


class Stacked:
    """One copy of a single-AV controller per AV of a centralised env (the figure-eight).

    The figure-eight observation starts with each AV's ring-style observation
    (3 numbers each); the actions are stacked in the same order.
    """

    def __init__(self, factory: Any, num_avs: int = 1, name: str | None = None):
        self.factory = factory
        self.num_avs = num_avs
        self.name = name or getattr(factory(), "name", "controller")
        self.ctrls = [factory() for _ in range(num_avs)]

    def reset(self, seed: int | None = None) -> None:
        self.ctrls = [self.factory() for _ in range(self.num_avs)]
        for i, c in enumerate(self.ctrls):
            if hasattr(c, "reset"):
                c.reset(None if seed is None else seed * 1000 + i)

    def act(self, obs: Any) -> np.ndarray:
        o = np.asarray(obs, dtype=np.float32).reshape(-1)
        return np.concatenate(
            [np.asarray(c.act(o[3 * i : 3 * i + 3])).reshape(-1) for i, c in enumerate(self.ctrls)]
        ).astype(np.float32)


@dataclass
class SignalProgram:
    """Stands for a signal program that runs inside the signals env (fixed, actuated,
    maxpressure; greedy on RESCO's maps and your own networks).

    Those baselines switch the lights themselves (the env's ``program`` option); this
    controller only answers every light with a placeholder action, which the env ignores.
    """

    program: str = "fixed"
    """``fixed``, ``actuated``, ``maxpressure`` or ``greedy``."""

    @property
    def name(self) -> str:
        return self.program

    def reset(self, seed: int | None = None) -> None:
        pass

    def act(self, obs: dict[str, Any]) -> dict[str, int]:
        return {a: 0 for a in obs}


SIGNAL_PROGRAMS = ("fixed", "actuated", "maxpressure", "greedy")
"""Signal baselines (run by the signals env itself)."""

TEAM_BASELINES = {"snake": LeadSnake}
"""Baselines that drive all of an env's AVs together (``cls(num_avs, **bounds)``), by CLI name."""

BASELINES = {
    "idm": IDMController,
    "followerstopper": FollowerStopper,
    "pi": PISaturation,
}
"""Baseline controllers by CLI name."""


def make_baseline(name: str, **kwargs: Any) -> Any:
    """A baseline by name (``idm``, ``followerstopper``, ``pi``); kwargs override its fields."""
    try:
        cls = BASELINES[name]
    except KeyError:
        raise ValueError(
            f"unknown controller {name!r}: use one of {sorted(BASELINES)} or a checkpoint path"
        ) from None
    return cls(**kwargs)


class AlineaMeter:
    """ALINEA (Papageorgiou et al. 1991) metering a road's lanes: every ``period`` seconds
    the rate becomes ``rate + gain * (target - occupancy)``, with ``occupancy`` the mean
    downstream occupancy (%) over the period, kept within ``rate_range`` (veh/h, all lanes).
    Each lane's light gives ``green`` seconds of green per cycle of ``lanes * 3600 / rate``
    seconds (one vehicle per lane and cycle); the lanes' cycles are staggered. At the top of
    the range the lights stay green."""

    def __init__(
        self,
        lanes: int,
        target: float,
        gain: float,
        period: float,
        rate_range: tuple[float, float],
        green: float,
    ):
        self.lanes, self.target, self.gain, self.period = lanes, target, gain, period
        self.lo, self.hi = rate_range
        self.green = green
        self.rate = self.hi
        self._occ_sum, self._occ_n, self._clock = 0.0, 0, 0.0

    def update(self, occupancy: float, dt: float) -> None:
        """Record one step's downstream occupancy (%); adjust the rate at the period's end."""
        self._occ_sum += occupancy
        self._occ_n += 1
        self._clock += dt
        if self._clock + 1e-9 >= self.period:
            mean = self._occ_sum / self._occ_n
            self.rate = float(
                np.clip(self.rate + self.gain * (self.target - mean), self.lo, self.hi)
            )
            self._occ_sum, self._occ_n, self._clock = 0.0, 0, 0.0

    def state(self, t: float) -> str:
        """The lights at time ``t`` (s): one ``G`` or ``r`` per lane."""
        if self.rate >= self.hi:
            return "G" * self.lanes
        cycle = self.lanes * 3600.0 / self.rate
        out = []
        for lane in range(self.lanes):
            phase = (t + lane * cycle / self.lanes) % cycle
            out.append("G" if phase < self.green else "r")
        return "".join(out)
