"""The ``async_grad`` backend: runners and parameter-server shards on Ray, and their metrics.

:class:`AsyncGradBackend` starts ``num_shards`` :class:`~.param_server.ParamShard`
actors holding the network's flat parameters in slices and ``num_runners``
:class:`~.workers.GradientRunner` actors. The driver is not on the gradients' path:
it keeps one :meth:`~.workers.GradientRunner.work` call in flight per runner and, per
:meth:`~AsyncGradBackend.train`, collects their env steps and episodes until
``env_steps_per_iteration`` steps have come in, then reads the shards' counters
(updates, staleness, drops, busy time).

Faults:

* a runner that dies is replaced by a new actor (``runner_restarts_total``), up to
  ``max_runner_restarts``;
* a shard that dies is replaced, and **every** shard goes back to the state of the last
  checkpoint (or the initial weights before the first): the slices stay one consistent
  vector. The updates since are rolled back and counted (``updates_rolled_back_total``),
  gradients computed before are dropped (``dropped_epoch``), and training goes on, up
  to ``max_shard_restarts``; then the run stops with an error.

A checkpoint (:meth:`~AsyncGradBackend.save`) waits for the calls in flight, so the
shards' slices are one consistent vector, and writes every shard's slice and
optimiser state (:data:`STATE`), the network as an RLlib module (read by the ``rllib``
backend's controller) and the spaces. A runner's replay memory is not saved: after a
resume each runner fills a new one.
"""

from __future__ import annotations

import logging
import math
import os
import pickle
import time
from collections import deque
from collections.abc import Mapping
from typing import Any

import numpy as np

from rlsuite.platform import envs as env_registry
from rlsuite.platform.async_grad import model
from rlsuite.platform.async_grad.param_server import ParamShard
from rlsuite.platform.async_grad.plan import AsyncGradPlan
from rlsuite.platform.async_grad.workers import GradientRunner
from rlsuite.platform.backends.rllib import RL_MODULE_DIR, RLlibBackend, RLModuleController
from rlsuite.platform.checkpoints.layout import META, OBS_FILTER, SPACES, write_meta

logger = logging.getLogger(__name__)

STATE = "async_grad_state.pt"
"""A checkpoint's shards (slice, optimiser state, version each) and counters (torch.save)."""
STATE_FORMAT = 1
"""Version of :data:`STATE`'s format."""
EPISODES_SMOOTHED = 20
"""``episode_return_mean`` is over the last this many episodes (RLlib's smoothing)."""
SHARD_PING_TIMEOUT_S = 30.0
"""How long a shard may take to answer before it counts as dead."""

_COUNTERS = ("received", "applied", "dropped", "dropped_epoch", "staleness_sum", "staleness_n")


class AsyncGradBackend:
    """Runs an :class:`AsyncGradPlan`; one :meth:`train` is one iteration (see the module)."""

    def __init__(self, plan: AsyncGradPlan):
        import ray
        import torch

        from rlsuite.platform import cluster

        if not isinstance(plan, AsyncGradPlan):
            raise TypeError(
                f"AsyncGradBackend needs an AsyncGradPlan (make_plan('async_grad', ...)), "
                f"got {type(plan).__name__}"
            )
        plan.validate()
        self.plan = plan
        self._started_ray = not ray.is_initialized()
        if self._started_ray:
            cluster.init()
        self.spec = env_registry.spec(plan.env)
        torch.manual_seed(plan.seed)
        self._module = model.module_for(plan)
        flat = model.get_flat(self._module)
        self.bounds = model.shard_bounds(len(flat), plan.num_shards)
        self.epoch = 0
        self._snapshot = [
            {"params": flat[lo:hi].copy(), "optimizer": None, "version": 0}
            for lo, hi in self.bounds
        ]
        """Each shard's state at the last checkpoint (or at the start): where a shard
        restart puts the shards back."""
        self._shard_cls = ray.remote(num_cpus=plan.cpus_per_shard, max_restarts=0)(ParamShard)
        self._runner_cls = ray.remote(num_cpus=plan.cpus_per_runner, max_restarts=0)(GradientRunner)
        self.shards: list[Any] = []
        self.runners: list[Any] = []
        self._inflight: dict[Any, int] = {}
        self._incarnation = [0] * plan.num_runners
        self.gradients_by_runner = [0] * plan.num_runners
        """Gradients each runner slot computed in this process (a replaced runner's count
        goes on in its slot)."""
        self.env_steps_total = 0
        self.gradients_total = 0
        self.runner_restarts_total = 0
        self.shard_restarts_total = 0
        self.updates_rolled_back_total = 0
        self.dropped_total = 0
        self.episodes: deque[tuple[float, int]] = deque(maxlen=EPISODES_SMOOTHED)
        self._acc = _Accumulator()
        self._carried: dict[str, float] = {}
        """Shard counts since the last row, kept when the shards were put back mid-row."""
        try:
            self.shards = [self._new_shard(i, self._snapshot[i]) for i in range(plan.num_shards)]
            self.runners = [self._new_runner(i) for i in range(plan.num_runners)]
            self._last_stats = ray.get([s.stats.remote() for s in self.shards])
            try:
                ray.get([r.__ray_ready__.remote() for r in self.runners])
            except ray.exceptions.RayActorError as e:
                raise RuntimeError(
                    f"the async_grad runners could not start on env {plan.env!r} with "
                    f"env_config={dict(plan.env_config)!r}: {e}"
                ) from e
        except BaseException:
            self.stop()
            raise
        self._t_last = time.perf_counter()

    # -- actors ---------------------------------------------------------------------
    def _new_shard(self, i: int, state: dict[str, Any]) -> Any:
        p = self.plan
        bundle = 1 + p.num_runners + i if p.cpus_per_shard else None
        return self._shard_cls.options(**_placement(bundle)).remote(
            i, state, p.optimizer, p.lr, p.max_staleness, p.gradients_per_update, self.epoch
        )

    def _new_runner(self, slot: int) -> Any:
        seed = [self.plan.seed, slot, self._incarnation[slot]]
        self._incarnation[slot] += 1
        return self._runner_cls.options(**_placement(1 + slot)).remote(
            self.plan, self.spec, self.shards, self.bounds, self.epoch, seed
        )

    def _launch(self) -> None:
        busy = set(self._inflight.values())
        for slot, runner in enumerate(self.runners):
            if slot not in busy:
                self._inflight[runner.work.remote(self.plan.gradients_per_call)] = slot

    def _collect(self, refs: list[Any]) -> None:
        """Take the finished work calls ``refs``: count what they did; replace a dead
        runner; put the shards back when one died."""
        import ray

        lost_shard = False
        for ref in refs:
            slot = self._inflight.pop(ref)
            try:
                res = ray.get(ref)
            except ray.exceptions.RayActorError as e:
                self.runner_restarts_total += 1
                if self.runner_restarts_total > self.plan.max_runner_restarts:
                    raise RuntimeError(
                        f"{self.runner_restarts_total} async_grad runners died "
                        f"(max_runner_restarts={self.plan.max_runner_restarts}); last: {e}"
                    ) from e
                logger.warning("async_grad runner %d died; starting a new one", slot)
                self.runners[slot] = self._new_runner(slot)
                continue
            except ray.exceptions.RayTaskError as e:
                raise RuntimeError(
                    f"an async_grad runner failed on env {self.plan.env!r}: {e.cause!r}. This "
                    "is an error in the env, its config or the loss, not a lost actor, so it "
                    "is not retried."
                ) from e
            self._acc.add(res)
            self.gradients_by_runner[slot] += res["gradients"]
            self.episodes.extend(res["episodes"])
            lost_shard |= res["lost_shard"]
        if lost_shard:
            self._recover_shards()

    def _recover_shards(self) -> None:
        """Replace dead shards and put every shard back to the last checkpoint's state."""
        import ray

        dead = []
        for i, shard in enumerate(self.shards):
            try:
                ray.get(shard.ping.remote(), timeout=SHARD_PING_TIMEOUT_S)
            except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError):
                dead.append(i)
        if not dead:
            return
        self.shard_restarts_total += len(dead)
        if self.shard_restarts_total > self.plan.max_shard_restarts:
            raise RuntimeError(
                f"parameter-server shard(s) {dead} died, {self.shard_restarts_total} shard "
                f"deaths in this run (max_shard_restarts={self.plan.max_shard_restarts}); "
                "resume the run from its last checkpoint (--resume)"
            )
        self._restore_shards(self._snapshot, dead)
        logger.warning(
            "async_grad: parameter-server shard(s) %s died; all shards are back at the last "
            "checkpoint (update %d), %d updates rolled back",
            dead,
            self._snapshot[0]["version"],
            self.updates_rolled_back_total,
        )

    def _restore_shards(self, states: list[dict[str, Any]], dead: list[int] | None = None) -> None:
        """Every shard to ``states`` in a new epoch (new actors for ``dead``); the runners
        get the handles and pull before their next push."""
        import ray

        self._carry_counts([i for i in range(len(self.shards)) if i not in (dead or [])])
        self.epoch += 1
        rolled = []
        for i, shard in enumerate(self.shards):
            if i in (dead or []):
                try:
                    ray.kill(shard, no_restart=True)
                except Exception:  # noqa: BLE001 - already gone
                    pass
                self.shards[i] = self._new_shard(i, states[i])
            else:
                rolled.append(shard.load_state.remote(states[i], self.epoch))
        rolled_back = ray.get(rolled)
        self.updates_rolled_back_total += max(rolled_back, default=0)
        self._last_stats = ray.get([s.stats.remote() for s in self.shards])
        for r in self.runners:
            r.set_shards.remote(self.shards, self.bounds, self.epoch)

    def _carry_counts(self, live: list[int]) -> None:
        """Keep the live shards' counts since the last row before their counters restart
        (a dead shard's since then are lost with it)."""
        import ray

        stats = ray.get([self.shards[i].stats.remote() for i in live])
        for i, st in zip(live, stats):
            last = self._last_stats[i]
            for k in (*_COUNTERS, "busy_s"):
                self._carried[k] = self._carried.get(k, 0) + st[k] - last[k]
            self._carried["staleness_max"] = max(
                self._carried.get("staleness_max", 0), st["staleness_max"]
            )

    # -- one iteration ----------------------------------------------------------------
    def train(self) -> dict[str, Any]:
        """Let the runners work until ``env_steps_per_iteration`` steps came in; one row.
        Its time is the wall time since the last row (a checkpoint's included), so the
        rates are over all the time the run took."""
        import ray

        t0 = self._t_last
        while self._acc.env_steps < self.plan.env_steps_per_iteration:
            self._launch()
            ready, _ = ray.wait(list(self._inflight), num_returns=1)
            self._collect(ready)
        self._launch()
        self._t_last = time.perf_counter()
        dt = self._t_last - t0
        try:
            stats = ray.get([s.stats.remote() for s in self.shards])
        except ray.exceptions.RayActorError:
            self._recover_shards()
            stats = list(self._last_stats)
        return self._row(self._acc.take(), stats, dt)

    def _row(self, acc: dict[str, Any], stats: list[dict[str, Any]], dt: float) -> dict[str, Any]:
        carried, self._carried = self._carried, {}
        d = {
            k: carried.get(k, 0) + sum(s[k] - last[k] for s, last in zip(stats, self._last_stats))
            for k in _COUNTERS
        }
        busy = carried.get("busy_s", 0.0) + sum(
            s["busy_s"] - last["busy_s"] for s, last in zip(stats, self._last_stats)
        )
        self._last_stats = stats
        n_shards = len(self.shards)
        self.env_steps_total += acc["env_steps"]
        self.gradients_total += acc["gradients"]
        self.dropped_total += d["dropped"] + d["dropped_epoch"]
        eps = list(self.episodes)
        updates = d["applied"] / n_shards
        row: dict[str, Any] = {
            "episode_return_mean": float(np.mean([e[0] for e in eps])) if eps else math.nan,
            "episode_len_mean": float(np.mean([e[1] for e in eps])) if eps else math.nan,
            "env_steps_this_iter": int(acc["env_steps"]),
            "time_this_iter_s": dt,
            "samples_per_s": acc["env_steps"] / dt if dt > 0 else math.nan,
            "gradients_this_iter": int(acc["gradients"]),
            "updates_this_iter": updates,
            "updates_per_s": updates / dt if dt > 0 else math.nan,
            "learner_utilisation": busy / (n_shards * dt) if dt > 0 else math.nan,
            "staleness_mean": d["staleness_sum"] / d["staleness_n"]
            if d["staleness_n"]
            else math.nan,
            "staleness_max": max(
                carried.get("staleness_max", 0), *(s["staleness_max"] for s in stats)
            ),
            "dropped_gradients": int(d["dropped"] + d["dropped_epoch"]),
            "dropped_stale": int(d["dropped"]),
            "dropped_epoch": int(d["dropped_epoch"]),
            "dropped_gradients_total": self.dropped_total,
            "episodes_this_iter": int(acc["episodes"]),
            "num_runners": len(self.runners),
            "num_shards": n_shards,
            "runner_restarts_total": self.runner_restarts_total,
            "shard_restarts_total": self.shard_restarts_total,
            "updates_rolled_back_total": self.updates_rolled_back_total,
            "update_version": max(s["version"] for s in stats),
        }
        row.update({f"learner/{k}": v for k, v in acc["stats"].items()})
        return row

    # -- checkpoints ----------------------------------------------------------------
    def _drain(self) -> None:
        """Wait for every work call in flight (their counts go into the next row)."""
        import ray

        while self._inflight:
            ready, _ = ray.wait(list(self._inflight), num_returns=len(self._inflight))
            self._collect(ready)

    def save(self, path: str) -> None:
        """Every shard's slice and optimiser state, the counters, the module, the spaces."""
        import ray
        import torch

        self._drain()
        try:
            states = ray.get([s.get_state.remote() for s in self.shards])
        except ray.exceptions.RayActorError:
            self._recover_shards()
            states = ray.get([s.get_state.remote() for s in self.shards])
        os.makedirs(path, exist_ok=True)
        model.set_flat(self._module, np.concatenate([s["params"] for s in states]))
        model.save_module(self._module, os.path.join(path, RL_MODULE_DIR))
        torch.save(
            {
                "format": STATE_FORMAT,
                "num_params": int(self.bounds[-1][1]),
                "bounds": self.bounds,
                "shards": states,
                "counters": self._counters(),
            },
            os.path.join(path, STATE),
        )
        with open(os.path.join(path, SPACES), "wb") as f:
            pickle.dump(env_registry.spaces(self.plan.env, self.plan.env_config), f)
        if not os.path.exists(os.path.join(path, META)):  # training.train writes its own
            write_meta(path, self.plan, 0, self.env_steps_total)
        self._snapshot = states

    def _counters(self) -> dict[str, Any]:
        keys = (
            "env_steps_total",
            "gradients_total",
            "runner_restarts_total",
            "shard_restarts_total",
            "updates_rolled_back_total",
            "dropped_total",
        )
        return {k: getattr(self, k) for k in keys}

    def restore(self, path: str) -> None:
        """Continue from checkpoint ``path``: the shards' slices and optimiser states (the
        plan's hyperparameters, ``lr`` say, may differ, as PBT needs)."""
        import torch

        f = os.path.join(path, STATE)
        if not os.path.exists(f):
            raise FileNotFoundError(f"{path} is not an async_grad checkpoint (no {STATE})")
        state = torch.load(f, weights_only=False)
        if state.get("format") != STATE_FORMAT:
            raise ValueError(
                f"{path}: async_grad state format {state.get('format')!r} is not {STATE_FORMAT}"
            )
        n = int(self.bounds[-1][1])
        if state["num_params"] != n:
            raise ValueError(
                f"cannot restore {path}: its network has {state['num_params']} parameters, this "
                f"plan's {n}; use the same hidden sizes, activation, loss and env"
            )
        flat = np.concatenate([s["params"] for s in state["shards"]])
        old = state["shards"]
        # the saved optimiser state is per saved shard; with another num_shards the
        # slices are cut anew and the optimiser starts fresh
        if [tuple(b) for b in state["bounds"]] != list(self.bounds):
            logger.warning(
                "restoring %s with %d shards instead of %d: the optimiser state starts fresh",
                path,
                len(self.bounds),
                len(old),
            )
            old = [
                {"params": flat[lo:hi].copy(), "optimizer": None, "version": 0}
                for lo, hi in self.bounds
            ]
        self._drain()
        self._snapshot = old
        self._restore_shards(old)
        for k, v in state["counters"].items():
            setattr(self, k, v)
        self._t_last = time.perf_counter()

    @classmethod
    def policy_files(cls) -> list[str]:
        """The module (RLlib's layout) and the spaces: what the controller reads."""
        return [f for f in RLlibBackend.policy_files() if f != OBS_FILTER]

    @classmethod
    def load_controller(cls, path: str, meta: Mapping[str, Any]) -> Any:
        """The saved module acting deterministically: the ``rllib`` backend's controller."""
        return RLModuleController(path, dict(meta))

    def stop(self) -> None:
        """End the runners and the shards (and Ray, if this backend started it)."""
        import ray

        closing = []
        for r in self.runners:
            try:
                closing.append(r.close.remote())
            except Exception:  # noqa: BLE001 - already dead
                pass
        if closing:
            ray.wait(closing, num_returns=len(closing), timeout=10)
        for actor in [*self.runners, *self.shards]:
            try:
                ray.kill(actor, no_restart=True)
            except Exception:  # noqa: BLE001 - already dead
                pass
        self.runners, self.shards, self._inflight = [], [], {}
        if self._started_ray:
            from rlsuite.platform import cluster

            cluster.shutdown()
            self._started_ray = False


def _placement(bundle: int | None) -> dict[str, Any]:
    """Inside a placement group (a Tune trial's, sized by ``plan.placement_bundles()``), the
    actor's own bundle: left to Ray, a shard could take part of a runner's bundle and leave
    the runner waiting forever. Outside one, nothing."""
    from ray.util import get_current_placement_group
    from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

    pg = get_current_placement_group()
    if pg is None or bundle is None:
        return {}
    return {
        "scheduling_strategy": PlacementGroupSchedulingStrategy(
            pg, placement_group_bundle_index=bundle
        )
    }


class _Accumulator:
    """What the finished work calls did since the last row."""

    def __init__(self) -> None:
        self.env_steps = 0
        self.gradients = 0
        self.episodes = 0
        self.sums: dict[str, float] = {}
        self.n = 0

    def add(self, res: dict[str, Any]) -> None:
        self.env_steps += res["env_steps"]
        self.gradients += res["gradients"]
        self.episodes += len(res["episodes"])
        if res["gradients"]:
            self.n += 1
            for k, v in res["stats"].items():
                self.sums[k] = self.sums.get(k, 0.0) + v

    def take(self) -> dict[str, Any]:
        out = {
            "env_steps": self.env_steps,
            "gradients": self.gradients,
            "episodes": self.episodes,
            "stats": {k: v / max(1, self.n) for k, v in self.sums.items()},
        }
        self.__init__()
        return out
