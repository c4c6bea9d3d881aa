"""Flow's merge: an open one-lane highway with an on-ramp; AVs damp the waves the merge starts.

Flow's ``merge0/1/2`` benchmarks (Vinitsky et al., CoRL 2018): 2000 veh/h enter the
highway (10%, 25% or 33% of them autonomous), 100 veh/h the ramp; the ramp has the right
of way at the junction, so highway drivers brake for merging cars and the stop-and-go
waves that follow travel back up the highway. Vehicles enter and leave as they do on a
real road, so the AVs come and go during an episode.

Two envs share :class:`MergeSimulation`:

* ``rlsuite/MergeMulti-v0`` (:class:`MergeMultiEnv`): a PettingZoo parallel env with one
  agent per AV on the road; agents appear when their AV enters and leave (terminated)
  when it exits, so one policy shared by all agents drives any AV share.
* ``rlsuite/Merge-v0`` (:class:`MergeEnv`): Flow's own centralised form, one gymnasium
  agent acting for the first ``num_rl`` AVs to enter (zero-padded slots), the form
  Flow's published numbers come from.
"""

from __future__ import annotations

import functools
import math
import os
import shutil
import tempfile
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
from pettingzoo import ParallelEnv

from rlsuite.apps.traffic import kernel, networks
from rlsuite.apps.traffic.envs.config import EnvConfig, vehicle_type
from rlsuite.apps.traffic.envs.ring import GAP_SCALE, SPEED_SCALE
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
LOCAL_FEATURES = 7
"""Length of one agent's observation in :class:`MergeMultiEnv`."""
FLOW_FEATURES = 5
"""Numbers per AV slot in :class:`MergeEnv` (Flow's state)."""


def flow_human() -> networks.VehicleType:
    """Flow's merge humans: SUMO's IDM with Flow's ``SumoCarFollowingParams`` defaults
    (a 1, b 1.5, T 1, minGap 2.5, v0 30, speedDev 0.1, impatience 0.5)."""
    return networks.VehicleType("human", min_gap=2.5, speed_dev=0.1, impatience=0.5)


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
    """AV slots of the centralised :class:`MergeEnv` (Flow: 5, 13, 17 for merge0/1/2);
    AVs past these drive as humans. The multi-agent env controls every AV."""
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
    human_type: networks.VehicleType = field(default_factory=flow_human)
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
        if self.teleport_time != -1 and self.teleport_time <= 0:
            raise ValueError(f"teleport_time must be > 0 s or -1 (never), got {self.teleport_time}")
        if self.max_teleports < 0:
            raise ValueError(f"max_teleports must be >= 0, got {self.max_teleports}")
        if self.backend not in kernel.BACKENDS:
            raise ValueError(f"backend must be one of {kernel.BACKENDS}, got {self.backend!r}")
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


class MergeSimulation:
    """The merge's SUMO simulation: the vehicles on the road, the AVs among them, the
    commands, and the episode's measurements.

    The AVs present are :attr:`avs` (in order of entry); :meth:`advance` commands the
    given AVs' accelerations for one env step and returns the AVs that entered and left.
    """

    def __init__(self, config: MergeConfig, name: str = "merge"):
        self.cfg = config
        self.sim = kernel.Simulation(config.backend, gui=config.gui, name=name)
        self._dir: str | None = None
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

    def _workdir(self) -> str:
        if self._dir is None:
            self._dir = tempfile.mkdtemp(prefix="rlsuite-merge-")
        return self._dir

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
            "waiting_to_enter": self.waiting_sum / steps,
            "collisions": float(self.collisions),
            "teleports": float(self.teleports),
        }

    def series(self) -> dict[str, np.ndarray]:
        """Per env step: time (s), mean speed (m/s), vehicles that left, AVs on the road."""
        return {
            "t": np.array(self.series_t),
            "mean_speed": np.array(self.series_speed),
            "outflow": np.array(self.series_outflow),
            "avs": np.array(self.series_avs),
        }

    def close(self) -> None:
        self.sim.close()
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None


class _Episode:
    """What both envs share: reset, a failure- and teleport-aware step, the end."""

    cfg: MergeConfig
    core: MergeSimulation

    def _start(self, rng: np.random.Generator) -> None:
        self.core.start(rng)
        self._end_reason = ""

    def _advance(self, accels: dict[str, float]) -> tuple[list[str], list[str], bool, bool]:
        """Advance one env step; (entered, left, terminated, truncated). A SUMO failure or a
        teleport storm terminates the episode with ``self._end_reason`` set; the next
        ``reset()`` starts a new simulation."""
        try:
            entered, gone = self.core.advance(accels)
        except kernel.SimulationError as e:
            self._end_reason = f"SUMO failed: {e}"
            gone = list(self.core.avs)
            self.core.avs, self.core.speed = [], {}
            self.core.sim.close()
            return [], gone, True, False
        cfg = self.cfg
        if self.core.collisions > 0:
            self._end_reason = f"collision ({self.core.collisions} vehicles)"
        else:
            self._end_reason = kernel.teleport_storm(
                self.core.teleports, cfg.max_teleports, cfg.teleport_time
            )
        terminated = bool(self._end_reason)
        return entered, gone, terminated, not terminated and self.core.t >= cfg.horizon

    def _info(self) -> dict[str, Any]:
        return {"reason": self._end_reason} if self._end_reason else {}

    def episode_metrics(self) -> dict[str, float]:
        return self.core.metrics()

    def series(self) -> dict[str, np.ndarray]:
        return self.core.series()

    def close(self) -> None:
        self.core.close()


def _check_actions(acc: dict[str, float]) -> None:
    if not all(math.isfinite(a) for a in acc.values()):
        raise ValueError(f"actions must be finite accelerations, got {acc!r}")


class MergeMultiEnv(_Episode, ParallelEnv):
    """Flow's merge with one agent per AV on the road (PettingZoo parallel).

    An AV becomes an agent (named by its SUMO id, ``av.0``, ``av.1``...) in the step it
    enters the highway and leaves (terminated) in the step it exits; ``possible_agents``
    are all the AVs the inflow can bring in one episode. Should no AV be on the road, a
    step runs on until one enters (the humans driving), so the agents are empty only once
    the episode is over.

    States:
        per agent ``Box(7)``: its speed / 15, (leader speed - its speed) / 15, gap to its
        leader / 270 (the ring's three features, so the ring's controllers drive it),
        (its speed - follower speed) / 15, gap to its follower / 270, metres driven along
        the highway / its length (where the merge is), and the distance to the merge of
        the nearest ramp car that has not merged yet / the ramp's length (1: none). The
        leader is looked for across the junction; a missing leader reads as one 500 m
        ahead at 30 m/s, a missing follower as one 500 m behind at rest (Flow's convention).
    Actions:
        per agent ``Box(1)``: its acceleration in [-max_decel, max_accel] (default +-1.5
        m/s^2), applied at each of the step's ``sims_per_step`` SUMO steps as a commanded
        speed that SUMO keeps safe (speed mode 9: safe speed, right of way).
    Rewards:
        Flow's merge reward (:meth:`MergeSimulation.reward`: desired velocity, 20 m/s,
        over all vehicles minus 0.1 x the AVs' short time headways, floored at 0), split
        evenly among the agents that acted, so the agents' rewards sum to Flow's reward
        whatever the number of AVs. An agent gets 0 in the step it appears.
    Termination:
        an agent is terminated when its AV leaves the road; every agent is terminated on
        a collision, a teleport storm (more than ``max_teleports``) or a SUMO failure
        (the reason is in each agent's info), and truncated once the road's clock reaches
        ``horizon`` env steps (750 x 1 s); steps run while no AV was on the road (at the
        start, the first seconds before one enters) count, so an episode has at most
        ``horizon`` agent steps.

    Keyword arguments are the fields of :class:`MergeConfig`; ``av_share`` needs to be > 0.
    """

    metadata = {"render_modes": [], "name": "rlsuite_merge_multi_v0", "is_parallelizable": True}
    render_mode = None

    def __init__(self, **kwargs: Any):
        self.cfg = MergeConfig.from_kwargs(**kwargs)
        if self.cfg.av_share <= 0:
            raise ValueError(
                "MergeMultiEnv needs av_share within (0, 1] (the agents are the AVs); for "
                "an all-human road run MergeSimulation with av_share=0"
            )
        self.core = MergeSimulation(self.cfg, name="rlsuite/MergeMulti-v0")
        self.possible_agents = [f"{AV_FLOW}.{i}" for i in range(self.cfg.max_avs)]
        self.agents: list[str] = []
        self._end_reason = ""

    @functools.cache  # noqa: B019 - PettingZoo wants the same object each call
    def observation_space(self, agent: str) -> gym.spaces.Box:
        low = np.array([0.0, -2.0, 0.0, -2.0, 0.0, 0.0, 0.0], np.float32)
        high = np.array([2.0, 2.0, 2.0, 2.0, 2.0, 1.5, 1.0], np.float32)
        return gym.spaces.Box(low, high, dtype=np.float32)

    @functools.cache  # noqa: B019
    def action_space(self, agent: str) -> gym.spaces.Box:
        return gym.spaces.Box(-self.cfg.max_decel, self.cfg.max_accel, shape=(1,), dtype=np.float32)

    def _observe(self, agents: list[str]) -> tuple[dict[str, np.ndarray], dict[str, Neighbours]]:
        cfg = self.cfg
        road = networks.MERGE_INFLOW_LENGTH + cfg.pre_merge_length + cfg.post_merge_length
        ramp = self.core.nearest_ramp_distance()
        ramp_f = (
            1.0 if math.isinf(ramp) else ramp / (networks.MERGE_INFLOW_LENGTH + cfg.merge_length)
        )
        sp = self.observation_space(AV_FLOW)
        obs, nbs = {}, {}
        for a in agents:
            if a not in self.core.speed:
                obs[a] = np.zeros(LOCAL_FEATURES, np.float32)
                continue
            n = nbs[a] = self.core.neighbours(a)
            o = np.array(
                [
                    n.v / SPEED_SCALE, (n.lead_v - n.v) / SPEED_SCALE, n.lead_gap / GAP_SCALE,
                    (n.v - n.follow_v) / SPEED_SCALE, n.follow_gap / GAP_SCALE, n.x / road, ramp_f,
                ],
                dtype=np.float32,
            )  # fmt: skip
            obs[a] = np.clip(o, sp.low, sp.high)
        return obs, nbs

    def reset(self, seed: int | None = None, options: dict | None = None):
        if seed is not None or not hasattr(self, "_rng"):
            self._rng = np.random.default_rng(seed)
        self._start(self._rng)
        entered: list[str] = []
        while not self.core.avs and self.core.t < self.cfg.horizon:
            entered, _ = self.core.advance({})  # humans only until the first AV enters
        self.agents = list(self.core.avs)
        obs, _ = self._observe(self.agents)
        return obs, {a: {} for a in self.agents}

    def step(self, actions: dict[str, Any]):
        missing = set(self.agents) - set(actions)
        if missing:
            raise ValueError(f"no action for agent(s) {sorted(missing)}: give one per agent")
        acting = list(self.agents)
        acc = {a: float(np.asarray(actions[a], dtype=float).reshape(-1)[0]) for a in acting}
        _check_actions(acc)
        entered, gone, term, trunc = self._advance(acc)
        new = list(entered)
        while not term and not trunc and not self.core.avs:
            # no AV on the road: the humans drive on until one enters or time is up
            e, _g, term, trunc = self._advance({})
            new += e
        obs, nbs = self._observe(acting + [a for a in new if a not in acting])
        r = self.core.reward([a for a in acting if a not in gone], nbs)
        share = r / len(acting) if acting else 0.0
        out_agents = list(obs)
        info = self._info()
        rewards = {a: (share if a in acting else 0.0) for a in out_agents}
        terms = {a: term or a in gone for a in out_agents}
        truncs = {a: trunc and not terms[a] for a in out_agents}
        self.agents = [a for a in out_agents if not (terms[a] or truncs[a])]
        return obs, rewards, terms, truncs, {a: dict(info) for a in out_agents}

    def render(self) -> None:
        return None


class MergeEnv(_Episode, gym.Env):
    """Flow's merge under one centralised policy acting for up to ``num_rl`` AVs (Flow's
    ``MergePOEnv``).

    AVs join a queue as they enter and fill ``num_rl`` slots in order of entry; an AV
    keeps its slot until it leaves, and AVs past ``num_rl`` drive as humans.

    States:
        ``Box(5 * num_rl)``: per slot (Flow's state), the AV's speed / 30, (leader speed -
        its speed) / 30, gap to its leader / L, (its speed - follower speed) / 30 and gap
        to its follower / L, with L the network's length and 30 m/s the speed limit; a
        missing leader reads as one L ahead at 30 m/s, a missing follower as one L behind
        at rest; empty slots are zeros.
    Actions:
        ``Box(num_rl)``: each slot's acceleration in [-max_decel, max_accel] (default +-1.5
        m/s^2); an empty slot's is ignored.
    Rewards:
        Flow's merge reward (:meth:`MergeSimulation.reward`).
    Termination:
        terminated on a collision, a teleport storm or a SUMO failure (reason in info);
        truncated after ``horizon`` env steps (750 x 1 s).
    """

    metadata = {"render_modes": []}

    def __init__(self, **kwargs: Any):
        self.cfg = MergeConfig.from_kwargs(**kwargs)
        self.core = MergeSimulation(self.cfg, name="rlsuite/Merge-v0")
        k = self.cfg.num_rl
        row_low, row_high = [0.0, -1.5, 0.0, -1.5, 0.0], [1.5, 1.5, 1.0, 1.5, 1.0]
        self.observation_space = gym.spaces.Box(
            np.tile(np.array(row_low, np.float32), k), np.tile(np.array(row_high, np.float32), k),
            dtype=np.float32,
        )  # fmt: skip
        self.action_space = gym.spaces.Box(
            -self.cfg.max_decel, self.cfg.max_accel, shape=(k,), dtype=np.float32
        )
        cfg = self.cfg
        self._length = (
            2 * networks.MERGE_INFLOW_LENGTH
            + cfg.pre_merge_length + cfg.post_merge_length + cfg.merge_length
        )  # fmt: skip
        self.slots: list[str] = []
        self._end_reason = ""

    def _fill_slots(self) -> None:
        self.slots = [a for a in self.slots if a in self.core.speed]
        for a in self.core.avs:
            if len(self.slots) >= self.cfg.num_rl:
                break
            if a not in self.slots:
                self.slots.append(a)

    def _obs(self) -> tuple[np.ndarray, dict[str, Neighbours]]:
        vmax, length = self.cfg.human_type.max_speed, self._length
        o = np.zeros(FLOW_FEATURES * self.cfg.num_rl, np.float32)
        nbs = {}
        for i, a in enumerate(self.slots):
            n = nbs[a] = self.core.neighbours(a)
            lead_v, lead_gap = (n.lead_v, n.lead_gap) if n.has_leader else (vmax, length)
            follow_gap = n.follow_gap if n.follow_gap < MAX_GAP else length
            o[FLOW_FEATURES * i : FLOW_FEATURES * (i + 1)] = [
                n.v / vmax, (lead_v - n.v) / vmax, lead_gap / length,
                (n.v - n.follow_v) / vmax, follow_gap / length,
            ]  # fmt: skip
        return np.clip(o, self.observation_space.low, self.observation_space.high), nbs

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self._start(self.np_random)
        self.slots = []
        self._fill_slots()
        return self._obs()[0], {}

    def step(self, action):
        a = np.asarray(action, dtype=float).reshape(-1)
        if a.shape[0] != self.cfg.num_rl or not np.all(np.isfinite(a)):
            raise ValueError(
                f"action must be {self.cfg.num_rl} finite accelerations, got {action!r}"
            )
        acting = list(self.slots)
        _entered, gone, term, trunc = self._advance(dict(zip(acting, a)))
        self._fill_slots()
        obs, nbs = self._obs()
        reward = self.core.reward([s for s in self.slots if s in acting], nbs)
        return obs, float(reward), term, trunc, self._info()


FOLLOWERSTOPPER_SPEED = 10.0
"""FollowerStopper's desired speed on the merge (m/s): the best of 3, 6, 10 and 15 here."""


def baseline_options(name: str, env_config: dict[str, Any] | None = None) -> dict[str, Any]:
    """Keyword arguments of a ring baseline (:mod:`~rlsuite.apps.traffic.controllers`)
    driving a merge AV: the env's step (1 s) and bounds, the humans' IDM without noise
    for ``idm`` (the AV drives as the humans do), a highway speed for ``followerstopper``."""
    cfg = MergeConfig.from_kwargs(**dict(env_config or {}))
    h = cfg.human_type
    opts: dict[str, Any] = dict(
        sim_step=cfg.step_seconds, max_accel=cfg.max_accel, max_decel=cfg.max_decel
    )
    if name == "idm":
        opts.update(v0=h.max_speed, T=h.tau, a=h.accel, b=h.decel, delta=h.delta, s0=h.min_gap,
                    noise=0.0)  # fmt: skip
    elif name == "followerstopper":
        opts["v_des"] = FOLLOWERSTOPPER_SPEED
    return opts


CONFIG = MergeConfig
"""The config class behind the envs' keyword arguments (the CLI validates with it)."""


def all_human(config: dict[str, Any] | None, seeds: list[int]) -> list[dict[str, float]]:
    """Episode metrics (and per-step series) of the merge with no AV at all (``av_share``
    0: the whole highway inflow human), one per seed: Flow's uncontrolled baseline."""
    cfg = MergeConfig.from_kwargs(**{**dict(config or {}), "av_share": 0.0})
    rows = []
    for s in seeds:
        core = MergeSimulation(cfg, name="merge-all-human")
        try:
            core.start(np.random.default_rng(s))
            while core.t < cfg.horizon:
                core.advance({})
            rows.append({**core.metrics(), "seed": s, "series": core.series()})
        finally:
            core.close()
    return rows
