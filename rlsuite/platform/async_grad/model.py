"""The network of an ``async_grad`` run: RLlib's default RLModule, as one flat vector.

The ``a3c`` loss trains RLlib's PPO module (a policy and a value MLP; its action
distributions: categorical, diagonal Gaussian), the ``dqn`` loss RLlib's DQN module
(dueling, double-Q). The parameter server sees the module only as a flat float32
vector (the order of ``module.parameters()``): :func:`get_flat`, :func:`set_flat` and
:func:`flat_grad` convert. Checkpoints save the module the RLlib way, so the ``rllib``
backend's controller loads it (:func:`save_module`).
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

import numpy as np

MODULE_ID = "default_policy"
"""The module's id inside the saved multi-module (RLlib's single-agent default)."""


def build_module(
    loss: str,
    hidden: tuple[int, ...],
    activation: str,
    observation_space: Any,
    action_space: Any,
    double_q: bool = True,
    dueling: bool = True,
) -> Any:
    """RLlib's default torch RLModule for ``loss`` (``a3c``: PPO's, ``dqn``: DQN's)."""
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

    if loss == "dqn":
        from ray.rllib.algorithms.dqn import DQNConfig

        config = DQNConfig().training(double_q=double_q, dueling=dueling, epsilon=0.0)
    else:
        from ray.rllib.algorithms.ppo import PPOConfig

        config = PPOConfig()
    spec = config.get_default_rl_module_spec()
    spec.observation_space = observation_space
    spec.action_space = action_space
    model = DefaultModelConfig(fcnet_hiddens=list(hidden), fcnet_activation=activation)
    spec.model_config = {**dataclasses.asdict(model), **config._model_config_auto_includes}
    return spec.build()


def module_for(plan: Any) -> Any:
    """:func:`build_module` for ``plan`` on its env's spaces."""
    from rlsuite.platform import envs as env_registry

    obs_space, act_space = next(iter(env_registry.spaces(plan.env, plan.env_config).values()))
    return build_module(
        plan.loss, plan.hidden, plan.activation, obs_space, act_space, plan.double_q, plan.dueling
    )


def num_params(plan: Any) -> int:
    """Parameters of ``plan``'s network (the length of the flat vector)."""
    return sum(p.numel() for p in module_for(plan).parameters())


def get_flat(module: Any) -> np.ndarray:
    """The module's parameters as one float32 vector."""
    import torch

    with torch.no_grad():
        return torch.nn.utils.parameters_to_vector(module.parameters()).numpy().copy()


def set_flat(module: Any, flat: np.ndarray) -> None:
    """Load a flat vector of :func:`get_flat`'s layout into the module."""
    import torch

    with torch.no_grad():
        torch.nn.utils.vector_to_parameters(torch.as_tensor(flat), module.parameters())


def flat_grad(module: Any) -> np.ndarray:
    """The module's gradients as one float32 vector (zeros where a parameter has none)."""
    import torch

    parts = [
        (p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1)
        for p in module.parameters()
    ]
    return torch.cat(parts).numpy().astype(np.float32, copy=True)


def shard_bounds(n: int, num_shards: int) -> list[tuple[int, int]]:
    """``[lo, hi)`` of each shard's slice of an ``n``-vector: contiguous, sizes within 1.

    >>> shard_bounds(10, 3)
    [(0, 4), (4, 7), (7, 10)]
    """
    if not 1 <= num_shards <= n:
        raise ValueError(f"cannot split {n} parameters into {num_shards} shards")
    edges = [0] + [int((n * i + num_shards - 1) // num_shards) for i in range(1, num_shards)] + [n]
    return [(edges[i], edges[i + 1]) for i in range(num_shards)]


def save_module(module: Any, path: str) -> None:
    """Save ``module`` into directory ``path`` as RLlib saves a learner's modules (a
    multi-module with one module, :data:`MODULE_ID`)."""
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModule

    multi = MultiRLModule()
    multi.add_module(MODULE_ID, module)
    multi.save_to_path(os.path.abspath(path))
