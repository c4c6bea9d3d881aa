"""Flow's figure-eight ("loopy intersection"): a one-lane loop that crosses itself.

Flow's benchmarks (figureeight0/1/2: 1, 7 and 14 of the 14 vehicles autonomous) drive
the humans with Flow's Python IDM, commanded every step under a SUMO speed mode that
ignores the crossing's right of way; :class:`FigureEightSimulation` does the same by
default (``human_model="flow"``), which puts the all-human speed at Flow's 4.18 m/s.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np

from rlsuite.apps.traffic import kernel, networks
from rlsuite.apps.traffic.envs.config import EnvConfig, RingSumoOptions
from rlsuite.apps.traffic.envs.measured import Measured
from rlsuite.apps.traffic.envs.ring import GAP_SCALE, SPEED_SCALE, RingSimulation, av_type
from rlsuite.apps.traffic.rewards import desired_velocity_reward

FULL_SPEED_SCALE = 30.0
"""Full-state speeds are divided by this (the road's speed limit), as in Flow."""
HUMAN_MODELS = ("flow", "sumo")
"""Values of :attr:`FigureEightConfig.human_model`."""
FLOW_HUMAN_SPEED_MODE = 1
"""SUMO speed mode of Flow's commanded humans: bit 0 only, obey the safe speed (Flow's
``"no_collide"``, bc44b21 ``flow/core/vehicles.py:18``; ``obey_safe_speed`` later)."""


@dataclass(frozen=True)
class FigureEightConfig(RingSumoOptions, EnvConfig):
    """The figure-eight env's keyword arguments (Flow's ``figure_eight`` benchmark defaults)."""

    KIND: ClassVar[str] = "figure_eight"
    POLICY_FIELDS: ClassVar[tuple[str, ...]] = (
        "num_avs",
        "num_vehicles",
        "max_accel",
        "max_decel",
        "av_min_gap",
    )

    radius: float = 30.0
    """Radius of the two rings (m); the loop is 4r + 3*pi*r long (403 m at 30 m)."""
    num_vehicles: int = 14
    """Vehicles on the loop, AVs included."""
    num_avs: int = 1
    """Autonomous vehicles (Flow's benchmarks: 1, 7, 14), placed in Flow's order: the
    last of the n start slots is an AV and the AVs are spread evenly back from it
    (13 humans then the AV; human, AV, human, AV...; all AVs), as Flow's figureeight0/1/2
    add their vehicles at bc44b21. 0 (all human) is for :class:`FigureEightSimulation`
    alone; the envs need at least one AV."""
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
    """Std of the humans' acceleration noise, added to their acceleration as
    sqrt(dt) * N(0, accel_noise) (Flow's ``noise=0.2``, scaled as in Flow since July 2020,
    ``base_controller.py:155``). Flow's CoRL 2018 code (bc44b21) added N(0, 0.2) unscaled;
    ``accel_noise=0.632`` (0.2 / sqrt(0.1)) reproduces that: all-human 4.07 instead of 4.20."""
    human_model: str = "flow"
    """How the humans drive. ``flow`` (Flow's benchmarks): every step each human is
    commanded ``v + a * dt``, with ``a`` Flow's Python IDM (``human_type``'s parameters:
    v0 30, T 1, a 1, b 1.5, delta 4, s0 2; bc44b21 ``controllers/car_following_models.py``)
    plus the noise, leader and gap taken along the loop, under SUMO speed mode 1 (obey
    the safe speed only, ``benchmarks/figureeight*.py`` ``speed_mode="no_collide"``). Such
    humans do not yield to cars still approaching the crossing, so they keep moving
    through it: all-human 4.20 m/s here (3 seeds), Flow's paper 4.18. One AV that first
    gathers them into one platoon behind it and then leads it round (the ``snake``
    controller) keeps 6.4 m/s, 7.0 once formed: the headroom Flow's learned AV used.
    ``sumo``: SUMO's own IDM with the same parameters and SUMO's full right-of-way
    rules (the env before it followed Flow): humans queue at the crossing, all-human
    4.78 m/s, and no AV behaviour found beats that by much. For comparison only."""
    human_sumo_min_gap: float = 0.0
    """SUMO vType ``minGap`` of ``flow`` humans (m); their IDM's s0 stays
    ``human_type.min_gap``. 0 as Flow bc44b21 sets for humans driven by a Python
    controller (``core/vehicles.py:155-159``), so that SUMO's safe speed does not tamper
    with the IDM; that gives the paper's all-human speed. Flow's later default 2.5
    lowers it to 3.50 m/s."""
    av_min_gap: float | None = None
    """SUMO vType ``minGap`` of the AVs (m); ``None``: the humans' IDM s0
    (``human_type.min_gap``, 2), as the env has had it. SUMO's safe speed (speed mode 1)
    caps the AV's commanded speed so that it keeps this gap to its leader. Flow's learning
    vehicle keeps ``SumoCarFollowingParams``' 2.5 (bc44b21 ``core/params.py:300``;
    ``core/vehicles.py`` zeroes it only for Python-driven humans, not for ``RLController``),
    so 2.5 is Flow's AV."""
    av_speed_mode: int = 1
    """SUMO speed mode of the AVs' commanded speeds: 1 (safe speed only) as Flow's
    figure-eight AVs (``speed_mode="no_collide"``); 25 (also right of way, no cap at
    ``decel``) is the ring's and what this env used before it followed Flow."""
    bunching: float = 0.0
    """Not used on the figure-eight (kept 0: vehicles start evenly spaced)."""

    @property
    def loop_length(self) -> float:
        return 4 * self.radius + 3 * math.pi * self.radius

    def validate(self) -> None:
        if not 5 <= self.radius <= 1000:
            raise ValueError(f"radius must be within [5, 1000] m, got {self.radius}")
        if not 0 <= self.num_avs <= self.num_vehicles:
            raise ValueError(
                f"num_avs must be within [0, num_vehicles={self.num_vehicles}], got {self.num_avs}"
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
        if self.human_model not in HUMAN_MODELS:
            raise ValueError(f"human_model must be one of {HUMAN_MODELS}, got {self.human_model!r}")
        if self.human_model == "sumo" and self.human_sumo_min_gap != 0.0:
            raise ValueError(
                "human_sumo_min_gap applies to human_model='flow' (SUMO-driven humans use "
                "human_type.min_gap); leave it at 0"
            )
        if self.human_sumo_min_gap < 0 or self.accel_noise < 0:
            raise ValueError("human_sumo_min_gap and accel_noise must be >= 0")
        if self.av_min_gap is not None and not 0 <= self.av_min_gap <= 10:
            raise ValueError(
                f"av_min_gap must be None (the humans' s0) or within [0, 10] m (Flow's AV: "
                f"2.5), got {self.av_min_gap}"
            )
        if not 0 <= self.av_speed_mode <= 127:
            raise ValueError(
                f"av_speed_mode must be SUMO speed-mode bits within [0, 127], got "
                f"{self.av_speed_mode}"
            )


def vehicle_ids(num_vehicles: int, num_avs: int) -> list[str]:
    """Vehicle ids in loop order (``human_00``..., ``av_0``...) in Flow's placement: AVs in
    slots ``n - 1 - round(j * n / k)``, so one AV is last (just behind ``human_00``)."""
    n, k = num_vehicles, num_avs
    av_slots = {n - 1 - round(j * n / k) for j in range(k)}
    avs, humans = (f"av_{i}" for i in range(k)), (f"human_{i:02d}" for i in range(n - k))
    return [next(avs) if slot in av_slots else next(humans) for slot in range(n)]


def idm_accelerations(
    v: np.ndarray, x: np.ndarray, length: float, human: networks.VehicleType
) -> np.ndarray:
    """Flow's IDM acceleration (m/s^2) of every vehicle of a one-lane loop at once.

    ``v`` and ``x`` are speeds and positions in loop order (each vehicle's leader is the
    next one), ``length`` the loop's. The headway is the bumper-to-bumper gap, kept at
    least 1 mm as Flow's ``IDMController.get_accel`` does.
    """
    v_lead = np.roll(v, -1)
    gap = (np.roll(x, -1) - x) % length - human.length
    gap = np.where(np.abs(gap) < 1e-3, 1e-3, gap)
    brake = 2.0 * math.sqrt(human.accel * human.decel)
    s_star = human.min_gap + np.maximum(0.0, v * human.tau + v * (v - v_lead) / brake)
    return human.accel * (1.0 - (v / human.max_speed) ** human.delta - (s_star / gap) ** 2)


class FigureEightSimulation(RingSimulation):
    """The ring's machinery on the figure-eight loop (positions from SUMO's odometer),
    with Flow's vehicle order, and with ``human_model="flow"`` the humans commanded by
    Flow's IDM every step (see :class:`FigureEightConfig`).

    ``config`` is the env's config; ``cfg``, what the ring machinery reads, is the same
    but for ``accel_noise`` 0 with Flow's humans (their noise is part of the command).
    """

    def __init__(self, config: FigureEightConfig, name: str = "figure_eight"):
        # The ring machinery adds noise to SUMO-driven speeds after each step; Flow's
        # humans get it inside their commanded acceleration, so its copy of the config
        # has none and this class keeps the full one.
        flow = config.human_model == "flow"
        super().__init__(replace(config, accel_noise=0.0) if flow else config, name)  # type: ignore[arg-type]
        self.config = config
        self.ids = vehicle_ids(config.num_vehicles, config.num_avs)
        self.av_ids = [v for v in self.ids if v.startswith("av_")]
        self.human_ids = [v for v in self.ids if v.startswith("human_")]
        self._human = np.array([v.startswith("human_") for v in self.ids])
        self._modes_due = False

    def _types(self) -> list[networks.VehicleType]:
        cfg = self.config
        human = cfg.human_type
        if cfg.human_model == "flow":
            human = replace(human, min_gap=cfg.human_sumo_min_gap)
        av = av_type(cfg.human_type)
        if cfg.av_min_gap is not None:
            av = replace(av, min_gap=cfg.av_min_gap)
        return [human, av]

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
        # RingSimulation.start sets the ring's AV speed mode after this hook: ours are set
        # just before the next simulation step instead
        self._modes_due = True

    def _advance(self, measure: bool) -> None:
        cfg = self.config
        if self._modes_due:
            if cfg.human_model == "flow":
                self.sim.set_speed_modes(self.human_ids, FLOW_HUMAN_SPEED_MODE)
            self.sim.set_speed_modes(self.av_ids, cfg.av_speed_mode)
            self._modes_due = False
        if cfg.human_model == "flow" and self.step_count > 0:
            # humans, and during the warm-up the AVs too, drive Flow's IDM
            driven = self._human if self.controlled else np.ones(len(self.ids), bool)
            acc = idm_accelerations(self.v, self.x, self.length, cfg.human_type)
            if cfg.accel_noise > 0:
                acc += math.sqrt(cfg.sim_step) * self.rng.normal(0.0, cfg.accel_noise, len(acc))
            v_cmd = np.maximum(0.0, self.v + acc * cfg.sim_step)
            self.sim.set_speeds([v for v, d in zip(self.ids, driven) if d], v_cmd[driven])
        super()._advance(measure)

    def metrics(self) -> dict[str, float]:
        """The ring's episode metrics, with ``loop_length`` for its ``ring_length``."""
        m = super().metrics()
        m.pop("ring_length", None)
        m["loop_length"] = self.length
        return m

    def _position(self, vid: str, road: str, pos: float, odometer: float) -> float:
        x0 = getattr(self, "_x0", None)
        if x0 is None:  # before _after_insert: only needed for the first read
            return 0.0
        return (x0[vid] + odometer) % self.length


class FigureEightEnv(Measured, gym.Env):
    """The figure-eight with ``num_avs`` AVs under one centralised policy (Flow's setup).

    The humans drive as Flow's (Python IDM commanded each step under SUMO speed mode 1,
    ``human_model="flow"``); keyword arguments are the fields of :class:`FigureEightConfig`.
    ``rlsuite/FigureEightMulti-v0`` gives each AV its own agent instead.

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
        if self.cfg.num_avs < 1:
            raise ValueError(
                "FigureEightEnv needs num_avs >= 1 (for an all-human run drive the AV with "
                "the 'idm' controller, or step FigureEightSimulation with no AVs)"
            )
        self.core = FigureEightSimulation(self.cfg, name="rlsuite/FigureEight-v0")
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

    def trajectories(self) -> dict[str, np.ndarray]:
        return self.core.trajectories()


CONFIG = FigureEightConfig
"""The config class behind the env's keyword arguments (the CLI validates with it)."""


def local_observations(obs: Any, num_avs: int) -> list[np.ndarray]:
    """The per-AV ring-style observations at the front of a figure-eight observation."""
    o = np.asarray(obs, dtype=np.float32).reshape(-1)
    return [o[3 * i : 3 * i + 3] for i in range(num_avs)]


__all__ = [
    "FigureEightEnv",
    "FigureEightConfig",
    "FigureEightSimulation",
    "idm_accelerations",
    "local_observations",
    "vehicle_ids",
    "GAP_SCALE",
    "SPEED_SCALE",
]
