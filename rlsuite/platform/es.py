"""Evolution strategies (the ``es`` plan): OpenAI-style ES on Ray actors.

The source talk's own Ray example (Salimans et al. 2017, "Evolution Strategies
as a Scalable Alternative to Reinforcement Learning")::

    workers = [Worker.remote() for i in range(20)]
    for i in range(200):
        seeds = generate_seeds(i)
        rewards = [workers[j].do_simulation.remote(policy, seeds[j]) for j in range(20)]
        policy = compute_update(policy, ray.get(rewards), seeds)

Here, one generation of :class:`ESTrainer` is that loop body:

* the driver draws, from its own seeded RNG, an offset into a **shared noise
  table** for every antithetic pair ``theta +- sigma * eps`` and the env seeds
  of their episodes;
* the noise table lives once in Ray's object store (``ray.put`` once); every
  worker actor maps it and slices ``eps`` by offset, so only offsets, env seeds
  and returns travel;
* workers are Ray actors that each hold one env (any id of
  :mod:`rlsuite.platform.envs`, gymnasium ids included; PettingZoo parallel
  envs act with one shared policy and score the sum of the agents' rewards);
* the driver turns the returns into **centred ranks**, forms the ES gradient
  ``sum_k (f+_k - f-_k) eps_k / (2 n sigma)`` minus an L2 term, and takes an
  **Adam** (or momentum SGD) step on the central parameters.

Every perturbation's return is a pure function of (parameters, observation
filter, noise offset, env seeds), so a run is the same whichever worker ran
which perturbation and however many workers there were. A worker that dies
mid-generation (killed, its node lost) is replaced and its perturbations are
run again; the run goes on.

Why not EvoTorch: EvoTorch 0.6.1 installs against our torch 2.13 / Ray 2.60 /
gymnasium 1.2.2 and its ``GymNE`` runs, but (checked) a Ray actor killed
mid-run ends the search with ``ActorDiedError``; it ships whole solution
vectors to its actors instead of seeds into a shared noise table; its episodes
are not seeded per perturbation, so results depend on which actor ran what;
and it has no PettingZoo envs. Those are this issue's requirements, so the
loop is written here on plain Ray actors (about 300 lines).

The policy is an MLP (``hidden``, ``tanh``) evaluated in numpy during rollouts
(2.7 us per forward against 21 us for the same torch module at batch size 1,
which would triple the cost of an env step); :meth:`ESPolicy.to_torch` gives
the identical ``torch.nn.Module`` for export.

Example::

    >>> from rlsuite.platform.es import ESPlan, ESTrainer   # doctest: +SKIP
    >>> trainer = ESTrainer(ESPlan(env="CartPole-v1", population_size=32))  # doctest: +SKIP
    >>> trainer.train()["episode_return_mean"]  # doctest: +SKIP
    21.4
"""

from __future__ import annotations

import difflib
import json
import math
import os
import pickle
import time
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

import numpy as np

from rlsuite.platform import envs as env_registry

NOISE_SEED = 123
"""Seed of the shared noise table (fixed, so a checkpoint resumes on the same table)."""
WORKER_START_TIMEOUT_S = 180.0
"""How long the trainer waits for its worker actors (and their envs) to come up."""
OBS_CLIP = 5.0
"""Normalised observations are clipped to +-OBS_CLIP (the ``meanstd`` filter)."""

META = "rlsuite.json"
STATE = "es_state.json"
PARAMS = "es_params.npy"
ARRAYS = "es_arrays.npz"
SPACES = "spaces.pkl"
CHECKPOINT_FORMAT = 1


# ----------------------------------------------------------------------------- plan


@dataclass(frozen=True)
class ESPlan:
    """``es``: OpenAI-style evolution strategies on Ray actors (see the module docstring)."""

    name: ClassVar[str] = "es"

    env: str = ""
    """Registered env id (``rlsuite/Ring-v0``) or any gymnasium id (``CartPole-v1``)."""
    env_config: Mapping[str, Any] = field(default_factory=dict)
    """Keyword arguments for the env."""
    num_workers: int = 2
    """Ray actors evaluating perturbations; each holds one env."""
    cpus_per_worker: float = 1.0
    """CPUs Ray reserves for each worker actor."""
    population_size: int = 32
    """Perturbed policies per generation; even, as antithetic pairs ``theta +- sigma*eps``."""
    sigma: float = 0.05
    """Standard deviation of the parameter perturbations."""
    lr: float = 0.02
    """Step size of the optimiser on the central parameters."""
    optimizer: str = "adam"
    """``adam`` or ``sgd`` (SGD with momentum)."""
    momentum: float = 0.9
    """Momentum of ``sgd`` (unused by ``adam``, which must keep the default)."""
    l2_coeff: float = 0.005
    """Weight decay on the central parameters, added to the ES gradient."""
    hidden: tuple[int, ...] = (64, 64)
    """Hidden layer sizes of the policy MLP; ``()`` is a linear policy."""
    activation: str = "tanh"
    """Hidden activation: ``tanh`` or ``relu``."""
    seed: int = 0
    """Seeds the initial parameters, the noise offsets and the env seeds: same seed, same run."""
    episodes_per_eval: int = 1
    """Episodes per perturbed policy (its fitness is their mean return); both members
    of an antithetic pair run the same env seeds."""
    max_episode_steps: int | None = None
    """Cut episodes after this many env steps; ``None``: the env's own horizon."""
    eval_episodes: int = 2
    """Episodes of the unperturbed central policy per generation (``eval_return_mean``); 0: none."""
    observation_filter: str = "meanstd"
    """``meanstd``: normalise observations by running mean/std (saved in checkpoints);
    ``none``: raw observations."""
    noise_table_size: int = 10_000_000
    """Float32 entries of the shared noise table (40 MB at the default); must exceed
    the number of policy parameters."""
    max_worker_failures: int = 8
    """Worker deaths tolerated within one generation before the run gives up."""

    # -- validation -----------------------------------------------------------------
    def __post_init__(self) -> None:
        object.__setattr__(self, "hidden", tuple(self.hidden))
        object.__setattr__(self, "env_config", dict(self.env_config or {}))

    def validate(self) -> None:
        """Raise ``ValueError`` saying what is wrong and what to use instead."""
        if not self.env or not isinstance(self.env, str):
            raise ValueError("plan 'es' needs env=<id>, e.g. env='CartPole-v1'")
        env_registry.spec(self.env)  # raises with the list of known ids
        _check(
            isinstance(self.num_workers, int) and self.num_workers >= 1,
            f"num_workers must be an int >= 1, got {self.num_workers!r}",
        )
        _check(self.cpus_per_worker > 0, f"cpus_per_worker must be > 0, got {self.cpus_per_worker}")
        if not (
            isinstance(self.population_size, int)
            and self.population_size >= 2
            and self.population_size % 2 == 0
        ):
            p = self.population_size
            hint = f"; use {p - 1} or {p + 1}" if isinstance(p, int) and p > 2 else "; use e.g. 32"
            raise ValueError(
                f"population_size must be an even int >= 2 (antithetic pairs), got {p!r}{hint}"
            )
        _check(self.sigma > 0, f"sigma must be > 0, got {self.sigma}")
        _check(self.lr > 0, f"lr must be > 0, got {self.lr}")
        _check(
            self.optimizer in ("adam", "sgd"),
            f"optimizer must be 'adam' or 'sgd', got {self.optimizer!r}",
        )
        _check(0 <= self.momentum < 1, f"momentum must be in [0, 1), got {self.momentum}")
        if self.optimizer == "adam" and self.momentum != 0.9:
            raise ValueError(
                "momentum is only used by optimizer='sgd'; drop it or set optimizer='sgd'"
            )
        _check(self.l2_coeff >= 0, f"l2_coeff must be >= 0, got {self.l2_coeff}")
        _check(
            all(isinstance(h, int | np.integer) and h >= 1 for h in self.hidden),
            f"hidden must list positive layer sizes (or be empty), got {self.hidden!r}",
        )
        _check(
            self.activation in ("tanh", "relu"),
            f"activation must be 'tanh' or 'relu', got {self.activation!r}",
        )
        _check(
            isinstance(self.seed, int) and self.seed >= 0,
            f"seed must be an int >= 0, got {self.seed!r}",
        )
        _check(
            self.episodes_per_eval >= 1,
            f"episodes_per_eval must be >= 1, got {self.episodes_per_eval}",
        )
        _check(
            self.max_episode_steps is None or self.max_episode_steps >= 1,
            f"max_episode_steps must be None or >= 1, got {self.max_episode_steps}",
        )
        _check(self.eval_episodes >= 0, f"eval_episodes must be >= 0, got {self.eval_episodes}")
        _check(
            self.observation_filter in ("meanstd", "none"),
            f"observation_filter must be 'meanstd' or 'none', got {self.observation_filter!r}",
        )
        _check(
            self.noise_table_size >= 1000,
            f"noise_table_size must be >= 1000 (and exceed the parameter count), "
            f"got {self.noise_table_size}",
        )
        _check(
            self.max_worker_failures >= 0,
            f"max_worker_failures must be >= 0, got {self.max_worker_failures}",
        )

    # -- conversions ----------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: ``{"plan": "es", field: value, ...}``."""
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        d["env_config"] = dict(self.env_config)
        d["hidden"] = list(self.hidden)
        return {"plan": self.name, **d}

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> ESPlan:
        """Build and validate a plan; unknown keys are an error, never ignored."""
        values = dict(values)
        given = values.pop("plan", cls.name)
        if given != cls.name:
            raise ValueError(f"values are for plan {given!r}, not {cls.name!r}")
        known = {f.name for f in fields(cls)}
        for key in values:
            if key not in known:
                hint = difflib.get_close_matches(key, known, n=1)
                did = f" (did you mean {hint[0]!r}?)" if hint else ""
                raise ValueError(
                    f"unknown key for plan 'es': {key!r}{did}. Known keys: {', '.join(sorted(known))}"
                )
        if "hidden" in values:
            values["hidden"] = tuple(int(h) for h in values["hidden"])
        plan = cls(**values)
        plan.validate()
        return plan

    def replace(self, **changes: Any) -> ESPlan:
        """A copy with ``changes`` applied, checked like :meth:`from_dict`."""
        return ESPlan.from_dict({**self.to_dict(), **changes})

    def placement_bundles(self) -> list[dict[str, float]]:
        """Resources of one run: the driver (one CPU) and one bundle per worker."""
        return [{"CPU": 1.0}] + [{"CPU": float(self.cpus_per_worker)}] * self.num_workers


def _check(ok: bool, msg: str) -> None:
    if not ok:
        raise ValueError(msg)


# ----------------------------------------------------------------------------- policy


class ESPolicy:
    """A deterministic MLP policy over a flat parameter vector.

    Observations are flattened (``gymnasium.spaces.flatten``); the output head
    depends on the action space: ``Discrete`` -> argmax of logits, bounded
    ``Box`` -> ``tanh`` scaled to ``[low, high]`` (unbounded: linear),
    ``MultiDiscrete`` -> argmax per sub-action, ``MultiBinary`` -> ``logit > 0``.
    The flat layout follows ``torch.nn.Linear``: per layer, weight ``(out, in)``
    then bias.
    """

    def __init__(
        self,
        observation_space: Any,
        action_space: Any,
        hidden: Sequence[int],
        activation: str = "tanh",
    ):
        import gymnasium as gym

        self.observation_space = observation_space
        self.action_space = action_space
        self.hidden = tuple(int(h) for h in hidden)
        self.activation = activation
        try:
            self.obs_dim = int(gym.spaces.flatdim(observation_space))
        except Exception as e:  # noqa: BLE001 - re-raised with what to do
            raise ValueError(
                f"the es plan cannot flatten observations of {observation_space}: {e}"
            ) from e
        self._box_obs = isinstance(observation_space, gym.spaces.Box)
        a = action_space
        if isinstance(a, gym.spaces.Discrete):
            self.kind, self.out_dim = "discrete", int(a.n)
        elif isinstance(a, gym.spaces.Box):
            self.kind, self.out_dim = "box", int(np.prod(a.shape))
            low, high = a.low.reshape(-1).astype(np.float64), a.high.reshape(-1).astype(np.float64)
            self._bounded = bool(np.all(np.isfinite(low)) and np.all(np.isfinite(high)))
            self._low, self._half = low, (high - low) / 2.0
        elif isinstance(a, gym.spaces.MultiDiscrete):
            self.kind = "multi_discrete"
            self._nvec = a.nvec.reshape(-1).astype(int)
            self.out_dim = int(self._nvec.sum())
        elif isinstance(a, gym.spaces.MultiBinary):
            self.kind, self.out_dim = "multi_binary", int(np.prod(a.shape))
        else:
            raise ValueError(
                f"the es plan supports Discrete, Box, MultiDiscrete and MultiBinary actions, "
                f"not {a}; wrap the env to flatten its action space"
            )
        sizes = [self.obs_dim, *self.hidden, self.out_dim]
        self.layer_shapes = [(sizes[i + 1], sizes[i]) for i in range(len(sizes) - 1)]
        self.num_params = int(sum(o * i + o for o, i in self.layer_shapes))
        self._layers: list[tuple[np.ndarray, np.ndarray]] = []

    def architecture(self) -> dict[str, Any]:
        """What identifies the parameter layout (checked on restore)."""
        return {
            "obs_dim": self.obs_dim,
            "hidden": list(self.hidden),
            "out_dim": self.out_dim,
            "action_kind": self.kind,
            "activation": self.activation,
            "num_params": self.num_params,
        }

    def init_params(self, rng: np.random.Generator) -> np.ndarray:
        """Normalised-column init (std 1 for hidden layers, 0.01 for the output), zero biases."""
        parts = []
        for li, (o, i) in enumerate(self.layer_shapes):
            std = 0.01 if li == len(self.layer_shapes) - 1 else 1.0
            w = rng.standard_normal((o, i))
            w *= std / np.sqrt(np.square(w).sum(axis=1, keepdims=True))
            parts += [w.reshape(-1), np.zeros(o)]
        return np.concatenate(parts).astype(np.float32)

    def set_params(self, flat: np.ndarray) -> None:
        if flat.shape != (self.num_params,):
            raise ValueError(f"expected {self.num_params} parameters, got shape {flat.shape}")
        layers, k = [], 0
        for o, i in self.layer_shapes:
            w = flat[k : k + o * i].reshape(o, i)
            k += o * i
            layers.append((w, flat[k : k + o]))
            k += o
        self._layers = layers

    def flat_obs(self, obs: Any) -> np.ndarray:
        if self._box_obs:
            return np.asarray(obs, dtype=np.float32).reshape(-1)
        import gymnasium as gym

        return np.asarray(gym.spaces.flatten(self.observation_space, obs), dtype=np.float32)

    def forward(self, x: np.ndarray) -> np.ndarray:
        """Raw network output for one normalised flat observation."""
        act = np.tanh if self.activation == "tanh" else _relu
        last = len(self._layers) - 1
        for li, (w, b) in enumerate(self._layers):
            x = w @ x + b
            if li < last:
                x = act(x)
        return x

    def action(self, out: np.ndarray) -> Any:
        """Map the network output to an action of the env's space."""
        if self.kind == "discrete":
            return int(self.action_space.start + int(np.argmax(out)))
        if self.kind == "box":
            a = self._low + (np.tanh(out) + 1.0) * self._half if self._bounded else out
            return a.reshape(self.action_space.shape).astype(self.action_space.dtype)
        if self.kind == "multi_discrete":
            idx, k = [], 0
            for n in self._nvec:
                idx.append(int(np.argmax(out[k : k + n])))
                k += n
            return np.array(idx, dtype=self.action_space.dtype).reshape(self.action_space.shape)
        return (out > 0).astype(self.action_space.dtype).reshape(self.action_space.shape)

    def to_torch(self, flat: np.ndarray):
        """The same network as a ``torch.nn.Sequential`` (raw outputs; no filter, no head)."""
        import torch

        mods: list[torch.nn.Module] = []
        k = 0
        for li, (o, i) in enumerate(self.layer_shapes):
            lin = torch.nn.Linear(i, o)
            with torch.no_grad():
                lin.weight.copy_(torch.from_numpy(np.array(flat[k : k + o * i]).reshape(o, i)))
                k += o * i
                lin.bias.copy_(torch.from_numpy(np.array(flat[k : k + o])))
                k += o
            mods.append(lin)
            if li < len(self.layer_shapes) - 1:
                mods.append(torch.nn.Tanh() if self.activation == "tanh" else torch.nn.ReLU())
        return torch.nn.Sequential(*mods)


def _relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, 0.0)


class RunningStat:
    """Count, sum and sum of squares of flat observations (float64), mergeable in order."""

    def __init__(self, dim: int):
        self.count = 0.0
        self.sum = np.zeros(dim)
        self.sumsq = np.zeros(dim)

    def push(self, x: np.ndarray) -> None:
        self.count += 1.0
        self.sum += x
        self.sumsq += np.square(x, dtype=np.float64)

    def merge(self, count: float, s: np.ndarray, sq: np.ndarray) -> None:
        self.count += count
        self.sum += s
        self.sumsq += sq

    def mean_std(self) -> tuple[np.ndarray, np.ndarray]:
        if self.count < 2:
            return np.zeros_like(self.sum, dtype=np.float32), np.ones_like(
                self.sum, dtype=np.float32
            )
        mean = self.sum / self.count
        var = np.maximum(self.sumsq / self.count - np.square(mean), 1e-2)
        return mean.astype(np.float32), np.sqrt(var).astype(np.float32)


def centered_ranks(x: np.ndarray) -> np.ndarray:
    """Ranks of ``x`` scaled to ``[-0.5, 0.5]`` (ties broken by position: deterministic)."""
    flat = x.reshape(-1)
    ranks = np.empty(flat.size, dtype=np.float64)
    ranks[np.argsort(flat, kind="stable")] = np.arange(flat.size, dtype=np.float64)
    return (ranks / max(flat.size - 1, 1) - 0.5).reshape(x.shape)


# ----------------------------------------------------------------------------- worker


def _env_spaces(env: Any, env_id: str, multi: bool) -> tuple[Any, Any]:
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


class _Worker:
    """One Ray actor: an env, the policy's layout and the shared noise table."""

    def __init__(
        self,
        env_spec: env_registry.EnvSpec,
        env_config: Mapping[str, Any],
        noise: np.ndarray,
        hidden: Sequence[int],
        activation: str,
        sigma: float,
        max_episode_steps: int | None,
        filter_obs: bool,
    ):
        # Built from the driver's spec, so envs registered only in the driver work too.
        self.env_id = env_spec.env_id
        self.multi = env_spec.multi_agent
        make = env_registry._resolve(env_spec.entry_point)
        self.env = make(**{**env_spec.default_config, **dict(env_config)})
        obs_space, act_space = _env_spaces(self.env, self.env_id, self.multi)
        self.policy = ESPolicy(obs_space, act_space, hidden, activation)
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

    def _act(self, obs: Any, mean: np.ndarray, std: np.ndarray, stat: RunningStat | None) -> Any:
        x = self.policy.flat_obs(obs)
        if stat is not None:
            stat.push(x)
        if self.filter_obs:
            x = np.clip((x - mean) / std, -OBS_CLIP, OBS_CLIP)
        return self.policy.action(self.policy.forward(x))

    def _episode(
        self, seed: int, mean: np.ndarray, std: np.ndarray, stat: RunningStat | None
    ) -> tuple[float, int]:
        env, total, steps = self.env, 0.0, 0
        obs, _ = env.reset(seed=seed)
        while True:
            if self.multi:
                actions = {a: self._act(o, mean, std, stat) for a, o in obs.items()}
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


# ----------------------------------------------------------------------------- optimisers


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


# ----------------------------------------------------------------------------- trainer


class ESTrainer:
    """Runs an :class:`ESPlan`: one :meth:`train` call is one generation.

    Needs Ray (starts an embedded one if none is up, and stops it in :meth:`stop`).
    """

    def __init__(self, plan: ESPlan):
        import ray

        from rlsuite.platform import cluster

        if not isinstance(plan, ESPlan):
            raise TypeError(
                f"ESTrainer needs an ESPlan (make_plan('es', ...)), got {type(plan).__name__}"
            )
        plan.validate()
        self.plan = plan
        self._started_ray = not ray.is_initialized()
        if self._started_ray:
            cluster.init()
        self.multi_agent = env_registry.spec(plan.env).multi_agent
        self._noise_ref = ray.put(
            np.random.default_rng(NOISE_SEED).standard_normal(
                plan.noise_table_size, dtype=np.float32
            )
        )
        self._noise: np.ndarray = ray.get(self._noise_ref)
        self._actor_cls = ray.remote(num_cpus=plan.cpus_per_worker, max_restarts=0)(_Worker)
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
            self.policy = ESPolicy(obs_space, act_space, plan.hidden, plan.activation)
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
        self.generation = 0
        self.env_steps_total = 0
        self.episodes_total = 0
        self.time_total_s = 0.0
        self.worker_restarts_total = 0
        self.last_node_counts: dict[str, int] = {}
        """Perturbation pairs evaluated per Ray node in the last generation."""

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
            p.sigma,
            p.max_episode_steps,
            p.observation_filter == "meanstd",
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

        shaped = centered_ranks(returns)
        weights = shaped[:, 0] - shaped[:, 1]
        grad = np.zeros(n)
        for w, off in zip(weights, offsets):
            grad += w * self._noise[off : off + n]
        grad /= 2 * pairs * p.sigma
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
        np.save(os.path.join(path, PARAMS), self.theta)
        np.savez(
            os.path.join(path, ARRAYS),
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
            "format": CHECKPOINT_FORMAT,
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
        _write_json(os.path.join(path, STATE), state)
        meta_path = os.path.join(path, META)
        if not os.path.exists(meta_path):  # training.train writes its own, richer one
            _write_json(
                meta_path,
                {
                    "format": 1,
                    "plan": "es",
                    "plan_config": self.plan.to_dict(),
                    "env": self.plan.env,
                    "env_config": dict(self.plan.env_config),
                    "multi_agent": self.multi_agent,
                    "iteration": self.generation,
                },
            )

    def restore(self, path: str) -> None:
        """Continue from a checkpoint of :meth:`save_checkpoint` (same env and architecture;
        hyperparameters such as ``lr`` or ``sigma`` may differ, as PBT needs)."""
        state = _read_state(path)
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
        self.theta = np.load(os.path.join(path, PARAMS)).astype(np.float32)
        with np.load(os.path.join(path, ARRAYS)) as arr:
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
        import ray

        # Close the envs first (a TraCI env owns a SUMO child process), then end the actors.
        closing = []
        for w in self._workers:
            try:
                closing.append(w.close.remote())
            except Exception:  # noqa: BLE001 - already dead
                pass
        if closing:
            ray.wait(closing, num_returns=len(closing), timeout=10)
        for w in self._workers:
            try:
                ray.kill(w, no_restart=True)
            except Exception:  # noqa: BLE001 - already dead
                pass
        self._workers = []
        if self._started_ray:
            from rlsuite.platform import cluster

            cluster.shutdown()
            self._started_ray = False


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


def _read_state(path: str) -> dict[str, Any]:
    f = os.path.join(path, STATE)
    if not os.path.exists(f):
        raise FileNotFoundError(
            f"{path} is not an es checkpoint (no {STATE}); pass a directory written by "
            "ESTrainer.save_checkpoint or training.train with an es plan"
        )
    with open(f) as fh:
        state = json.load(fh)
    if state.get("format") != CHECKPOINT_FORMAT:
        raise ValueError(
            f"{path}: es checkpoint format {state.get('format')!r} is not "
            f"{CHECKPOINT_FORMAT}; it was written by another rlsuite version"
        )
    return state


# ----------------------------------------------------------------------------- inference


class ESController:
    """A trained es policy: ``act(obs)`` is deterministic (dict in, dict out for multi-agent)."""

    def __init__(
        self,
        policy: ESPolicy,
        theta: np.ndarray,
        obs_mean: np.ndarray,
        obs_std: np.ndarray,
        filter_obs: bool,
        multi_agent: bool,
        name: str = "es",
    ):
        self.policy = policy
        self.theta = np.asarray(theta, dtype=np.float32)
        self.policy.set_params(self.theta)
        self.obs_mean, self.obs_std = obs_mean, obs_std
        self.filter_obs = filter_obs
        self.multi_agent = multi_agent
        self.name = name

    def __getstate__(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d["policy"] = (
            self.policy.observation_space,
            self.policy.action_space,
            self.policy.hidden,
            self.policy.activation,
        )
        return d

    def __setstate__(self, d: dict[str, Any]) -> None:
        d = dict(d)
        d["policy"] = ESPolicy(*d["policy"])
        self.__dict__.update(d)
        self.policy.set_params(self.theta)

    def reset(self, seed: int | None = None) -> None:
        """Nothing to reset: the policy is memoryless."""

    def _act_one(self, obs: Any) -> Any:
        x = self.policy.flat_obs(obs)
        if self.filter_obs:
            x = np.clip((x - self.obs_mean) / self.obs_std, -OBS_CLIP, OBS_CLIP)
        return self.policy.action(self.policy.forward(x))

    def act(self, observation: Any) -> Any:
        if self.multi_agent:
            return {agent: self._act_one(o) for agent, o in observation.items()}
        return self._act_one(observation)

    def to_torch(self):
        """The network (raw outputs, before the action head) as a torch module."""
        return self.policy.to_torch(self.theta)


def load_controller(path: str) -> ESController:
    """The central policy saved in es checkpoint directory ``path``."""
    state = _read_state(path)
    with open(os.path.join(path, SPACES), "rb") as f:
        obs_space, act_space = pickle.load(f)["default_policy"]
    arch = state["policy"]
    policy = ESPolicy(obs_space, act_space, arch["hidden"], arch["activation"])
    theta = np.load(os.path.join(path, PARAMS))
    stat = RunningStat(policy.obs_dim)
    with np.load(os.path.join(path, ARRAYS)) as arr:
        stat.merge(float(arr["obs_count"]), arr["obs_sum"], arr["obs_sumsq"])
    mean, std = stat.mean_std()
    return ESController(
        policy,
        theta,
        mean,
        std,
        state["observation_filter"] == "meanstd",
        bool(state["multi_agent"]),
        name=f"es-{state['env']}-g{state['generation']}",
    )


__all__ = ["ESPlan", "ESTrainer", "ESPolicy", "ESController", "load_controller", "centered_ranks"]
