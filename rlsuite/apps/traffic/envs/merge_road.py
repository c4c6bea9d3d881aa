"""Flow's merge road: its config, its demand and the libsumo simulation the merge envs share.

Flow's ``merge0/1/2`` (Vinitsky et al., CoRL 2018): a one-lane highway with an on-ramp,
2000 veh/h on the highway (10%, 25% or 33% of them autonomous) and 100 veh/h on the ramp.
:class:`MergeSimulation` runs one episode of it through :mod:`rlsuite.apps.traffic.kernel`;
the envs in :mod:`rlsuite.apps.traffic.envs.merge` (one agent per AV, or Flow's
centralised form) and :mod:`~rlsuite.apps.traffic.envs.merge_vector` (several merges in one
simulation) act on it.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field, fields
from typing import ClassVar

import numpy as np

from rlsuite.apps.traffic import kernel, networks
from rlsuite.apps.traffic.envs.config import EnvConfig, vehicle_type
from rlsuite.apps.traffic.envs.road import RoadSimulation
from rlsuite.apps.traffic.rewards import desired_velocity_reward

AV_FLOW = "av"
"""SUMO flow id of the AVs: their vehicle ids (and agent names) are ``av.0``, ``av.1``..."""
SUMO_DEFAULT_SPEED_MODE = 31
"""SUMO's own speed mode (every check on)."""
SLOW_SPEED = 0.5
"""A sample below this speed (m/s) counts as stopped in ``frac_below_0_5``."""
INFLOW_RANGE = (0.0, 4000.0)
"""Valid highway inflow (veh/h); one lane carries about 2000-2200 veh/h at most."""
RAMP_RANGE = (0.0, 1000.0)
"""Valid on-ramp inflow (veh/h)."""
AV_SHARE_RANGE = (0.0, 1.0)
"""Valid AV share of the highway inflow (0: all human, for the simulation alone)."""
MAX_GAP = 500.0
"""Gaps are capped here (m); a missing leader or follower reads as this far away."""


@dataclass(frozen=True)
class MergeConfig(EnvConfig):
    """Everything that defines a merge episode (the env's keyword arguments; Flow's
    ``merge0`` by default: ``av_share`` 0.25 and 0.333 are ``merge1`` and ``merge2``)."""

    KIND: ClassVar[str] = "merge"
    POLICY_FIELDS: ClassVar[tuple[str, ...]] = ("num_rl", "max_accel", "max_decel")

    highway_inflow: float = 2000.0
    """Vehicles per hour entering the highway, AVs included (Flow: 2000)."""
    av_share: float = 0.1
    """Share of the highway inflow that is autonomous (Flow: 0.1, 0.25, 0.333)."""
    ramp_inflow: float = 100.0
    """Vehicles per hour entering the on-ramp, all human (Flow: 100)."""
    pre_merge_length: float = 500.0
    """Highway from its inflow edge to the merge (m)."""
    post_merge_length: float = 100.0
    """Highway past the merge (m)."""
    merge_length: float = 100.0
    """On-ramp from its inflow edge to the merge (m)."""
    initial_vehicles: int = 5
    """Humans standing on the highway at t = 0 (Flow's five)."""
    sim_step: float = 0.5
    """Simulation step (s)."""
    sims_per_step: int = 2
    """Simulation steps per env step (Flow: 2, so one env step is 1 s); the action is
    applied at each of them."""
    warmup_steps: int = 0
    """Env steps at reset with no AV commanded (Flow's merge: 0; the road fills from
    five cars during the episode)."""
    horizon: int = 750
    """Env steps per episode (Flow: 750)."""
    measure_after: int = 0
    """Env steps before the episode metrics start counting."""
    target_velocity: float = 20.0
    """Desired speed of the reward (m/s)."""
    headway_penalty: float = 0.1
    """Weight of the time-headway penalty (Flow: 0.1)."""
    min_headway: float = 1.0
    """Time headway (s) below which an AV is penalised (Flow: 1)."""
    max_accel: float = 1.5
    """Largest AV acceleration (m/s^2)."""
    max_decel: float = 1.5
    """Largest AV deceleration (m/s^2, positive)."""
    num_rl: int = 5
    """AV slots of the centralised :class:`~rlsuite.apps.traffic.envs.merge.MergeEnv`
    (Flow: 5, 13, 17 for merge0/1/2); AVs past these drive as humans. The multi-agent env
    controls every AV."""
    teleport_time: float = 300.0
    """SUMO's ``--time-to-teleport`` (s): a vehicle stuck this long is teleported; -1: never."""
    max_teleports: int = 5
    """Teleports in an episode before it is ended as a teleport storm (reason in info)."""
    human_speed_mode: int = 9
    """SUMO speed mode of the humans: 9 (safe speed and right of way at the junction) as
    Flow's merge benchmarks set it today (``speed_mode=9``); all-human 4.1 m/s here. 1 (safe
    speed only) is Flow's CoRL 2018 code (``"no_collide"``): nobody yields at the merge and
    cars collide in it (11.4 m/s, with collisions). 31 is SUMO's default (3.1 m/s)."""
    av_speed_mode: int = 9
    """SUMO speed mode of the AVs (Flow: the humans')."""
    backend: str = "auto"
    """``auto`` (libsumo if free in this process, else TraCI), ``libsumo`` or ``traci``."""
    gui: bool = False
    """Show sumo-gui (TraCI; needs a display)."""
    human_type: networks.VehicleType = field(default_factory=networks.flow_sumo_human)
    """Human drivers' (SUMO IDM) parameters; the AVs share them until commanded."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "human_type", vehicle_type(self.human_type))
        self.validate()

    def validate(self) -> None:
        lo, hi = INFLOW_RANGE
        if not lo < self.highway_inflow <= hi:
            raise ValueError(
                f"highway_inflow must be within ({lo:g}, {hi:g}] veh/h, got {self.highway_inflow}"
            )
        lo, hi = RAMP_RANGE
        if not lo <= self.ramp_inflow <= hi:
            raise ValueError(
                f"ramp_inflow must be within [{lo:g}, {hi:g}] veh/h, got {self.ramp_inflow}"
            )
        lo, hi = AV_SHARE_RANGE
        if not lo <= self.av_share <= hi:
            raise ValueError(
                f"av_share must be within [{lo:g}, {hi:g}] (a fraction of the highway inflow, "
                f"e.g. 0.1), got {self.av_share}"
            )
        for name in ("pre_merge_length", "post_merge_length", "merge_length"):
            if not 20 <= getattr(self, name) <= 10_000:
                raise ValueError(f"{name} must be within [20, 10000] m, got {getattr(self, name)}")
        if not 0 <= self.initial_vehicles <= 50:
            raise ValueError(
                f"initial_vehicles must be within [0, 50], got {self.initial_vehicles}"
            )
        if not 0.01 <= self.sim_step <= 1.0 or not 1 <= self.sims_per_step <= 10:
            raise ValueError(
                f"need sim_step within [0.01, 1] s and sims_per_step within [1, 10], got "
                f"{self.sim_step}, {self.sims_per_step}"
            )
        if self.horizon < 1 or self.warmup_steps < 0 or not 0 <= self.measure_after < self.horizon:
            raise ValueError(
                "need horizon >= 1, warmup_steps >= 0 and 0 <= measure_after < horizon, got "
                f"{self.horizon}, {self.warmup_steps}, {self.measure_after}"
            )
        if self.max_accel <= 0 or self.max_decel <= 0 or self.target_velocity <= 0:
            raise ValueError("max_accel, max_decel and target_velocity must be > 0")
        if self.headway_penalty < 0 or self.min_headway <= 0:
            raise ValueError("headway_penalty must be >= 0 and min_headway > 0")
        if not 1 <= self.num_rl <= 100:
            raise ValueError(f"num_rl must be within [1, 100], got {self.num_rl}")
        self.check_sumo_options()
        for name in ("human_speed_mode", "av_speed_mode"):
            if not 0 <= getattr(self, name) <= 127:
                raise ValueError(
                    f"{name} must be SUMO speed-mode bits within [0, 127], got {getattr(self, name)}"
                )

    @property
    def step_seconds(self) -> float:
        """Seconds per env step."""
        return self.sim_step * self.sims_per_step

    @property
    def episode_seconds(self) -> float:
        """Simulated seconds of an episode, warm-up included."""
        return (self.warmup_steps + self.horizon) * self.step_seconds + self.sim_step

    @property
    def max_avs(self) -> int:
        """AVs the inflow can bring in one episode (the agents that may ever appear)."""
        rate = self.highway_inflow * self.av_share
        return int(math.ceil(self.episode_seconds * rate / 3600.0)) + 1 if rate > 0 else 0


@dataclass
class Neighbours:
    """What an AV sees of the road (m/s and m; bumper-to-bumper gaps capped at MAX_GAP)."""

    v: float
    lead_v: float
    lead_gap: float
    follow_v: float
    follow_gap: float
    has_leader: bool
    x: float
    """Metres driven along the highway."""


def merge_demand(
    cfg: MergeConfig,
) -> tuple[list[networks.VehicleType], list[tuple[str, str, float, float, float]], list]:
    """The merge's vehicle types, flows and initial vehicles, as
    :func:`~rlsuite.apps.traffic.networks.merge_routes` takes them: humans and AVs (the
    same driver, coloured red) on the highway at ``highway_inflow`` with ``av_share`` AVs,
    humans on the ramp, and ``initial_vehicles`` humans standing on the highway."""
    human = cfg.human_type
    av = networks.VehicleType(
        **{**{f.name: getattr(human, f.name) for f in fields(human)}, "id": "av", "color": "1,0,0"}
    )
    end = cfg.episode_seconds
    rate_av = cfg.highway_inflow * cfg.av_share
    flows = [
        ("human", "human", cfg.highway_inflow - rate_av, 10.0, end),
        (AV_FLOW, "av", rate_av, 10.0, end),
        ("ramp", "human", cfg.ramp_inflow, 7.5, end),
    ]
    road = networks.MERGE_INFLOW_LENGTH + cfg.pre_merge_length
    n = cfg.initial_vehicles
    initial = [(f"init.{j}", "human", road * (j + 0.5) / n) for j in range(n)]
    return [human, av], flows, initial


class MergeSimulation(RoadSimulation):
    """The merge's SUMO simulation: the vehicles on the road, the AVs among them, the
    commands, and the episode's measurements.

    The AVs present are :attr:`avs` (in order of entry); :meth:`advance` commands the
    given AVs' accelerations for one env step and returns the AVs that entered and left.
    """

    workdir_prefix = "rlsuite-merge-"

    def __init__(self, config: MergeConfig, name: str = "merge"):
        self.cfg = config
        self.sim = kernel.Simulation(config.backend, gui=config.gui, name=name)
        self.avs: list[str] = []
        self._seen: set[str] = set()
        self.speed: dict[str, float] = {}
        self.ramp: dict[str, float] = {}  # ramp vehicles not yet merged: metres to the merge
        self.t = 0
        self._reset_measurements()
        inflow = networks.MERGE_INFLOW_LENGTH
        first, second = networks.MERGE_RAMP_ROUTE[:2]
        # metres to the merge = this minus the position on the lane, per ramp lane
        self._ramp_to_go = {
            first: inflow + config.merge_length, f":{second}_0": config.merge_length,
            second: config.merge_length,
        }  # fmt: skip

    # --- episode ------------------------------------------------------------------

    def _reset_measurements(self) -> None:
        self.measured_steps = 0
        self.samples = 0
        self.speed_sum = 0.0
        self.std_sum = 0.0
        self.slow = 0
        self.arrived = 0
        self.av_speed_sum = 0.0
        self.av_steps = 0
        self.vehicles_sum = 0
        self.waiting_sum = 0
        self.collisions = 0
        self.teleports = 0
        self.series_t: list[float] = []
        self.series_speed: list[float] = []
        self.series_outflow: list[int] = []
        self.series_avs: list[int] = []

    def _build(self) -> tuple[str, str]:
        cfg = self.cfg
        net = networks.merge_network(cfg.pre_merge_length, cfg.post_merge_length, cfg.merge_length)
        routes = os.path.join(self._workdir(), "merge.rou.xml")
        networks.merge_routes(routes, *merge_demand(cfg))
        return net, routes

    def start(self, rng: np.random.Generator) -> None:
        """Start a fresh simulation and run the warm-up."""
        cfg = self.cfg
        net, routes = self._build()
        seed = int(rng.integers(0, 2**31 - 1))
        self.sim.start(
            [
                "-n", net, "-r", routes, "--step-length", str(cfg.sim_step),
                "--seed", str(seed), "--no-step-log", "true", "--no-warnings", "true",
                "--time-to-teleport", str(cfg.teleport_time), "--collision.action", "warn",
                "--default.action-step-length", str(cfg.sim_step),
            ]
        )  # fmt: skip
        self.t = 0
        self.avs = []
        self._seen = set()
        self._reset_measurements()
        self._sub_step({})  # the t = 0 vehicles are inserted in the first step
        for _ in range(cfg.warmup_steps):
            self.advance({}, measure=False)
        self.t = 0

    def _sub_step(self, accels: dict[str, float]) -> tuple[list[str], list[str], int]:
        """One SUMO step with ``accels`` applied; returns (AVs entered, AVs left, arrivals)."""
        cfg = self.cfg
        dt = cfg.sim_step
        ids, speeds = [], []
        for vid, a in accels.items():
            if vid in self.speed:
                a = float(np.clip(a, -cfg.max_decel, cfg.max_accel))
                ids.append(vid)
                speeds.append(max(0.0, self.speed[vid] + a * dt))
        if ids:
            self.sim.set_speeds(ids, speeds)
        self.sim.step()
        present = self.sim.vehicle_ids()
        states = self.sim.vehicle_states(present)
        self.speed = {vid: s[0] for vid, s in states.items()}
        self.ramp = {}
        for vid, (_v, road, pos, _odo) in states.items():
            if vid.startswith("ramp"):
                to_go = self._ramp_to_go.get(road)
                if to_go is not None:
                    self.ramp[vid] = max(0.0, to_go - pos)
        self._odometer = {vid: s[3] for vid, s in states.items()}
        # an AV is an agent from its entry to its exit; one that vanishes to teleport is
        # gone for good (SUMO drives it if it reappears), so no agent is ever revived
        now = [vid for vid in present if vid.startswith(AV_FLOW + ".")]
        entered = [vid for vid in now if vid not in self._seen]
        self._seen.update(entered)
        gone = [vid for vid in self.avs if vid not in self.speed]
        self.avs = [vid for vid in self.avs if vid in self.speed] + entered
        departed = self.sim.call("simulation", "getDepartedIDList")
        humans = [v for v in departed if not v.startswith(AV_FLOW + ".")]
        if humans and cfg.human_speed_mode != SUMO_DEFAULT_SPEED_MODE:
            self.sim.set_speed_modes(humans, cfg.human_speed_mode)
        if entered:
            self.sim.set_speed_modes(entered, cfg.av_speed_mode)
        arrived = int(self.sim.call("simulation", "getArrivedNumber"))
        self.collisions += self.sim.collisions()
        self.teleports += int(self.sim.call("simulation", "getStartingTeleportNumber"))
        return entered, gone, arrived

    def advance(
        self, accels: dict[str, float], measure: bool = True
    ) -> tuple[list[str], list[str]]:
        """One env step (``sims_per_step`` SUMO steps, ``accels`` applied at each); returns
        the AVs that entered and those that left the road during it."""
        entered: list[str] = []
        gone: list[str] = []
        arrived = 0
        for _ in range(self.cfg.sims_per_step):
            e, g, n = self._sub_step(accels)
            gone += [v for v in g if v not in entered]
            entered = [v for v in entered if v not in g] + e
            arrived += n
        self.t += 1
        if measure and self.t > self.cfg.measure_after:
            self._measure(arrived)
        return entered, gone

    def _measure(self, arrived: int) -> None:
        v = np.fromiter(self.speed.values(), float, len(self.speed))
        self.measured_steps += 1
        self.arrived += arrived
        self.series_t.append(self.t * self.cfg.step_seconds)
        self.series_outflow.append(arrived)
        self.series_avs.append(len(self.avs))
        self.waiting_sum += len(self.sim.call("simulation", "getPendingVehicles"))
        if len(v):
            self.samples += len(v)
            self.speed_sum += float(v.sum())
            self.std_sum += float(v.std())
            self.slow += int((v < SLOW_SPEED).sum())
            self.vehicles_sum += len(v)
            self.series_speed.append(float(v.mean()))
        else:
            self.series_speed.append(math.nan)
        if self.avs:
            self.av_speed_sum += float(np.mean([self.speed[a] for a in self.avs]))
            self.av_steps += 1

    # --- what the AVs see -----------------------------------------------------------

    def neighbours(self, vid: str) -> Neighbours:
        """Leader and follower of AV ``vid`` along its route (across the junction)."""
        gap0 = self.cfg.human_type.min_gap  # SUMO's gaps start after the minGap
        v = self.speed[vid]
        lead = self.sim.call("vehicle", "getLeader", vid, MAX_GAP)
        if lead and lead[0] and lead[0] in self.speed:
            lead_v, lead_gap, has = self.speed[lead[0]], min(lead[1] + gap0, MAX_GAP), True
        else:
            lead_v, lead_gap, has = self.cfg.human_type.max_speed, MAX_GAP, False
        fol = self.sim.call("vehicle", "getFollower", vid, MAX_GAP)
        if fol and fol[0] and fol[0] in self.speed:
            follow_v, follow_gap = self.speed[fol[0]], min(fol[1] + gap0, MAX_GAP)
        else:
            follow_v, follow_gap = 0.0, MAX_GAP
        return Neighbours(
            v, lead_v, max(lead_gap, 0.0), follow_v, max(follow_gap, 0.0), has,
            self._odometer.get(vid, 0.0),
        )  # fmt: skip

    def nearest_ramp_distance(self) -> float:
        """Metres to the merge of the ramp vehicle nearest to it (inf when none is waiting)."""
        return min(self.ramp.values(), default=math.inf)

    def reward(self, acting: list[str], nb: dict[str, Neighbours]) -> float:
        """Flow's merge reward: the desired-velocity reward over every vehicle on the road
        minus ``headway_penalty`` per second of time headway below ``min_headway`` (as a
        fraction of it) of each acting AV with a leader, floored at 0."""
        cfg = self.cfg
        v = np.fromiter(self.speed.values(), float, len(self.speed))
        r = desired_velocity_reward(v, cfg.target_velocity) if len(v) else 0.0
        cost = 0.0
        for a in acting:
            n = nb.get(a)
            if n is not None and n.has_leader and n.v > 0:
                cost += min((max(n.lead_gap / n.v, 0.0) - cfg.min_headway) / cfg.min_headway, 0.0)
        return max(r + cfg.headway_penalty * cost, 0.0)

    def metrics(self) -> dict[str, float]:
        """Domain metrics of the measured part of the episode: Flow's mean speed (of the
        vehicles on the road, m/s), outflow (veh/h leaving the road), mean vehicles on the
        road and mean vehicles due but not yet inserted (``waiting_to_enter``: cars held
        off the road raise the mean speed of those on it)."""
        steps = max(self.measured_steps, 1)
        seconds = steps * self.cfg.step_seconds
        n = max(self.samples, 1)
        return {
            "mean_speed": self.speed_sum / n,
            "speed_std": self.std_sum / steps,
            "frac_below_0_5": self.slow / n,
            "throughput_veh_h": self.arrived / seconds * 3600.0,
            "av_mean_speed": self.av_speed_sum / self.av_steps if self.av_steps else math.nan,
            "vehicles": self.vehicles_sum / steps,
            **self._trouble(steps),
        }

    def series(self) -> dict[str, np.ndarray]:
        """Per env step: time (s), mean speed (m/s), vehicles that left, AVs on the road."""
        return {
            "t": np.array(self.series_t),
            "mean_speed": np.array(self.series_speed),
            "outflow": np.array(self.series_outflow),
            "avs": np.array(self.series_avs),
        }
