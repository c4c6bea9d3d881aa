"""Flow's figure-eight ("loopy intersection"): a one-lane loop that crosses itself."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np

from rlsuite.apps.traffic import kernel, networks
from rlsuite.apps.traffic.envs.config import EnvConfig, vehicle_type
from rlsuite.apps.traffic.envs.ring import GAP_SCALE, SPEED_SCALE, RingSimulation
from rlsuite.apps.traffic.rewards import desired_velocity_reward

FULL_SPEED_SCALE = 30.0
"""Full-state speeds are divided by this (the road's speed limit), as in Flow."""


@dataclass(frozen=True)
class FigureEightConfig(EnvConfig):
    """The figure-eight env's keyword arguments (Flow's ``figure_eight`` benchmark defaults)."""

    KIND: ClassVar[str] = "figure_eight"

    radius: float = 30.0
    """Radius of the two rings (m); the loop is 4r + 3*pi*r long (403 m at 30 m)."""
    num_vehicles: int = 14
    """Vehicles on the loop, AVs included."""
    num_avs: int = 1
    """Autonomous vehicles (Flow's variants: 1, 7, 14), spaced evenly."""
    sim_step: float = 0.1
    """Simulation step (s)."""
    warmup_steps: int = 0
    """Human-driven steps at reset."""
    horizon: int = 1500
    """Controlled steps per episode."""
    measure_after: int = 0
    """Controlled steps before the episode metrics start counting."""
    target_velocity: float = 20.0
    """Desired speed of the reward (m/s)."""
    max_accel: float = 3.0
    """Largest AV acceleration (m/s^2)."""
    max_decel: float = 3.0
    """Largest AV deceleration (m/s^2, positive)."""
    accel_noise: float = 0.2
    """Std of the humans' acceleration noise, applied as sqrt(dt) * N(0, accel_noise)."""
    bunching: float = 0.0
    """Not used on the figure-eight (kept 0: vehicles start evenly spaced)."""
    backend: str = "auto"
    """``auto``, ``libsumo`` or ``traci``."""
    gui: bool = False
    """Show sumo-gui (TraCI; needs a display)."""
    record: bool = False
    """Keep positions and speeds per step for the space-time diagram."""
    human_type: networks.VehicleType = field(
        default_factory=lambda: networks.VehicleType("human", color="1,1,1")
    )
    """Human drivers' IDM parameters (Flow's)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "human_type", vehicle_type(self.human_type))
        self.validate()

    @property
    def loop_length(self) -> float:
        return 4 * self.radius + 3 * math.pi * self.radius

    def validate(self) -> None:
        if not 5 <= self.radius <= 1000:
            raise ValueError(f"radius must be within [5, 1000] m, got {self.radius}")
        if not 1 <= self.num_avs <= self.num_vehicles:
            raise ValueError(
                f"num_avs must be within [1, num_vehicles={self.num_vehicles}], got {self.num_avs}"
            )
        per = self.human_type.length + self.human_type.min_gap + 1.0
        if self.num_vehicles * per > self.loop_length:
            raise ValueError(
                f"too many vehicles for the figure-eight: {self.num_vehicles} need "
                f"{self.num_vehicles * per:g} m but the loop is {self.loop_length:.0f} m; use a "
                f"larger radius or at most {int(self.loop_length // per)} vehicles"
            )
        if self.horizon < 1 or self.warmup_steps < 0 or not 0 <= self.measure_after < self.horizon:
            raise ValueError(
                "need horizon >= 1, warmup_steps >= 0 and 0 <= measure_after < horizon"
            )
        if self.max_accel <= 0 or self.max_decel <= 0 or self.target_velocity <= 0:
            raise ValueError("max_accel, max_decel and target_velocity must be > 0")
        if self.backend not in kernel.BACKENDS:
            raise ValueError(f"backend must be one of {kernel.BACKENDS}, got {self.backend!r}")


class FigureEightSimulation(RingSimulation):
    """The ring's machinery on the figure-eight loop (positions from SUMO's odometer)."""

    def _build(self, rng: np.random.Generator) -> tuple[str, str]:
        cfg = self.cfg
        net = networks.figure_eight_network(cfg.radius)
        r = cfg.radius
        lengths = [r, r, 1.5 * math.pi * r, r, r, 1.5 * math.pi * r]
        self.length = cfg.loop_length  # refined with the junctions' internal lanes after start
        t_total = (cfg.warmup_steps + cfg.horizon + 1) * cfg.sim_step
        laps = int(math.ceil(t_total * cfg.human_type.max_speed / self.length)) + 2
        routes = os.path.join(self._workdir(), "figure_eight.rou.xml")
        networks.loop_routes(
            routes, networks.FIGURE_EIGHT_EDGES, lengths, self._vehicles(), self._types(), laps
        )
        return net, routes

    def _after_insert(self) -> None:
        edges = networks.FIGURE_EIGHT_EDGES
        self._offsets, self.length = self.sim.loop_offsets(edges)
        states = self.sim.vehicle_states(self.ids)
        self._x0 = {}
        for vid in self.ids:
            _speed, road, pos, odo = states[vid]
            self._x0[vid] = self._offsets[edges.index(road)] + pos - odo
        self._read()

    def _position(self, vid: str, road: str, pos: float, odometer: float) -> float:
        x0 = getattr(self, "_x0", None)
        if x0 is None:  # before _after_insert: only needed for the first read
            return 0.0
        return (x0[vid] + odometer) % self.length


class FigureEightEnv(gym.Env):
    """The figure-eight with ``num_avs`` AVs under one centralised policy (Flow's setup).

    States:
        ``Box(3k + 2n)``: for each of the k AVs its speed / 15, (leader speed - its
        speed) / 15 and gap to its leader / 270 (as on the ring), then every one of the
        n vehicles' speed / 30 and position along the loop / loop length (Flow's full state).
    Actions:
        ``Box(k)``: each AV's acceleration in [-max_decel, max_accel] (default +-3 m/s^2).
    Rewards:
        Flow's desired-velocity reward: ``max(0, |v_des| - |v - v_des|) / |v_des|`` over
        the vector of all speeds, with ``v_des = target_velocity`` (20 m/s); 1 when
        everyone drives at v_des (:func:`~rlsuite.apps.traffic.rewards.desired_velocity_reward`).
    Termination:
        terminated on a collision; truncated after ``horizon`` steps (1500 = 150 s).
    """

    metadata = {"render_modes": []}

    def __init__(self, **kwargs: Any):
        self.cfg = FigureEightConfig.from_kwargs(**kwargs)
        self.core = FigureEightSimulation(self.cfg, name="rlsuite/FigureEight-v0")  # type: ignore[arg-type]
        n, k = self.cfg.num_vehicles, self.cfg.num_avs
        low = np.concatenate([np.tile([0.0, -2.0, 0.0], k), np.zeros(2 * n)]).astype(np.float32)
        high = np.concatenate([np.tile([2.0, 2.0, 8.0], k), np.full(n, 2.0), np.ones(n)]).astype(
            np.float32
        )
        self.observation_space = gym.spaces.Box(low=low, high=high, dtype=np.float32)
        self.action_space = gym.spaces.Box(
            -self.cfg.max_decel, self.cfg.max_accel, shape=(k,), dtype=np.float32
        )
        self._t = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.core.start(self.np_random)
        self._t = 0
        return self._obs(), {"loop_length": self.core.length}

    def _obs(self) -> np.ndarray:
        local = [self.core.observe(a) for a in self.core.av_ids]
        o = np.concatenate(
            [*local, self.core.v / FULL_SPEED_SCALE, self.core.x / self.core.length]
        ).astype(np.float32)
        return np.clip(o, self.observation_space.low, self.observation_space.high)

    def step(self, action):
        a = np.asarray(action, dtype=float).reshape(-1)
        if a.shape[0] != self.cfg.num_avs or not np.all(np.isfinite(a)):
            raise ValueError(
                f"action must be {self.cfg.num_avs} finite accelerations, got {action!r}"
            )
        self.core.control(dict(zip(self.core.av_ids, a)))
        self._t += 1
        reward = desired_velocity_reward(self.core.v, self.cfg.target_velocity)
        terminated = self.core.collisions > 0
        truncated = self._t >= self.cfg.horizon
        return self._obs(), float(reward), bool(terminated), bool(truncated), {}

    def episode_metrics(self) -> dict[str, float]:
        m = self.core.metrics()
        m.pop("ring_length", None)
        m["loop_length"] = self.core.length
        return m

    def trajectories(self) -> dict[str, np.ndarray]:
        return self.core.trajectories()

    def close(self) -> None:
        self.core.close()


CONFIG = FigureEightConfig
"""The config class behind the env's keyword arguments (the CLI validates with it)."""


def local_observations(obs: Any, num_avs: int) -> list[np.ndarray]:
    """The per-AV ring-style observations at the front of a figure-eight observation."""
    o = np.asarray(obs, dtype=np.float32).reshape(-1)
    return [o[3 * i : 3 * i + 3] for i in range(num_avs)]


__all__ = ["FigureEightEnv", "FigureEightConfig", "local_observations", "GAP_SCALE", "SPEED_SCALE"]
