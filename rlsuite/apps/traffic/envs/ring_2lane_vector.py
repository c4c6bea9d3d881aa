"""N two-lane rings in ONE SUMO simulation, as a gymnasium ``VectorEnv``.

The two-lane ring's SUMO step is cheap (~0.13 ms for 42 vehicles) and RLlib's env runner
costs ~1 ms per env step (a batch-1 forward pass, the connector pipeline, episode
bookkeeping), so one ring per runner samples at a tenth of what SUMO could give. As
:mod:`~rlsuite.apps.traffic.envs.ring_vector` does for the single-lane ring, one network
here holds N disjoint two-lane rings, each with its 41 humans and its AV, one
``simulationStep`` advances all of them, one subscription read gets every vehicle, and the
observations, lane logic and rewards are numpy over the rings. The platform builds it
through ``rlsuite/Ring2Lane-v0``'s ``vector_entry_point``.
"""

from __future__ import annotations

import math
import os
from typing import Any

import gymnasium as gym
import numpy as np

from rlsuite.apps.traffic import kernel, networks
from rlsuite.apps.traffic.envs import ring as ring_mod
from rlsuite.apps.traffic.envs.ring import AV_SPEED_MODE, GAP_SCALE, SLOW_SPEED, SPEED_SCALE
from rlsuite.apps.traffic.envs.ring_2lane import (
    AV_LANE_CHANGE_MODE,
    LANE_GAP_SCALE,
    Ring2LaneConfig,
    lane_request,
    observation_space,
)
from rlsuite.apps.traffic.envs.ring_vector import RingCopies
from rlsuite.apps.traffic.envs.vector import check_copies

MAX_RINGS = 128
"""Most rings in one simulation (a sanity bound: 128 rings are 5,376 vehicles)."""


class Ring2LaneVectorEnv(RingCopies):
    """``num_envs`` two-lane rings with one AV each, stepped by one SUMO simulation.

    Ring ``i`` behaves as a :class:`~rlsuite.apps.traffic.envs.ring_2lane.Ring2LaneEnv`
    with the same keyword arguments reset with seed ``seed + i``: the same humans, noise
    (each ring draws from its own generator, in the scalar env's order), warm-up, lane
    changes, observation, action and reward, so its trajectory is the scalar env's.

    States:
        ``Box(num_envs, 5 + 4 * lanes)``: per ring, Ring2LaneEnv's observation.
    Actions:
        ``Box(num_envs, 2)``: per ring, the AV's acceleration and lane action, as in
        Ring2LaneEnv (a lane change is a request SUMO carries out or refuses).
    Rewards:
        per ring, Flow's lane-change reward: the desired-velocity reward over the ring's
        vehicles minus ``lane_change_penalty`` per lane change of its AV.
    Termination:
        All rings share one clock, so their episodes end together: truncated after
        ``horizon`` controlled steps. A collision or a teleport storm terminates its
        ring's episode and truncates the others' at the same step; a SUMO failure
        terminates every ring (``info["termination_reason"]``). Autoreset is gymnasium's
        next-step mode (what RLlib's runners expect): the step after the episodes end
        restarts the simulation (a fresh warm-up) and returns the first observations
        with zero reward.

    ``av_driver="sumo"`` (the all-human baseline), ``record`` and ``gui`` are kept by the
    scalar env only.

    Example::

        >>> env = Ring2LaneVectorEnv(num_envs=4, warmup_steps=10, horizon=5)  # doctest: +SKIP
        >>> obs, _ = env.reset(seed=0)  # doctest: +SKIP
        >>> obs.shape  # doctest: +SKIP
        (4, 13)
    """

    workdir_prefix = "rlsuite-traffic-vec2-"

    def __init__(self, num_envs: int = 8, **kwargs: Any):
        num_envs = check_copies(num_envs, MAX_RINGS, "rings")
        self.cfg = cfg = Ring2LaneConfig.from_kwargs(**kwargs)
        for name, bad, why in (
            ("av_driver", cfg.av_driver != "policy", "av_driver='sumo' (the all-human baseline)"),
            ("record", cfg.record, "record=True (space-time diagrams)"),
            ("gui", cfg.gui, "gui=True"),
        ):
            if bad:
                raise ValueError(
                    f"{why} is kept by Ring2LaneEnv only; use rlsuite/Ring2Lane-v0 ({name})"
                )
        action_space = gym.spaces.Box(
            np.array([-cfg.max_decel, -1.0], np.float32),
            np.array([cfg.max_accel, 1.0], np.float32),
            dtype=np.float32,
        )
        self._init_copies(num_envs, observation_space(cfg), action_space)
        n, N = cfg.num_vehicles, self.num_envs
        self._name_vehicles(ring_mod.vehicle_ids(n, 1))
        self._others = np.arange(n) != self.av_slot
        self.length = float(cfg.ring_length)
        self._edge_start = {  # metres from the ring's start to each edge, as the scalar ring
            networks.ring_edge(i, e): k * self.length / 4
            for i in range(N) for k, e in enumerate(networks.RING_EDGES)
        }  # fmt: skip
        self.sim = kernel.Simulation(cfg.backend, name="rlsuite/Ring2LaneVec-v0")
        self.x = np.zeros((N, n))
        self.v = np.zeros((N, n))
        self.lane = np.zeros((N, n), dtype=int)
        self.teleporting = np.zeros((N, n), dtype=bool)
        self.t = 0  # controlled steps this episode
        self.controlled = False  # AVs are human-driven during the warm-up
        self.step_count = 0  # simulation steps this episode (warm-up included)
        self._reset_measurements()

    # --- episode ------------------------------------------------------------------

    def _reset_measurements(self) -> None:
        N, lanes = self.num_envs, self.cfg.lanes
        self.samples = np.zeros(N)
        self.speed_sum = np.zeros(N)
        self.slow = np.zeros(N)
        self.std_sum = np.zeros(N)
        self.crossings = np.zeros(N)
        self.av_speed_sum = np.zeros(N)
        self.collisions = np.zeros(N)
        self.teleports = np.zeros(N)
        self.measured_steps = 0
        self.lane_changes = np.zeros(N)
        self.lane_changes_refused = np.zeros(N)
        self.lane_change_requests = np.zeros(N)
        self.human_lane_changes = np.zeros(N)
        self.lane_speed_sum = np.zeros((N, lanes))
        self.lane_samples = np.zeros((N, lanes))
        self.av_lane_steps = np.zeros((N, lanes))
        self.last_change = np.full(N, -(10**9))  # controlled step of each AV's last change

    def _reset_info(self) -> dict[str, Any]:
        return {"ring_length": np.full(self.num_envs, self.length)}

    def _start(self) -> None:
        cfg = self.cfg
        seeds = [int(rng.integers(0, 2**31 - 1)) for rng in self.rngs]  # the scalar env's draw
        net = networks.rings_network([self.length] * self.num_envs, lanes=cfg.lanes)
        routes = os.path.join(self._workdir(), "rings_2lane.rou.xml")
        t_total = (cfg.warmup_steps + cfg.horizon + 1) * cfg.sim_step
        laps = int(math.ceil(t_total * cfg.human_type.max_speed / self.length)) + 2
        vehicles = [(v, "av" if v.startswith("av_") else "human") for v in self._names]
        types = [cfg.human_type, ring_mod.av_type(cfg.human_type)]
        lengths = [self.length] * self.num_envs
        networks.rings_routes(routes, lengths, vehicles, types, laps, cfg.bunching, cfg.lanes)
        args = ring_mod.sumo_args(net, routes, cfg, seeds[0])  # type: ignore[arg-type]
        args[args.index("--time-to-teleport") + 1] = f"{cfg.time_to_teleport:g}"
        self.sim.start(args)
        self.step_count = 0
        self.t = 0
        self.controlled = False
        self._reset_measurements()
        self.lane[:] = 0
        self._advance(measure=False)  # vehicles are inserted in the first step
        for _ in range(cfg.warmup_steps):
            self._advance(measure=False)
        for vid in self.av_ids:
            self.sim.set_speed_mode(vid, AV_SPEED_MODE)
            self.sim.set_lane_change_mode(vid, AV_LANE_CHANGE_MODE)
        self._obs_last = self._obs()

    # --- simulation ---------------------------------------------------------------

    def _read(self) -> None:
        """Every vehicle's speed, lane and position along its ring, read in one pass (a
        vehicle in a teleport is kept where it was last seen, stopped)."""
        speed, road, pos, lane = self.sim.vehicle_columns(
            self.ids, ("speed", "road", "pos", "lane")
        )
        shape = self.x.shape
        start = self._edge_start
        edge0 = np.array([start.get(r, -1.0) for r in road]).reshape(shape)
        on = edge0 >= 0
        pos_ = np.array(pos).reshape(shape)
        lane_ = np.array(lane).reshape(shape)
        self.x[on] = edge0[on] + pos_[on]
        self.v[:] = np.where(on, np.array(speed).reshape(shape), 0.0)
        self.lane[on] = lane_[on]
        self.teleporting[:] = ~on

    def _advance(self, measure: bool) -> None:
        """One simulation step of every ring: step, read, the humans' noise, measurements
        (the scalar ring's ``_advance`` over the rings)."""
        x_before, lane_before = self.x.copy(), self.lane.copy()
        self.sim.step()
        self._read()
        if self.step_count == 0:
            x_before = self.x.copy()
        self._human_noise()
        self.step_count += 1
        if self.sim.teleports_started():
            for vid in self.sim.call("simulation", "getStartingTeleportIDList"):
                self.teleports[self._ring_of(vid)] += 1
        if measure:
            self._measure(x_before, lane_before)

    def _measure(self, x_before: np.ndarray, lane_before: np.ndarray) -> None:
        self._count_collisions()
        v, n = self.v, self.cfg.num_vehicles
        self.samples += n
        self.speed_sum += v.sum(axis=1)
        self.slow += (v < SLOW_SPEED).sum(axis=1)
        self.std_sum += v.std(axis=1)
        self.crossings += (self.x < x_before - self.length / 2).sum(axis=1)
        self.measured_steps += 1
        self.av_speed_sum += v[:, self.av_slot]
        self.human_lane_changes += ((self.lane != lane_before) & self._human).sum(axis=1)
        rows = np.repeat(np.arange(self.num_envs), n)
        np.add.at(self.lane_speed_sum, (rows, self.lane.ravel()), v.ravel())
        np.add.at(self.lane_samples, (rows, self.lane.ravel()), 1)
        self.av_lane_steps[np.arange(self.num_envs), self.lane[:, self.av_slot]] += 1

    def cooldown_left(self) -> np.ndarray:
        """Per ring, the fraction of the AV's lane-change cooldown still to run."""
        cd = self.cfg.lane_change_cooldown_s
        if cd <= 0:
            return np.zeros(self.num_envs)
        since = (self.t - self.last_change) * self.cfg.sim_step
        return np.minimum(np.maximum(1.0 - since / cd, 0.0), 1.0)

    def _neighbours(self) -> np.ndarray:
        """``(rings, lanes, 4)``: per lane the gap to each AV's nearest vehicle ahead, its
        speed, the gap to the nearest behind and its speed (bumper to bumper, m and m/s);
        an empty lane reads the ring's length and the AV's own speed (Ring2LaneSimulation's
        ``neighbours``, batched)."""
        a, L = self.av_slot, self.length
        car = self.cfg.human_type.length
        xa = self.x[:, a : a + 1]
        va = self.v[:, a]
        ahead = (self.x - xa) % L
        behind = (xa - self.x) % L
        rows = np.arange(self.num_envs)
        out = np.empty((self.num_envs, self.cfg.lanes, 4))
        for lane in range(self.cfg.lanes):
            m = self._others & (self.lane == lane)
            lead = np.argmin(np.where(m, ahead, np.inf), axis=1)
            foll = np.argmin(np.where(m, behind, np.inf), axis=1)
            out[:, lane, 0] = np.maximum(ahead[rows, lead] - car, 0.0)
            out[:, lane, 1] = self.v[rows, lead]
            out[:, lane, 2] = np.maximum(behind[rows, foll] - car, 0.0)
            out[:, lane, 3] = self.v[rows, foll]
            empty = ~m.any(axis=1)
            out[empty, lane] = np.stack([np.full(empty.sum(), L), va[empty],
                                         np.full(empty.sum(), L), va[empty]], axis=1)  # fmt: skip
        return out

    def _obs(self) -> np.ndarray:
        a, rows = self.av_slot, np.arange(self.num_envs)
        v = self.v[:, a]
        own_lane = self.lane[:, a]
        nb = self._neighbours()
        own = nb[rows, own_lane]
        head = np.stack(
            [
                v / SPEED_SCALE,
                (own[:, 1] - v) / SPEED_SCALE,
                own[:, 0] / GAP_SCALE,
                own_lane / (self.cfg.lanes - 1),
                self.cooldown_left(),
            ],
            axis=1,
        )
        per_lane = np.stack(
            [
                nb[:, :, 0] / LANE_GAP_SCALE,
                (nb[:, :, 1] - v[:, None]) / SPEED_SCALE,
                nb[:, :, 2] / LANE_GAP_SCALE,
                (nb[:, :, 3] - v[:, None]) / SPEED_SCALE,
            ],
            axis=2,
        ).reshape(self.num_envs, -1)
        obs = np.concatenate([head, per_lane], axis=1).astype(np.float32)
        sp = self.single_observation_space
        return np.clip(obs, sp.low, sp.high)

    # --- gymnasium ------------------------------------------------------------------

    def _step(self, actions):
        cfg = self.cfg
        act = np.asarray(actions, dtype=float).reshape(self.num_envs, -1)
        if act.shape[1] != 2 or not np.all(np.isfinite(act)):
            raise ValueError(
                f"actions must be {self.num_envs} x 2 finite numbers (acceleration, lane "
                f"action), got {actions!r}"
            )
        try:
            changed = self._drive(act)
        except kernel.SimulationError as e:
            return self._failed(e)
        v = self.v
        target = cfg.target_velocity
        max_cost = target * math.sqrt(cfg.num_vehicles)
        reward = np.maximum(max_cost - np.linalg.norm(v - target, axis=1), 0.0) / max_cost
        reward = reward - cfg.lane_change_penalty * np.abs(changed)
        storm = self.teleports > cfg.max_teleports
        reasons = [
            f"collision ({c:g} in SUMO)" if c else
            f"teleport storm: SUMO teleported {k:g} jammed vehicle(s) (more than "
            f"max_teleports={cfg.max_teleports})" if s else ""
            for c, k, s in zip(self.collisions, self.teleports, storm, strict=True)
        ]  # fmt: skip
        ends = self._ends((self.collisions > 0) | storm, self.t >= cfg.horizon, reasons)
        return self._obs(), reward.astype(np.float64), *ends

    def _drive(self, act: np.ndarray) -> np.ndarray:
        """One controlled step of every ring (Ring2LaneSimulation's ``drive``); returns the
        lane change each AV made (+1 left, -1 right, 0)."""
        cfg = self.cfg
        a = self.av_slot
        lane_before = self.lane[:, a].copy()
        target = np.full(self.num_envs, -1)
        may = self.cooldown_left() == 0.0
        for i in range(self.num_envs):
            d = lane_request(act[i, 1], int(lane_before[i]), cfg)
            t = int(lane_before[i]) + d
            if d and may[i] and 0 <= t < cfg.lanes:
                target[i] = t
                self.lane_change_requests[i] += 1
                self.sim.change_lane(self.av_ids[i], t, cfg.sim_step)
        applied = np.clip(act[:, 0], -cfg.max_decel, cfg.max_accel)
        speeds = np.maximum(0.0, self.v[:, a] + applied * cfg.sim_step)
        self.sim.set_speeds(self.av_ids, speeds.tolist())
        self.controlled = True
        self.t += 1
        self._advance(measure=self.t > cfg.measure_after)
        lane_now = self.lane[:, a]
        asked = target >= 0
        done = asked & (lane_now == target)
        self.lane_changes += done
        self.last_change[done] = self.t
        self.lane_changes_refused += asked & ~done
        return np.sign(lane_now - lane_before)

    def episode_metrics(self) -> list[dict[str, float]]:
        """Ring2LaneEnv's ``episode_metrics()`` for every ring of the current episode (call
        it before the step that starts the next episode)."""
        steps = max(self.measured_steps, 1)
        seconds = steps * self.cfg.sim_step
        rows = []
        for i in range(self.num_envs):
            n = max(self.samples[i], 1)
            m = {
                "mean_speed": float(self.speed_sum[i] / n),
                "speed_std": float(self.std_sum[i] / steps),
                "frac_below_0_5": float(self.slow[i] / n),
                "throughput_veh_h": float(self.crossings[i] / seconds * 3600.0),
                "av_mean_speed": float(self.av_speed_sum[i] / steps),
                "ring_length": self.length,
                "collisions": float(self.collisions[i]),
            }
            for lane in range(self.cfg.lanes):
                k = self.lane_samples[i, lane]
                m[f"mean_speed_lane_{lane}"] = (
                    float(self.lane_speed_sum[i, lane] / k) if k else math.nan
                )
            av_steps = max(self.av_lane_steps[i].sum(), 1)
            m["av_left_lane_share"] = float(self.av_lane_steps[i, 1:].sum() / av_steps)
            m["lane_changes"] = float(self.lane_changes[i])
            m["lane_changes_refused"] = float(self.lane_changes_refused[i])
            m["lane_change_requests"] = float(self.lane_change_requests[i])
            m["human_lane_changes"] = float(self.human_lane_changes[i])
            m["teleports"] = float(self.teleports[i])
            rows.append(m)
        return rows
