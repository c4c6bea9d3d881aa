"""QT-Opt's Q-function and its clipped double-Q Bellman target (torch).

:class:`QNet` scores a (state, action) pair: an MLP over the flat observation and the
action in ``[-1, 1]^d`` (the env's Box bounds mapped linearly onto it, see
:func:`to_unit` / :func:`from_unit`). :func:`bellman_targets` is the target the paper
trains on: the next action is CEM's argmax of the first target network, its value the
*minimum* of the two target networks' (clipped double Q-learning), so a value that one
target overestimates is not propagated.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from rlsuite.platform.qtopt.cem import cem_argmax


class QNet(nn.Module):
    """``Q(s, a)``: an MLP over ``concat(flat obs, action)`` with one scalar output."""

    def __init__(self, obs_dim: int, action_dim: int, hidden: Sequence[int], activation: str):
        super().__init__()
        act = {"tanh": nn.Tanh, "relu": nn.ReLU}[activation]
        layers: list[nn.Module] = []
        width = obs_dim + action_dim
        for h in hidden:
            layers += [nn.Linear(width, int(h)), act()]
            width = int(h)
        layers.append(nn.Linear(width, 1))
        self.mlp = nn.Sequential(*layers)
        self.obs_dim, self.action_dim = obs_dim, action_dim

    def forward(self, obs: torch.Tensor, act: torch.Tensor) -> torch.Tensor:
        return self.mlp(torch.cat([obs.reshape(obs.shape[0], -1), act], dim=-1)).squeeze(-1)


def build_net(arch: dict[str, Any]) -> QNet:
    """A :class:`QNet` from its architecture dict (``obs_dim``, ``action_dim``, ``hidden``,
    ``activation``), as checkpoints and actors carry it."""
    return QNet(arch["obs_dim"], arch["action_dim"], arch["hidden"], arch["activation"])


def to_unit(action: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """Env actions in ``[low, high]`` -> ``[-1, 1]``."""
    return (2.0 * (np.asarray(action) - low) / (high - low) - 1.0).astype(np.float32)


def from_unit(action: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """``[-1, 1]`` -> env actions in ``[low, high]`` (clipped to them)."""
    a = low + (np.clip(action, -1.0, 1.0) + 1.0) * 0.5 * (high - low)
    return np.clip(a, low, high).astype(np.float32)


def bellman_targets(
    target1: QNet,
    target2: QNet,
    batch: dict[str, np.ndarray],
    gamma: float,
    cem: dict[str, int],
    generator: torch.Generator | None = None,
) -> np.ndarray:
    """``r + gamma * (1 - terminated) * min_i Q_target_i(s', a*)``, ``a* = CEM argmax_a
    Q_target1(s', a)``, for a batch of transitions (``rewards``, ``new_obs``,
    ``terminateds``). A truncated episode bootstraps; only a terminal state has value 0.
    A batch of terminal transitions only (one-step episodes, such as a grasp) needs no
    CEM: its targets are its rewards."""
    done = np.asarray(batch["terminateds"], dtype=np.float32)
    rewards = np.asarray(batch["rewards"], dtype=np.float32)
    if done.all():
        return rewards.copy()
    with torch.no_grad():
        nxt = torch.as_tensor(batch["new_obs"], dtype=torch.float32)
        a, _ = cem_argmax(target1, nxt, target1.action_dim, generator=generator, **cem)
        v = torch.minimum(target1(nxt, a), target2(nxt, a)).numpy()
    return (rewards + gamma * (1.0 - done) * v).astype(np.float32)
