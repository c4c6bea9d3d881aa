"""The gradient runner: a Ray actor that samples, computes a gradient and pushes it.

Each :class:`GradientRunner` holds its envs, a copy of the network (an RLlib module)
and, for the ``dqn`` loss, its own replay memory and target network. One
:meth:`~GradientRunner.work` call computes ``k`` gradients in a row, each one:

1. sample ``rollout_length`` steps of every env with the current weights;
2. the loss (:mod:`rlsuite.platform.async_grad.losses`) and its gradient, clipped to
   ``grad_clip`` by global norm;
3. push each shard its slice, with the shard's version the weights came from, and
   load the fresh slices the shards send back.

No runner waits for another: only its own round trip to the shards. A shard that died
ends the call early (``lost_shard``); the driver restores the shards and hands the
runner their new handles (:meth:`~GradientRunner.set_shards`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rlsuite.platform import envs as env_registry
from rlsuite.platform.async_grad import losses
from rlsuite.platform.async_grad.model import build_module, flat_grad, get_flat, set_flat


class GradientRunner:
    """One runner: envs, the network, its loss; see the module's docstring."""

    def __init__(
        self,
        plan: Any,
        env_spec: env_registry.EnvSpec,
        shards: list[Any],
        bounds: list[tuple[int, int]],
        epoch: int,
        seed: list[int],
    ):
        import torch

        torch.set_num_threads(1)
        torch.manual_seed(int(np.random.SeedSequence(seed).generate_state(1)[0]))
        self.plan = plan
        self.rng = np.random.default_rng(seed)
        self.envs = [
            env_registry.build(env_spec, plan.env_config) for _ in range(plan.envs_per_runner)
        ]
        self.obs_space = self.envs[0].observation_space
        self.act_space = self.envs[0].action_space
        self.discrete = hasattr(self.act_space, "n")
        make = lambda: build_module(  # noqa: E731
            plan.loss,
            plan.hidden,
            plan.activation,
            self.obs_space,
            self.act_space,
            plan.double_q,
            plan.dueling,
        )
        self.module = make()
        self.target = make() if plan.loss == "dqn" else None
        self.target_version: int | None = None
        self.replay = (
            losses.Replay(plan.buffer_size, int(np.prod(self.obs_space.shape)), seed[-1])
            if plan.loss == "dqn"
            else None
        )
        seeds = self.rng.integers(0, 2**31 - 1, size=len(self.envs))
        self.obs = np.stack(
            [np.asarray(e.reset(seed=int(s))[0], np.float32) for e, s in zip(self.envs, seeds)]
        )
        self.ep_ret = np.zeros(len(self.envs))
        self.ep_len = np.zeros(len(self.envs), dtype=np.int64)
        self.steps = 0
        """Env steps this runner sampled (its epsilon schedule's clock)."""
        self.set_shards(shards, bounds, epoch)

    def set_shards(self, shards: list[Any], bounds: list[tuple[int, int]], epoch: int) -> None:
        """Use these shards (after a restore or a shard's restart); pull before the next push."""
        self.shards, self.bounds, self.epoch = list(shards), list(bounds), epoch
        self.versions = [0] * len(shards)
        self.need_pull = True

    # -- one call -------------------------------------------------------------------
    def work(self, k: int) -> dict[str, Any]:
        """Compute and push ``k`` gradients (fewer while a dqn replay fills up)."""
        import ray

        out: dict[str, Any] = {"env_steps": 0, "gradients": 0, "episodes": [], "lost_shard": False}
        sums: dict[str, float] = {}
        try:
            if self.need_pull:
                self._load([s.pull.remote() for s in self.shards])
            for _ in range(k):
                if self.plan.loss == "a3c":
                    loss, stats = self._a3c_step(out)
                else:
                    loss, stats = self._dqn_step(out)
                if loss is None:
                    continue
                self.module.zero_grad()
                loss.backward()
                grad = flat_grad(self.module)
                norm = float(np.linalg.norm(grad))
                if self.plan.grad_clip is not None and norm > self.plan.grad_clip:
                    grad *= self.plan.grad_clip / (norm + 1e-6)
                stats["grad_norm"] = norm
                self._load(
                    [
                        s.push.remote(grad[lo:hi], v, self.epoch)
                        for s, (lo, hi), v in zip(self.shards, self.bounds, self.versions)
                    ]
                )
                out["gradients"] += 1
                for key, v in stats.items():
                    sums[key] = sums.get(key, 0.0) + v
        except ray.exceptions.RayActorError:
            out["lost_shard"] = True
            self.need_pull = True
        out["stats"] = {key: v / max(1, out["gradients"]) for key, v in sums.items()}
        if self.replay is not None:
            out["stats"]["replay_size"] = float(self.replay.size)
            out["stats"]["epsilon"] = self._epsilon()
        return out

    def _load(self, refs: list[Any]) -> None:
        """Load the slices (and versions) the shards answered with."""
        import ray

        answers = ray.get(refs)
        set_flat(self.module, np.concatenate([a[0] for a in answers]))
        self.versions = [a[1] for a in answers]
        self.need_pull = False
        epochs = {a[2] for a in answers}
        if len(epochs) == 1 and max(epochs) > self.epoch:
            # every shard was put back to a checkpoint and these are its weights: the next
            # gradient is of the new epoch (no need to wait for set_shards)
            self.epoch = epochs.pop()
        if self.target is not None and (
            self.target_version is None
            or self.versions[0] - self.target_version >= self.plan.target_update_freq
            or self.versions[0] < self.target_version
        ):
            set_flat(self.target, get_flat(self.module))
            self.target_version = self.versions[0]

    # -- sampling -------------------------------------------------------------------
    def _env_step(self, actions: np.ndarray, out: dict[str, Any]) -> tuple[np.ndarray, ...]:
        """Step every env once; returns rewards, next observations (the final one where an
        episode ended), terminated and ended flags; starts new episodes where one ended."""
        n = len(self.envs)
        rewards = np.zeros(n, np.float32)
        nxt = np.zeros_like(self.obs)
        terminated = np.zeros(n, bool)
        ended = np.zeros(n, bool)
        for i, env in enumerate(self.envs):
            o, r, term, trunc, _ = env.step(self._env_action(actions[i]))
            rewards[i], nxt[i], terminated[i] = r, np.asarray(o, np.float32), term
            self.ep_ret[i] += r
            self.ep_len[i] += 1
            if term or trunc:
                ended[i] = True
                out["episodes"].append((float(self.ep_ret[i]), int(self.ep_len[i])))
                self.ep_ret[i], self.ep_len[i] = 0.0, 0
        new_obs = nxt.copy()
        for i in np.flatnonzero(ended):
            seed = int(self.rng.integers(0, 2**31 - 1))
            new_obs[i] = np.asarray(self.envs[i].reset(seed=seed)[0], np.float32)
        self.steps += n
        out["env_steps"] += n
        self.obs = new_obs
        return rewards, nxt, terminated, ended

    def _env_action(self, a: np.ndarray) -> Any:
        if self.discrete:
            return int(a)
        from ray.rllib.utils.spaces.space_utils import unsquash_action

        return unsquash_action(a, self.act_space)  # as the rllib controller acts

    def _a3c_step(self, out: dict[str, Any]) -> tuple[Any, dict[str, float]]:
        import torch
        from ray.rllib.core.columns import Columns

        m, t_len, n = self.module, self.plan.rollout_length, len(self.envs)
        obs = np.zeros((t_len, *self.obs.shape), np.float32)
        acts, rews = [], np.zeros((t_len, n), np.float32)
        ends, terms = np.zeros((t_len, n), bool), np.zeros((t_len, n), bool)
        finals = np.zeros_like(obs)
        dist_cls = m.get_exploration_action_dist_cls()
        for t in range(t_len):
            obs[t] = self.obs
            with torch.no_grad():
                logits = m.forward_exploration({Columns.OBS: torch.as_tensor(self.obs)})[
                    Columns.ACTION_DIST_INPUTS
                ]
                a = dist_cls.from_logits(logits).sample().numpy()
            acts.append(a)
            rews[t], finals[t], terms[t], ends[t] = self._env_step(a, out)
        with torch.no_grad():
            flat = torch.as_tensor(obs.reshape(t_len * n, -1))
            values = m.compute_values({Columns.OBS: flat}).numpy().reshape(t_len, n)
            last = m.compute_values({Columns.OBS: torch.as_tensor(self.obs)}).numpy()
            fin = m.compute_values({Columns.OBS: torch.as_tensor(finals.reshape(t_len * n, -1))})
            next_values = np.where(terms, 0.0, fin.numpy().reshape(t_len, n))
        adv, targets = losses.advantages(
            rews, values, next_values, last, ends, self.plan.gamma, self.plan.lambda_
        )
        return losses.a3c_loss(
            m,
            flat,
            torch.as_tensor(np.stack(acts).reshape(t_len * n, *acts[0].shape[1:])),
            torch.as_tensor(adv.reshape(-1)),
            torch.as_tensor(targets.reshape(-1)),
            self.plan.vf_loss_coeff,
            self.plan.entropy_coeff,
        )

    def _epsilon(self) -> float:
        p = self.plan
        if p.epsilon_timesteps == 0:
            return p.final_epsilon
        frac = min(1.0, self.steps / p.epsilon_timesteps)
        return 1.0 + frac * (p.final_epsilon - 1.0)

    def _dqn_step(self, out: dict[str, Any]) -> tuple[Any, dict[str, float]]:
        import torch
        from ray.rllib.core.columns import Columns

        p, n = self.plan, len(self.envs)
        for _ in range(p.rollout_length):
            with torch.no_grad():
                q = self.module.compute_q_values({Columns.OBS: torch.as_tensor(self.obs)})
            greedy = q["qf_preds"].argmax(1).numpy()
            explore = self.rng.random(n) < self._epsilon()
            actions = np.where(explore, self.rng.integers(0, self.act_space.n, size=n), greedy)
            obs = self.obs
            rewards, nxt, terminated, _ = self._env_step(actions, out)
            self.replay.add(obs, actions, rewards, nxt, terminated)
        if self.steps < p.learning_starts or self.replay.size < p.train_batch_size:
            return None, {}
        return losses.dqn_loss(
            self.module, self.target, self.replay.sample(p.train_batch_size), p.gamma, p.double_q
        )

    def close(self) -> None:
        for e in self.envs:
            e.close()
