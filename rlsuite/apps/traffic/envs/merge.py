"""Flow's merge: an open one-lane highway with an on-ramp; AVs damp the waves the merge starts.

Flow's ``merge0/1/2`` benchmarks (Vinitsky et al., CoRL 2018): 2000 veh/h enter the
highway (10%, 25% or 33% of them autonomous), 100 veh/h the ramp; the ramp has the right
of way at the junction, so highway drivers brake for merging cars and the stop-and-go
waves that follow travel back up the highway. Vehicles enter and leave as they do on a
real road, so the AVs come and go during an episode.

Two envs share :class:`~rlsuite.apps.traffic.envs.merge_road.MergeSimulation` (the
road, its config and its demand live in :mod:`~rlsuite.apps.traffic.envs.merge_road`):

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
from typing import Any

import gymnasium as gym
import numpy as np
from pettingzoo import ParallelEnv

from rlsuite.apps.traffic import kernel, networks
from rlsuite.apps.traffic.envs.measured import Measured
from rlsuite.apps.traffic.envs.merge_road import (
    AV_FLOW,
    MAX_GAP,
    MergeConfig,
    MergeSimulation,
    Neighbours,
)
from rlsuite.apps.traffic.envs.ring import GAP_SCALE, SPEED_SCALE

LOCAL_FEATURES = 7
"""Length of one agent's observation in :class:`MergeMultiEnv`."""
FLOW_FEATURES = 5
"""Numbers per AV slot in :class:`MergeEnv` (Flow's state)."""


class _Episode(Measured):
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

    def series(self) -> dict[str, np.ndarray]:
        return self.core.series()


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


def centralised_spaces(cfg: MergeConfig) -> tuple[gym.spaces.Box, gym.spaces.Box]:
    """The centralised merge's observation and action spaces (:class:`MergeEnv`'s)."""
    k = cfg.num_rl
    row_low, row_high = [0.0, -1.5, 0.0, -1.5, 0.0], [1.5, 1.5, 1.0, 1.5, 1.0]
    observation_space = gym.spaces.Box(
        np.tile(np.array(row_low, np.float32), k), np.tile(np.array(row_high, np.float32), k),
        dtype=np.float32,
    )  # fmt: skip
    action_space = gym.spaces.Box(-cfg.max_decel, cfg.max_accel, shape=(k,), dtype=np.float32)
    return observation_space, action_space


def road_length(cfg: MergeConfig) -> float:
    """The network's length L (both inflows, the highway and the merge), Flow's gap scale."""
    return (
        2 * networks.MERGE_INFLOW_LENGTH
        + cfg.pre_merge_length + cfg.post_merge_length + cfg.merge_length
    )  # fmt: skip


def slot_state(n: Neighbours, vmax: float, length: float) -> list[float]:
    """Flow's five state features of one AV slot (:class:`MergeEnv`'s States)."""
    lead_v, lead_gap = (n.lead_v, n.lead_gap) if n.has_leader else (vmax, length)
    follow_gap = n.follow_gap if n.follow_gap < MAX_GAP else length
    return [
        n.v / vmax, (lead_v - n.v) / vmax, lead_gap / length,
        (n.v - n.follow_v) / vmax, follow_gap / length,
    ]  # fmt: skip


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
        self.observation_space, self.action_space = centralised_spaces(self.cfg)
        self._length = road_length(self.cfg)
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
            o[FLOW_FEATURES * i : FLOW_FEATURES * (i + 1)] = slot_state(n, vmax, length)
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
