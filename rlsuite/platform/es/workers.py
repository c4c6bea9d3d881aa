"""The ES worker: one Ray actor that holds an env and runs perturbed policies on it.

Each worker maps the shared noise table (from Ray's object store) and receives
only offsets into it, env seeds and the central parameters; it returns returns,
step counts and observation sums. A perturbation's result depends on nothing but
those inputs, so it is the same on whichever worker runs it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from rlsuite.platform import envs as env_registry
from rlsuite.platform.es.policy import OBS_CLIP, ESPolicy, RunningStat


def env_spaces(env: Any, env_id: str, multi: bool) -> tuple[Any, Any]:
    if not multi:
        return env.observation_space, env.action_space
    agents = list(env.possible_agents)
    if not agents:
        raise ValueError(f"multi-agent env {env_id!r} lists no possible_agents")
    obs0, act0 = env.observation_space(agents[0]), env.action_space(agents[0])
    for a in agents[1:]:
        if env.observation_space(a) != obs0 or env.action_space(a) != act0:
            raise ValueError(
                f"the es plan trains one policy shared by all agents, but in {env_id!r} agent "
                f"{a!r} has other spaces than {agents[0]!r}; give the agents equal spaces"
            )
    return obs0, act0


class Worker:
    """One Ray actor: an env, the policy's layout and the shared noise table."""

    def __init__(
        self,
        env_spec: env_registry.EnvSpec,
        env_config: Mapping[str, Any],
        noise: np.ndarray,
        hidden: Sequence[int],
        activation: str,
        recurrent: str,
        cell_size: int,
        sigma: float,
        max_episode_steps: int | None,
        filter_obs: bool,
        action_head: str = "tanh",
    ):
        # Built from the driver's spec, so envs registered only in the driver work too.
        self.env_id = env_spec.env_id
        self.multi = env_spec.multi_agent
        make = env_registry._resolve(env_spec.entry_point)
        self.env = make(**{**env_spec.default_config, **dict(env_config)})
        obs_space, act_space = env_spaces(self.env, self.env_id, self.multi)
        self.policy = ESPolicy(
            obs_space, act_space, hidden, activation, recurrent, cell_size, action_head
        )
        self._state: dict[Any, Any] = {}
        """Each agent's recurrent state in the running episode (empty: feed-forward)."""
        self.noise = noise
        self.sigma = np.float32(sigma)
        self.max_steps = max_episode_steps
        self.filter_obs = filter_obs

    def spaces(self) -> tuple[Any, Any]:
        return self.policy.observation_space, self.policy.action_space

    def node_id(self) -> str:
        import ray

        return ray.get_runtime_context().get_node_id()

    def run(
        self, theta: np.ndarray, obs_mean: np.ndarray, obs_std: np.ndarray, tasks: Sequence[tuple]
    ) -> tuple[str, list[tuple]]:
        """Evaluate ``tasks``: ``("pair", i, offset, seeds)`` or ``("eval", i, seeds)``."""
        out = []
        n = self.policy.num_params
        for task in tasks:
            if task[0] == "pair":
                _, i, offset, seeds = task
                eps = self.noise[offset : offset + n]
                stat = RunningStat(self.policy.obs_dim)
                res = []
                for sign in (1.0, -1.0):
                    self.policy.set_params(theta + np.float32(sign) * self.sigma * eps)
                    rets, steps = self._episodes(seeds, obs_mean, obs_std, stat)
                    res.append((rets, steps))
                out.append(
                    (
                        "pair",
                        i,
                        res[0][0],
                        res[1][0],
                        res[0][1] + res[1][1],
                        stat.count,
                        stat.sum,
                        stat.sumsq,
                    )
                )
            else:
                _, i, seeds = task
                self.policy.set_params(theta)
                rets, steps = self._episodes(seeds, obs_mean, obs_std, None)
                out.append(("eval", i, rets, steps))
        import ray

        return ray.get_runtime_context().get_node_id(), out

    def _episodes(
        self, seeds: Sequence[int], mean: np.ndarray, std: np.ndarray, stat: RunningStat | None
    ) -> tuple[float, int]:
        total, steps = 0.0, 0
        for s in seeds:
            r, n = self._episode(int(s), mean, std, stat)
            total += r
            steps += n
        return total / len(seeds), steps

    def _act(
        self,
        obs: Any,
        mean: np.ndarray,
        std: np.ndarray,
        stat: RunningStat | None,
        agent: Any = None,
    ) -> Any:
        x = self.policy.flat_obs(obs)
        if stat is not None:
            stat.push(x)
        if self.filter_obs:
            x = np.clip((x - mean) / std, -OBS_CLIP, OBS_CLIP)
        return self.policy.act(x, self._state, agent)

    def _act_many(
        self, obs: dict[Any, Any], mean: np.ndarray, std: np.ndarray, stat: RunningStat | None
    ) -> dict[Any, Any]:
        """:meth:`_act` for every agent of a multi-agent step at once (one batched pass)."""
        agents = list(obs)
        xs = np.stack([self.policy.flat_obs(obs[a]) for a in agents])
        if stat is not None:
            stat.push_many(xs)
        if self.filter_obs:
            xs = np.clip((xs - mean) / std, -OBS_CLIP, OBS_CLIP)
        hs = None
        if self.policy.recurrent:
            h0 = self.policy.initial_state()
            hs = np.stack([self._state.get(a, h0) for a in agents])
        out, hs = self.policy.step_many(xs, hs)
        if hs is not None:
            self._state.update(zip(agents, hs))
        return {a: self.policy.action(o) for a, o in zip(agents, out)}

    def _episode(
        self, seed: int, mean: np.ndarray, std: np.ndarray, stat: RunningStat | None
    ) -> tuple[float, int]:
        env, total, steps = self.env, 0.0, 0
        self._state = {}  # every episode starts from the initial recurrent state
        obs, _ = env.reset(seed=seed)
        while True:
            if self.multi:
                actions = self._act_many(obs, mean, std, stat) if obs else {}
                obs, rew, term, trunc, _ = env.step(actions)
                total += float(sum(rew.values()))
                done = not env.agents or all(term.values()) or all(trunc.values())
            else:
                obs, rew, term, trunc, _ = env.step(self._act(obs, mean, std, stat))
                total += float(rew)
                done = term or trunc
            steps += 1
            if done or (self.max_steps is not None and steps >= self.max_steps):
                return total, steps

    def close(self) -> None:
        self.env.close()
