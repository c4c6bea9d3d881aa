"""The Sugiyama ring: one lane, 22 vehicles, autonomous vehicles damping stop-and-go waves.

As in Sugiyama et al. (2008) and Flow's ``WaveAttenuationPOEnv`` (Wu et al., T-RO
2018): human drivers follow SUMO's intelligent driver model with Flow's
parameters plus Flow's acceleration noise, which on a 230 m ring makes a
stop-and-go wave; the AV learns to dissipate it.
"""

from __future__ import annotations

import functools
import math
import os
import shutil
import tempfile
from dataclasses import dataclass, fields
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np

from rlsuite.apps.traffic import kernel, networks
from rlsuite.apps.traffic.envs.config import EnvConfig, RingSumoOptions
from rlsuite.apps.traffic.envs.measured import Measured
from rlsuite.apps.traffic.rewards import ring_reward

SPEED_SCALE = 15.0
"""Observation speeds are divided by this (m/s), as in Flow."""
GAP_SCALE = 270.0
"""Observation headways are divided by this (m): Flow's longest training ring."""
MEMORY_GAP_SCALE = 30.0
"""The averaged headway of ``memory_s`` is divided by this (m): its values are 5-15 m on
Flow's rings, and /270 would leave them near zero for the network."""
SLOW_SPEED = 0.5
"""A sample below this speed (m/s) counts as stopped in ``frac_below_0_5``."""
MIN_RING, MAX_RING = 50.0, 2000.0
AV_SPEED_MODE = 25
"""SUMO speed mode of AVs: safe speed and right of way, no cap at decel (Flow's right_of_way)."""

# Flow's optimal equilibrium speeds v_eq (m/s) of the 22-vehicle ring, by length (m).
FLOW_V_EQ = {220: 3.24, 230: 3.71, 260: 5.14, 270: 5.61}


def equilibrium_speed(
    length: float, num_vehicles: int = 22, human: networks.VehicleType | None = None
) -> float:
    """Speed (m/s) of uniform flow on this ring: every vehicle at the same speed and
    gap, where IDM's acceleration is zero (1 - (v/v0)^delta = ((s0 + v T) / gap)^2,
    gap = length / n - vehicle length). No controller keeps a higher mean speed for
    long, short of an AV that follows closer than the humans would.

    On this env's exact-length ring (5 m vehicles, s0 = 2 m, T = 1 s) it is 3.00,
    3.45, 4.82 and 5.27 m/s at 220, 230, 260 and 270 m: 93-94% of Flow's v_eq
    (:data:`FLOW_V_EQ`), so 95% of Flow's values is above uniform flow itself.
    """
    h = human or networks.VehicleType("human")
    gap = length / num_vehicles - h.length
    if gap <= h.min_gap:
        return 0.0

    def accel(v: float) -> float:
        return 1 - (v / h.max_speed) ** h.delta - ((h.min_gap + v * h.tau) / gap) ** 2

    lo, hi = 0.0, h.max_speed  # accel falls with v: bisect its root
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if accel(mid) > 0 else (lo, mid)
    return (lo + hi) / 2


@functools.lru_cache(maxsize=256)
def _uniform_flow(length: float, num_vehicles: int, human: networks.VehicleType) -> float:
    """:func:`equilibrium_speed`, kept per length (the reward asks for it every step)."""
    return equilibrium_speed(length, num_vehicles, human)


@dataclass(frozen=True)
class RingConfig(RingSumoOptions, EnvConfig):
    """Everything that defines a ring episode (the env's keyword arguments)."""

    POLICY_FIELDS: ClassVar[tuple[str, ...]] = ("memory_s", "max_accel", "max_decel", "num_avs")

    KIND: ClassVar[str] = "ring"

    ring_length: float | tuple[float, float] = 230.0
    """Ring length in metres, or ``(low, high)``: drawn uniformly (whole metres) at each reset."""
    num_vehicles: int = 22
    """Vehicles on the ring, autonomous ones included."""
    num_avs: int = 1
    """Autonomous (controlled) vehicles, spaced evenly among the humans."""
    sim_step: float = 0.1
    """Simulation step (s); one env step is one simulation step."""
    warmup_steps: int = 750
    """Steps simulated at reset with every vehicle human-driven (Flow's ``warmup_steps``):
    from the even start the humans' noise has grown into speed differences, not yet into
    a standing wave, which forms during the controlled part if nobody damps it."""
    horizon: int = 3000
    """Controlled steps per episode (the episode is truncated after this many)."""
    bunching: float = 0.0
    """Metres of the ring left empty at the start (Flow's ``bunching``). 0, evenly spaced,
    is what Flow's ring trains on: its ``WaveAttenuationEnv.reset`` asks for 50, but
    Flow's ``Env`` places vehicles with the config frozen at construction (the example's
    ``InitialConfig()``, bunching 0), and its shipped trained ring policy records 0. A
    positive value (e.g. 20) starts a standing wave before control begins: after the
    750 warm-up steps cars stand in it (the *formed-wave* protocol of benchmarks/)."""
    measure_after: int = 0
    """Controlled steps before the episode metrics start counting (e.g. 750 with no warm-up)."""
    accel_noise: float = 0.2
    """Std of Flow's human acceleration noise; applied as sqrt(dt) * N(0, accel_noise)."""
    memory_s: float = 0.0
    """Seconds of the AV's own history (speed and gap, averaged over the window) appended
    to the observation; 0 keeps Flow's three features. Flow's optimal ring controller
    had memory (a GRU); this gives a feed-forward policy the signal the PI controller
    uses (its 38 s mean speed) and, through the mean gap, the ring's density."""
    max_accel: float = 1.0
    """Largest AV acceleration an action can ask for (m/s^2)."""
    max_decel: float = 1.0
    """Largest AV deceleration an action can ask for (m/s^2, positive)."""
    speed_reward: float = 0.2
    """Reward per m/s of mean speed over all vehicles (Flow: 4 / 20)."""
    accel_penalty: float = 4.0
    """Reward penalty per m/s^2 of mean |AV acceleration action| (Flow: 4)."""
    relative_speed: bool = False
    """Weigh the speed term by ``v_mid / v_L``: the uniform-flow speed
    (:func:`equilibrium_speed`) at the middle of the length range over the one at this
    episode's length. Every length then pays the same per % of its own uniform flow,
    which is what the ring's targets measure. A fixed-length ring is unchanged. (Tried
    once against a policy drifting away from 220 m; it did not stop the drift:
    benchmarks/RESULTS.md, ninth session.)"""

    def __post_init__(self) -> None:
        rl = self.ring_length
        if isinstance(rl, list | tuple):
            if len(rl) != 2:
                raise ValueError(f"ring_length range must be (low, high), got {rl!r}")
            object.__setattr__(self, "ring_length", (float(rl[0]), float(rl[1])))
        super().__post_init__()

    @property
    def length_range(self) -> tuple[float, float]:
        rl = self.ring_length
        return (rl[0], rl[1]) if isinstance(rl, tuple) else (float(rl), float(rl))

    def validate(self) -> None:
        lo, hi = self.length_range
        if not (MIN_RING <= lo <= hi <= MAX_RING):
            raise ValueError(
                f"ring length {self.ring_length!r} is out of range: use metres within "
                f"[{MIN_RING:g}, {MAX_RING:g}] (and low <= high for a range), e.g. 230 or (220, 270)"
            )
        if self.num_vehicles < 2:
            raise ValueError(f"num_vehicles must be >= 2, got {self.num_vehicles}")
        if not 0 <= self.num_avs <= self.num_vehicles:
            raise ValueError(
                f"num_avs must be within [0, num_vehicles={self.num_vehicles}], got {self.num_avs}"
            )
        per = self.human_type.length + self.human_type.min_gap
        if self.num_vehicles * per > lo:
            raise ValueError(
                f"too many vehicles for the ring: {self.num_vehicles} vehicles need at least "
                f"{self.num_vehicles * per:g} m ({self.human_type.length:g} m long + "
                f"{self.human_type.min_gap:g} m gap each) but the ring is {lo:g} m; use a longer "
                f"ring or at most {int(lo // per)} vehicles"
            )
        if not 0 <= self.bunching <= lo - self.num_vehicles * per:
            raise ValueError(
                f"bunching must be within [0, {lo - self.num_vehicles * per:g}] m for this ring, "
                f"got {self.bunching}"
            )
        if not 0.001 <= self.sim_step <= 1.0:
            raise ValueError(f"sim_step must be within [0.001, 1] s, got {self.sim_step}")
        if not 0 <= self.measure_after < self.horizon:
            raise ValueError(
                f"measure_after must be within [0, horizon={self.horizon}), got {self.measure_after}"
            )
        if self.warmup_steps < 0 or self.horizon < 1:
            raise ValueError(
                f"warmup_steps must be >= 0 and horizon >= 1, got {self.warmup_steps}, {self.horizon}"
            )
        if self.accel_noise < 0 or self.max_accel <= 0 or self.max_decel <= 0:
            raise ValueError("accel_noise must be >= 0 and max_accel, max_decel > 0")
        if self.backend not in kernel.BACKENDS:
            raise ValueError(f"backend must be one of {kernel.BACKENDS}, got {self.backend!r}")
        if not 0 <= self.memory_s <= 600:
            raise ValueError(f"memory_s must be within [0, 600] s, got {self.memory_s}")

    def speed_weight(self, length: Any) -> Any:
        """The speed term's weight on a ring of ``length`` m (an array gives one per ring):
        ``speed_reward``, times ``v_mid / v_L`` with ``relative_speed``."""
        if not self.relative_speed:
            return self.speed_reward
        lo, hi = self.length_range
        mid = _uniform_flow(round((lo + hi) / 2, 6), self.num_vehicles, self.human_type)
        at = np.vectorize(
            lambda L: _uniform_flow(round(float(L), 6), self.num_vehicles, self.human_type)
        )
        w = self.speed_reward * mid / at(np.asarray(length, dtype=float))
        return float(w) if np.ndim(w) == 0 else w

    @property
    def memory_steps(self) -> int:
        """Observations averaged by the memory features (0: none)."""
        return int(round(self.memory_s / self.sim_step)) if self.memory_s > 0 else 0


def observation_space(cfg: RingConfig) -> gym.spaces.Box:
    """One AV's observation space: Flow's three features, plus two with ``memory_s``."""
    low, high = [0.0, -2.0, 0.0], [2.0, 2.0, MAX_RING / GAP_SCALE]
    if cfg.memory_steps:
        low, high = low + [0.0, 0.0], high + [2.0, MAX_RING / MEMORY_GAP_SCALE]
    return gym.spaces.Box(np.array(low, np.float32), np.array(high, np.float32), dtype=np.float32)


class Memory:
    """Running means of N AVs' speed and gap over their last ``window`` observations.

    Filled from the observation at reset on (the warm-up before it is not observed);
    until the window is full the mean is over the observations so far.
    """

    def __init__(self, n: int, window: int):
        self.window = window
        self.buf = np.zeros((n, 2, window))
        self.count = self.i = 0

    def reset(self) -> None:
        self.buf[:] = 0.0
        self.count = self.i = 0

    def push(self, v: np.ndarray, gap: np.ndarray) -> np.ndarray:
        """Record this step's speeds and gaps (m/s, m); returns ``(n, 2)`` normalised means."""
        self.buf[:, 0, self.i], self.buf[:, 1, self.i] = v, gap
        self.i = (self.i + 1) % self.window
        self.count = min(self.count + 1, self.window)
        mean = self.buf.sum(axis=2) / self.count
        return mean / np.array([SPEED_SCALE, MEMORY_GAP_SCALE])


def decode_observation(obs: Any) -> tuple[float, float, float]:
    """``(own speed, leader speed, gap to leader)`` in m/s and m from one AV observation."""
    o = np.asarray(obs, dtype=float).reshape(-1)
    v = o[0] * SPEED_SCALE
    return float(v), float(v + o[1] * SPEED_SCALE), float(o[2] * GAP_SCALE)


def vehicle_ids(num_vehicles: int, num_avs: int) -> list[str]:
    """Vehicle ids in ring order (``av_0``, ``human_00``...), AVs spaced evenly."""
    n, k = num_vehicles, num_avs
    av_slots = {round(j * n / k) for j in range(k)} if k else set()
    ids: list[str] = []
    a = h = 0
    for slot in range(n):
        if slot in av_slots:
            ids.append(f"av_{a}")
            a += 1
        else:
            ids.append(f"human_{h:02d}")
            h += 1
    return ids


def av_type(human: networks.VehicleType) -> networks.VehicleType:
    """The AVs' vType: the humans' parameters (used until the AV is commanded), red."""
    return networks.VehicleType(
        **{**{f.name: getattr(human, f.name) for f in fields(human)}, "id": "av", "color": "1,0,0"}
    )


def sumo_args(net: str, routes: str, cfg: RingConfig, seed: int) -> list[str]:
    """SUMO's command line for a ring simulation (one ring or several)."""
    return [
        "-n", net, "-r", routes, "--step-length", str(cfg.sim_step),
        "--seed", str(seed), "--no-step-log", "true", "--no-warnings", "true",
        "--time-to-teleport", "-1", "--collision.action", "warn",
        "--collision.check-junctions", "true", "--default.action-step-length", str(cfg.sim_step),
    ]  # fmt: skip


class RingSimulation:
    """The ring's simulation logic, shared by the single- and multi-AV envs.

    Holds the SUMO :class:`~rlsuite.apps.traffic.kernel.Simulation`, the vehicles'
    state along the ring and the episode's measurements.
    """

    def __init__(self, config: RingConfig, name: str = "ring"):
        self.cfg = config
        self.sim = kernel.Simulation(config.backend, gui=config.gui, name=name)
        self._dir: str | None = None
        self.length = 0.0  # set per episode by _build
        n = config.num_vehicles
        self.ids: list[str] = vehicle_ids(n, config.num_avs)
        self.av_ids = [v for v in self.ids if v.startswith("av_")]
        self.human_ids = [v for v in self.ids if v.startswith("human_")]
        self.rng = np.random.default_rng()
        self.step_count = 0
        self.controlled = 0
        self.x = np.zeros(n)
        self.v = np.zeros(n)
        self._reset_measurements()

    def _reset_measurements(self) -> None:
        self.samples = 0
        self.speed_sum = 0.0
        self.slow = 0
        self.std_sum = 0.0
        self.crossings = 0
        self.measured_steps = 0
        self.av_speed_sum = 0.0
        self.collisions = 0
        self.trace_t: list[float] = []
        self.trace_x: list[np.ndarray] = []
        self.trace_v: list[np.ndarray] = []

    def _build(self, rng: np.random.Generator) -> tuple[str, str]:
        """Write this episode's network and demand; returns (net file, route file)."""
        cfg = self.cfg
        lo, hi = cfg.length_range
        self.length = (
            float(rng.integers(int(math.ceil(lo)), int(math.floor(hi)) + 1)) if hi > lo else lo
        )
        net = networks.ring_network(self.length)
        routes = os.path.join(self._workdir(), "ring.rou.xml")
        t_total = (cfg.warmup_steps + cfg.horizon + 1) * cfg.sim_step
        laps = int(math.ceil(t_total * cfg.human_type.max_speed / self.length)) + 2
        networks.ring_routes(
            routes, self.length, self._vehicles(), self._types(), laps, cfg.bunching
        )
        return net, routes

    def _workdir(self) -> str:
        if self._dir is None:
            self._dir = tempfile.mkdtemp(prefix="rlsuite-traffic-")
        return self._dir

    def _types(self) -> list[networks.VehicleType]:
        return [self.cfg.human_type, av_type(self.cfg.human_type)]

    def _vehicles(self) -> list[tuple[str, str]]:
        return [(vid, "av" if vid.startswith("av_") else "human") for vid in self.ids]

    def _after_insert(self) -> None:
        """Hook run once the vehicles are on the network (before the warm-up)."""

    def start(self, rng: np.random.Generator) -> None:
        """Start a fresh simulation (new length if randomised) and run the warm-up."""
        cfg = self.cfg
        self.rng = rng
        net, routes = self._build(rng)
        seed = int(rng.integers(0, 2**31 - 1))
        self.sim.start(sumo_args(net, routes, cfg, seed))
        self.step_count = 0
        self.controlled = 0
        self._reset_measurements()
        self._advance(measure=False)  # vehicles are inserted in the first step
        self._after_insert()
        for vid in self.av_ids:  # commanded speeds stay collision-free even past decel
            self.sim.set_speed_mode(vid, AV_SPEED_MODE)
        for _ in range(cfg.warmup_steps):
            self._advance(measure=False)

    def _read(self) -> None:
        states = self.sim.vehicle_states(self.ids)
        if len(states) != len(self.ids):
            raise kernel.SimulationError("vehicles are missing from the ring simulation")
        for i, vid in enumerate(self.ids):
            speed, road, pos, odometer = states[vid]
            self.x[i] = self._position(vid, road, pos, odometer)
            self.v[i] = speed

    def _position(self, vid: str, road: str, pos: float, odometer: float) -> float:
        """Metres along the loop from its start."""
        try:
            e = networks.RING_EDGES.index(road)
        except ValueError as err:
            raise kernel.SimulationError(
                f"vehicle {vid} left the ring (on {road!r}); the network is broken"
            ) from err
        return e * self.length / 4 + pos

    def _advance(self, measure: bool) -> None:
        x_before = self.x.copy()
        self.sim.step()
        self._read()
        if self.step_count == 0:
            x_before = self.x.copy()
        if self.cfg.accel_noise > 0 and self.human_ids:
            dt = self.cfg.sim_step
            noise = math.sqrt(dt) * self.rng.normal(0.0, self.cfg.accel_noise, len(self.ids))
            new = {}
            for i, vid in enumerate(self.ids):
                if vid.startswith("human_") or not self.controlled:
                    self.v[i] = max(0.0, self.v[i] + noise[i] * dt)
                    new[vid] = self.v[i]
            self.sim.perturb_speeds(new)
        self.step_count += 1
        if measure:
            self.collisions += self.sim.collisions()
            self.samples += len(self.v)
            self.speed_sum += float(self.v.sum())
            self.slow += int((self.v < SLOW_SPEED).sum())
            self.std_sum += float(self.v.std())
            self.crossings += int((self.x < x_before - self.length / 2).sum())
            self.measured_steps += 1
            if self.av_ids:
                self.av_speed_sum += float(
                    np.mean([self.v[self.ids.index(a)] for a in self.av_ids])
                )
        if self.cfg.record:
            self.trace_t.append(self.step_count * self.cfg.sim_step)
            self.trace_x.append(self.x.copy())
            self.trace_v.append(self.v.copy())

    def control(self, accels: dict[str, float]) -> None:
        """Command AV accelerations (m/s^2, clipped to the action bounds) and advance one step."""
        dt, lo, hi = self.cfg.sim_step, -self.cfg.max_decel, self.cfg.max_accel
        slot = {vid: i for i, vid in enumerate(self.ids)}
        self.sim.set_speeds(
            list(accels),
            [max(0.0, self.v[slot[vid]] + min(max(float(a), lo), hi) * dt) for vid, a in accels.items()],
        )  # fmt: skip
        self.controlled += 1
        self._advance(measure=self.controlled > self.cfg.measure_after)

    def observe(self, vid: str) -> np.ndarray:
        i = self.ids.index(vid)
        n = len(self.ids)
        lead = (i + 1) % n  # ids are in ring order and nobody overtakes on one lane
        gap = (self.x[lead] - self.x[i]) % self.length - self.cfg.human_type.length
        return np.array(
            [
                self.v[i] / SPEED_SCALE,
                (self.v[lead] - self.v[i]) / SPEED_SCALE,
                max(gap, 0.0) / GAP_SCALE,
            ],
            dtype=np.float32,
        )

    def metrics(self) -> dict[str, float]:
        """Domain metrics of the controlled part of the episode."""
        n = max(self.samples, 1)
        steps = max(self.measured_steps, 1)
        seconds = steps * self.cfg.sim_step
        return {
            "mean_speed": self.speed_sum / n,
            "speed_std": self.std_sum / steps,
            "frac_below_0_5": self.slow / n,
            "throughput_veh_h": self.crossings / seconds * 3600.0,
            "av_mean_speed": self.av_speed_sum / steps if self.av_ids else math.nan,
            "ring_length": self.length,
            "collisions": float(self.collisions),
        }

    def trajectories(self) -> dict[str, np.ndarray]:
        """``t`` (steps,), ``x`` and ``v`` (steps, vehicles) recorded with ``record=True``."""
        if not self.cfg.record:
            raise RuntimeError("trajectories are kept only with record=True")
        return {
            "t": np.array(self.trace_t),
            "x": np.array(self.trace_x),
            "v": np.array(self.trace_v),
            "ids": np.array(self.ids),
            "length": np.array(self.length),
            "warmup_s": np.array((self.cfg.warmup_steps + 1) * self.cfg.sim_step),
        }

    def close(self) -> None:
        self.sim.close()
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None


class RingEnv(Measured, gym.Env):
    """The ring with ONE autonomous vehicle (Flow's partially observed wave attenuation).

    States:
        ``Box(3)``: the AV's speed / 15, (leader's speed - AV's speed) / 15, and the
        bumper-to-bumper gap to its leader / 270 (m/s and m, as in Flow). The rest
        of the ring is not observed. With ``memory_s > 0``, ``Box(5)``: also the AV's
        mean speed / 15 and mean gap / 30 over its last ``memory_s`` seconds.
    Actions:
        ``Box(1)``: the AV's acceleration in [-max_decel, max_accel] m/s^2 (default
        [-1, 1]); applied as a commanded speed ``v + a * dt`` that SUMO keeps
        collision-free.
    Rewards:
        ``speed_reward * mean speed of all vehicles - accel_penalty * |a|`` per step,
        with ``a`` the action as sent, before clipping (Flow's: 4/20 and 4;
        :func:`~rlsuite.apps.traffic.rewards.ring_reward`).
    Termination:
        Terminated on a collision (not expected: SUMO keeps the AV safe); truncated
        after ``horizon`` controlled steps (default 3000 = 300 s), which follow
        ``warmup_steps`` (750) human-driven steps at reset.

    Keyword arguments are the fields of :class:`RingConfig`. ``episode_metrics()``
    gives mean speed, speed spread across vehicles, the fraction of samples below
    0.5 m/s and the throughput past a point of the ring.

    Example::

        >>> env = RingEnv(ring_length=230, warmup_steps=10, horizon=5)  # doctest: +SKIP
        >>> obs, _ = env.reset(seed=0)  # doctest: +SKIP
    """

    metadata = {"render_modes": []}

    def __init__(self, **kwargs: Any):
        self.cfg = RingConfig.from_kwargs(**kwargs)
        if self.cfg.num_avs != 1:
            raise ValueError(
                f"RingEnv controls exactly one AV (num_avs={self.cfg.num_avs}); use "
                "rlsuite/RingMulti-v0 for several AVs or controller 'idm' for an all-human ring"
            )
        self.observation_space = observation_space(self.cfg)
        self.memory = Memory(1, self.cfg.memory_steps) if self.cfg.memory_steps else None
        self.action_space = gym.spaces.Box(
            low=-self.cfg.max_decel, high=self.cfg.max_accel, shape=(1,), dtype=np.float32
        )
        self.core = RingSimulation(self.cfg, name="rlsuite/Ring-v0")
        self.av = self.core.av_ids[0]
        self._t = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.core.start(self.np_random)
        self._t = 0
        if self.memory is not None:
            self.memory.reset()
        return self._obs(), {"ring_length": self.core.length}

    def _obs(self) -> np.ndarray:
        obs = self.core.observe(self.av)
        if self.memory is not None:
            v, _, gap = decode_observation(obs)
            mem = self.memory.push(np.array([v]), np.array([gap]))[0]
            obs = np.concatenate([obs, mem.astype(np.float32)])
        return np.clip(obs, self.observation_space.low, self.observation_space.high)

    def step(self, action):
        a = float(np.asarray(action, dtype=float).reshape(-1)[0])
        if not math.isfinite(a):
            raise ValueError(f"action must be a finite acceleration, got {action!r}")
        self.core.control({self.av: a})  # applies it clipped to the bounds
        self._t += 1
        reward = ring_reward(
            self.core.v, [a], self.cfg.speed_weight(self.core.length), self.cfg.accel_penalty
        )
        terminated = self.core.collisions > 0
        truncated = self._t >= self.cfg.horizon
        return self._obs(), float(reward), bool(terminated), bool(truncated), {}

    def trajectories(self) -> dict[str, np.ndarray]:
        return self.core.trajectories()


CONFIG = RingConfig
"""The config class behind the env's keyword arguments (the CLI validates with it)."""
