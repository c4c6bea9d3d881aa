"""QT-Opt's actors: runners that act with CEM on their own envs, and Bellman updaters
that compute the learner's targets. Both are plain classes, made Ray actors by the
trainer (or run in the driver when the plan asks for none)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

from rlsuite.platform import envs as env_registry
from rlsuite.platform.qtopt.cem import cem_argmax
from rlsuite.platform.qtopt.qnet import bellman_targets, build_net, from_unit


def _load(net: torch.nn.Module, weights: Mapping[str, np.ndarray]) -> None:
    net.load_state_dict({k: torch.as_tensor(v) for k, v in weights.items()})


class Runner:
    """Envs that a copy of the Q-network drives: CEM's argmax plus exploration noise.

    ``sample(weights, steps)`` steps every env ``steps`` times with those weights and
    returns the transitions (actions in ``[-1, 1]``) and the episodes that ended."""

    def __init__(
        self,
        env_spec: env_registry.EnvSpec,
        env_config: Mapping[str, Any],
        num_envs: int,
        arch: dict[str, Any],
        cem: dict[str, int],
        noise: float,
        random_prob: float,
        seed: int,
    ):
        torch.set_num_threads(1)
        self.envs = [env_registry.build(env_spec, env_config) for _ in range(num_envs)]
        space = self.envs[0].action_space
        self.low, self.high = space.low.astype(np.float32), space.high.astype(np.float32)
        self.net = build_net(arch)
        self.cem, self.noise, self.random_prob = cem, noise, random_prob
        self.rng = np.random.default_rng(seed)
        self.gen = torch.Generator().manual_seed(seed)
        self.obs = np.stack(
            [self._flat(e.reset(seed=seed * 1000 + i)[0]) for i, e in enumerate(self.envs)]
        )
        self.returns = np.zeros(num_envs)
        self.lengths = np.zeros(num_envs, dtype=np.int64)

    @staticmethod
    def _flat(obs: Any) -> np.ndarray:
        return np.asarray(obs, dtype=np.float32).ravel()

    def act(self, obs: np.ndarray) -> np.ndarray:
        """Exploring actions in [-1, 1] for a batch of flat observations."""
        with torch.no_grad():
            a, _ = cem_argmax(
                self.net, torch.as_tensor(obs), self.net.action_dim, generator=self.gen, **self.cem
            )
        a = a.numpy()
        if self.noise:
            a = a + self.noise * self.rng.standard_normal(a.shape).astype(np.float32)
        rand = self.rng.random(len(a)) < self.random_prob
        a[rand] = self.rng.uniform(-1.0, 1.0, size=(int(rand.sum()), a.shape[1]))
        return np.clip(a, -1.0, 1.0).astype(np.float32)

    def sample(self, weights: Mapping[str, np.ndarray] | None, steps: int) -> dict[str, Any]:
        if weights is not None:
            _load(self.net, weights)
        cols: dict[str, list] = {
            k: [] for k in ("obs", "actions", "rewards", "new_obs", "terminateds")
        }
        episodes: list[tuple[float, int]] = []
        for _ in range(steps):
            act = self.act(self.obs)
            for i, env in enumerate(self.envs):
                nobs, r, term, trunc, _ = env.step(from_unit(act[i], self.low, self.high))
                nobs = self._flat(nobs)
                cols["obs"].append(self.obs[i].copy())  # a row of self.obs, rewritten below
                cols["actions"].append(act[i])
                cols["rewards"].append(float(r))
                cols["new_obs"].append(nobs)
                cols["terminateds"].append(float(term))
                self.returns[i] += float(r)
                self.lengths[i] += 1
                if term or trunc:
                    episodes.append((float(self.returns[i]), int(self.lengths[i])))
                    self.returns[i], self.lengths[i] = 0.0, 0
                    nobs = self._flat(env.reset()[0])
                self.obs[i] = nobs
        out = {k: np.asarray(v, dtype=np.float32) for k, v in cols.items()}
        out["episodes"] = episodes
        return out

    def close(self) -> None:
        for e in self.envs:
            e.close()


class BellmanUpdater:
    """Holds the two target networks and labels batches with their Bellman targets."""

    def __init__(self, arch: dict[str, Any], gamma: float, cem: dict[str, int], seed: int):
        torch.set_num_threads(1)
        self.t1, self.t2 = build_net(arch), build_net(arch)
        self.gamma, self.cem = gamma, cem
        self.gen = torch.Generator().manual_seed(seed)
        self.version = -1

    def targets(
        self, version: int, weights: list[Any], batch: Mapping[str, np.ndarray]
    ) -> np.ndarray:
        """The targets of ``batch``; ``weights[0]`` (a Ray object ref of the two target
        networks' weights, wrapped so it is fetched only when ``version`` is new)."""
        if version != self.version:
            import ray

            w1, w2 = ray.get(weights[0])
            _load(self.t1, w1)
            _load(self.t2, w2)
            self.version = version
        return bellman_targets(self.t1, self.t2, batch, self.gamma, self.cem, self.gen)
