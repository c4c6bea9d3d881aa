"""N Sugiyama rings in ONE SUMO simulation, as a gymnasium ``VectorEnv``.

libsumo runs one simulation per process, so RLlib cannot put several
:class:`~rlsuite.apps.traffic.envs.ring.RingEnv` in one env runner, and every env step
then pays RLlib's per-step cost (a batch-1 forward pass and the connector pipeline,
~1 ms) on its own. Here one network holds N disjoint rings, each with its own 22
vehicles and AV, and one ``simulationStep`` advances all of them; the runner's
forward pass is batched over the N AVs. The platform builds it through the env's
``vector_entry_point`` (``gym_env_vectorize_mode="vector_entry_point"`` in RLlib).
"""

from __future__ import annotations

import math
import os
from typing import Any

import gymnasium as gym
import numpy as np

from rlsuite.apps.traffic import kernel, networks
from rlsuite.apps.traffic.envs import ring as ring_mod
from rlsuite.apps.traffic.envs.ring import SLOW_SPEED, RingConfig
from rlsuite.apps.traffic.envs.vector import CopiesVectorEnv, check_copies
from rlsuite.apps.traffic.rewards import ring_reward

MAX_RINGS = 256
"""Most rings in one simulation (a sanity bound: 256 rings are 5,632 vehicles)."""


class RingCopies(CopiesVectorEnv):
    """What the single- and two-lane ring vector envs share: ring ``i``'s vehicles are
    ``r{i}.{name}``, the humans' acceleration noise, and collisions counted per ring."""

    def _name_vehicles(self, names: list[str]) -> None:
        """The ids of every ring's vehicles ``names`` (one of them ``av_0``)."""
        self._names = names
        self.av_slot = names.index("av_0")
        self.ids = [f"r{i}.{v}" for i in range(self.num_envs) for v in names]
        self.av_ids = [f"r{i}.av_0" for i in range(self.num_envs)]
        self._human = np.array([v.startswith("human_") for v in names])
        self._humans_flat = [vid for vid in self.ids if ".human_" in vid]  # ring-major

    def _human_noise(self) -> None:
        """The scalar ring's speed noise on the humans (on everyone in the warm-up), each
        ring drawing from its own generator."""
        cfg = self.cfg
        if cfg.accel_noise > 0:
            dt, n = cfg.sim_step, cfg.num_vehicles
            sd = math.sqrt(dt)
            noise = np.stack([sd * rng.normal(0.0, cfg.accel_noise, n) for rng in self.rngs])
            mask = self._human if self.controlled else np.ones(n, bool)
            self.v[:, mask] = np.maximum(0.0, self.v[:, mask] + noise[:, mask] * dt)
            ids = self._humans_flat if self.controlled else self.ids
            self.sim.set_previous_speeds(ids, self.v[:, mask].ravel().tolist())

    @staticmethod
    def _ring_of(vid: str) -> int:
        return int(str(vid).split(".", 1)[0][1:])

    def _count_collisions(self) -> None:
        if self.sim.collisions():
            for vid in self.sim.call("simulation", "getCollidingVehiclesIDList"):
                self.collisions[self._ring_of(vid)] += 1


class RingVectorEnv(RingCopies):
    """``num_envs`` rings with one AV each, stepped by one SUMO simulation.

    Ring ``i`` behaves as a :class:`~rlsuite.apps.traffic.envs.ring.RingEnv` with the
    same keyword arguments reset with seed ``seed + i``: same network shape, humans,
    noise (each ring draws from its own generator, in the scalar env's order),
    warm-up, observation, action and reward, so its trajectory is the scalar env's.

    States:
        ``Box(num_envs, 3)``: per ring, RingEnv's observation (AV speed / 15, leader's
        relative speed / 15, gap to the leader / 270); ``Box(num_envs, 5)`` with
        ``memory_s``, as in RingEnv.
    Actions:
        ``Box(num_envs, 1)``: per ring, the AV's acceleration in [-max_decel, max_accel].
    Rewards:
        per ring, ``speed_reward * mean speed of the ring's vehicles - accel_penalty * |a|``,
        ``a`` as sent, before clipping
        (:func:`~rlsuite.apps.traffic.rewards.ring_reward`, batched over the rings).
    Termination:
        All rings share one clock, so their episodes end together: truncated after
        ``horizon`` controlled steps. A collision terminates its ring's episode and
        truncates the others' at the same step (not expected: SUMO keeps the AVs safe).
        Autoreset is gymnasium's next-step mode (what RLlib's runners expect): the step
        after the episodes end restarts the simulation (new lengths when randomised,
        a fresh warm-up) and returns the first observations with zero reward.

    Ring lengths: ``ring_length`` fixed, or ``(low, high)``: each ring draws its own
    length (whole metres) at each reset and the network is rebuilt with those N
    lengths (netconvert, ~0.3 s for 32 rings, once per episode of all the rings).

    Example::

        >>> env = RingVectorEnv(num_envs=4, warmup_steps=10, horizon=5)  # doctest: +SKIP
        >>> obs, _ = env.reset(seed=0)  # doctest: +SKIP
        >>> obs.shape  # doctest: +SKIP
        (4, 3)
    """

    def __init__(self, num_envs: int = 8, **kwargs: Any):
        num_envs = check_copies(num_envs, MAX_RINGS, "rings")
        self.cfg = RingConfig.from_kwargs(**kwargs)
        if self.cfg.num_avs != 1:
            raise ValueError(
                f"RingVectorEnv controls exactly one AV per ring (num_avs={self.cfg.num_avs})"
            )
        if self.cfg.record:
            raise ValueError(
                "record=True (space-time diagrams) is kept by RingEnv only; use rlsuite/Ring-v0"
            )
        action_space = gym.spaces.Box(
            low=-self.cfg.max_decel, high=self.cfg.max_accel, shape=(1,), dtype=np.float32
        )
        self._init_copies(num_envs, ring_mod.observation_space(self.cfg), action_space)
        steps = self.cfg.memory_steps
        self.memory = ring_mod.Memory(self.num_envs, steps) if steps else None
        n = self.cfg.num_vehicles
        names = ring_mod.vehicle_ids(n, 1)
        self._name_vehicles(names)
        self.sim = kernel.Simulation(self.cfg.backend, gui=self.cfg.gui, name="rlsuite/RingVec-v0")
        self.lengths = np.zeros(self.num_envs)
        self._track_slots = [self.av_slot, (self.av_slot + 1) % n]  # the AV and its leader
        self._tracked = [
            f"r{i}.{names[j]}" for i in range(self.num_envs) for j in self._track_slots
        ]
        self.x_av = np.zeros((self.num_envs, 2))  # positions of each AV and its leader (m)
        self.v = np.zeros((self.num_envs, n))
        self._x0 = np.zeros((self.num_envs, n))
        self._subscribed = False
        self.t = 0  # controlled steps this episode
        self.controlled = False  # AVs are human-driven during the warm-up
        self.step_count = 0  # simulation steps this episode (warm-up included)
        self._reset_measurements()

    # --- episode ------------------------------------------------------------------

    def _reset_measurements(self) -> None:
        z = np.zeros(self.num_envs)
        self.samples, self.speed_sum, self.slow, self.std_sum = (
            z.copy(),
            z.copy(),
            z.copy(),
            z.copy(),
        )
        self.av_speed_sum, self.collisions = z.copy(), z.copy()
        self.measured_steps = 0
        self._laps_start: np.ndarray | None = None
        self._laps_before: np.ndarray | None = None

    def _reset_info(self) -> dict[str, Any]:
        return {"ring_length": self.lengths.copy()}

    def _start(self) -> None:
        cfg = self.cfg
        if self.memory is not None:
            self.memory.reset()
        lo, hi = cfg.length_range
        seeds = []
        for i, rng in enumerate(self.rngs):  # the scalar env's draws, in its order
            self.lengths[i] = (
                float(rng.integers(int(math.ceil(lo)), int(math.floor(hi)) + 1)) if hi > lo else lo
            )
            seeds.append(int(rng.integers(0, 2**31 - 1)))
        lengths = [float(v) for v in self.lengths]
        net = networks.rings_network(lengths, None if hi == lo else self._workdir())
        routes = os.path.join(self._workdir(), "rings.rou.xml")
        t_total = (cfg.warmup_steps + cfg.horizon + 1) * cfg.sim_step
        laps = int(math.ceil(t_total * cfg.human_type.max_speed / min(lengths))) + 2
        vehicles = [(v, "av" if v.startswith("av_") else "human") for v in self._names]
        networks.rings_routes(
            routes,
            lengths,
            vehicles,
            [cfg.human_type, ring_mod.av_type(cfg.human_type)],
            laps,
            cfg.bunching,
        )
        self.sim.start(ring_mod.sumo_args(net, routes, cfg, seeds[0]))
        self._subscribed = False
        self.step_count = 0
        self.t = 0
        self.controlled = False
        self._reset_measurements()
        self._advance(measure=False)  # vehicles are inserted in the first step
        for vid in self.av_ids:
            self.sim.set_speed_mode(vid, ring_mod.AV_SPEED_MODE)
        for _ in range(cfg.warmup_steps):
            self._advance(measure=False)
        self._obs_last = self._obs()

    # --- simulation ---------------------------------------------------------------

    def _read(self) -> None:
        """Speeds of every vehicle; positions (start + odometer: one lane, no overtaking,
        edges exactly L/4 long) of each AV and its leader only, which is all the
        observation needs (laps for the throughput come from all odometers, read at the
        start and end of the measured part)."""
        sp, di = kernel.VAR_SPEED, kernel.VAR_DISTANCE
        with self.sim.reading("reading vehicle states") as conn:
            if not self._subscribed:
                ids = conn.vehicle.getIDList()
                if len(ids) != len(self.ids):
                    raise kernel.SimulationError(
                        f"{len(ids)} of {len(self.ids)} vehicles are in the ring simulation"
                    )
                tracked = set(self._tracked)
                for vid in self.ids:
                    conn.vehicle.subscribe(vid, (sp, di) if vid in tracked else (sp,))
                self._subscribed = True
                # New subscriptions answer from the next step: read this one directly.
                speeds = [conn.vehicle.getSpeed(v) for v in self.ids]
                dist = [conn.vehicle.getDistance(v) for v in self._tracked]
            else:
                res = conn.vehicle.getAllSubscriptionResults()
                if len(res) != len(self.ids):
                    raise kernel.SimulationError("vehicles are missing from the ring simulation")
                speeds = [res[v][sp] for v in self.ids]
                dist = [res[v][di] for v in self._tracked]
        self.v.flat[:] = speeds
        d = np.asarray(dist, dtype=float).reshape(self.num_envs, 2)
        self.x_av[:] = (self._x0[:, self._track_slots] + d) % self.lengths[:, None]

    def _odometers(self) -> np.ndarray:
        with self.sim.reading("vehicle.getDistance") as conn:
            get = conn.vehicle.getDistance
            d = [get(v) for v in self.ids]
        return np.asarray(d, dtype=float).reshape(self.num_envs, -1)

    def _laps(self, odometers: np.ndarray) -> np.ndarray:
        """Times each vehicle has passed the start of its ring (the throughput's point)."""
        return np.floor((self._x0 + odometers) / self.lengths[:, None] + 1e-9)

    def _start_positions(self) -> np.ndarray:
        n = self.cfg.num_vehicles
        spacing = (self.lengths - self.cfg.bunching) / n
        return spacing[:, None] * np.arange(n)[None, :]

    def _advance(self, measure: bool) -> None:
        if self.step_count == 0:
            self._x0 = self._start_positions()
        self.sim.step()
        self._read()
        if self._human.any():
            self._human_noise()
        self.step_count += 1
        if measure:
            self._measure()

    def _measure(self) -> None:
        if self.measured_steps == 0:  # laps are counted from the state before this step
            self._laps_start = self._laps_before
        self._count_collisions()
        self.samples += self.v.shape[1]
        self.speed_sum += self.v.sum(axis=1)
        self.slow += (self.v < SLOW_SPEED).sum(axis=1)
        self.std_sum += self.v.std(axis=1)
        self.av_speed_sum += self.v[:, self.av_slot]
        self.measured_steps += 1

    def _obs(self) -> np.ndarray:
        i, lead = self._track_slots
        v, vl = self.v[:, i], self.v[:, lead]
        gap = (self.x_av[:, 1] - self.x_av[:, 0]) % self.lengths - self.cfg.human_type.length
        obs = np.stack(
            [
                v / ring_mod.SPEED_SCALE,
                (vl - v) / ring_mod.SPEED_SCALE,
                np.maximum(gap, 0.0) / ring_mod.GAP_SCALE,
            ],
            axis=1,
        ).astype(np.float32)
        if self.memory is not None:
            mem = self.memory.push(v, np.maximum(gap, 0.0)).astype(np.float32)
            obs = np.concatenate([obs, mem], axis=1)
        return np.clip(obs, self.single_observation_space.low, self.single_observation_space.high)

    # --- gymnasium ------------------------------------------------------------------

    def _step(self, actions):
        cfg = self.cfg
        a = np.asarray(actions, dtype=float).reshape(self.num_envs, -1)[:, 0]
        if not np.all(np.isfinite(a)):
            raise ValueError(f"actions must be finite accelerations, got {actions!r}")
        applied = np.clip(a, -cfg.max_decel, cfg.max_accel)
        target = np.maximum(0.0, self.v[:, self.av_slot] + applied * cfg.sim_step)
        for vid, speed in zip(self.av_ids, target, strict=True):
            self.sim.set_speed(vid, float(speed))
        self.controlled = True
        self.t += 1
        if self.t == cfg.measure_after + 1:
            self._laps_before = self._laps(self._odometers())
        self._advance(measure=self.t > cfg.measure_after)
        reward = ring_reward(self.v, a[:, None], cfg.speed_weight(self.lengths), cfg.accel_penalty)
        terminated, truncated, info = self._ends(self.collisions > 0, self.t >= cfg.horizon)
        return self._obs(), reward.astype(np.float64), terminated, truncated, info

    def episode_metrics(self) -> list[dict[str, float]]:
        """RingEnv's ``episode_metrics()`` for every ring of the current episode (call it
        before the step that starts the next episode)."""
        steps = max(self.measured_steps, 1)
        seconds = steps * self.cfg.sim_step
        if self._laps_start is None or not self.sim.running:
            crossings = np.zeros(self.num_envs)
        else:
            crossings = (self._laps(self._odometers()) - self._laps_start).sum(axis=1)
        return [
            {
                "mean_speed": float(self.speed_sum[i] / max(self.samples[i], 1)),
                "speed_std": float(self.std_sum[i] / steps),
                "frac_below_0_5": float(self.slow[i] / max(self.samples[i], 1)),
                "throughput_veh_h": float(crossings[i] / seconds * 3600.0),
                "av_mean_speed": float(self.av_speed_sum[i] / steps),
                "ring_length": float(self.lengths[i]),
                "collisions": float(self.collisions[i]),
            }
            for i in range(self.num_envs)
        ]
