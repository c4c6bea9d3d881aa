"""RESCO's traffic lights under one shared policy, served as ONE gymnasium ``VectorEnv``.

``rlsuite/Signals-v0`` gives each light of a network to RLlib as one agent of a
multi-agent env, and RLlib's multi-agent runner then spends about as long on its
per-agent bookkeeping as the simulation takes to step (benchmarks/RESULTS.md). A policy
shared by every light needs none of that: here light ``i`` of the network is sub-env
``i`` of a vector env, all of them in one SUMO simulation that is stepped once per
vector step, and RLlib's single-agent runner batches the policy's forward pass over the
lights (as :mod:`~rlsuite.apps.traffic.envs.ring_vector` does for N rings). The platform
builds it through ``rlsuite/SignalsShared-v0``'s ``vector_entry_point``, with
``num_envs_per_env_runner`` equal to the network's number of lights
(:func:`num_lights`; the plan sets it, and refuses another value).

The env underneath is :class:`~rlsuite.apps.traffic.envs.signals_resco.RescoSignalsEnv`
itself, so RESCO's state, reward, padding and episode metrics are the same: lights with
fewer lanes or green phases than the network's most (cologne3 mixes 3 and 4 phases) get
zero lanes, a mask of their valid phases in the observation, and an action beyond their
phases keeps their current one, exactly as on the multi-agent path.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from rlsuite.apps.traffic.envs.signals_resco import RescoSignalsConfig, RescoSignalsEnv, _lights


def _refuse_sumo_rl_networks(kwargs: dict[str, Any]) -> None:
    from rlsuite.apps.traffic import resco

    if not (kwargs.get("network") in resco.MAPS or kwargs.get("net_file")):
        raise ValueError(
            f"rlsuite/SignalsShared-v0 runs RESCO's maps and your own networks (net_file=...), "
            f"not {kwargs.get('network')!r}; sumo-rl's networks run through rlsuite/Signals-v0"
        )


def num_lights(**kwargs: Any) -> int:
    """The traffic lights the network of these options has: the sub-envs of its vector env
    (read from the network file; no SUMO is started)."""
    _refuse_sumo_rl_networks(kwargs)
    net, _routes = RescoSignalsConfig.from_kwargs(**kwargs).files()
    return len(_lights(net))


class SignalsVectorEnv(gym.vector.VectorEnv):
    """The lights of one RESCO network as ``num_envs`` sub-envs of one SUMO simulation.

    Sub-env ``i`` is light ``i`` of :class:`RescoSignalsEnv` (``lights[i]``, the network
    file's order) with the same keyword arguments: its observation, reward and
    truncation are that env's for that light, step by step.

    States:
        ``Box(num_envs, 2 * pad_phases + 4 * pad_lanes)``: per light, RESCO's ``drq_norm``
        observation as :class:`RescoSignalsEnv` gives it (phase one-hot, valid-phase
        mask, four features per incoming lane, zero-padded).
    Actions:
        ``MultiDiscrete([pad_phases] * num_envs)``: per light, its green phase for the next
        10 s step; one beyond the light's own phases keeps its current phase.
    Rewards:
        per light, ``reward_fn`` (RESCO's ``wait_norm`` by default).
    Termination:
        none; every light is truncated at the window's end, all at the same step (one
        clock). Autoreset is gymnasium's next-step mode (what RLlib's runners expect):
        the step after the window's end starts a new simulation, with the next SUMO seed,
        and returns the first observations with zero reward.

    ``reset(seed=s)`` seeds the one simulation with ``s`` (not ``s + i`` per light: the
    lights share it); ``episode_metrics()`` gives RESCO's metrics of the network.

    Example::

        >>> env = SignalsVectorEnv(network="cologne3", num_seconds=20)  # doctest: +SKIP
        >>> obs, _ = env.reset(seed=0)  # doctest: +SKIP
        >>> obs.shape, env.num_envs  # doctest: +SKIP
        ((3, 40), 3)
    """

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": []}

    def __init__(self, num_envs: int | None = None, **kwargs: Any):
        _refuse_sumo_rl_networks(kwargs)
        if RescoSignalsConfig.from_kwargs(**kwargs).program != "rl":
            raise ValueError(
                "rlsuite/SignalsShared-v0 serves the lights to a learning policy (program='rl'); "
                "run the fixed, actuated, greedy and max-pressure programs on rlsuite/Signals-v0"
            )
        self.env = RescoSignalsEnv(**kwargs)
        self.lights = list(self.env.possible_agents)
        if num_envs is not None and int(num_envs) != len(self.lights):
            raise ValueError(
                f"{self.env.net_file} has {len(self.lights)} traffic lights, one sub-env each: "
                f"num_envs (the plan's num_envs_per_env_runner) must be {len(self.lights)}, "
                f"got {num_envs}"
            )
        self.num_envs = len(self.lights)
        self.single_observation_space = self.env.observation_space(self.lights[0])
        self.single_action_space = self.env.action_space(self.lights[0])
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self._autoreset = False

    def reset(self, *, seed: int | list[int] | None = None, options: dict | None = None):
        """Start a new simulation. ``seed``: its SUMO seed (a list must repeat one seed:
        the lights share the simulation); ``None``: the previous seed + 1."""
        if isinstance(seed, (list, tuple)):
            if len(seed) != self.num_envs or len(set(seed)) != 1:
                raise ValueError(
                    f"the {self.num_envs} lights share one simulation: give one seed, got {seed}"
                )
            seed = seed[0]
        obs, _ = self.env.reset(seed=seed, options=options)
        self._autoreset = False
        return self._stack(obs), {}

    def _stack(self, obs: dict[str, np.ndarray]) -> np.ndarray:
        return np.stack([obs[a] for a in self.lights])

    def step(self, actions: Any):
        if self._autoreset:  # next-step autoreset: the window ended last step
            obs, _ = self.reset()
            z = np.zeros(self.num_envs, dtype=bool)
            return obs, np.zeros(self.num_envs), z, z.copy(), {}
        a = np.asarray(actions).reshape(self.num_envs)
        obs, rew, term, trunc, _ = self.env.step(dict(zip(self.lights, a.tolist(), strict=True)))
        terminated = np.array([term[x] for x in self.lights], dtype=bool)
        truncated = np.array([trunc[x] for x in self.lights], dtype=bool)
        self._autoreset = bool(terminated.any() or truncated.any())
        reward = np.array([rew[x] for x in self.lights], dtype=np.float64)
        return self._stack(obs), reward, terminated, truncated, {}

    def episode_metrics(self) -> dict[str, float]:
        """RESCO's metrics of the network's last finished episode (the current one is
        closed first), as :meth:`RescoSignalsEnv.episode_metrics`."""
        return self.env.episode_metrics()

    def close_extras(self, **kwargs: Any) -> None:
        """Stop SUMO and remove the episode files (``close()`` calls this once)."""
        if getattr(self, "env", None) is not None:
            self.env.close()


class OneLightEnv(gym.Env):
    """The scalar env of ``rlsuite/SignalsShared-v0``: a network of exactly one light as a
    ``gymnasium.Env`` (cologne1, ingolstadt1). A network of several lights exists only as
    the vector env of them all (:class:`SignalsVectorEnv`): its lights share one simulation.

    States, Actions, Rewards, Termination: those of :class:`SignalsVectorEnv`'s one light
    (RESCO's, as :class:`RescoSignalsEnv`), truncated at the window's end.
    """

    metadata = {"render_modes": []}

    def __init__(self, **kwargs: Any):
        n = num_lights(**kwargs)
        if n != 1:
            raise ValueError(
                f"this network has {n} traffic lights, which share one simulation: build them "
                f"as one vector env of {n} (envs.make_vector('rlsuite/SignalsShared-v0', {n}, "
                f"...), or a plan's num_envs_per_env_runner={n})"
            )
        self._vec = SignalsVectorEnv(num_envs=1, **kwargs)
        self.observation_space = self._vec.single_observation_space
        self.action_space = self._vec.single_action_space

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        obs, _ = self._vec.reset(seed=seed, options=options)
        return obs[0], {}

    def step(self, action: Any):
        obs, rew, term, trunc, _ = self._vec.step(np.asarray([action]))
        return obs[0], float(rew[0]), bool(term[0]), bool(trunc[0]), {}

    def episode_metrics(self) -> dict[str, float]:
        return self._vec.episode_metrics()

    def close(self) -> None:
        self._vec.close()
