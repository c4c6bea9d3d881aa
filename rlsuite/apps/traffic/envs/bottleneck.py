"""Flow's bottleneck: four lanes narrow to two and then to one; AVs set their speed limits.

Flow's ``bottleneck0`` benchmark (Vinitsky et al., CoRL 2018; Flow commit bc44b21): a
985 m road whose four lanes merge into two at a zipper junction and those into one at a
second; 1900 veh/h enter (10% of them autonomous), nobody changes lanes, and the merges
jam: the outflow falls well below what one lane carries (the capacity drop). A central
controller sets the AVs' speed limits per lane and road segment to keep the merges
flowing. Flow's all-human outflow over the last 500 s is 1023 veh/h; ES learned 1360.

On today's SUMO Flow's drivers keep the road flowing, so by default the drivers' desired
speeds spread wider (``capacity_drop``, the breaking road), which breaks down as Flow's
did; ``capacity_drop=False`` is the free-flowing road with Flow's own drivers.

:class:`BottleneckSimulation` is the road (the network, the demand, the AVs' speed
limits, an optional ALINEA ramp meter, the measurements); :class:`BottleneckEnv`
(``rlsuite/Bottleneck-v0``) is Flow's ``DesiredVelocityEnv`` on it.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections import deque
from dataclasses import dataclass, field
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np

from rlsuite.apps.traffic import kernel, networks, sumo_versions
from rlsuite.apps.traffic.controllers import AlineaMeter
from rlsuite.apps.traffic.envs.config import EnvConfig, vehicle_type
from rlsuite.apps.traffic.envs.measured import Measured
from rlsuite.apps.traffic.envs.road import RoadSimulation

EDGES = networks.BOTTLENECK_EDGES
"""The road's edges in driving order (Flow's names)."""
EDGE_LENGTHS = networks.BOTTLENECK_EDGE_LENGTHS
"""Their lengths (m)."""
EDGE_LANES = networks.BOTTLENECK_EDGE_LANES
"""Their lanes at ``lane_scale`` 1: 4 -> 2 at node 4, 2 -> 1 at node 5."""
SPEED_LIMIT = networks.BOTTLENECK_SPEED_LIMIT
"""The road's speed limit and the AVs' highest speed limit (m/s)."""
CONTROLLED_SEGMENTS = {"2": 2, "3": 2, "4": 2}
"""Edges whose AVs take the action, and the segments each is cut into (Flow's bottleneck0):
one speed-limit shift per lane and segment."""
OBSERVED_SEGMENTS = {"1": 1, "2": 3, "3": 3, "4": 3, "5": 1}
"""Segments of each edge in the observation (Flow's bottleneck0)."""
METER_NODE = "3"
"""The ramp meter's traffic light: the junction 140 m before the four lanes merge."""
MEASURED_EDGE = "4"
"""The ramp meter measures the occupancy of this edge (the two-lane section after the merge)."""
AV_FLOW = "av"
"""SUMO flow id of the AVs (vehicle ids ``av.0``, ``av.1``...)."""
COUNT_SCALE, SPEED_SCALE, OUTFLOW_SCALE = 20.0, 50.0, 2000.0
"""Flow's normalisers: vehicles per lane-segment, speeds (m/s), outflow (veh/h per lane of
``lane_scale``)."""
INFLOW_PER_LANE_SCALE = (100.0, 4000.0)
"""Valid inflow (veh/h) per unit of ``lane_scale``; one lane carries about 2000 at most."""
LANE_SCALE_RANGE = (1, 4)
"""Valid ``lane_scale`` (Flow: 1 for bottleneck0/1, 2 for bottleneck2)."""
AV_SHARE_RANGE = (0.0, 1.0)
"""Valid AV share of the inflow."""
METERS = ("none", "alinea")
"""Values of :attr:`BottleneckConfig.meter`."""
SPEED_MODE = 9
"""SUMO speed mode of every vehicle (Flow's: safe speed, right of way)."""
LANE_CHANGE_MODE = 0
"""SUMO lane-change mode of every vehicle (Flow's bottleneck0: nobody changes lanes)."""


CAPACITY_DROP_SPEED_DEV = 0.2
"""The drivers' spread of desired speeds (SUMO ``speedDev``) with ``capacity_drop``."""


@dataclass(frozen=True)
class BottleneckConfig(EnvConfig):
    """Everything that defines a bottleneck episode (the env's keyword arguments; Flow's
    ``bottleneck0`` on the breaking road by default)."""

    KIND: ClassVar[str] = "bottleneck"
    POLICY_FIELDS: ClassVar[tuple[str, ...]] = (
        "lane_scale", "max_shift_up", "max_shift_down", "capacity_drop",
    )  # fmt: skip

    inflow: float = 1900.0
    """Vehicles per hour entering the four lanes, AVs included (Flow: 1900 x lane_scale)."""
    av_share: float = 0.1
    """Share of the inflow that is autonomous (Flow: 0.1)."""
    lane_scale: int = 1
    """Lanes are ``lane_scale`` x (4, 4, 4, 2, 1) (Flow's ``scaling``; 2 is bottleneck2)."""
    sim_step: float = 0.5
    """Simulation step (s); one env step is one simulation step (Flow: 0.5)."""
    warmup_steps: int = 40
    """Steps at reset with no action applied (Flow: 40)."""
    horizon: int = 1000
    """Env steps per episode after the warm-up (Flow: 1000, so 500 s)."""
    outflow_window: float = 500.0
    """The episode's outflow metric counts vehicles leaving in its last this many seconds
    (Flow: 500, the whole controlled part)."""
    reward_window: float = 5.0
    """The reward is the outflow over this many past seconds (Flow: 10 steps, 5 s)."""
    observed_outflow_window: float = 10.0
    """The observation's outflow is over this many past seconds (Flow: 20 steps, 10 s)."""
    max_shift_up: float = 1.0
    """Largest raise of an AV's speed limit per step (m/s; Flow: 1)."""
    max_shift_down: float = 1.5
    """Largest cut of an AV's speed limit per step (m/s, positive; Flow: 1.5)."""
    meter: str = "none"
    """``none``, or ``alinea``: a feedback ramp meter (one traffic light per lane at node 3)
    that holds the occupancy of the two-lane section near ``meter_occupancy``."""
    meter_occupancy: float = 12.0
    """ALINEA's target occupancy (%) of the two-lane section."""
    meter_gain: float = 70.0
    """ALINEA's gain (veh/h per % of occupancy per update)."""
    meter_period: float = 15.0
    """Seconds between ALINEA's rate updates (it averages the occupancy over them)."""
    meter_rate_range: tuple[float, float] = (600.0, 3000.0)
    """Metered rates ALINEA may choose (veh/h over all lanes); at the top the lights stay green."""
    meter_green: float = 2.0
    """Green time (s) of one metering cycle per lane (one vehicle per green)."""
    teleport_time: float = -1.0
    """SUMO's ``--time-to-teleport`` (s); -1 (Flow's): a stuck vehicle waits forever."""
    max_teleports: int = 10
    """Teleports in an episode before it is ended as a teleport storm (reason in info)."""
    backend: str = "auto"
    """``auto`` (libsumo if free in this process, else TraCI), ``libsumo`` or ``traci``."""
    sumo_version: str = ""
    """``""`` or ``1.28``: the project's SUMO; another release (``1.8.0``, ``1.9.2``...)
    installed under ``~/.cache/rlsuite/sumo-<version>`` runs over TraCI and compiles its
    own network (an older SUMO cannot read a newer netconvert's network)."""
    gui: bool = False
    """Show sumo-gui (TraCI; needs a display)."""
    human_type: networks.VehicleType = field(default_factory=networks.flow_sumo_human)
    """Drivers' (SUMO IDM) parameters; the AVs share them and differ only in speed limit."""
    capacity_drop: bool = True
    """The breaking road (the default): the all-human road breaks down as Flow's did, the
    drivers' desired speeds spread with SUMO ``speedDev`` 0.2 instead of Flow's 0.1 (nothing
    else changes). ``False`` is the free-flowing road with Flow's own drivers.

    Why: Flow's road (SUMO 0.32-era build 1d4338ab80) broke down to 1023 +- 263 veh/h at
    1900 veh/h inflow. With Flow's own settings every SUMO release from 1.8.0 to 1.28 stays
    in free flow (about 1760 veh/h) on most seeds: the zipper merges are bistable and break
    down only when a cluster of vehicles reaches them, which speedDev 0.1 makes rare. A wider
    spread of desired speeds makes fast drivers catch up slow ones, the platoons reach the
    merges, and the road breaks down on most seeds at high inflow while it still flows at
    low inflow: on SUMO 1.28 the outflow rises to ~1100 veh/h at 1400-1600 veh/h of inflow
    and falls to ~990 at 1900 (9 of 10 seeds within 15% of Flow's 1023), the shape of Flow's
    capacity diagram. Flow's other settings (sigma 0.5, emergencyDecel, the SUMO version)
    were tried and do not do it (``rlsuite bench run traffic_bottleneck_capacity``). A
    trained policy is evaluated on the road it was trained on unless told otherwise
    (``POLICY_FIELDS``). Tuned at ``lane_scale`` 1; a ``human_type`` whose ``speed_dev`` is
    not Flow's 0.1 needs ``capacity_drop=False``."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "human_type", vehicle_type(self.human_type))
        object.__setattr__(self, "meter_rate_range", tuple(self.meter_rate_range))
        self.validate()

    def validate(self) -> None:
        lo, hi = LANE_SCALE_RANGE
        if not isinstance(self.lane_scale, int) or not lo <= self.lane_scale <= hi:
            raise ValueError(
                f"lane_scale must be an integer within [{lo}, {hi}] (lanes are lane_scale x "
                f"4 -> 2 -> 1), got {self.lane_scale!r}"
            )
        lo, hi = (x * self.lane_scale for x in INFLOW_PER_LANE_SCALE)
        if not lo <= self.inflow <= hi:
            raise ValueError(
                f"inflow must be within [{lo:g}, {hi:g}] veh/h at lane_scale "
                f"{self.lane_scale}, got {self.inflow}"
            )
        lo, hi = AV_SHARE_RANGE
        if not lo <= self.av_share <= hi:
            raise ValueError(
                f"av_share must be within [{lo:g}, {hi:g}] (a fraction of the inflow, e.g. "
                f"0.1), got {self.av_share}"
            )
        if not 0.05 <= self.sim_step <= 1.0:
            raise ValueError(f"sim_step must be within [0.05, 1] s, got {self.sim_step}")
        if self.horizon < 1 or self.warmup_steps < 0:
            raise ValueError(
                f"need horizon >= 1 and warmup_steps >= 0, got {self.horizon}, {self.warmup_steps}"
            )
        for name in ("outflow_window", "reward_window", "observed_outflow_window"):
            if getattr(self, name) < self.sim_step:
                raise ValueError(f"{name} must be >= sim_step ({self.sim_step} s)")
        if self.max_shift_up <= 0 or self.max_shift_down <= 0:
            raise ValueError("max_shift_up and max_shift_down must be > 0 m/s")
        if self.meter not in METERS:
            raise ValueError(f"meter must be one of {METERS}, got {self.meter!r}")
        r0, r1 = self.meter_rate_range
        if not 0 < r0 < r1 or self.meter_period <= 0 or self.meter_green <= 0:
            raise ValueError(
                "need 0 < meter_rate_range[0] < meter_rate_range[1], meter_period > 0 and "
                "meter_green > 0"
            )
        if not 0 < self.meter_occupancy < 100 or self.meter_gain < 0:
            raise ValueError("need meter_occupancy within (0, 100) % and meter_gain >= 0")
        self.check_sumo_options()
        if self.capacity_drop and self.human_type.speed_dev != networks.flow_sumo_human().speed_dev:
            raise ValueError(
                f"capacity_drop sets the drivers' speed_dev to {CAPACITY_DROP_SPEED_DEV}, but "
                f"human_type sets speed_dev={self.human_type.speed_dev:g}: set capacity_drop=false "
                "(the free-flowing road) to give the drivers your own spread"
            )
        if sumo_versions.sumo_home_for(self.sumo_version) and self.backend == "libsumo":
            raise ValueError(
                f"sumo_version={self.sumo_version} runs over TraCI (libsumo is the project's "
                "SUMO only): use backend='traci' or 'auto'"
            )

    def drivers(self) -> networks.VehicleType:
        """The drivers' vType: ``human_type``, with ``capacity_drop``'s speed spread."""
        if self.capacity_drop:
            return dataclasses.replace(self.human_type, speed_dev=CAPACITY_DROP_SPEED_DEV)
        return self.human_type

    def lanes(self, edge: str) -> int:
        """Lanes of ``edge``."""
        return EDGE_LANES[EDGES.index(edge)] * self.lane_scale

    @property
    def episode_seconds(self) -> float:
        return (self.warmup_steps + self.horizon + 1) * self.sim_step

    @property
    def num_actions(self) -> int:
        return sum(n * self.lanes(e) for e, n in CONTROLLED_SEGMENTS.items())

    @property
    def num_observations(self) -> int:
        return 4 * sum(n * self.lanes(e) for e, n in OBSERVED_SEGMENTS.items()) + 1


class BottleneckSimulation(RoadSimulation):
    """The bottleneck's SUMO simulation: the vehicles, the AVs' speed limits, the meter and
    the episode's measurements. :meth:`advance` runs one step with the given per lane-segment
    shifts of the AVs' speed limits (None: no action, the AVs keep their limits)."""

    workdir_prefix = "rlsuite-bottleneck-"

    def __init__(self, config: BottleneckConfig, name: str = "bottleneck"):
        self.cfg = config
        self._home = sumo_versions.sumo_home_for(config.sumo_version)
        self.sim = kernel.Simulation(config.backend, gui=config.gui, name=name, home=self._home)
        self.t = 0
        self.state: dict[str, tuple[float, str, float, int]] = {}
        self.av_limit: dict[str, float] = {}
        self.meter: AlineaMeter | None = None
        self._offsets: dict[str, int] = {}
        k = 0
        for e, n in CONTROLLED_SEGMENTS.items():
            self._offsets[e] = k
            k += n * config.lanes(e)
        self._reset_measurements()

    def _reset_measurements(self) -> None:
        self.arrivals: list[int] = []
        self.departures = 0
        self.loaded = 0
        self.collisions = 0
        self.teleports = 0
        self.speed_sum = 0.0
        self.samples = 0
        self.waiting_sum = 0
        self.series_t: list[float] = []
        self.series_speed: list[float] = []
        self.series_rate: list[float] = []
        self.recent: deque[int] = deque(
            maxlen=max(
                self._steps(self.cfg.reward_window), self._steps(self.cfg.observed_outflow_window)
            )
        )

    def _steps(self, seconds: float) -> int:
        return max(1, int(round(seconds / self.cfg.sim_step)))

    def start(self, rng: np.random.Generator) -> None:
        """Start a fresh simulation and run the warm-up (no actions)."""
        cfg = self.cfg
        net = networks.bottleneck_network(
            cfg.lane_scale, metered=cfg.meter == "alinea", sumo=(cfg.sumo_version, self._home)
        )
        routes = os.path.join(self._workdir(), "bottleneck.rou.xml")
        networks.bottleneck_routes(
            routes, cfg.drivers(), cfg.inflow, cfg.av_share, cfg.episode_seconds, AV_FLOW
        )
        seed = int(rng.integers(0, 2**31 - 1))
        self.sim.start(
            [
                "-n",
                net,
                "-r",
                routes,
                "--step-length",
                str(cfg.sim_step),
                "--seed",
                str(seed),
                "--no-step-log",
                "true",
                "--no-warnings",
                "true",
                "--time-to-teleport",
                str(cfg.teleport_time),
                "--collision.action",
                "remove",
                "--collision.check-junctions",
                "true",
            ]
        )
        self.t = 0
        self.state, self.av_limit = {}, {}
        self._reset_measurements()
        self.meter = None
        if cfg.meter == "alinea":
            self.meter = AlineaMeter(
                cfg.lanes(METER_NODE),
                cfg.meter_occupancy,
                cfg.meter_gain,
                cfg.meter_period,
                cfg.meter_rate_range,
                cfg.meter_green,
            )
        self._measured_lanes = [f"{MEASURED_EDGE}_{i}" for i in range(cfg.lanes(MEASURED_EDGE))]
        for _ in range(cfg.warmup_steps):
            self.advance(None, measure=False)

    def _apply(self, shifts: np.ndarray) -> None:
        """Flow's ``DesiredVelocityEnv._apply_rl_actions``: an AV on a controlled edge shifts
        its speed limit by its lane-segment's value (kept in [0.01, 23] m/s); elsewhere its
        limit is 23 m/s."""
        cfg = self.cfg
        for vid, (_v, road, pos, lane) in self.state.items():
            if not vid.startswith(AV_FLOW + "."):
                continue
            cur = self.av_limit.get(vid, cfg.human_type.max_speed)
            n_seg = CONTROLLED_SEGMENTS.get(road)
            if n_seg is None:
                new = SPEED_LIMIT
            else:
                length = EDGE_LENGTHS[EDGES.index(road)]
                seg = min(int(pos / length * n_seg), n_seg - 1)
                a = shifts[self._offsets[road] + lane + seg * cfg.lanes(road)]
                new = float(np.clip(cur + a, 0.01, SPEED_LIMIT))
            if new != cur:
                self.sim.call("vehicle", "setMaxSpeed", vid, new)
                self.av_limit[vid] = new

    def advance(self, shifts: np.ndarray | None, measure: bool = True) -> None:
        """One simulation step; ``shifts`` (Flow's action) per controlled lane-segment."""
        cfg = self.cfg
        if shifts is not None:
            self._apply(shifts)
        if self.meter is not None:
            now = self.sim.time()
            self.sim.call(
                "trafficlight", "setRedYellowGreenState", METER_NODE, self.meter.state(now)
            )
        self.sim.step()
        departed = self.sim.call("simulation", "getDepartedIDList")
        for vid in departed:
            self.sim.call("vehicle", "setLaneChangeMode", vid, LANE_CHANGE_MODE)
        self.sim.set_speed_modes(departed, SPEED_MODE)
        self.departures += len(departed)
        # loaded minus departed is the queue waiting to enter (SUMO 1.8 lacks getPendingVehicles)
        self.loaded += int(self.sim.call("simulation", "getLoadedNumber"))
        ids = self.sim.vehicle_ids()
        self.state = self.sim.vehicle_lane_states(ids)
        self.av_limit = {v: s for v, s in self.av_limit.items() if v in self.state}
        arrived = int(self.sim.call("simulation", "getArrivedNumber"))
        self.recent.append(arrived)
        self.collisions += self.sim.collisions()
        self.teleports += self.sim.teleports_started()
        if self.meter is not None:
            occ = np.mean(
                [self.sim.call("lane", "getLastStepOccupancy", ln) for ln in self._measured_lanes]
            )
            self.meter.update(100.0 * float(occ), cfg.sim_step)
        if measure:
            self.t += 1
            self.arrivals.append(arrived)
            speeds = [s[0] for s in self.state.values()]
            self.speed_sum += float(np.sum(speeds))
            self.samples += len(speeds)
            self.waiting_sum += self.loaded - self.departures
            self.series_t.append((cfg.warmup_steps + self.t) * cfg.sim_step)
            self.series_speed.append(float(np.mean(speeds)) if speeds else math.nan)
            self.series_rate.append(self.meter.rate if self.meter is not None else math.nan)

    def outflow(self, seconds: float) -> float:
        """Vehicles per hour that left the road over the last ``seconds`` (as Flow's
        ``get_outflow_rate``: the count over the window divided by the window)."""
        n = self._steps(seconds)
        return sum(list(self.recent)[-n:]) / (n * self.cfg.sim_step) * 3600.0

    def observation(self) -> np.ndarray:
        """Flow's ``DesiredVelocityEnv`` state: per edge, observed segment and lane, humans/20,
        AVs/20, their mean speeds/50, and the outflow over the last 10 s / (2000 x lane_scale)."""
        cfg = self.cfg
        blocks = []
        for e, n in OBSERVED_SEGMENTS.items():
            blocks.append(np.zeros((4, n, cfg.lanes(e))))
        index = {e: i for i, e in enumerate(OBSERVED_SEGMENTS)}
        for vid, (v, road, pos, lane) in self.state.items():
            i = index.get(road)
            if i is None:
                continue  # inside a junction
            n = OBSERVED_SEGMENTS[road]
            seg = min(int(pos / EDGE_LENGTHS[EDGES.index(road)] * n), n - 1)
            av = 1 if vid.startswith(AV_FLOW + ".") else 0
            blocks[i][av, seg, lane] += 1
            blocks[i][2 + av, seg, lane] += v
        counts = [np.concatenate([b[k].ravel() for b in blocks]) for k in range(4)]
        speeds = [
            np.divide(counts[2 + k], counts[k], out=np.zeros_like(counts[k]), where=counts[k] > 0)
            for k in range(2)
        ]
        out = np.concatenate(
            [
                counts[0] / COUNT_SCALE,
                counts[1] / COUNT_SCALE,
                speeds[0] / SPEED_SCALE,
                speeds[1] / SPEED_SCALE,
                [self.outflow(cfg.observed_outflow_window) / (OUTFLOW_SCALE * cfg.lane_scale)],
            ]
        )
        return np.clip(out, 0.0, 1.0).astype(np.float32)

    def reward(self) -> float:
        """Flow's reward: the outflow over the last ``reward_window`` seconds / (2000 x lane_scale)."""
        return self.outflow(self.cfg.reward_window) / (OUTFLOW_SCALE * self.cfg.lane_scale)

    def metrics(self) -> dict[str, float]:
        """The episode's measurements: ``outflow_veh_h`` over its last ``outflow_window``
        seconds (Flow's metric), the inflow actually inserted, the mean speed of the vehicles
        on the road, the vehicles waiting to enter, collisions and teleports."""
        cfg = self.cfg
        steps = max(self.t, 1)
        n = min(self._steps(cfg.outflow_window), len(self.arrivals)) or 1
        return {
            "outflow_veh_h": sum(self.arrivals[-n:]) / (n * cfg.sim_step) * 3600.0,
            "inflow_veh_h": self.departures / (cfg.warmup_steps + steps) / cfg.sim_step * 3600.0,
            "mean_speed": self.speed_sum / max(self.samples, 1),
            "vehicles": self.samples / steps,
            **self._trouble(steps),
        }

    def series(self) -> dict[str, np.ndarray]:
        """Per env step: time (s), vehicles that left, mean speed (m/s), the meter's rate."""
        return {
            "t": np.array(self.series_t),
            "outflow": np.array(self.arrivals),
            "mean_speed": np.array(self.series_speed),
            "meter_rate": np.array(self.series_rate),
        }


class BottleneckEnv(Measured, gym.Env):
    """Flow's bottleneck0 under one central controller (Flow's ``DesiredVelocityEnv``).

    States:
        ``Box(141)`` in [0, 1] at ``lane_scale`` 1: for each of 35 lane-segments (edges 1-5
        cut into 1, 3, 3, 3, 1 segments, times their lanes) the humans / 20, then the AVs /
        20, then the humans' mean speed / 50, then the AVs' mean speed / 50, and last the
        outflow over the past 10 s / 2000 veh/h. Vehicles inside a junction are not counted.
    Actions:
        ``Box(20)`` in [-1.5, 1]: one shift (m/s per step) of the AVs' speed limit for each
        lane of each half of edges 2, 3 and 4 (8 + 8 + 4); every AV in that lane-segment has
        its limit moved by it, within [0.01, 23] m/s; on edges 1 and 5 an AV's limit is 23.
        The humans and the AVs otherwise drive SUMO's IDM; nobody changes lanes.
    Rewards:
        the outflow over the past 5 s / 2000 veh/h (Flow's).
    Termination:
        terminated on a SUMO failure or a teleport storm (more than ``max_teleports``; only
        with ``teleport_time`` set), with the reason in info; truncated after ``horizon``
        steps (1000 x 0.5 s after 40 warm-up steps). ``episode_metrics()["outflow_veh_h"]``
        is Flow's metric, the outflow over the last 500 s.

    Keyword arguments are the fields of :class:`BottleneckConfig`.
    """

    metadata = {"render_modes": []}

    def __init__(self, **kwargs: Any):
        self.cfg = BottleneckConfig.from_kwargs(**kwargs)
        self.core = BottleneckSimulation(self.cfg, name="rlsuite/Bottleneck-v0")
        self.observation_space = gym.spaces.Box(
            0.0, 1.0, shape=(self.cfg.num_observations,), dtype=np.float32
        )
        self.action_space = gym.spaces.Box(
            -self.cfg.max_shift_down,
            self.cfg.max_shift_up,
            shape=(self.cfg.num_actions,),
            dtype=np.float32,
        )
        self._end_reason = ""

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self._end_reason = ""
        self.core.start(self.np_random)
        return self.core.observation(), {}

    def step(self, action):
        a = np.asarray(action, dtype=float).reshape(-1)
        if a.shape[0] != self.cfg.num_actions or not np.all(np.isfinite(a)):
            raise ValueError(
                f"action must be {self.cfg.num_actions} finite speed-limit shifts, got {action!r}"
            )
        a = np.clip(a, -self.cfg.max_shift_down, self.cfg.max_shift_up)
        try:
            self.core.advance(a)
        except kernel.SimulationError as e:
            self._end_reason = f"SUMO failed: {e}"
            self.core.sim.close()
            return np.zeros(self.cfg.num_observations, np.float32), 0.0, True, False, self._info()
        cfg = self.cfg
        self._end_reason = kernel.teleport_storm(
            self.core.teleports, cfg.max_teleports, cfg.teleport_time
        )
        term = bool(self._end_reason)
        trunc = not term and self.core.t >= cfg.horizon
        return self.core.observation(), float(self.core.reward()), term, trunc, self._info()

    def series(self) -> dict[str, np.ndarray]:
        return self.core.series()


class Uncontrolled:
    """Stands for the road without AV control (``all-human``: no AVs; ``alinea``: the ramp
    meter inside the env): every step it answers a zero shift, so the AVs keep the road's
    23 m/s limit and drive as the humans do."""

    def __init__(self, num_actions: int, name: str = "uncontrolled"):
        self.num_actions, self.name = num_actions, name

    def reset(self, seed: int | None = None) -> None:
        pass

    def act(self, obs: Any) -> np.ndarray:
        return np.zeros(self.num_actions, dtype=np.float32)


BASELINES = {"all-human": {"av_share": 0.0}, "alinea": {"meter": "alinea"}}
"""The bottleneck's baselines by CLI name and the env options they run with: ``all-human``
(no AVs, Flow's uncontrolled baseline) and ``alinea`` (the feedback ramp meter, the AVs
driving as humans)."""


def baseline(name: str, env_config: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
    """A baseline's controller factory and the env options it needs."""
    import functools

    if name not in BASELINES:
        raise ValueError(f"unknown bottleneck baseline {name!r}: use one of {', '.join(BASELINES)}")
    cfg = BottleneckConfig.from_kwargs(**dict(env_config or {}))
    return functools.partial(Uncontrolled, cfg.num_actions, name), dict(BASELINES[name])


CONFIG = BottleneckConfig
"""The config class behind the env's keyword arguments (the CLI validates with it)."""
