"""The ES trainer, which is also the ``es`` backend: one :meth:`ESTrainer.train` is one generation.

One generation is the loop body of the source talk's Ray example:

* the driver draws, from its own seeded RNG, an offset into a **shared noise
  table** for every antithetic pair ``theta +- sigma * eps`` and the env seeds
  of their episodes;
* the noise table lives once in Ray's object store (``ray.put`` once); every
  worker actor (:mod:`rlsuite.platform.es.workers`) maps it and slices ``eps`` by
  offset, so only offsets, env seeds and returns travel;
* the driver turns the returns into **centred ranks**, forms the ES gradient
  ``sum_k (f+_k - f-_k) eps_k / (2 n sigma)`` minus an L2 term, and takes an
  **Adam** (or momentum SGD) step on the central parameters.

A worker that dies mid-generation is replaced and its perturbations are run again.
Checkpoints use the layout of :mod:`rlsuite.platform.checkpoints.layout`.
"""

from __future__ import annotations

import json
import math
import os
import pickle
import time
from collections import deque
from collections.abc import Mapping
from typing import Any

import numpy as np

from rlsuite.platform import backend_ray
from rlsuite.platform import envs as env_registry
from rlsuite.platform.checkpoints.layout import (
    ES_ARRAYS,
    ES_PARAMS,
    ES_STATE,
    META,
    SPACES,
    write_meta,
)
from rlsuite.platform.es.controller import STATE_FORMAT, ESController, read_state
from rlsuite.platform.es.controller import load_controller as load_es_controller
from rlsuite.platform.es.plan import ESPlan
from rlsuite.platform.es.policy import ESPolicy, RunningStat, centered_ranks
from rlsuite.platform.es.workers import Worker

NOISE_SEED = 123
"""Seed of the shared noise table (fixed, so a checkpoint resumes on the same table)."""
WORKER_START_TIMEOUT_S = 180.0
"""How long the trainer waits for its worker actors (and their envs) to come up."""


class _Adam:
    def __init__(
        self, dim: int, lr: float, beta1: float = 0.9, beta2: float = 0.999, epsilon: float = 1e-8
    ):
        self.lr, self.beta1, self.beta2, self.epsilon = lr, beta1, beta2, epsilon
        self.m, self.v, self.t = np.zeros(dim), np.zeros(dim), 0

    def step(self, grad: np.ndarray) -> np.ndarray:
        """The ascent step for gradient ``grad``."""
        self.t += 1
        self.m = self.beta1 * self.m + (1 - self.beta1) * grad
        self.v = self.beta2 * self.v + (1 - self.beta2) * np.square(grad)
        a = self.lr * math.sqrt(1 - self.beta2**self.t) / (1 - self.beta1**self.t)
        return a * self.m / (np.sqrt(self.v) + self.epsilon)

    def state(self) -> dict[str, np.ndarray]:
        return {"opt_m": self.m, "opt_v": self.v, "opt_t": np.array(self.t)}

    def load(self, s: Mapping[str, np.ndarray]) -> None:
        self.m, self.v, self.t = np.array(s["opt_m"]), np.array(s["opt_v"]), int(s["opt_t"])


class _SGD:
    def __init__(self, dim: int, lr: float, momentum: float):
        self.lr, self.momentum = lr, momentum
        self.v, self.t = np.zeros(dim), 0

    def step(self, grad: np.ndarray) -> np.ndarray:
        self.t += 1
        self.v = self.momentum * self.v + (1.0 - self.momentum) * grad
        return self.lr * self.v

    def state(self) -> dict[str, np.ndarray]:
        return {"opt_v": self.v, "opt_t": np.array(self.t)}

    def load(self, s: Mapping[str, np.ndarray]) -> None:
        self.v, self.t = np.array(s["opt_v"]), int(s["opt_t"])


class ESTrainer:
    """Runs an :class:`ESPlan`: one :meth:`train` call is one generation.

    The ``es`` backend (:class:`rlsuite.platform.backends.base.Backend`): build
    (``ESTrainer(plan)``), :meth:`train`, :meth:`save`, :meth:`restore`,
    :meth:`load_controller`, :meth:`stop`. Needs Ray (starts an embedded one if none
    is up, and stops it in :meth:`stop`).
    """

    def __init__(self, plan: ESPlan):
        import ray

        if not isinstance(plan, ESPlan):
            raise TypeError(
                f"ESTrainer needs an ESPlan (make_plan('es', ...)), got {type(plan).__name__}"
            )
        plan.validate()
        self.plan = plan
        self._started_ray = backend_ray.start()
        self.multi_agent = env_registry.spec(plan.env).multi_agent
        self._noise_ref = ray.put(
            np.random.default_rng(NOISE_SEED).standard_normal(
                plan.noise_table_size, dtype=np.float32
            )
        )
        self._noise: np.ndarray = ray.get(self._noise_ref)
        self._actor_cls = ray.remote(num_cpus=plan.cpus_per_worker, max_restarts=0)(Worker)
        self._workers: list[Any] = []
        try:
            self._workers = [self._new_worker() for _ in range(plan.num_workers)]
            try:
                spaces = ray.get(
                    [w.spaces.remote() for w in self._workers], timeout=WORKER_START_TIMEOUT_S
                )
                obs_space, act_space = spaces[0]
            except ray.exceptions.GetTimeoutError as e:
                raise RuntimeError(
                    f"{plan.num_workers} es workers ({plan.cpus_per_worker} CPU each) did not "
                    f"start within {WORKER_START_TIMEOUT_S:.0f} s; the cluster has "
                    f"{ray.available_resources().get('CPU', 0):g} CPUs free of "
                    f"{ray.cluster_resources().get('CPU', 0):g}. Lower num_workers or "
                    "cpus_per_worker, or stop what holds the CPUs."
                ) from e
            except ray.exceptions.RayError as e:
                raise RuntimeError(
                    f"the es workers could not build env {plan.env!r} with env_config="
                    f"{dict(plan.env_config)!r}: {e}"
                ) from e
            self.policy = ESPolicy(
                obs_space,
                act_space,
                plan.hidden,
                plan.activation,
                plan.recurrent,
                plan.cell_size,
                plan.action_head,
            )
            if self.policy.num_params > plan.noise_table_size:
                raise ValueError(
                    f"the policy has {self.policy.num_params} parameters but noise_table_size is "
                    f"{plan.noise_table_size}; raise noise_table_size above "
                    f"{self.policy.num_params} (10x or more is better) or shrink hidden"
                )
        except BaseException:
            self.stop()
            raise
        self._rng = np.random.default_rng(plan.seed)
        self.theta = self.policy.init_params(np.random.default_rng([plan.seed, 1]))
        dim = self.policy.num_params
        self._opt: _Adam | _SGD = (
            _Adam(dim, plan.lr) if plan.optimizer == "adam" else _SGD(dim, plan.lr, plan.momentum)
        )
        self.obs_stat = RunningStat(self.policy.obs_dim)
        if plan.init_from:
            try:
                self._init_from(plan.init_from)
            except BaseException:
                self.stop()
                raise
        self.generation = 0
        self.env_steps_total = 0
        self.episodes_total = 0
        self.time_total_s = 0.0
        self.worker_restarts_total = 0
        self.last_node_counts: dict[str, int] = {}
        """Perturbation pairs evaluated per Ray node in the last generation."""

    def _init_from(self, path: str) -> None:
        """Take the central parameters and the observation filter's sums of ES checkpoint
        ``path`` (``plan.init_from``); the optimiser state, generation and RNG stay fresh."""
        state = read_state(path)
        if state["policy"] != self.policy.architecture():
            raise ValueError(
                f"cannot start from {path}: its policy {state['policy']} differs from this "
                f"plan's {self.policy.architecture()}; use the same hidden sizes, activation, "
                "recurrent cell and observation/action sizes"
            )
        self.theta = np.load(os.path.join(path, ES_PARAMS)).astype(np.float32)
        with np.load(os.path.join(path, ES_ARRAYS)) as arr:
            self.obs_stat.count = float(arr["obs_count"])
            self.obs_stat.sum = np.array(arr["obs_sum"])
            self.obs_stat.sumsq = np.array(arr["obs_sumsq"])

    # -- workers --------------------------------------------------------------------
    def _new_worker(self) -> Any:
        from ray.util import get_current_placement_group

        p = self.plan
        opts: dict[str, Any] = {}
        if get_current_placement_group() is None:
            opts["scheduling_strategy"] = (
                "SPREAD"  # across nodes; under Tune, stay in the trial's group
            )
        return self._actor_cls.options(**opts).remote(
            env_registry.spec(p.env),
            dict(p.env_config),
            self._noise_ref,
            p.hidden,
            p.activation,
            p.recurrent,
            p.cell_size,
            p.sigma,
            p.max_episode_steps,
            p.observation_filter == "meanstd",
            p.action_head,
        )

    @property
    def workers(self) -> list[Any]:
        """The live worker actor handles (a replaced worker's new handle appears here)."""
        return list(self._workers)

    def _run_tasks(self, chunks: list[list[tuple]], args: tuple) -> tuple[list[Any], int]:
        """Run every chunk on some worker; replace dead workers and run their chunks again."""
        import ray

        queue = deque(range(len(chunks)))
        inflight: dict[Any, tuple[int, int, Any]] = {}
        load = [0] * len(self._workers)
        results: list[Any] = [None] * len(chunks)
        deaths = 0
        while queue or inflight:
            for slot, handle in enumerate(self._workers):
                while queue and load[slot] < 2:  # two in flight hides the round trip
                    ci = queue.popleft()
                    inflight[handle.run.remote(*args, chunks[ci])] = (ci, slot, handle)
                    load[slot] += 1
            ready, _ = ray.wait(list(inflight), num_returns=1)
            for ref in ready:
                ci, slot, handle = inflight.pop(ref)
                load[slot] -= 1
                try:
                    results[ci] = ray.get(ref)
                except ray.exceptions.RayActorError as e:
                    queue.appendleft(ci)
                    if self._workers[slot] is handle:  # first news of this death
                        deaths += 1
                        if deaths > self.plan.max_worker_failures:
                            raise RuntimeError(
                                f"{deaths} es workers died in generation {self.generation + 1} "
                                f"(max_worker_failures={self.plan.max_worker_failures}); last: {e}"
                            ) from e
                        try:
                            ray.kill(handle, no_restart=True)
                        except Exception:  # noqa: BLE001 - already gone
                            pass
                        self._workers[slot] = self._new_worker()
                except ray.exceptions.RayTaskError as e:
                    raise RuntimeError(
                        f"an es worker failed while running episodes of {self.plan.env!r}: "
                        f"{e.cause!r}. This is an error in the env or its config, not a lost "
                        "worker, so it is not retried."
                    ) from e
        return results, deaths

    # -- one generation ---------------------------------------------------------------
    def train(self) -> dict[str, Any]:
        """Run one generation and return its metrics."""
        import ray

        p = self.plan
        t0 = time.perf_counter()
        pairs = p.population_size // 2
        n = self.policy.num_params
        offsets = self._rng.integers(0, p.noise_table_size - n + 1, size=pairs)
        seeds = self._rng.integers(0, 2**31 - 1, size=(pairs, p.episodes_per_eval))
        if p.common_env_seeds:
            seeds[:] = seeds[0]
        eval_seeds = self._rng.integers(0, 2**31 - 1, size=p.eval_episodes)

        tasks: list[tuple] = [("pair", i, int(offsets[i]), seeds[i].tolist()) for i in range(pairs)]
        tasks += [("eval", i, [int(eval_seeds[i])]) for i in range(p.eval_episodes)]
        per_chunk = max(1, math.ceil(len(tasks) / (4 * len(self._workers))))
        chunks = [tasks[i : i + per_chunk] for i in range(0, len(tasks), per_chunk)]
        mean, std = self.obs_stat.mean_std()
        args = (ray.put(self.theta), mean, std)
        results, deaths = self._run_tasks(chunks, args)

        returns = np.zeros((pairs, 2))
        pair_stats: list[tuple | None] = [None] * pairs
        eval_returns = np.zeros(p.eval_episodes)
        steps = 0
        nodes: dict[str, int] = {}
        for node, rows in results:
            for row in rows:
                if row[0] == "pair":
                    _, i, r_pos, r_neg, st, cnt, s, sq = row
                    returns[i] = (r_pos, r_neg)
                    pair_stats[i] = (cnt, s, sq)
                    steps += st
                    nodes[node] = nodes.get(node, 0) + 1
                else:
                    _, i, r, st = row
                    eval_returns[i] = r
                    steps += st

        grad = ascent_direction(
            returns, offsets, self._noise, n, p.sigma, p.fitness_shaping, p.top_pairs
        )
        grad -= p.l2_coeff * self.theta
        step = self._opt.step(grad)
        self.theta = (self.theta + step).astype(np.float32)
        if p.observation_filter == "meanstd":
            for cnt, s, sq in pair_stats:  # in pair order: the same sums on any worker layout
                self.obs_stat.merge(cnt, s, sq)

        dt = time.perf_counter() - t0
        self.generation += 1
        self.env_steps_total += steps
        self.episodes_total += pairs * 2 * p.episodes_per_eval + p.eval_episodes
        self.time_total_s += dt
        self.worker_restarts_total += deaths
        self.last_node_counts = nodes
        m: dict[str, Any] = {
            "generation": self.generation,
            "episode_return_mean": float(returns.mean()),
            "episode_return_max": float(returns.max()),
            "episode_return_min": float(returns.min()),
            "episode_len_mean": steps / max(1, pairs * 2 * p.episodes_per_eval + p.eval_episodes),
            "eval_return_mean": float(eval_returns.mean()) if p.eval_episodes else math.nan,
            "env_steps": self.env_steps_total,
            "env_steps_this_iter": steps,
            "env_steps_per_s": steps / dt if dt > 0 else math.nan,
            "time_s": dt,
            "time_this_iter_s": dt,
            "time_total_s": self.time_total_s,
            "episodes_total": self.episodes_total,
            "grad_norm": float(np.linalg.norm(grad)),
            "update_ratio": float(np.linalg.norm(step) / (np.linalg.norm(self.theta) + 1e-12)),
            "param_norm": float(np.linalg.norm(self.theta)),
            "num_workers": len(self._workers),
            "num_nodes_used": len(nodes),
            "worker_restarts": deaths,
            "worker_restarts_total": self.worker_restarts_total,
        }
        return m

    # -- checkpoints ------------------------------------------------------------------
    def save_checkpoint(self, path: str) -> None:
        """Write everything inference and resuming need into directory ``path``."""
        os.makedirs(path, exist_ok=True)
        np.save(os.path.join(path, ES_PARAMS), self.theta)
        np.savez(
            os.path.join(path, ES_ARRAYS),
            obs_count=np.array(self.obs_stat.count),
            obs_sum=self.obs_stat.sum,
            obs_sumsq=self.obs_stat.sumsq,
            **self._opt.state(),
        )
        with open(os.path.join(path, SPACES), "wb") as f:
            pickle.dump(
                {"default_policy": (self.policy.observation_space, self.policy.action_space)}, f
            )
        state = {
            "format": STATE_FORMAT,
            "plan": self.plan.to_dict(),
            "env": self.plan.env,
            "env_config": dict(self.plan.env_config),
            "multi_agent": self.multi_agent,
            "policy": self.policy.architecture(),
            "observation_filter": self.plan.observation_filter,
            "optimizer": self.plan.optimizer,
            "generation": self.generation,
            "env_steps_total": self.env_steps_total,
            "episodes_total": self.episodes_total,
            "time_total_s": self.time_total_s,
            "worker_restarts_total": self.worker_restarts_total,
            "rng_state": self._rng.bit_generator.state,
            "noise_seed": NOISE_SEED,
            "noise_table_size": self.plan.noise_table_size,
        }
        _write_json(os.path.join(path, ES_STATE), state)
        if not os.path.exists(os.path.join(path, META)):  # training.train writes its own
            write_meta(path, self.plan, self.generation, self.env_steps_total)

    def save(self, path: str) -> None:
        """The backend's save: :meth:`save_checkpoint`."""
        self.save_checkpoint(path)

    def restore(self, path: str) -> None:
        """Continue from a checkpoint of :meth:`save_checkpoint` (same env and architecture;
        hyperparameters such as ``lr`` or ``sigma`` may differ, as PBT needs)."""
        state = read_state(path)
        if state["env"] != self.plan.env:
            raise ValueError(
                f"cannot restore {path}: it trained {state['env']!r}, this plan "
                f"is for {self.plan.env!r}"
            )
        if state["policy"] != self.policy.architecture():
            raise ValueError(
                f"cannot restore {path}: its policy {state['policy']} differs from "
                f"this plan's {self.policy.architecture()}; use the same hidden "
                "sizes, activation and env"
            )
        if state["optimizer"] != self.plan.optimizer:
            raise ValueError(
                f"cannot restore {path}: it used optimizer={state['optimizer']!r}, "
                f"this plan {self.plan.optimizer!r}"
            )
        if state["noise_table_size"] != self.plan.noise_table_size:
            raise ValueError(
                f"cannot restore {path}: noise_table_size was "
                f"{state['noise_table_size']}, this plan has {self.plan.noise_table_size}"
            )
        self.theta = np.load(os.path.join(path, ES_PARAMS)).astype(np.float32)
        with np.load(os.path.join(path, ES_ARRAYS)) as arr:
            self._opt.load(arr)
            self.obs_stat.count = float(arr["obs_count"])
            self.obs_stat.sum = np.array(arr["obs_sum"])
            self.obs_stat.sumsq = np.array(arr["obs_sumsq"])
        self._rng.bit_generator.state = state["rng_state"]
        self.generation = int(state["generation"])
        self.env_steps_total = int(state["env_steps_total"])
        self.episodes_total = int(state["episodes_total"])
        self.time_total_s = float(state["time_total_s"])
        self.worker_restarts_total = int(state["worker_restarts_total"])

    @classmethod
    def policy_files(cls) -> list[str]:
        """The parameters, the observation filter (in the arrays), the architecture and
        the spaces: everything :meth:`load_controller` reads."""
        return [ES_STATE, ES_PARAMS, ES_ARRAYS, SPACES]

    @classmethod
    def load_controller(cls, path: str, meta: Mapping[str, Any] | None = None) -> ESController:
        """The backend's loader: the central policy saved in checkpoint ``path``."""
        return load_es_controller(path)

    def controller(self) -> ESController:
        """The current central policy as a deterministic controller (in this process)."""
        mean, std = self.obs_stat.mean_std()
        return ESController(
            self.policy,
            self.theta.copy(),
            mean,
            std,
            self.plan.observation_filter == "meanstd",
            self.multi_agent,
            name=f"es-{self.plan.env}-g{self.generation}",
        )

    def stop(self) -> None:
        """Stop the workers (and Ray, if this trainer started it)."""
        backend_ray.end_actors(self._workers)
        self._workers = []
        if self._started_ray:
            from rlsuite.platform import cluster

            cluster.shutdown()
            self._started_ray = False


def ascent_direction(
    returns: np.ndarray,
    offsets: np.ndarray,
    noise: np.ndarray,
    num_params: int,
    sigma: float,
    fitness_shaping: str = "centered_ranks",
    top_pairs: int | None = None,
) -> np.ndarray:
    """The update direction from the antithetic pairs' returns, ``returns[k] = (f+, f-)``
    for the noise ``eps_k = noise[offsets[k] : offsets[k] + num_params]``.

    ``top_pairs=b`` keeps the b pairs with the highest ``max(f+, f-)`` (ARS's top
    directions). ``centered_ranks`` (Salimans et al. 2017): the ES gradient estimate
    ``sum_k (rank+_k - rank-_k) eps_k / (2 n sigma)``, ranked over the kept returns.
    ``return_std`` (ARS, Mania et al. 2018): ``sum_k (f+_k - f-_k) eps_k / (n std_f)``,
    ``std_f`` the std of the kept returns (0 when they are all equal); ``lr`` times it
    is ARS's step.
    """
    if top_pairs is not None and top_pairs < len(returns):
        keep = np.sort(np.argsort(-returns.max(axis=1), kind="stable")[:top_pairs])
        returns, offsets = returns[keep], offsets[keep]
    if fitness_shaping == "centered_ranks":
        shaped = centered_ranks(returns)
        weights = shaped[:, 0] - shaped[:, 1]
        scale = 1.0 / (2 * len(returns) * sigma)
    elif fitness_shaping == "return_std":
        weights = returns[:, 0] - returns[:, 1]
        std = float(returns.std())
        scale = 1.0 / (len(returns) * std) if std > 0 else 0.0
    else:
        raise ValueError(
            f"fitness_shaping must be 'centered_ranks' or 'return_std', got {fitness_shaping!r}"
        )
    grad = np.zeros(num_params)
    for w, off in zip(weights, offsets):
        grad += w * noise[off : off + num_params]
    return grad * scale


def _write_json(path: str, obj: Any) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=2, default=_json_default)
    os.replace(tmp, path)


def _json_default(o: Any) -> Any:
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(f"not JSON serialisable: {o!r}")
