"""N of Flow's merges in ONE SUMO simulation, as a gymnasium ``VectorEnv`` of the centralised
``rlsuite/Merge-v0``.

libsumo runs one simulation per process and RLlib's env runner costs ~1 ms per env step,
more than the merge's two SUMO steps (~0.4 ms), so one merge per runner leaves most of
what SUMO could give unused. As the rings do
(:mod:`~rlsuite.apps.traffic.envs.ring_vector`), one network here holds N disjoint merges
(copy ``i``'s edges, flows and vehicles are prefixed ``m{i}``), one ``simulationStep``
advances all of them, and one subscription read gets every vehicle. Each copy keeps
:class:`~rlsuite.apps.traffic.envs.merge_road.MergeSimulation`'s logic: the same commands,
measurements, neighbours and Flow's reward and state (:class:`MergeCopy`).

One difference from N scalar envs: SUMO draws every inserted vehicle's speed factor
(``speedDev`` 0.1) from one random stream, so in one simulation the copies' draws
interleave. A copy is then a merge episode of the same network, demand and drivers, but
not the one the scalar env gives for any seed; with ``num_envs=1`` it is the scalar env's
episode exactly.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import Any

import numpy as np

from rlsuite.apps.traffic import kernel, networks
from rlsuite.apps.traffic.envs.merge import (
    FLOW_FEATURES,
    centralised_spaces,
    road_length,
    slot_state,
)
from rlsuite.apps.traffic.envs.merge_road import (
    AV_FLOW,
    SUMO_DEFAULT_SPEED_MODE,
    MergeConfig,
    MergeSimulation,
    merge_demand,
)
from rlsuite.apps.traffic.envs.vector import CopiesVectorEnv, check_copies

MAX_COPIES = 64
"""Most merges in one simulation (a sanity bound)."""
COPY_SPACING = 1000.0
"""Metres between the copies' networks (along y; each merge is ~150 m tall)."""


def copy_prefix(i: int) -> str:
    """Prefix of copy ``i``'s edges, nodes, flows and vehicles (``m3.av.7`` is an AV of
    copy 3)."""
    return f"m{i}"


def copy_of(vid: str) -> int:
    """The copy a vehicle id belongs to."""
    return int(vid[1 : vid.index(".")])


class _CopyView:
    """What a :class:`MergeCopy` asks SUMO for its own measurements: the shared simulation's
    answers restricted to one copy (the rest goes straight to the simulation)."""

    def __init__(self, sim: kernel.Simulation, copies: MergeCopies, i: int):
        self._sim, self._copies, self._i = sim, copies, i

    def call(self, domain: str, method: str, *args: Any) -> Any:
        if domain == "simulation" and method == "getPendingVehicles":
            return self._copies.pending[self._i]
        return self._sim.call(domain, method, *args)


class MergeCopy(MergeSimulation):
    """One merge of a :class:`MergeCopies` simulation: MergeSimulation's state, neighbours,
    reward, measurements and metrics, fed by the shared step instead of its own."""

    def __init__(self, config: MergeConfig, copies: MergeCopies, i: int):
        super().__init__(config, name=f"merge copy {i}")
        self.sim = _CopyView(copies.sim, copies, i)  # type: ignore[assignment]
        self.prefix = copy_prefix(i) + "."
        p = copy_prefix(i) + "_"
        inflow = networks.MERGE_INFLOW_LENGTH
        first, second = networks.MERGE_RAMP_ROUTE[:2]
        self._ramp_to_go = {
            p + first: inflow + config.merge_length, f":{p}{second}_0": config.merge_length,
            p + second: config.merge_length,
        }  # fmt: skip
        self._av = self.prefix + AV_FLOW + "."
        self._ramp = self.prefix + "ramp"

    def begin(self) -> None:
        """A new episode (the shared simulation has just started)."""
        self.t = 0
        self.avs = []
        self._seen = set()
        self.speed, self.ramp, self._odometer = {}, {}, {}
        self._reset_measurements()

    def commands(self, accels: dict[str, float]) -> tuple[list[str], list[float]]:
        """The commanded speeds of MergeSimulation's ``_sub_step`` for ``accels``."""
        cfg = self.cfg
        ids, speeds = [], []
        for vid, a in accels.items():
            if vid in self.speed:
                a = min(max(float(a), -cfg.max_decel), cfg.max_accel)  # np.clip's value
                ids.append(vid)
                speeds.append(max(0.0, self.speed[vid] + a * cfg.sim_step))
        return ids, speeds

    def take(
        self, states: dict[str, tuple[float, str, float, float]], present: list[str]
    ) -> tuple[list[str], list[str]]:
        """This copy's vehicles after a shared step (MergeSimulation's ``_sub_step`` reading
        part); returns (AVs entered, AVs left)."""
        self.speed = {vid: s[0] for vid, s in states.items()}
        self.ramp = {}
        for vid, (_v, road, pos, _odo) in states.items():
            if vid.startswith(self._ramp):
                to_go = self._ramp_to_go.get(road)
                if to_go is not None:
                    self.ramp[vid] = max(0.0, to_go - pos)
        self._odometer = {vid: s[3] for vid, s in states.items()}
        now = [vid for vid in present if vid.startswith(self._av)]
        entered = [vid for vid in now if vid not in self._seen]
        self._seen.update(entered)
        gone = [vid for vid in self.avs if vid not in self.speed]
        self.avs = [vid for vid in self.avs if vid in self.speed] + entered
        return entered, gone


class MergeCopies:
    """N merges in one SUMO simulation: the shared start and step, and each copy's
    :class:`MergeCopy`."""

    def __init__(self, config: MergeConfig, copies: int, name: str = "merges"):
        copies = check_copies(copies, MAX_COPIES, "merges")
        if config.gui:
            raise ValueError("gui=True is kept by rlsuite/Merge-v0 only (one merge, sumo-gui)")
        self.cfg = config
        self.n = int(copies)
        self.sim = kernel.Simulation(config.backend, name=name)
        self.copies = [MergeCopy(config, self, i) for i in range(self.n)]
        self.pending: list[list[str]] = [[] for _ in range(self.n)]
        self._dir: str | None = None
        self._copy: dict[str, int] = {}  # vehicle id -> its copy, this episode

    def copy_of(self, vid: str) -> int:
        """:func:`copy_of`, remembered for the episode (it is asked for every vehicle at
        every step)."""
        k = self._copy.get(vid)
        if k is None:
            k = self._copy[vid] = copy_of(vid)
        return k

    def start(self, rngs: list[np.random.Generator]) -> None:
        """A fresh simulation of every copy (SUMO seeded by copy 0's generator, each copy
        drawing what its scalar env draws) and the warm-up."""
        cfg = self.cfg
        seeds = [int(rng.integers(0, 2**31 - 1)) for rng in rngs]
        if self._dir is None:
            self._dir = tempfile.mkdtemp(prefix="rlsuite-merges-")
        names = [copy_prefix(i) for i in range(self.n)]
        net = networks.merge_network(
            cfg.pre_merge_length, cfg.post_merge_length, cfg.merge_length,
            copies=names, spacing=COPY_SPACING,
        )  # fmt: skip
        routes = os.path.join(self._dir, "merges.rou.xml")
        networks.merge_routes(routes, *merge_demand(cfg), copies=names)
        self.sim.start(
            [
                "-n", net, "-r", routes, "--step-length", str(cfg.sim_step),
                "--seed", str(seeds[0]), "--no-step-log", "true", "--no-warnings", "true",
                "--time-to-teleport", str(cfg.teleport_time), "--collision.action", "warn",
                "--default.action-step-length", str(cfg.sim_step),
            ]
        )  # fmt: skip
        for c in self.copies:
            c.begin()
        self._copy = {}
        self._sub_step([{}] * self.n)
        for _ in range(cfg.warmup_steps):
            self.advance([{}] * self.n, measure=False)
        for c in self.copies:
            c.t = 0

    def _sub_step(self, accels: list[dict[str, float]]) -> list[tuple[list[str], list[str], int]]:
        """One SUMO step of every copy with its ``accels``; per copy (entered, left, arrivals)."""
        cfg, sim = self.cfg, self.sim
        ids: list[str] = []
        speeds: list[float] = []
        for c, acc in zip(self.copies, accels, strict=True):
            i, s = c.commands(acc)
            ids += i
            speeds += s
        if ids:
            sim.set_speeds(ids, speeds)
        sim.step()
        present = sim.vehicle_ids()
        states = dict(
            zip(present, zip(*sim.vehicle_columns(present, ("speed", "road", "pos", "odometer"))))
        )
        per: list[dict[str, Any]] = [{} for _ in range(self.n)]
        listed: list[list[str]] = [[] for _ in range(self.n)]
        which = self.copy_of
        for vid in present:
            k = which(vid)
            per[k][vid] = states[vid]
            listed[k].append(vid)
        out = []
        for c, st, ls in zip(self.copies, per, listed, strict=True):
            entered, gone = c.take(st, ls)
            out.append([entered, gone, 0])
        departed = sim.call("simulation", "getDepartedIDList")
        humans = [v for v in departed if f".{AV_FLOW}." not in v]  # m3.human.0, m3.ramp.1...
        if humans and cfg.human_speed_mode != SUMO_DEFAULT_SPEED_MODE:
            sim.set_speed_modes(humans, cfg.human_speed_mode)
        avs = [v for row in out for v in row[0]]
        if avs:
            sim.set_speed_modes(avs, cfg.av_speed_mode)
        for vid in sim.call("simulation", "getArrivedIDList"):
            out[which(vid)][2] += 1
        if sim.collisions():
            for vid in sim.call("simulation", "getCollidingVehiclesIDList"):
                self.copies[which(vid)].collisions += 1
        if sim.teleports_started():
            for vid in sim.call("simulation", "getStartingTeleportIDList"):
                self.copies[which(vid)].teleports += 1
        return [tuple(row) for row in out]  # type: ignore[misc]

    def advance(
        self, accels: list[dict[str, float]], measure: bool = True
    ) -> list[tuple[list[str], list[str]]]:
        """One env step of every copy (MergeSimulation's ``advance``); per copy the AVs that
        entered and those that left."""
        n = self.n
        entered: list[list[str]] = [[] for _ in range(n)]
        gone: list[list[str]] = [[] for _ in range(n)]
        arrived = [0] * n
        for _ in range(self.cfg.sims_per_step):
            for k, (e, g, a) in enumerate(self._sub_step(accels)):
                gone[k] += [v for v in g if v not in entered[k]]
                entered[k] = [v for v in entered[k] if v not in g] + e
                arrived[k] += a
        if measure:
            pending = self.sim.call("simulation", "getPendingVehicles")
            self.pending = [[] for _ in range(n)]
            for vid in pending:
                self.pending[self.copy_of(vid)].append(vid)
        for k, c in enumerate(self.copies):
            c.t += 1
            if measure and c.t > self.cfg.measure_after:
                c._measure(arrived[k])
        return list(zip(entered, gone, strict=True))

    def close(self) -> None:
        self.sim.close()
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None


class MergeVectorEnv(CopiesVectorEnv):
    """``num_envs`` of Flow's merges under the centralised policy of ``rlsuite/Merge-v0``,
    stepped by one SUMO simulation.

    Copy ``i`` is a :class:`~rlsuite.apps.traffic.envs.merge.MergeEnv` episode (same
    network, demand, drivers, slots, state, action and reward; see the module docstring
    for how its random draws differ).

    States:
        ``Box(num_envs, 5 * num_rl)``: per copy, MergeEnv's state (Flow's).
    Actions:
        ``Box(num_envs, num_rl)``: per copy, each slot's acceleration.
    Rewards:
        per copy, Flow's merge reward
        (:meth:`~rlsuite.apps.traffic.envs.merge_road.MergeSimulation.reward`).
    Termination:
        All copies share one clock, so their episodes end together: truncated after
        ``horizon`` env steps. A collision or a teleport storm terminates its copy's
        episode and truncates the others'; a SUMO failure terminates every copy (the
        reason in ``info["reason"]``). Autoreset is gymnasium's next-step mode.
    """

    reason_key = "reason"

    def __init__(self, num_envs: int = 8, **kwargs: Any):
        self.cfg = cfg = MergeConfig.from_kwargs(**kwargs)
        self.core = MergeCopies(cfg, int(num_envs), name="rlsuite/MergeVec-v0")
        self._init_copies(self.core.n, *centralised_spaces(cfg))
        self._length = road_length(cfg)
        self.slots: list[list[str]] = [[] for _ in range(self.num_envs)]

    def _sumo(self) -> kernel.Simulation:
        return self.core.sim

    def _start(self) -> None:
        self.core.start(self.rngs)
        self.slots = [[] for _ in range(self.num_envs)]
        for i in range(self.num_envs):
            self._fill_slots(i)
        self._obs_last = self._obs()[0]

    def _fill_slots(self, i: int) -> None:
        c = self.core.copies[i]
        slots = [a for a in self.slots[i] if a in c.speed]
        for a in c.avs:
            if len(slots) >= self.cfg.num_rl:
                break
            if a not in slots:
                slots.append(a)
        self.slots[i] = slots

    def _obs(self) -> tuple[np.ndarray, list[dict[str, Any]]]:
        """MergeEnv's ``_obs`` for every copy."""
        vmax, length = self.cfg.human_type.max_speed, self._length
        obs = np.zeros(self.observation_space.shape, np.float32)
        all_nbs = []
        for i, c in enumerate(self.core.copies):
            nbs = {}
            for j, a in enumerate(self.slots[i]):
                n = nbs[a] = c.neighbours(a)
                obs[i, FLOW_FEATURES * j : FLOW_FEATURES * (j + 1)] = slot_state(n, vmax, length)
            all_nbs.append(nbs)
        sp = self.single_observation_space
        return np.clip(obs, sp.low, sp.high), all_nbs

    def _step(self, actions):
        cfg = self.cfg
        act = np.asarray(actions, dtype=float).reshape(self.num_envs, -1)
        if act.shape[1] != cfg.num_rl or not np.all(np.isfinite(act)):
            raise ValueError(
                f"actions must be {self.num_envs} x {cfg.num_rl} finite accelerations, got "
                f"{actions!r}"
            )
        acting = [list(s) for s in self.slots]
        try:
            self.core.advance([dict(zip(acting[i], act[i])) for i in range(self.num_envs)])
        except kernel.SimulationError as e:
            return self._failed(e)
        for i in range(self.num_envs):
            self._fill_slots(i)
        obs, nbs = self._obs()
        reward = np.array(
            [
                c.reward([s for s in self.slots[i] if s in acting[i]], nbs[i])
                for i, c in enumerate(self.core.copies)
            ]
        )
        reasons = [
            f"collision ({c.collisions} vehicles)" if c.collisions > 0
            else kernel.teleport_storm(c.teleports, cfg.max_teleports, cfg.teleport_time)
            for c in self.core.copies
        ]  # fmt: skip
        terminated = np.array([bool(r) for r in reasons])
        ends = self._ends(terminated, self.core.copies[0].t >= cfg.horizon, reasons)
        return obs, reward.astype(np.float64), *ends

    def episode_metrics(self) -> list[dict[str, float]]:
        """MergeEnv's ``episode_metrics()`` for every copy of the current episode."""
        return [c.metrics() for c in self.core.copies]

    def close_extras(self, **kwargs: Any) -> None:
        """Stop SUMO and remove the episode files (``close()`` calls this once)."""
        if getattr(self, "core", None) is not None:
            self.core.close()
