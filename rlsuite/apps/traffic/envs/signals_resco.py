"""RESCO's signal control on any SUMO network with traffic lights (PettingZoo parallel).

RESCO's eight maps (``network=cologne8`` ...) come with RESCO's protocol as the default;
any other network is given by ``net_file`` and ``route_file``. The simulation runs
through :mod:`rlsuite.apps.traffic.kernel`, on the project's SUMO (libsumo) or on
another installed release over TraCI (``sumo_version="1.9.2"``, RESCO's).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

from rlsuite.apps.traffic import kernel, resco, sumo_versions
from rlsuite.apps.traffic.envs.config import EnvConfig
from rlsuite.apps.traffic.envs.signal_nets import actuated_programs, network_names

PROGRAMS = ("rl", "fixed", "actuated", "greedy", "maxpressure")
REWARDS = ("wait_norm", "wait", "queue")
LANE_FEATURES = 4  # approaching/28, total wait/28, queue/28, sum of speeds/20/28 (drq_norm)


@dataclass(frozen=True)
class RescoSignalsConfig(EnvConfig):
    """The RESCO signals env's keyword arguments (0 or "" = the map's RESCO value)."""

    KIND: ClassVar[str] = "signals"
    POLICY_FIELDS: ClassVar[tuple[str, ...]] = (
        "reward_fn", "max_distance", "pad_lanes", "pad_phases", "step_length", "yellow_length",
        "light_index", "wave",
    )  # fmt: skip

    network: str = ""
    """A RESCO map (cologne1, cologne3, cologne8, ingolstadt1, ingolstadt7, ingolstadt21,
    grid4x4_resco, arterial4x4); empty with ``net_file`` for your own network."""
    net_file: str = ""
    """Your own SUMO network (.net.xml) with traffic lights, instead of a map."""
    route_file: str = ""
    """Its demand (.rou.xml); with a map, replaces the map's routes."""
    begin: int = -1
    """Start of the simulated window (s); -1: the map's (0 for your own network)."""
    num_seconds: int = 0
    """Length of the window (s); 0: the map's (3600 s; also for your own network)."""
    step_length: int = 0
    """Seconds per decision, the yellow included (RESCO: 10; arterial4x4 5)."""
    yellow_length: int = 0
    """Yellow seconds when a step switches phase (RESCO: 3; arterial4x4 2)."""
    max_distance: float = 200.0
    """Detection range before the stop line (m) of the state and reward (RESCO: 200)."""
    reward_fn: str = "wait_norm"
    """``wait_norm`` (RESCO's: clip(-total wait / 224, -4, 4)), ``wait`` (-total wait) or
    ``queue`` (-stopped vehicles), over the light's detected incoming vehicles."""
    program: str = "rl"
    """Who runs the lights: ``rl`` (the agents), ``fixed`` (the network's own programs),
    ``actuated`` (SUMO's gap-actuated control of the same phases), ``greedy`` (RESCO's
    max-wave: the green phase serving the most vehicles within 50 m) or ``maxpressure``
    (RESCO's: the green phase of most queued-in minus queued-out vehicles)."""
    sumo_version: str = ""
    """``""`` or ``1.28``: the project's SUMO; another version (``1.9.2``, RESCO's) runs the
    install under ``~/.cache/rlsuite/sumo-<version>`` over TraCI."""
    backend: str = "auto"
    """kernel backend for the project's SUMO: auto, libsumo or traci."""
    pad_lanes: int = 0
    """Incoming lanes in the observation (0: the most of any light of the network), so one
    shared policy serves every light; a light with fewer lanes is padded with zeros."""
    pad_phases: int = 0
    """Actions per light (0: the most green phases of any light); an action beyond a
    light's own phases keeps its current phase, and the observation carries the mask."""
    light_index: bool = False
    """Append a one-hot of the light's place among the network's lights to its observation.
    RESCO's IDQN trains one network per light; a policy shared by lights of different
    layouts then still knows which light it serves. One network only (not ``networks=``)."""
    wave: bool = False
    """Append each incoming lane's vehicles within 50 m of the stop line (/28), queued or
    approaching: greedy's (max-wave) view, which RESCO's 200 m counts do not resolve, so a
    policy learning from greedy's demonstrations can see what greedy saw."""
    demand_scale: float = 1.0
    """Scale of the demand (SUMO's ``--scale``): below 1 SUMO drops that share of the route
    file's vehicles, above 1 it adds copies; the never-inserted vehicles of the delay are
    then the ones SUMO still holds at the window's end."""
    episode_log: str = ""
    """A file to which every finished episode appends one JSON line: its SUMO seed and
    RESCO's metrics (how a training run records its per-episode delay)."""

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        if self.network and self.network not in resco.MAPS:
            raise ValueError(
                f"unknown network {self.network!r}: use one of "
                f"{', '.join(network_names())}, or net_file=... with route_file=..."
            )
        if not self.network and not self.net_file:
            raise ValueError(
                "give a RESCO map (network=cologne1 ...) or net_file=... and route_file=..."
            )
        if self.net_file and not self.route_file:
            raise ValueError("net_file needs route_file (the demand)")
        for f in (self.net_file, self.route_file):
            if f and not os.path.exists(f):
                raise FileNotFoundError(f"signals: no such file {f}")
        if self.program not in PROGRAMS:
            raise ValueError(f"program must be one of {PROGRAMS}, got {self.program!r}")
        if self.reward_fn not in REWARDS:
            raise ValueError(f"reward_fn must be one of {REWARDS}, got {self.reward_fn!r}")
        if not 0 < self.demand_scale < float("inf"):  # NaN too
            raise ValueError(f"demand_scale must be > 0, got {self.demand_scale}")
        step, yellow = self.protocol()[2:]
        if not 0 <= yellow < step:
            raise ValueError(f"yellow_length ({yellow}) must be below step_length ({step})")
        begin, end = self.protocol()[:2]
        if end < begin + step:
            raise ValueError(f"the window [{begin}, {end}] is shorter than one step ({step} s)")
        sumo_versions.sumo_home_for(self.sumo_version)

    def protocol(self) -> tuple[int, int, int, int]:
        """(begin, end, step_length, yellow_length) with the map's RESCO values filled in."""
        m = resco.MAPS.get(self.network)
        begin = self.begin if self.begin >= 0 else (m.begin if m else 0)
        end = begin + (self.num_seconds or ((m.end - m.begin) if m else 3600))
        step = self.step_length or (m.step_length if m else 10)
        yellow = self.yellow_length or (m.yellow_length if m else 3)
        return begin, end, step, yellow

    def files(self) -> tuple[str, str]:
        if self.network:
            net, rou = resco.MAPS[self.network].files()
            return self.net_file or net, self.route_file or rou
        return self.net_file, self.route_file


@dataclass
class _Light:
    """One traffic light: its green phases (program 0), lanes and generated yellows."""

    id: str
    greens: list[tuple[float, str]]
    lanes: list[str]  # incoming controlled lanes, in link order
    outs: list[str]  # outgoing lanes
    movements: list[tuple[list[int], list[int]]]  # (in lanes, out lanes) per edge pair
    served: list[list[int]]  # per green: indices into movements with a green link
    program: list[tuple[float, str]]  # greens then yellows (RESCO's create_yellows)
    yellow: dict[tuple[int, int], int]
    reach: list[list[tuple[str, float]]] = None  # type: ignore[assignment]
    """Per incoming lane: (lane, metres from its end to the stop line) for the lane itself
    and the lanes upstream of it within detection range (set by :func:`_reach`)."""


def _reach(net_file: str, lights: list[_Light], distance: float) -> None:
    """Each light's detection area: its incoming lanes and, where they are shorter than
    ``distance``, the lanes feeding them (not those of another light), as RESCO's hand-made
    lane sets list upstream lanes in front of short ones."""
    root = ET.parse(net_file).getroot()
    length = {
        ln.get("id"): float(ln.get("length"))
        for e in root.iter("edge") if e.get("function") != "internal"
        for ln in e.iter("lane")
    }  # fmt: skip
    pred: dict[str, list[str]] = {}
    for c in root.iter("connection"):
        a = f"{c.get('from')}_{c.get('fromLane')}"
        b = f"{c.get('to')}_{c.get('toLane')}"
        if a in length and b in length:
            pred.setdefault(b, []).append(a)
    controlled = {lane for x in lights for lane in x.lanes}
    for x in lights:
        x.reach = []
        for lane in x.lanes:
            area, todo, seen = [(lane, 0.0)], [(lane, 0.0)], {lane}
            while todo:
                cur, off = todo.pop()
                nxt_off = off + length.get(cur, 0.0)
                if nxt_off >= distance:
                    continue
                for p in pred.get(cur, ()):
                    if p not in seen and p not in controlled:
                        seen.add(p)
                        area.append((p, nxt_off))
                        todo.append((p, nxt_off))
            x.reach.append(area)


def _lights(net_file: str) -> list[_Light]:
    """The lights of a network from its file: RESCO's green phases of each program 0."""
    root = ET.parse(net_file).getroot()
    links: dict[str, dict[int, tuple[str, str]]] = {}
    for c in root.iter("connection"):
        if c.get("tl") is not None:
            inc = f"{c.get('from')}_{c.get('fromLane')}"
            out = f"{c.get('to')}_{c.get('toLane')}"
            links.setdefault(c.get("tl"), {})[int(c.get("linkIndex"))] = (inc, out)
    out, seen = [], set()
    for tl in root.iter("tlLogic"):
        tid = tl.get("id")
        if tid in seen:  # program 0 is the first one
            continue
        seen.add(tid)
        greens = [
            (float(p.get("duration")), p.get("state")) for p in tl.iter("phase")
            if "y" not in p.get("state") and "g" in p.get("state").lower()
        ]  # fmt: skip
        tl_links = links.get(tid, {})
        lanes = list(dict.fromkeys(tl_links[i][0] for i in sorted(tl_links)))
        outs = list(dict.fromkeys(tl_links[i][1] for i in sorted(tl_links)))
        edge = lambda lane: lane.rsplit("_", 1)[0]  # noqa: E731
        mov_of: dict[tuple[str, str], int] = {}
        movements: list[tuple[list[int], list[int]]] = []
        link_mov = {}
        for i in sorted(tl_links):
            a, b = tl_links[i]
            k = mov_of.setdefault((edge(a), edge(b)), len(mov_of))
            if k == len(movements):
                movements.append(([], []))
            for lst, j in ((movements[k][0], lanes.index(a)), (movements[k][1], outs.index(b))):
                if j not in lst:
                    lst.append(j)
            link_mov[i] = k
        served = [
            sorted({link_mov[i] for i, ch in enumerate(st) if ch in "Gg" and i in link_mov})
            for _, st in greens
        ]
        program, yellow = list(greens), {}
        for i, (_, a) in enumerate(greens):
            for j, (_, b) in enumerate(greens):
                if i != j:
                    y = "".join("y" if x in "Gg" and z in "rs" else x for x, z in zip(a, b))
                    if y != a:
                        program.append((0.0, y))
                        yellow[(i, j)] = len(program) - 1
        if greens and lanes:
            out.append(_Light(tid, greens, lanes, outs, movements, served, program, yellow))
    return out


class RescoSignalsEnv(ParallelEnv):
    """RESCO's traffic-signal control: one agent per light of a SUMO network.

    States:
        per light (RESCO's ``drq_norm``, padded so one shared policy serves every light):
        its current green phase (one-hot over ``pad_phases``), the mask of its valid
        actions, then per incoming lane (``pad_lanes``, zeros beyond the light's own) the
        detected vehicles within ``max_distance`` m that approach (/28), their total wait
        (/28), the queued ones (/28) and their summed speed (/20/28). RESCO marks the lane
        whose index equals the phase; the one-hot says the same without that quirk.
        With ``wave``, each incoming lane's vehicles within 50 m (/28) follow; with
        ``light_index``, a one-hot of the light's place among the network's lights.
    Actions:
        per light, ``Discrete(pad_phases)``: the green phase for the next step (RESCO's
        green phases of program 0, in file order). A switch starts with ``yellow_length``
        s of yellow inside the step; an action beyond the light's phases keeps its phase
        (a plan with ``action_mask_offset`` = :attr:`action_mask_offset` never takes one).
    Rewards:
        per light, ``reward_fn`` (RESCO's ``wait_norm`` by default).
    Termination:
        none; every agent is truncated at the window's end.

    ``episode_metrics()`` gives RESCO's metrics from the episode's tripinfo: ``delay``
    (RESCO's average delay, s/veh), ``trip_time``, ``waiting_time``, ``never_inserted``,
    ``trips``, ``arrived``, and ``queue`` (mean queued vehicles per light and step).
    Each reset starts SUMO with a new seed: ``reset(seed=s)`` uses ``s``, a reset without
    one the previous seed + 1.
    """

    metadata = {"render_modes": [], "name": "rlsuite_signals_resco_v0", "is_parallelizable": True}

    def __init__(self, **kwargs: Any):
        self.cfg = RescoSignalsConfig.from_kwargs(**kwargs)
        self.net_file, self.route_file = self.cfg.files()
        self.begin, self.end, self.step_length, self.yellow_length = self.cfg.protocol()
        self.lights = _lights(self.net_file)
        _reach(self.net_file, self.lights, self.cfg.max_distance)
        if not self.lights:
            raise ValueError(f"signals: the network {self.net_file} has no traffic lights")
        self.n_lanes = self.cfg.pad_lanes or max(len(x.lanes) for x in self.lights)
        self.n_phases = self.cfg.pad_phases or max(len(x.greens) for x in self.lights)
        for x in self.lights:
            if len(x.lanes) > self.n_lanes or len(x.greens) > self.n_phases:
                raise ValueError(
                    f"light {x.id} has {len(x.lanes)} lanes and {len(x.greens)} green phases, "
                    f"more than pad_lanes={self.n_lanes} / pad_phases={self.n_phases}"
                )
        self.possible_agents = [x.id for x in self.lights]
        self.agents: list[str] = []
        dim = 2 * self.n_phases + (LANE_FEATURES + self.cfg.wave) * self.n_lanes
        self._index_at = dim  # where the light's one-hot index starts (light_index)
        dim += len(self.lights) if self.cfg.light_index else 0
        self._obs_space = spaces.Box(0.0, np.inf, (dim,), np.float32)
        self._act_space = spaces.Discrete(self.n_phases)
        self._dir = tempfile.mkdtemp(prefix="rlsuite-resco-")
        self._sim = kernel.Simulation(
            backend=self.cfg.backend,
            name="signals",
            home=sumo_versions.sumo_home_for(self.cfg.sumo_version),
        )
        self._lengths: dict[str, float] = {}  # lane -> its length in SUMO (m)
        self._seed: int | None = None
        self._episode = 0
        self._metrics: dict[str, float] | None = None
        self.render_mode = None

    @property
    def action_mask_offset(self) -> int:
        """Where each observation's mask of the light's valid actions starts (after the
        one-hot of its phase): a plan's ``action_mask_offset`` for the shared policy."""
        return self.n_phases

    def observation_space(self, agent: str) -> spaces.Box:
        return self._obs_space

    def action_space(self, agent: str) -> spaces.Discrete:
        return self._act_space

    # --- simulation ------------------------------------------------------------------

    def _sumo_args(self, seed: int) -> list[str]:
        args = [
            "-n", self.net_file, "-r", self.route_file,
            "--begin", str(self.begin), "--end", str(self.end),  # separate tokens (sumo-rl #199)
            "--seed", str(seed), "--time-to-teleport", "-1",
            "--tripinfo-output", self._tripinfo, "--tripinfo-output.write-unfinished", "true",
            "--no-step-log", "true", "--no-warnings", "true",
        ]  # fmt: skip
        if self.cfg.demand_scale != 1.0:
            args += ["--scale", f"{self.cfg.demand_scale:g}"]
        if self.cfg.program == "actuated":
            args += ["-a", actuated_programs(self.net_file, os.path.join(self._dir, "act.add.xml"))]
        return args

    def reset(self, seed: int | None = None, options: dict | None = None):
        self._finish()
        self._seed = seed if seed is not None else (0 if self._seed is None else self._seed + 1)
        self._episode += 1
        self._tripinfo = os.path.join(self._dir, f"tripinfo_{self._episode}.xml")
        try:
            self._sim.start(self._sumo_args(self._seed))
        except kernel.SimulationError as e:
            raise kernel.SimulationError(_sumo_message(str(e))) from None
        if self.cfg.program in ("rl", "greedy", "maxpressure"):
            for x in self.lights:
                program = [(d or self.yellow_length, st) for d, st in x.program]
                self._sim.set_static_program(x.id, program)
                self._sim.call("trafficlight", "setPhase", x.id, 0)
        self._waits: dict[str, dict[str, float]] = {x.id: {} for x in self.lights}
        self._last: dict[str, set[str]] = {x.id: set() for x in self.lights}
        self._queue_sum, self._n_steps = 0.0, 0
        self._metrics = None
        self.agents = list(self.possible_agents)
        self._observe(self.cfg.max_distance)
        obs = {x.id: self._obs(x) for x in self.lights}
        return obs, {a: {} for a in self.agents}

    def _observe(self, distance: float) -> None:
        """RESCO's ``Signal.observe``: per incoming lane, the detected vehicles' counts and
        waits; a vehicle's wait grows by one step once it has stopped near the light.

        The one hot loop of the env (~330 SUMO reads per 10 s step on cologne8): it reads
        through the connection itself (:meth:`kernel.Simulation.reading`), not one
        :meth:`kernel.Simulation.call` per read, whose lookup cost as much as the read, and
        sums each lane's features in Python floats (the same float64 additions in the same
        order as numpy's element updates); a failed read is the same ``SimulationError``."""
        step = self.step_length
        self._lane = {}
        with self._sim.reading("reading the lights' lanes") as conn:
            get_wait, get_speed = conn.vehicle.getWaitingTime, conn.vehicle.getSpeed
            for x in self.lights:
                waits, seen = self._waits[x.id], set()
                feats = np.zeros((len(x.lanes), LANE_FEATURES + 1), np.float64)  # + 50 m wave
                for k, area in enumerate(x.reach):
                    approaching = wait = queued = speed = wave = 0.0
                    for v, gap in self._detected(conn, area, distance):
                        seen.add(v)
                        if v in waits:
                            waits[v] += step
                        else:
                            w = get_wait(v)
                            if w > 0:
                                waits[v] = w
                        w = waits.get(v, 0.0)
                        if w > 0:
                            wait += w
                            queued += 1
                        else:
                            approaching += 1
                        speed += get_speed(v)
                        wave += gap <= 50.0
                    feats[k] = (approaching, wait, queued, speed, wave)
                for v in self._last[x.id] - seen:
                    waits.pop(v, None)
                self._last[x.id] = seen
                self._lane[x.id] = feats

    def _detected(self, conn: Any, area: list[tuple[str, float]], distance: float):
        """(vehicle, metres to the stop line) of the vehicles in ``area`` within ``distance``."""
        length, ids, pos = (
            self._lengths,
            conn.lane.getLastStepVehicleIDs,
            conn.vehicle.getLanePosition,
        )
        for lane, off in area:
            if lane not in length:  # a lane's length never changes: read once per env
                length[lane] = conn.lane.getLength(lane)
            end = off + length[lane]
            for v in ids(lane):
                gap = end - pos(v)
                if gap <= distance:
                    yield v, gap

    def _obs(self, x: _Light) -> np.ndarray:
        o = np.zeros(self._obs_space.shape, np.float32)
        ph = self._phase(x)
        if ph < len(x.greens):
            o[ph] = 1.0
        o[self.n_phases : self.n_phases + len(x.greens)] = 1.0
        f = self._lane[x.id][:, :LANE_FEATURES] / 28.0
        f[:, 3] /= 20.0
        o[2 * self.n_phases : 2 * self.n_phases + f.size] = f.reshape(-1)
        if self.cfg.wave:  # after every lane's RESCO features, padded lanes stay 0
            at = 2 * self.n_phases + LANE_FEATURES * self.n_lanes
            o[at : at + len(x.lanes)] = self._lane[x.id][:, 4] / 28.0
        if self.cfg.light_index:
            o[self._index_at + self.lights.index(x)] = 1.0
        return o

    def _phase(self, x: _Light) -> int:
        return int(self._sim.call("trafficlight", "getPhase", x.id))

    def _reward(self, x: _Light) -> float:
        f = self._lane[x.id]
        if self.cfg.reward_fn == "wait_norm":
            return float(np.clip(-f[:, 1].sum() / 224.0, -4.0, 4.0))
        if self.cfg.reward_fn == "wait":
            return float(-f[:, 1].sum())
        return float(-f[:, 2].sum())

    def program_actions(self, program: str) -> dict[str, int]:
        """The green phase each light would get now from ``program`` (``greedy`` or
        ``maxpressure``), whoever runs the lights: what that program's :meth:`step` would
        choose from this state, so a demonstrator can answer with it while a learning
        policy's env is stepped (:mod:`rlsuite.apps.traffic.demonstrators`)."""
        if program not in ("greedy", "maxpressure"):
            raise ValueError(f"program_actions runs greedy or maxpressure, not {program!r}")
        return {x.id: self._baseline_action(x, program) for x in self.lights}

    def _baseline_action(self, x: _Light, program: str) -> int:
        """RESCO's greedy (max-wave) and max-pressure over this light's green phases.

        RESCO scores a phase by a pair of movements (its hand-written ``phase_pairs``); here
        a movement is a pair of incoming and outgoing edges of the light's links, and a
        phase scores the sum of its two highest-scoring movements with a green link (summing
        all of them would favour the phase that serves the most lanes for ever). Greedy: a
        movement's vehicles within 50 m of the stop line, queued or approaching. Max-pressure:
        its queued vehicles in minus those queued on its outgoing lanes where another
        controlled light detects them (RESCO subtracts only downstream lights' queues)."""
        f = self._lane[x.id]
        if program == "greedy":
            mov = [f[i_in, 4].sum() for i_in, _ in x.movements]
        else:
            q_out = np.array([self._queue_at(lane) for lane in x.outs])
            mov = [f[i_in, 2].sum() - q_out[i_out].sum() for i_in, i_out in x.movements]
        scores = [sum(sorted((mov[k] for k in ks), reverse=True)[:2]) for ks in x.served]
        return int(np.argmax(scores))

    def _queue_at(self, lane: str) -> float:
        """Queued vehicles on ``lane`` where another controlled light detects them (RESCO
        subtracts only the downstream lights' queues), else 0."""
        for y in self.lights:
            if lane in y.lanes:
                return float(self._lane[y.id][y.lanes.index(lane), 2])
        return 0.0

    def step(self, actions: dict[str, Any]):
        if not self.agents:
            raise RuntimeError("step() after the episode ended: call reset()")
        prog = self.cfg.program
        if prog == "rl":
            missing = set(self.agents) - set(actions)
            if missing:
                raise ValueError(f"no action for traffic light(s) {sorted(missing)}")
        sim = self._sim
        nxt: dict[str, int] = {}
        if prog in ("rl", "greedy", "maxpressure"):
            for x in self.lights:
                cur = self._phase(x)
                a = int(actions[x.id]) if prog == "rl" else self._baseline_action(x, prog)
                a = a if 0 <= a < len(x.greens) else cur  # padded actions keep the phase
                nxt[x.id] = a
                if a != cur and (cur, a) in x.yellow:
                    sim.call("trafficlight", "setPhase", x.id, x.yellow[(cur, a)])
        for _ in range(self.yellow_length if nxt else 0):
            sim.step()
        for tid, a in nxt.items():
            sim.call("trafficlight", "setPhase", tid, a)
        for _ in range(self.step_length - (self.yellow_length if nxt else 0)):
            sim.step()
        self._observe(self.cfg.max_distance)
        self._queue_sum += float(sum(self._lane[x.id][:, 2].sum() for x in self.lights))
        self._n_steps += 1
        obs = {x.id: self._obs(x) for x in self.lights}
        rew = {x.id: self._reward(x) for x in self.lights}
        done = sim.time() >= self.end
        term = {a: False for a in self.agents}
        trunc = {a: done for a in self.agents}
        infos = {a: {} for a in self.agents}
        if done:
            self._finish()
            self.agents = []
        return obs, rew, term, trunc, infos

    def _finish(self) -> None:
        """Close SUMO (writing the unfinished trips) and read the episode's metrics."""
        if not self._sim.running:
            return
        pending = None
        if self.cfg.demand_scale != 1.0:  # the route file is not the demand: ask SUMO
            pending = list(self._sim.call("simulation", "getPendingVehicles"))
        self._sim.close()
        m = resco.trip_metrics(self._tripinfo, self.route_file, self.begin, self.end, pending)
        os.remove(self._tripinfo)  # one per episode: training would fill the disk
        m["queue"] = self._queue_sum / max(self._n_steps, 1) / len(self.lights)
        self._metrics = m
        if self.cfg.episode_log and self._n_steps * self.step_length >= self.end - self.begin:
            with open(self.cfg.episode_log, "a") as f:  # one short line: an atomic append
                line = {"seed": self._seed, "time": time.time(), "network": self.cfg.network, **m}
                f.write(json.dumps(line) + "\n")

    def episode_metrics(self) -> dict[str, float]:
        """RESCO's metrics of the last finished episode (the current one is closed first)."""
        self._finish()
        return dict(self._metrics or {})

    def render(self) -> None:
        return None

    def close(self) -> None:
        try:
            self._sim.close()
        finally:
            shutil.rmtree(self._dir, ignore_errors=True)


def _sumo_message(text: str) -> str:
    """SUMO's own complaint from a failed start, without the adapter's wrapping."""
    for marker in ("Error:", "error:"):
        if marker in text:
            return "SUMO rejected the input: " + text[text.index(marker) :].strip()
    return text


CONFIG = RescoSignalsConfig
"""The config class behind the env's keyword arguments."""
