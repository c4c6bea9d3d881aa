"""Ape-X on RLlib's pieces: RLlib's DQN algorithm with Ape-X's training step.

:class:`Apex` is RLlib's ``DQN`` (its RLModule, Learner, loss, target network, EnvRunners,
checkpoints) whose ``training_step`` runs three things at once instead of in turn:

- the env runners run :func:`rlsuite.platform.apex.actors.sample_and_push` without a
  barrier: each samples with its own epsilon and pushes prioritised n-step transitions
  to a replay shard itself; the driver sees only counts and metrics;
- :class:`Prefetcher` keeps ``prefetch_batches`` sample requests in flight to the shards
  (:mod:`rlsuite.platform.apex.replay`), so a batch is ready when the learner wants one;
- the learner (RLlib's ``LearnerGroup``, in the driver) updates on each ready batch,
  sends the new priorities to the shard that gave the batch (by its ticket, without
  waiting; one call per shard for a training step's batches) and, when a runner is about
  to start a sample call, broadcasts its weights if the last broadcast is
  ``broadcast_every`` updates old or more (so a runner never starts sampling with weights
  older than that, and no broadcast goes out that no runner takes).

:class:`ShardSet` owns the shards. A shard that dies is replaced by an empty one and
training goes on; what it held (its last reported size) and pushes that failed are
counted in ``replay_lost_transitions`` and a warning says so. Replay is not part of a
checkpoint (as with RLlib's DQN): a resumed run refills it before it learns again.

Each iteration's row (:meth:`Apex.step`) carries ``samples_per_s``, ``updates_per_s``,
``learner_utilisation`` (share of the iteration's wall time spent in updates),
``weight_staleness`` (mean learner updates between the weights a push was sampled with
and the learner's weights when it arrived), ``replay_size`` and the fault counters.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from typing import Any

import numpy as np
from ray.rllib.algorithms.dqn import DQN, DQNConfig

from rlsuite.platform.apex import actors
from rlsuite.platform.apex.plan import ApexPlan
from rlsuite.platform.apex.replay import shard_actor

log = logging.getLogger(__name__)

TAG = "apex_sample_and_push"
RESULT_KEY = "rlsuite"
"""The result-dict key of the plan's own numbers (copied into each metrics row)."""
STEP_BUDGET_S = 0.2
"""Longest run of updates in one ``training_step`` before runners and shards are polled."""
BATCHES_PER_REQUEST = 4
"""The most batches one sample request to a shard asks for."""
STATS_EVERY_S = 0.5
"""How often each shard is asked for its size."""


class ApexConfig(DQNConfig):
    """RLlib's ``DQNConfig`` with the Ape-X settings of :class:`ApexPlan`."""

    def __init__(self, algo_class: type | None = None):
        super().__init__(algo_class=algo_class or Apex)
        self.apex_settings: dict[str, Any] = {}
        # RLlib's end-of-iteration state sync calls every runner and waits, behind the
        # sample call each one is busy with (seconds per iteration); the runners' connector
        # states here are their defaults, nothing to merge (IMPALA turns it off as well)
        self._dont_auto_sync_env_runner_states = True

    def apex(self, plan: ApexPlan) -> ApexConfig:
        """Take the Ape-X fields of ``plan``."""
        self.apex_settings = dict(
            num_replay_shards=plan.num_replay_shards,
            shard_capacity=plan.buffer_size // plan.num_replay_shards,
            priority_alpha=plan.priority_alpha,
            priority_beta=plan.priority_beta,
            epsilon=plan.epsilon,
            epsilon_alpha=plan.epsilon_alpha,
            broadcast_every=plan.broadcast_every,
            prefetch_batches=plan.prefetch_batches,
            training_intensity=plan.training_intensity,
            seed=plan.seed,
        )
        return self


def apex_config(plan: ApexPlan) -> ApexConfig:
    """The RLlib config of an ``apex`` plan (the rest is :func:`optimizers.to_rllib`'s)."""
    return (
        ApexConfig()
        .training(
            **plan.dqn_training(),
            # no local buffer: replay lives in the shards
            replay_buffer_config={"type": "EpisodeReplayBuffer", "no_local_replay_buffer": True},
            epsilon=plan.epsilon,  # each runner then fixes its own (actors.set_epsilon)
        )
        .env_runners(rollout_fragment_length=plan.fragment_length)
        .reporting(
            min_time_s_per_iteration=plan.min_time_s_per_iteration,
            min_sample_timesteps_per_iteration=plan.env_steps_per_iteration,
            min_train_timesteps_per_iteration=0,
        )
        .apex(plan)
    )


class ShardSet:
    """The replay shards: their handles, sizes (counted from the runners' pushes),
    restarts and losses."""

    def __init__(self, settings: dict[str, Any]):
        self.s = settings
        n = settings["num_replay_shards"]
        self.generation = [0] * n
        self.handles = [self._start(i) for i in range(n)]
        self.sizes = [0] * n
        self.restarts = 0
        self.lost = 0
        self._stats: dict[int, Any] = {}
        self._asked = 0.0

    def _start(self, i: int) -> Any:
        seed = self.s["seed"] * 1000 + i * 100 + self.generation[i]
        return shard_actor(
            i, self.s["shard_capacity"], self.s["priority_alpha"], seed, self.generation[i]
        )

    def restart(self, i: int, lost_pushes: int = 0) -> None:
        """Replace dead shard ``i`` by an empty one; count what it held as lost."""
        import ray

        ray.kill(self.handles[i], no_restart=True)
        held = self.sizes[i]
        self.generation[i] += 1
        self.handles[i] = self._start(i)
        self.sizes[i] = 0
        self._stats.pop(i, None)
        self.restarts += 1
        self.lost += held
        log.warning(
            "replay shard %d died holding %d transitions; it was replaced by an empty "
            "shard and training goes on (counted in replay_lost_transitions)",
            i,
            held,
        )

    def took(self, i: int, generation: int, n: int) -> None:
        """Shard ``i`` (in its ``generation``) stored ``n`` items a runner pushed."""
        if generation == self.generation[i]:
            self.sizes[i] = min(self.sizes[i] + n, self.s["shard_capacity"])

    def poll(self) -> None:
        """Collect ready health reports, restart shards that died, ask again now and then."""
        import ray

        for i, ref in list(self._stats.items()):
            ready, _ = ray.wait([ref], timeout=0)
            if not ready:
                continue
            del self._stats[i]
            try:
                ray.get(ref)
            except ray.exceptions.RayActorError:
                self.restart(i)
        if time.perf_counter() - self._asked >= STATS_EVERY_S:
            self._asked = time.perf_counter()
            for i, h in enumerate(self.handles):
                if i not in self._stats:
                    self._stats[i] = h.stats.remote()

    def check(self, i: int) -> None:
        """Find out now whether shard ``i`` is alive; restart it if not."""
        import ray

        try:
            ray.get(self.handles[i].stats.remote())
        except ray.exceptions.RayActorError:
            self.restart(i)

    def stats(self) -> list[dict[str, int]]:
        """Every shard's counters (waits for them)."""
        import ray

        return ray.get([h.stats.remote() for h in self.handles])


class Prefetcher:
    """Sample requests kept in flight to the shards, oldest first: ``depth`` batches in
    all, asked for up to :data:`BATCHES_PER_REQUEST` at a time (one call, fewer round
    trips), round robin over the shards."""

    def __init__(self, shards: ShardSet, batch_size: int, beta: float, depth: int):
        self.shards, self.batch_size, self.beta = shards, batch_size, beta
        self.per_request = min(BATCHES_PER_REQUEST, max(1, depth // 2))
        self.requests = -(-depth // self.per_request)
        self.inflight: deque[tuple[Any, int, int]] = deque()
        self.ready: deque[dict[str, Any]] = deque()
        self._next = 0

    def fill(self) -> None:
        """Top the requests up, round robin over the shards that hold a batch."""
        n = len(self.shards.handles)
        while len(self.inflight) < self.requests:
            for _ in range(n):
                i, self._next = self._next, (self._next + 1) % n
                if self.shards.sizes[i] >= self.batch_size:
                    break
            else:
                return
            h = self.shards.handles[i]
            ref = h.sample_many.remote(self.batch_size, self.beta, self.per_request)
            self.inflight.append((ref, i, self.shards.generation[i]))

    def take(self) -> dict[str, Any] | None:
        """The oldest batch if one is ready (never waits); None otherwise."""
        import ray

        while not self.ready and self.inflight:
            ref, i, gen = self.inflight[0]
            if not ray.wait([ref], timeout=0)[0]:
                return None
            self.inflight.popleft()
            try:
                self.ready.extend(ray.get(ref))
            except ray.exceptions.RayActorError:
                if gen == self.shards.generation[i]:
                    self.shards.restart(i)
        return self.ready.popleft() if self.ready else None


class Apex(DQN):
    """RLlib's DQN with Ape-X's asynchronous training step (module docstring)."""

    actor_step = staticmethod(actors.sample_and_push)
    """What each runner runs per call, with the keyword arguments of :meth:`_launch_runners`
    (a sequence-replay subclass pushes sequences instead)."""

    @classmethod
    def get_default_config(cls) -> ApexConfig:
        return ApexConfig()

    def setup(self, config: Any) -> None:
        super().setup(config)
        s = self.config.apex_settings
        self.shards = ShardSet(s)
        self.prefetcher = Prefetcher(
            self.shards,
            self.config.train_batch_size_per_learner,
            s["priority_beta"],
            s["prefetch_batches"],
        )
        self.updates = 0
        self.trained = 0
        self.sampled = 0
        self._weights: list[Any] = []
        self._version = 0
        self._broadcast_at: dict[int, int] = {}
        """Learner updates at each broadcast, by broadcast number (the weights' version)."""
        self._priorities: dict[tuple[int, int], list[Any]] = {}
        """New priorities not yet sent, by (shard, generation): :meth:`_send_priorities`."""
        self._broadcast()
        self._iter = self._new_iter()

    @staticmethod
    def _new_iter() -> dict[str, float]:
        return dict(
            t0=time.perf_counter(),
            env_steps=0,
            updates=0,
            update_s=0.0,
            staleness=0.0,
            pushes=0,
            starved=0,
        )

    # -- the loop ---------------------------------------------------------------------
    def training_step(self) -> None:
        """Poll runners and shards, launch idle runners, update on every ready batch."""
        import ray

        did = self._collect_runners()
        self._launch_runners()
        self.shards.poll()
        if self._learning():
            self.prefetcher.fill()
            t_end = time.perf_counter() + STEP_BUDGET_S
            while time.perf_counter() < t_end and self._may_update():
                item = self.prefetcher.take()
                if item is None:
                    self._iter["starved"] += 1
                    break
                self._update(item)
                self.prefetcher.fill()
                did = True
            self._send_priorities()
        if not did:  # nothing ready: wait a little for anything to come back
            refs = [r for r, _, _ in self.prefetcher.inflight]
            ray.wait(refs, timeout=0.01) if refs else time.sleep(0.005)

    def _collect_runners(self) -> bool:
        from ray.rllib.utils.metrics import ENV_RUNNER_RESULTS

        results = self.env_runner_group.fetch_ready_async_reqs(tags=TAG, timeout_seconds=0)
        metrics = []
        for _, r in results:
            metrics.append(r["metrics"])
            self._iter["env_steps"] += r["env_steps"]
            self.sampled += r["env_steps"] if self._learning() else 0
            self.shards.took(r["shard"], r["generation"], r["added"])
            if r["lost"]:
                self.shards.lost += r["lost"]
                self.shards.check(r["shard"])
            self._iter["staleness"] += self.updates - self._broadcast_at.get(r["version"], 0)
            self._iter["pushes"] += 1
        if metrics:
            self.metrics.aggregate(metrics, key=ENV_RUNNER_RESULTS)
        return bool(results)

    def _launch_runners(self) -> None:
        """Start a sample call on each idle runner, with weights at most ``broadcast_every``
        updates old (broadcast now if the last broadcast is older: none goes out that no
        runner takes)."""
        s = self.config.apex_settings
        group = self.env_runner_group
        if group.num_in_flight_async_reqs(tag=TAG) >= group.num_healthy_remote_env_runners():
            return  # every runner is busy (one call in flight each)
        owed = self._owed()
        if owed is not None and owed > self._round_steps() * s["training_intensity"]:
            return  # the learner is behind: the runners wait
        if self.updates - self._broadcast_at[self._version] >= s["broadcast_every"]:
            self._broadcast()
        self.env_runner_group.foreach_env_runner_async(
            self.actor_step,
            tag=TAG,
            kwargs=dict(
                shards=list(self.shards.handles),
                weights=self._weights,
                version=self._version,
                epsilon=s["epsilon"],
                epsilon_alpha=s["epsilon_alpha"],
                n_step=self.config.n_step,
                gamma=self.config.gamma,
                **self.actor_kwargs(),
            ),
        )

    def actor_kwargs(self) -> dict[str, Any]:
        """More keyword arguments for :attr:`actor_step` (here none; a sequence-replay
        subclass passes how its runners build and prioritise sequences)."""
        return {}

    def _round_steps(self) -> int:
        c = self.config
        return c.num_env_runners * c.num_envs_per_env_runner * c.get_rollout_fragment_length()

    def _owed(self) -> float | None:
        """Transitions the learner may still replay under ``training_intensity`` (None:
        no limit)."""
        ti = self.config.apex_settings["training_intensity"]
        return None if ti is None else ti * self.sampled - self.trained

    def _may_update(self) -> bool:
        owed = self._owed()
        return owed is None or owed >= self.config.train_batch_size_per_learner

    def _learning(self) -> bool:
        from ray.rllib.utils.metrics import ENV_RUNNER_RESULTS, NUM_ENV_STEPS_SAMPLED_LIFETIME

        steps = self.metrics.peek((ENV_RUNNER_RESULTS, NUM_ENV_STEPS_SAMPLED_LIFETIME), default=0)
        return (
            steps >= self.config.num_steps_sampled_before_learning_starts
            and max(self.shards.sizes) >= self.config.train_batch_size_per_learner
        )

    def learner_data(self, item: dict[str, Any]) -> tuple[dict[str, Any], int]:
        """The ``LearnerGroup.update`` keyword arguments for a shard's sample, and how many
        items it holds: here a batch of n-step transitions for RLlib's DQN loss (a
        sequence-replay subclass builds episodes or padded sequences instead)."""
        from ray.rllib.core import DEFAULT_MODULE_ID
        from ray.rllib.core.columns import Columns
        from ray.rllib.policy.sample_batch import MultiAgentBatch, SampleBatch

        b = item["batch"]
        batch = SampleBatch(
            {
                Columns.OBS: b["obs"],
                Columns.ACTIONS: b["actions"],
                Columns.REWARDS: b["rewards"],
                Columns.NEXT_OBS: b["new_obs"],
                Columns.TERMINATEDS: b["terminateds"],
                "n_step": b["n_step"],
                "weights": item["weights"],
            }
        )
        n = len(b["actions"])
        return {"batch": MultiAgentBatch({DEFAULT_MODULE_ID: batch}, env_steps=n)}, n

    def priorities(self, td_error: np.ndarray, item: dict[str, Any]) -> np.ndarray:
        """New priorities of a sample's items from the loss's TD errors: |TD error| (a
        sequence-replay subclass mixes each sequence's max and mean)."""
        return np.abs(td_error).reshape(-1)

    def _update(self, item: dict[str, Any]) -> None:
        """One learner update on a shard's batch; its priorities go back to that shard."""
        from ray.rllib.core import DEFAULT_MODULE_ID
        from ray.rllib.utils.metrics import (
            ENV_RUNNER_RESULTS,
            LEARNER_RESULTS,
            NUM_ENV_STEPS_SAMPLED_LIFETIME,
            TD_ERROR_KEY,
        )

        data, n = self.learner_data(item)
        steps = self.metrics.peek((ENV_RUNNER_RESULTS, NUM_ENV_STEPS_SAMPLED_LIFETIME), default=0)
        t = time.perf_counter()
        results = self.learner_group.update(
            **data, timesteps={NUM_ENV_STEPS_SAMPLED_LIFETIME: steps}
        )
        td = np.asarray(results[0][DEFAULT_MODULE_ID].pop(TD_ERROR_KEY).peek())
        self._iter["update_s"] += time.perf_counter() - t
        self.metrics.aggregate(results, key=LEARNER_RESULTS)
        shard, gen = item["ticket"][0], item["ticket"][1]
        self._priorities.setdefault((shard, gen), []).append(
            (item["ticket"], self.priorities(td, item))
        )
        self.updates += 1
        self.trained += n
        self._iter["updates"] += 1

    def _send_priorities(self) -> None:
        """The new priorities of this step's batches, one call per shard that gave them
        (fire and forget; none to a shard that was replaced since)."""
        for (shard, gen), updates in self._priorities.items():
            if gen == self.shards.generation[shard]:
                self.shards.handles[shard].update_priorities_many.remote(updates)
        self._priorities = {}

    def _broadcast(self) -> None:
        """Put the learner's weights in the object store for the runners' next call."""
        import ray
        from ray.rllib.core import COMPONENT_LEARNER, COMPONENT_RL_MODULE

        state = self.learner_group.get_state(
            components=COMPONENT_LEARNER + "/" + COMPONENT_RL_MODULE, inference_only=True
        )[COMPONENT_LEARNER][COMPONENT_RL_MODULE]
        self._weights = [ray.put(state)]
        self._version += 1
        self._broadcast_at[self._version] = self.updates
        self._broadcast_at.pop(self._version - 1000, None)

    # -- results and state ------------------------------------------------------------
    def step(self) -> dict[str, Any]:
        """RLlib's iteration, with the plan's own numbers under ``rlsuite``."""
        result = super().step()
        it, now = self._iter, time.perf_counter()
        wall = max(now - it["t0"], 1e-9)
        result[RESULT_KEY] = {
            "samples_per_s": it["env_steps"] / wall,
            "updates_per_s": it["updates"] / wall,
            "learner_utilisation": it["update_s"] / wall,
            "weight_staleness": it["staleness"] / it["pushes"] if it["pushes"] else float("nan"),
            "learner_starved": it["starved"],
            "replay_size": sum(self.shards.sizes),
            "replay_shard_restarts": self.shards.restarts,
            "replay_lost_transitions": self.shards.lost,
            "learner_updates": self.updates,
        }
        self._iter = self._new_iter()
        return result

    def set_state(self, state: dict[str, Any]) -> None:
        """RLlib's restore, then the restored weights broadcast to the runners."""
        super().set_state(state)
        self._broadcast()

    def cleanup(self) -> None:
        import ray

        for h in getattr(getattr(self, "shards", None), "handles", []):
            ray.kill(h, no_restart=True)
        super().cleanup()
