"""The two-lane ring: one AV that accelerates and changes lanes among human drivers.

As in Kheterpal et al. (2018), "Flow: Deep RL for Control in SUMO": a 230 m ring of two
lanes, 41 humans driving SUMO's intelligent driver model (Flow's parameters and
acceleration noise) and SUMO's own lane-change model, and one AV whose action is an
acceleration and a lane change (left, stay or right). The paper reports 2.83 m/s mean
speed with humans only and 3.11 m/s (+10%) with the learned AV, which weaves between the
lanes. The humans, the noise, the warm-up and the measurements are the single-lane
ring's (:class:`~rlsuite.apps.traffic.envs.ring.RingSimulation`); this module adds the
lanes: the network, each vehicle's lane, per-lane neighbours and the AV's lane changes,
which go through SUMO's lane-change machinery with its safety checks.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np

from rlsuite.apps.traffic import kernel, networks
from rlsuite.apps.traffic.envs.config import EnvConfig, RingSumoOptions
from rlsuite.apps.traffic.envs.measured import Measured
from rlsuite.apps.traffic.envs.ring import (
    AV_SPEED_MODE,
    GAP_SCALE,
    MAX_RING,
    MIN_RING,
    SPEED_SCALE,
    RingSimulation,
    sumo_args,
)
from rlsuite.apps.traffic.rewards import desired_velocity_reward

MIN_LANES, MAX_LANES = 2, 4
"""Lanes a multi-lane ring may have."""
LANE_GAP_SCALE = 50.0
"""Per-lane headways and tailways in the observation are divided by this (m)."""
AV_LANE_CHANGE_MODE = 512
"""SUMO lane-change mode of the AV while it is controlled: no lane changes of its own, and
a requested change only where the other vehicles' speed and braking gaps allow it (SUMO
refuses it otherwise); Flow's ``no_lc_safe`` for RL vehicles."""
AV_DRIVERS = ("policy", "sumo")
"""Values of :attr:`Ring2LaneConfig.av_driver`."""
LANE_ACTION_MODES = ("direction", "target")
"""Values of :attr:`Ring2LaneConfig.lane_action`."""
LANE_ACTIONS = {-1: "right", 0: "stay", 1: "left"}
"""Lane-change directions (SUMO's lane 0 is the rightmost)."""


@dataclass(frozen=True)
class Ring2LaneConfig(RingSumoOptions, EnvConfig):
    """Everything that defines a two-lane ring episode (the env's keyword arguments)."""

    KIND: ClassVar[str] = "ring_2lane"
    POLICY_FIELDS: ClassVar[tuple[str, ...]] = (
        "lanes", "max_accel", "max_decel", "lane_action", "lane_threshold",
    )  # fmt: skip

    ring_length: float = 230.0
    """Ring length (m), the same on every lane."""
    lanes: int = 2
    """Lanes of the ring (2 to 4)."""
    num_vehicles: int = 42
    """Vehicles on the ring, the AV included (Kheterpal et al.: 41 humans + 1 AV). They
    start evenly spaced, alternating between the lanes."""
    sim_step: float = 0.1
    """Simulation step (s); one env step is one simulation step."""
    warmup_steps: int = 1000
    """Steps simulated at reset with every vehicle human-driven (the AV too: SUMO's IDM
    and lane-change model). From the default bunched start, 100 s is when stop-and-go
    waves have formed in both lanes (all-human speed settles at ~2.6 m/s by then)."""
    horizon: int = 1500
    """Controlled steps per episode (truncated after this many)."""
    measure_after: int = 0
    """Controlled steps before the episode metrics start counting."""
    bunching: float = 40.0
    """Metres of the ring left empty at the start (Flow's ``bunching``). From an even start
    (0) the humans' noise takes ~250 s to grow into waves; 40 m takes ~100 s."""
    accel_noise: float = 0.2
    """Std of the humans' acceleration noise, applied as sqrt(dt) * N(0, accel_noise)."""
    max_accel: float = 3.0
    """Largest AV acceleration an action can ask for (m/s^2; Flow's lane-change env: 3)."""
    max_decel: float = 3.0
    """Largest AV deceleration an action can ask for (m/s^2, positive)."""
    lane_action: str = "direction"
    """How the lane action ``d`` in [-1, 1] reads. ``direction`` (Flow's): left, stay or
    right by ``lane_threshold``, one request per step. ``target``: ``d`` picks a lane
    (``lanes`` equal parts of [-1, 1], the rightmost lane first) and the AV asks, every
    step it is elsewhere, to move one lane toward it, so a request is held until SUMO finds
    a safe gap. Both act through the same left / stay / right requests to SUMO."""
    lane_threshold: float = 1.0 / 3.0
    """The lane action ``d`` in [-1, 1] asks for the lane to the left when ``d > t``, to
    the right when ``d < -t``, and to stay otherwise (three equal thirds by default)."""
    lane_change_cooldown_s: float = 5.0
    """After a lane change the AV's lane actions are ignored for this long (s; Flow's
    ``lane_change_duration``), so that it cannot dither between lanes every step."""
    target_velocity: float = 10.0
    """Desired speed of the reward (m/s; Flow's lane-change env: 10)."""
    lane_change_penalty: float = 0.1
    """Reward penalty per lane change of the AV (Flow's: 0.1, a tenth of the best reward)."""
    av_driver: str = "policy"
    """``policy``: the AV follows the actions. ``sumo``: the AV is one more human (SUMO's
    IDM, lane-change model and the humans' noise) and the actions are ignored: the
    all-human baseline, 42 humans."""
    time_to_teleport: float = -1.0
    """SUMO's ``--time-to-teleport`` (s): a vehicle jammed this long is teleported ahead;
    -1 (the default, as on the single-lane ring) never teleports."""
    max_teleports: int = 0
    """A teleport storm ends the episode (``termination_reason`` in the step's info) once
    more than this many vehicles have been teleported."""

    num_avs: ClassVar[int] = 1
    """One AV (what :class:`~rlsuite.apps.traffic.envs.ring.RingSimulation` reads)."""

    @property
    def length_range(self) -> tuple[float, float]:
        return (float(self.ring_length), float(self.ring_length))

    def max_vehicles(self) -> int:
        """The most vehicles the ring holds (a vehicle length plus the standstill gap each)."""
        per = self.human_type.length + self.human_type.min_gap
        return int(self.lanes * (self.ring_length // per))

    def validate(self) -> None:
        if not isinstance(self.lanes, int) or not MIN_LANES <= self.lanes <= MAX_LANES:
            raise ValueError(
                f"lanes must be an integer within [{MIN_LANES}, {MAX_LANES}], got {self.lanes!r} "
                "(one lane is rlsuite/Ring-v0)"
            )
        if isinstance(self.ring_length, bool) or not isinstance(self.ring_length, int | float):
            raise ValueError(
                f"ring_length must be a number of metres within [{MIN_RING:g}, {MAX_RING:g}], "
                f"got {self.ring_length!r}"
            )
        if not MIN_RING <= self.ring_length <= MAX_RING:
            raise ValueError(
                f"ring_length must be within [{MIN_RING:g}, {MAX_RING:g}] m, got {self.ring_length}"
            )
        most = self.max_vehicles()
        if not isinstance(self.num_vehicles, int) or not 2 <= self.num_vehicles <= most:
            raise ValueError(
                f"num_vehicles must be within [2, {most}] on a {self.ring_length:g} m ring of "
                f"{self.lanes} lanes ({self.human_type.length:g} m long + "
                f"{self.human_type.min_gap:g} m gap each), got {self.num_vehicles!r}"
            )
        per = self.human_type.length + self.human_type.min_gap
        room = self.ring_length - math.ceil(self.num_vehicles / self.lanes) * per
        if not 0 <= self.bunching <= room:
            raise ValueError(f"bunching must be within [0, {room:g}] m here, got {self.bunching}")
        if not 0.001 <= self.sim_step <= 1.0:
            raise ValueError(f"sim_step must be within [0.001, 1] s, got {self.sim_step}")
        if self.warmup_steps < 0 or self.horizon < 1:
            raise ValueError(
                f"warmup_steps must be >= 0 and horizon >= 1, got {self.warmup_steps}, {self.horizon}"
            )
        if not 0 <= self.measure_after < self.horizon:
            raise ValueError(
                f"measure_after must be within [0, horizon={self.horizon}), got {self.measure_after}"
            )
        if self.accel_noise < 0 or self.max_accel <= 0 or self.max_decel <= 0:
            raise ValueError("accel_noise must be >= 0 and max_accel, max_decel > 0")
        if self.lane_action not in LANE_ACTION_MODES:
            raise ValueError(
                f"lane_action must be one of {LANE_ACTION_MODES}, got {self.lane_action!r}"
            )
        if not 0 < self.lane_threshold < 1:
            raise ValueError(f"lane_threshold must be within (0, 1), got {self.lane_threshold}")
        if self.lane_change_cooldown_s < 0 or self.lane_change_penalty < 0:
            raise ValueError("lane_change_cooldown_s and lane_change_penalty must be >= 0")
        if self.target_velocity <= 0:
            raise ValueError(f"target_velocity must be > 0, got {self.target_velocity}")
        if self.av_driver not in AV_DRIVERS:
            raise ValueError(f"av_driver must be one of {AV_DRIVERS}, got {self.av_driver!r}")
        if self.time_to_teleport != -1 and self.time_to_teleport <= 0:
            raise ValueError(
                f"time_to_teleport must be > 0 s, or -1 for never, got {self.time_to_teleport}"
            )
        if self.max_teleports < 0:
            raise ValueError(f"max_teleports must be >= 0, got {self.max_teleports}")
        if self.backend not in kernel.BACKENDS:
            raise ValueError(f"backend must be one of {kernel.BACKENDS}, got {self.backend!r}")


def lane_direction(value: float, threshold: float) -> int:
    """The lane action in [-1, 1] as a direction: +1 left, -1 right, 0 stay.

    >>> [lane_direction(d, 1 / 3) for d in (-1.0, -0.2, 0.0, 0.5)]
    [-1, 0, 0, 1]
    """
    return 1 if value > threshold else -1 if value < -threshold else 0


def lane_request(value: float, lane: int, cfg: Ring2LaneConfig) -> int:
    """The direction the AV asks for this step (+1 left, -1 right, 0 stay), from its lane
    action ``value`` and its lane, as ``cfg.lane_action`` reads it.

    >>> cfg = Ring2LaneConfig(lane_action="target")
    >>> [lane_request(d, 0, cfg) for d in (-0.9, -0.1, 0.1, 0.9)]
    [0, 0, 1, 1]
    >>> [lane_request(d, 1, cfg) for d in (-0.9, 0.9)]
    [-1, 0]
    """
    if cfg.lane_action == "direction":
        return lane_direction(value, cfg.lane_threshold)
    want = min(int((float(value) + 1.0) / 2.0 * cfg.lanes), cfg.lanes - 1)
    return int(np.sign(max(want, 0) - lane))


def observation_size(lanes: int) -> int:
    """5 numbers about the AV, then 4 per lane."""
    return 5 + 4 * lanes


def observation_space(cfg: Ring2LaneConfig) -> gym.spaces.Box:
    far = MAX_RING / LANE_GAP_SCALE
    low = [0.0, -2.0, 0.0, 0.0, 0.0] + [0.0, -2.0, 0.0, -2.0] * cfg.lanes
    high = [2.0, 2.0, MAX_RING / GAP_SCALE, 1.0, 1.0] + [far, 2.0, far, 2.0] * cfg.lanes
    return gym.spaces.Box(np.array(low, np.float32), np.array(high, np.float32), dtype=np.float32)


class Ring2LaneSimulation(RingSimulation):
    """The single-lane ring's machinery on a ring of several lanes, with lane changes.

    Keeps each vehicle's lane beside its position and speed, the AV's lane-change
    requests (carried out or refused by SUMO), the humans' own lane changes, per-lane
    speeds and teleports.
    """

    def __init__(self, config: Ring2LaneConfig, name: str = "ring_2lane"):
        super().__init__(config, name)  # type: ignore[arg-type]
        self.lane = np.zeros(config.num_vehicles, dtype=int)
        self.av_index = self.ids.index(self.av_ids[0])
        self.teleporting = np.zeros(config.num_vehicles, dtype=bool)
        self.steps_driven = 0

    def _reset_measurements(self) -> None:
        super()._reset_measurements()
        lanes = self.cfg.lanes
        self.lane_changes = 0
        self.lane_changes_refused = 0
        self.lane_change_requests = 0
        self.human_lane_changes = 0
        self.teleports = 0
        self.lane_speed_sum = np.zeros(lanes)
        self.lane_samples = np.zeros(lanes)
        self.av_lane_steps = np.zeros(lanes)
        self.last_change = -(10**9)  # controlled step of the AV's last lane change
        self.trace_lane: list[np.ndarray] = []

    def _build(self, rng: np.random.Generator) -> tuple[str, str]:
        cfg = self.cfg
        self.length = float(cfg.ring_length)
        net = networks.ring_network(self.length, lanes=cfg.lanes)
        routes = os.path.join(self._workdir(), "ring_2lane.rou.xml")
        t_total = (cfg.warmup_steps + cfg.horizon + 1) * cfg.sim_step
        laps = int(math.ceil(t_total * cfg.human_type.max_speed / self.length)) + 2
        networks.ring_routes(
            routes, self.length, self._vehicles(), self._types(), laps, cfg.bunching, cfg.lanes
        )
        return net, routes

    def start(self, rng: np.random.Generator) -> None:
        """A fresh simulation and the warm-up, every vehicle human-driven; then the AV
        takes SUMO's safe lane-change mode (unless SUMO drives it throughout)."""
        cfg = self.cfg
        self.rng = rng
        net, routes = self._build(rng)
        seed = int(rng.integers(0, 2**31 - 1))
        args = sumo_args(net, routes, cfg, seed)  # type: ignore[arg-type]
        i = args.index("--time-to-teleport")
        args[i + 1] = f"{cfg.time_to_teleport:g}"
        self.sim.start(args)
        self.step_count = 0
        self.controlled = 0
        self.steps_driven = 0
        self._reset_measurements()
        self.lane[:] = 0
        self._advance(measure=False)  # vehicles are inserted in the first step
        for _ in range(cfg.warmup_steps):
            self._advance(measure=False)
        if cfg.av_driver == "policy":
            av = self.av_ids[0]
            self.sim.set_speed_mode(av, AV_SPEED_MODE)
            self.sim.set_lane_change_mode(av, AV_LANE_CHANGE_MODE)

    def _read(self) -> None:
        states = self.sim.vehicle_lane_states(self.ids)
        if len(states) != len(self.ids):
            raise kernel.SimulationError("vehicles are missing from the ring simulation")
        for i, vid in enumerate(self.ids):
            speed, road, pos, lane = states[vid]
            if road in networks.RING_EDGES:
                self.x[i] = self._position(vid, road, pos, 0.0)
                self.v[i] = speed
                self.lane[i] = lane
                self.teleporting[i] = False
            else:  # in a teleport: off the network, kept where it was last seen, stopped
                self.v[i] = 0.0
                self.teleporting[i] = True

    def _advance(self, measure: bool) -> None:
        before = self.lane.copy()
        super()._advance(measure)
        self.teleports += self.sim.teleports_started()
        if measure:
            human = np.array([not v.startswith("av_") for v in self.ids])
            self.human_lane_changes += int(((self.lane != before) & human).sum())
            np.add.at(self.lane_speed_sum, self.lane, self.v)
            np.add.at(self.lane_samples, self.lane, 1)
            self.av_lane_steps[self.lane[self.av_index]] += 1
        if self.cfg.record:
            self.trace_lane.append(self.lane.copy())

    def cooldown_left(self) -> float:
        """Fraction of the lane-change cooldown still to run (0: the AV may change lanes)."""
        cd = self.cfg.lane_change_cooldown_s
        if cd <= 0:
            return 0.0
        since = (self.controlled - self.last_change) * self.cfg.sim_step
        return float(min(max(1.0 - since / cd, 0.0), 1.0))

    def drive(self, accel: float, direction: int) -> int:
        """One controlled step: the AV's acceleration (clipped to the bounds) and a lane
        change ``direction`` (+1 left, -1 right, 0 stay). Returns the lane change SUMO
        carried out (+1, -1 or 0). A request off the road or inside the cooldown is
        dropped; one that SUMO's safety checks refuse is counted in ``lane_changes_refused``.

        With ``av_driver="sumo"`` both are ignored and SUMO drives the AV as a human (it
        keeps the humans' noise: the ring's machinery perturbs every vehicle while no
        step has been controlled, so ``controlled`` stays 0 and this counts steps itself).
        """
        cfg = self.cfg
        i = self.av_index
        if cfg.av_driver == "sumo":
            self.steps_driven += 1
            lane_before = self.lane[i]
            self._advance(measure=self.steps_driven > cfg.measure_after)
            return int(np.sign(self.lane[i] - lane_before))
        target = None
        if direction and self.cooldown_left() == 0.0:
            t = int(self.lane[i]) + int(direction)
            if 0 <= t < cfg.lanes:
                target = t
                self.lane_change_requests += 1
                self.sim.change_lane(self.av_ids[0], t, cfg.sim_step)
        lane_before = int(self.lane[i])
        self.steps_driven += 1
        self.control({self.av_ids[0]: accel})
        changed = int(self.lane[i]) - lane_before
        if target is not None:
            if int(self.lane[i]) == target:
                self.lane_changes += 1
                self.last_change = self.controlled
            else:
                self.lane_changes_refused += 1
        return int(np.sign(changed))

    def neighbours(self, i: int) -> np.ndarray:
        """Per lane: gap to the leader, its speed, gap to the follower, its speed (m, m/s),
        bumper to bumper, of vehicle ``i``; an empty lane gives the ring's length and
        ``i``'s own speed."""
        n_lanes = self.cfg.lanes
        length = self.cfg.human_type.length
        others = np.arange(len(self.ids)) != i
        ahead = (self.x - self.x[i]) % self.length
        behind = (self.x[i] - self.x) % self.length
        out = np.empty((n_lanes, 4))
        for lane in range(n_lanes):
            m = others & (self.lane == lane)
            if not m.any():
                out[lane] = (self.length, self.v[i], self.length, self.v[i])
                continue
            idx = np.flatnonzero(m)
            lead = idx[np.argmin(ahead[idx])]
            foll = idx[np.argmin(behind[idx])]
            out[lane] = (
                max(ahead[lead] - length, 0.0),
                self.v[lead],
                max(behind[foll] - length, 0.0),
                self.v[foll],
            )
        return out

    def observe_av(self) -> np.ndarray:
        """The AV's observation (see :class:`Ring2LaneEnv`)."""
        i = self.av_index
        v = self.v[i]
        nb = self.neighbours(i)
        own = nb[self.lane[i]]
        head = [
            v / SPEED_SCALE,
            (own[1] - v) / SPEED_SCALE,
            own[0] / GAP_SCALE,
            self.lane[i] / (self.cfg.lanes - 1),
            self.cooldown_left(),
        ]
        per_lane = np.column_stack(
            [
                nb[:, 0] / LANE_GAP_SCALE,
                (nb[:, 1] - v) / SPEED_SCALE,
                nb[:, 2] / LANE_GAP_SCALE,
                (nb[:, 3] - v) / SPEED_SCALE,
            ]
        ).reshape(-1)
        return np.concatenate([head, per_lane]).astype(np.float32)

    def metrics(self) -> dict[str, float]:
        """The ring's episode metrics, plus lane changes, per-lane speeds and teleports."""
        m = super().metrics()
        lanes = self.cfg.lanes
        for lane in range(lanes):
            n = self.lane_samples[lane]
            m[f"mean_speed_lane_{lane}"] = self.lane_speed_sum[lane] / n if n else math.nan
        steps = max(self.av_lane_steps.sum(), 1)
        m["av_left_lane_share"] = float(self.av_lane_steps[1:].sum() / steps)
        m["lane_changes"] = float(self.lane_changes)
        m["lane_changes_refused"] = float(self.lane_changes_refused)
        m["lane_change_requests"] = float(self.lane_change_requests)
        m["human_lane_changes"] = float(self.human_lane_changes)
        m["teleports"] = float(self.teleports)
        return m

    def trajectories(self) -> dict[str, np.ndarray]:
        """The ring's trajectories plus ``lane`` (steps, vehicles) and ``lanes``."""
        traj = super().trajectories()
        traj["lane"] = np.array(self.trace_lane)
        traj["lanes"] = np.array(self.cfg.lanes)
        return traj


class Ring2LaneEnv(Measured, gym.Env):
    """The two-lane ring with ONE autonomous vehicle that accelerates and changes lanes.

    The humans drive SUMO's IDM (Flow's parameters, with Flow's acceleration noise) and
    change lanes by SUMO's lane-change model (LC2013, SUMO's default mode). Keyword
    arguments are the fields of :class:`Ring2LaneConfig`.

    States:
        ``Box(5 + 4 * lanes)`` (13 for two lanes): the AV's speed / 15, (its leader's
        speed - its speed) / 15 and the gap to its leader / 270 (the single-lane ring's
        three numbers, so its controllers read them), its lane / (lanes - 1), and the
        fraction of the lane-change cooldown left; then for each lane from the right:
        the gap to the nearest vehicle ahead / 50, that vehicle's speed relative to the
        AV's / 15, the gap to the nearest vehicle behind / 50 and its relative speed / 15
        (Flow's lane-change env: leaders and followers in every lane). Gaps are bumper to
        bumper in m, 0 for a vehicle alongside; an empty lane reads the ring's length.
    Actions:
        ``Box(2)`` in ``[-max_decel, max_accel] x [-1, 1]``: the acceleration (m/s^2,
        default +-3, applied as a commanded speed ``v + a dt`` that SUMO keeps
        collision-free), and the lane action ``d``: ``d > 1/3`` asks for the lane to the
        left, ``d < -1/3`` for the one to the right, else stay (``lane_threshold``); with
        ``lane_action="target"``, ``d`` picks a lane instead (< 0 the right one, > 0 the
        left one on two lanes) and the AV asks to move toward it every step until there.
        A continuous box suits both the ``es`` and ``sync`` (PPO) plans. A lane change is
        a request to SUMO (``changeLane`` for one step under lane-change mode 512): SUMO
        carries it out only if the gaps to the new lane's vehicles are safe, else it is
        refused. Requests off the road or within ``lane_change_cooldown_s`` (5 s) of the
        last change are dropped.
    Rewards:
        Flow's lane-change reward: the desired-velocity reward over all vehicles'
        speeds, ``max(0, |v_des| - |v - v_des|) / |v_des|`` with ``v_des`` =
        ``target_velocity`` (10 m/s), minus ``lane_change_penalty`` (0.1) for each lane
        change the AV made (:func:`~rlsuite.apps.traffic.rewards.desired_velocity_reward`).
    Termination:
        Terminated on a collision (not expected: SUMO keeps the AV safe), on a SUMO
        failure and on a teleport storm (more than ``max_teleports`` teleports; with
        teleports on), the reason in the step's ``info["termination_reason"]``; the next
        ``reset()`` starts a fresh simulation. Truncated after ``horizon`` controlled
        steps (1500 = 150 s), which follow ``warmup_steps`` (750) human-driven steps.

    Each step's info has the AV's ``lane``, the ``lane_change`` SUMO carried out
    (``left``/``stay``/``right``), whether a request was ``refused``, and the episode's
    counts so far. ``episode_metrics()`` adds lane-change counts, the per-lane mean speeds
    and the AV's share of time in the left lane to the ring's metrics.

    Example::

        >>> env = Ring2LaneEnv(warmup_steps=10, horizon=5)  # doctest: +SKIP
        >>> obs, _ = env.reset(seed=0)  # doctest: +SKIP
        >>> obs, r, term, trunc, info = env.step([0.5, 1.0])  # doctest: +SKIP
    """

    metadata = {"render_modes": []}

    def __init__(self, **kwargs: Any):
        self.cfg = Ring2LaneConfig.from_kwargs(**kwargs)
        self.observation_space = observation_space(self.cfg)
        self.action_space = gym.spaces.Box(
            np.array([-self.cfg.max_decel, -1.0], np.float32),
            np.array([self.cfg.max_accel, 1.0], np.float32),
            dtype=np.float32,
        )
        self.core = Ring2LaneSimulation(self.cfg, name="rlsuite/Ring2Lane-v0")
        self._t = 0
        self._obs_last = np.zeros(self.observation_space.shape, np.float32)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.core.start(self.np_random)  # a fresh simulation, also after a failed one
        self._t = 0
        self._obs_last = self._obs()
        return self._obs_last, {"ring_length": self.core.length, "lanes": self.cfg.lanes}

    def _obs(self) -> np.ndarray:
        o = self.core.observe_av()
        return np.clip(o, self.observation_space.low, self.observation_space.high)

    def _info(self, changed: int, refused: bool) -> dict[str, Any]:
        c = self.core
        return {
            "lane": int(c.lane[c.av_index]),
            "lane_change": LANE_ACTIONS[changed],
            "refused": refused,
            "lane_changes": c.lane_changes,
            "lane_changes_refused": c.lane_changes_refused,
            "human_lane_changes": c.human_lane_changes,
        }

    def step(self, action):
        a = np.asarray(action, dtype=float).reshape(-1)
        if a.shape[0] != 2 or not np.all(np.isfinite(a)):
            raise ValueError(
                f"action must be 2 finite numbers (acceleration, lane action), got {action!r}"
            )
        direction = lane_request(a[1], int(self.core.lane[self.core.av_index]), self.cfg)
        refused_before = self.core.lane_changes_refused
        try:
            changed = self.core.drive(float(a[0]), direction)
        except kernel.SimulationError as e:
            self.core.sim.close()
            info = self._info(0, False)
            info["termination_reason"] = f"SUMO failed: {e}"
            return self._obs_last, 0.0, True, False, info
        self._t += 1
        refused = self.core.lane_changes_refused > refused_before
        reward = desired_velocity_reward(self.core.v, self.cfg.target_velocity)
        reward -= self.cfg.lane_change_penalty * abs(changed)
        info = self._info(changed, refused)
        terminated = False
        if self.core.collisions > 0:
            terminated = True
            info["termination_reason"] = f"collision ({self.core.collisions} in SUMO)"
        elif self.core.teleports > self.cfg.max_teleports:
            terminated = True
            info["termination_reason"] = (
                f"teleport storm: SUMO teleported {self.core.teleports} jammed vehicle(s) "
                f"(more than max_teleports={self.cfg.max_teleports})"
            )
            self.core.sim.close()
        self._obs_last = self._obs()
        truncated = not terminated and self._t >= self.cfg.horizon
        return self._obs_last, float(reward), terminated, truncated, info

    def trajectories(self) -> dict[str, np.ndarray]:
        return self.core.trajectories()


class KeepLane:
    """A single-lane ring controller (``idm``, ``followerstopper``, ``pi``) driving the
    two-lane ring's AV: its acceleration from the first three numbers of the observation
    (the ring's), and the lane action 0, so the AV never changes lanes."""

    def __init__(self, factory: Any, name: str | None = None):
        self.factory = factory
        self.ctrl = factory()
        self.name = name or getattr(self.ctrl, "name", "controller")

    def reset(self, seed: int | None = None) -> None:
        self.ctrl = self.factory()
        if hasattr(self.ctrl, "reset"):
            self.ctrl.reset(seed)

    def act(self, obs: Any) -> np.ndarray:
        o = np.asarray(obs, dtype=np.float32).reshape(-1)
        a = float(np.asarray(self.ctrl.act(o[:3])).reshape(-1)[0])
        return np.array([a, 0.0], dtype=np.float32)


class SumoDriven:
    """Stands for the AV driven by SUMO as a human (the env's ``av_driver="sumo"``): it
    answers every observation with a placeholder action, which the env ignores."""

    name = "human (SUMO drives the AV)"

    def reset(self, seed: int | None = None) -> None:
        pass

    def act(self, obs: Any) -> np.ndarray:
        return np.zeros(2, dtype=np.float32)


CONFIG = Ring2LaneConfig
"""The config class behind the env's keyword arguments (the CLI validates with it)."""
