"""The QT-Opt trainer, which is also the ``qt_opt`` backend: one :meth:`QTOptTrainer.train`
is one iteration.

* **Offline phase** (``offline_updates`` > 0): the learner takes
  ``updates_per_iteration`` gradient steps per iteration on the fixed dataset alone.
* **Online phase**: every runner actor has one sample request in flight; as each
  returns, its transitions go into replay, it is sent the newest weights and samples
  on, and the learner takes ``updates_per_env_step`` gradient steps per env step it
  brought, while the other runners keep sampling.

Each gradient step regresses ``Q(s, a)`` on the clipped double-Q target of
:func:`rlsuite.platform.qtopt.qnet.bellman_targets`, computed in the driver or, with
``num_bellman_updaters``, by updater actors that label the next batches while the
learner trains on the current one. The first target network follows the Q-network by
Polyak averaging, the second is a copy of the first every ``target2_lag`` updates.
Replay is not part of a checkpoint: a resumed run refills it (its dataset first).
"""

from __future__ import annotations

import math
import os
import pickle
import time
from collections import deque
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

from rlsuite.platform import backend_ray, demo_sources
from rlsuite.platform import envs as env_registry
from rlsuite.platform.checkpoints.layout import META, QTOPT_STATE, SPACES, write_meta
from rlsuite.platform.qtopt.actors import BellmanUpdater, Runner
from rlsuite.platform.qtopt.controller import QTOptController, read_state
from rlsuite.platform.qtopt.controller import load_controller as load_qtopt_controller
from rlsuite.platform.qtopt.plan import QTOptPlan
from rlsuite.platform.qtopt.qnet import bellman_targets, build_net, to_unit

STATE_FORMAT = 1
"""Version of the QT-Opt state file."""
KEYS = ("obs", "actions", "rewards", "new_obs", "terminateds")


class Replay:
    """A ring buffer of transitions, sampled uniformly."""

    def __init__(self, capacity: int, obs_dim: int, action_dim: int):
        self.capacity = capacity
        dims = {"obs": obs_dim, "new_obs": obs_dim, "actions": action_dim}
        self.data = {
            k: np.zeros((capacity, dims[k]) if k in dims else capacity, np.float32) for k in KEYS
        }
        self.size = self.next = 0

    def add(self, batch: Mapping[str, np.ndarray]) -> None:
        n = len(batch["rewards"])
        idx = (self.next + np.arange(n)) % self.capacity
        for k in KEYS:
            arr = np.asarray(batch[k], np.float32).reshape(n, -1)
            self.data[k][idx] = arr[:, 0] if self.data[k].ndim == 1 else arr
        self.next = int((self.next + n) % self.capacity)
        self.size = min(self.capacity, self.size + n)

    def sample(self, n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
        idx = rng.integers(0, self.size, size=n)
        return {k: v[idx] for k, v in self.data.items()}


class QTOptTrainer:
    """Runs a :class:`QTOptPlan` (the ``qt_opt`` backend: build, :meth:`train`,
    :meth:`save`, :meth:`restore`, :meth:`load_controller`, :meth:`stop`)."""

    def __init__(self, plan: QTOptPlan):
        if not isinstance(plan, QTOptPlan):
            raise TypeError(f"QTOptTrainer needs a QTOptPlan, got {type(plan).__name__}")
        plan.validate()
        self.plan = p = plan
        torch.set_num_threads(int(os.environ.get("RLSUITE_TORCH_THREADS", "1")))
        self._started_ray = backend_ray.start()
        self.obs_space, self.act_space = env_registry.spaces(p.env, p.env_config)[None]
        self.arch = {
            "obs_dim": int(np.prod(self.obs_space.shape)),
            "action_dim": int(np.prod(self.act_space.shape)),
            "hidden": list(p.hidden),
            "activation": p.activation,
        }
        self.cem = {
            "samples": p.cem_samples,
            "elites": p.cem_elites,
            "iterations": p.cem_iterations,
        }
        torch.manual_seed(p.seed)
        self.q = build_net(self.arch)
        self.t1, self.t2 = build_net(self.arch), build_net(self.arch)
        self.t1.load_state_dict(self.q.state_dict())
        self.t2.load_state_dict(self.q.state_dict())
        self.opt = torch.optim.Adam(self.q.parameters(), lr=p.lr)
        self.gen = torch.Generator().manual_seed(p.seed)
        self.rng = np.random.default_rng(p.seed)
        self.replay = Replay(p.buffer_size, self.arch["obs_dim"], self.arch["action_dim"])
        self.updates = self.env_steps_total = self.episodes_total = 0
        self.time_total_s = 0.0
        self.dataset_size = 0
        self._returns: deque[float] = deque(maxlen=20)
        self._debt = 0.0
        self._runners: list[Any] = []
        self._local: Runner | None = None
        self._pending: dict[Any, int] = {}
        self._updaters: list[Any] = []
        self._target_ref: list[Any] = []
        self._target_version = 0
        try:
            if p.dataset:
                self._load_dataset()
            self._start_actors()
        except BaseException:
            self.stop()
            raise

    # -- setup ------------------------------------------------------------------------
    def _load_dataset(self) -> None:
        p = self.plan
        data = demo_sources.load_for_run(p.dataset, p.env, p.env_config, p.seed)
        demo_sources.check_spaces(data, self.obs_space, self.act_space, f"dataset {p.dataset!r}")
        data["actions"] = to_unit(
            data["actions"].astype(np.float32), self.act_space.low, self.act_space.high
        )
        data["obs"] = data["obs"].reshape(len(data["obs"]), -1)
        data["new_obs"] = data["new_obs"].reshape(len(data["new_obs"]), -1)
        self.replay.add(data)
        self.dataset_size = len(data["rewards"])

    def _start_actors(self) -> None:
        import ray

        p = self.plan
        spec = env_registry.spec(p.env)
        args = (spec, dict(p.env_config), p.num_envs_per_runner, self.arch, self.cem)
        explore = (p.exploration_noise, p.random_action_prob)
        if p.num_runners == 0:
            self._local = Runner(*args, *explore, p.seed)
        else:
            cls = ray.remote(num_cpus=p.cpus_per_runner)(Runner)
            self._runners = [
                cls.remote(*args, *explore, p.seed * 1000 + i + 1) for i in range(p.num_runners)
            ]
        if p.num_bellman_updaters:
            cls = ray.remote(num_cpus=p.cpus_per_updater)(BellmanUpdater)
            self._updaters = [
                cls.remote(self.arch, p.gamma, self.cem, p.seed * 1000 + 500 + i)
                for i in range(p.num_bellman_updaters)
            ]
            self._publish_targets()

    def _weights(self, net: torch.nn.Module) -> dict[str, np.ndarray]:
        return {k: v.detach().numpy().copy() for k, v in net.state_dict().items()}

    def _publish_targets(self) -> None:
        import ray

        self._target_version += 1
        self._target_ref = [ray.put((self._weights(self.t1), self._weights(self.t2)))]

    # -- learning ---------------------------------------------------------------------
    def _sgd(self, batch: Mapping[str, np.ndarray], y: np.ndarray) -> tuple[float, float]:
        p = self.plan
        q = self.q(torch.as_tensor(batch["obs"]), torch.as_tensor(batch["actions"]))
        loss = torch.nn.functional.mse_loss(q, torch.tensor(y))
        self.opt.zero_grad()
        loss.backward()
        if p.grad_clip is not None:
            torch.nn.utils.clip_grad_norm_(self.q.parameters(), p.grad_clip)
        self.opt.step()
        with torch.no_grad():
            for t, s in zip(self.t1.parameters(), self.q.parameters()):
                t.mul_(1.0 - p.target_tau).add_(s, alpha=p.target_tau)
        self.updates += 1
        if self.updates % p.target2_lag == 0:
            self.t2.load_state_dict(self.t1.state_dict())
        if self._updaters and self.updates % p.updater_sync_every == 0:
            self._publish_targets()
        return loss.item(), q.mean().item()

    def _update(self, n: int) -> dict[str, float]:
        """``n`` gradient steps on batches from replay."""
        p = self.plan
        losses, qs = [], []
        if not self._updaters:
            for _ in range(n):
                batch = self.replay.sample(p.train_batch_size, self.rng)
                y = bellman_targets(self.t1, self.t2, batch, p.gamma, self.cem, self.gen)
                loss, q = self._sgd(batch, y)
                losses.append(loss)
                qs.append(q)
        else:
            import ray

            inflight: deque[tuple[Any, dict]] = deque()
            sent = 0
            for _ in range(n):
                while sent < n and len(inflight) < 2 * len(self._updaters):
                    batch = self.replay.sample(p.train_batch_size, self.rng)
                    u = self._updaters[sent % len(self._updaters)]
                    ref = u.targets.remote(self._target_version, self._target_ref, batch)
                    inflight.append((ref, batch))
                    sent += 1
                ref, batch = inflight.popleft()
                loss, q = self._sgd(batch, ray.get(ref))
                losses.append(loss)
                qs.append(q)
        return {
            "loss": float(np.mean(losses)) if losses else math.nan,
            "q_mean": float(np.mean(qs)) if qs else math.nan,
        }

    def _take(self, res: dict[str, Any]) -> int:
        self.replay.add(res)
        for ret, _ in res["episodes"]:
            self._returns.append(ret)
        self.episodes_total += len(res["episodes"])
        n = len(res["rewards"])
        self.env_steps_total += n
        return n

    def _sample_online(self) -> tuple[int, list[dict[str, float]]]:
        """Sample at least ``env_steps_per_iteration`` steps, updating as they arrive."""
        import ray

        p = self.plan
        steps, stats = 0, []
        if self._runners and not self._pending:
            w = ray.put(self._weights(self.q))
            for i, r in enumerate(self._runners):
                self._pending[r.sample.remote(w, p.rollout_fragment_length)] = i
        while steps < p.env_steps_per_iteration:
            if self._local is not None:
                res = self._local.sample(self._weights(self.q), p.rollout_fragment_length)
            else:
                [ref], _ = ray.wait(list(self._pending), num_returns=1)
                i = self._pending.pop(ref)
                res = ray.get(ref)
                w = ray.put(self._weights(self.q))
                self._pending[self._runners[i].sample.remote(w, p.rollout_fragment_length)] = i
            n = self._take(res)
            steps += n
            if self.replay.size >= max(p.learning_starts, p.train_batch_size):
                self._debt += n * p.updates_per_env_step
                k = int(self._debt)
                self._debt -= k
                if k:
                    stats.append(self._update(k))
        return steps, stats

    def train(self) -> dict[str, Any]:
        """One iteration: offline updates on the dataset, or online sampling and updates."""
        p = self.plan
        t0 = time.perf_counter()
        before = self.updates
        offline = self.updates < p.offline_updates
        if offline:
            steps = 0
            stats = [self._update(min(p.updates_per_iteration, p.offline_updates - self.updates))]
        else:
            steps, stats = self._sample_online()
        dt = time.perf_counter() - t0
        self.time_total_s += dt
        done = [s for s in stats if not math.isnan(s["loss"])]
        return {
            "episode_return_mean": float(np.mean(self._returns)) if self._returns else math.nan,
            "env_steps_this_iter": steps,
            "env_steps_per_s": steps / dt if dt > 0 else math.nan,
            "time_this_iter_s": dt,
            "time_total_s": self.time_total_s,
            "episodes_total": self.episodes_total,
            "offline": int(offline),
            "updates": self.updates,
            "updates_this_iter": self.updates - before,
            "updates_per_s": (self.updates - before) / dt if dt > 0 else math.nan,
            "loss": float(np.mean([s["loss"] for s in done])) if done else math.nan,
            "q_mean": float(np.mean([s["q_mean"] for s in done])) if done else math.nan,
            "replay_size": self.replay.size,
            "dataset_size": self.dataset_size,
        }

    # -- checkpoints ------------------------------------------------------------------
    def save(self, path: str) -> None:
        """Write the networks, the optimiser, the counters and the RNGs into ``path``."""
        os.makedirs(path, exist_ok=True)
        state = {
            "format": STATE_FORMAT,
            "plan": self.plan.to_dict(),
            "arch": self.arch,
            "cem": self.cem,
            "q": self.q.state_dict(),
            "t1": self.t1.state_dict(),
            "t2": self.t2.state_dict(),
            "opt": self.opt.state_dict(),
            "updates": self.updates,
            "env_steps_total": self.env_steps_total,
            "episodes_total": self.episodes_total,
            "time_total_s": self.time_total_s,
            "returns": list(self._returns),
            "rng": self.rng.bit_generator.state,
            "gen": self.gen.get_state(),
        }
        torch.save(state, os.path.join(path, QTOPT_STATE))
        with open(os.path.join(path, SPACES), "wb") as f:
            pickle.dump({"default_policy": (self.obs_space, self.act_space)}, f)
        if not os.path.exists(os.path.join(path, META)):  # training.train writes its own
            write_meta(path, self.plan, self.updates, self.env_steps_total)

    def restore(self, path: str) -> None:
        """Continue from checkpoint ``path`` (same env and network; its replay refills)."""
        state = read_state(path)
        if state.get("format") != STATE_FORMAT:
            raise ValueError(
                f"{path}: qt_opt state format {state.get('format')!r} is not {STATE_FORMAT}"
            )
        if state["arch"] != self.arch:
            raise ValueError(
                f"cannot restore {path}: its Q-network {state['arch']} differs from this "
                f"plan's {self.arch}; use the same env and hidden sizes"
            )
        self.q.load_state_dict(state["q"])
        self.t1.load_state_dict(state["t1"])
        self.t2.load_state_dict(state["t2"])
        self.opt.load_state_dict(state["opt"])
        self.updates = int(state["updates"])
        self.env_steps_total = int(state["env_steps_total"])
        self.episodes_total = int(state["episodes_total"])
        self.time_total_s = float(state["time_total_s"])
        self._returns = deque(state["returns"], maxlen=20)
        self.rng.bit_generator.state = state["rng"]
        self.gen.set_state(state["gen"])
        if self._updaters:
            self._publish_targets()

    @classmethod
    def policy_files(cls) -> list[str]:
        """The state file (networks and CEM settings) and the spaces."""
        return [QTOPT_STATE, SPACES]

    @classmethod
    def load_controller(cls, path: str, meta: Mapping[str, Any] | None = None) -> QTOptController:
        """The backend's loader: the greedy CEM controller of checkpoint ``path``."""
        return load_qtopt_controller(path)

    def controller(self) -> QTOptController:
        """The current Q-network as a greedy controller (in this process)."""
        net = build_net(self.arch)
        net.load_state_dict(self.q.state_dict())
        return QTOptController(net, self.act_space, self.cem, name=f"qt_opt@{self.updates}")

    def stop(self) -> None:
        """Stop the runners and updaters (and Ray, if this trainer started it)."""
        if self._local is not None:
            self._local.close()
            self._local = None
        backend_ray.end_actors(self._runners, self._updaters)
        self._runners, self._updaters, self._pending = [], [], {}
        if self._started_ray:
            from rlsuite.platform import cluster

            cluster.shutdown()
            self._started_ray = False
