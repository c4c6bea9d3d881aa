"""A trained QT-Opt Q-network as a controller: CEM's argmax, without exploration.

:func:`load_controller` needs only the checkpoint directory, not Ray and not the env.
"""

from __future__ import annotations

import os
import pickle
from typing import Any

import numpy as np
import torch

from rlsuite.platform.checkpoints.layout import QTOPT_STATE, SPACES, state_file
from rlsuite.platform.qtopt.cem import cem_argmax
from rlsuite.platform.qtopt.qnet import QNet, build_net, from_unit


class QTOptController:
    """``act(obs)``: the action CEM finds best under the Q-network, in the env's bounds.
    CEM samples from a generator that :meth:`reset` seeds, so an episode is repeatable."""

    def __init__(self, net: QNet, action_space: Any, cem: dict[str, int], name: str = "qt_opt"):
        self.net = net.eval()
        self.low = np.asarray(action_space.low, dtype=np.float32)
        self.high = np.asarray(action_space.high, dtype=np.float32)
        self.cem = dict(cem)
        self.name = name
        self.gen = torch.Generator().manual_seed(0)

    def reset(self, seed: int | None = None) -> None:
        self.gen.manual_seed(0 if seed is None else int(seed))

    def act(self, observation: Any) -> np.ndarray:
        obs = torch.as_tensor(np.asarray(observation, dtype=np.float32).reshape(1, -1))
        if obs.shape[1] != self.net.obs_dim:
            raise ValueError(
                f"observation with {obs.shape[1]} values given to policy {self.name}, which was "
                f"trained on {self.net.obs_dim}; evaluate it on the env it was trained on"
            )
        with torch.no_grad():
            a, _ = cem_argmax(self.net, obs, self.net.action_dim, generator=self.gen, **self.cem)
        return from_unit(a[0].numpy(), self.low, self.high)


def read_state(path: str) -> dict[str, Any]:
    """The QT-Opt state file of checkpoint ``path``."""
    return torch.load(state_file(path, QTOPT_STATE, "a qt_opt"), weights_only=False)


def load_controller(path: str) -> QTOptController:
    """The greedy (CEM) controller of qt_opt checkpoint ``path``."""
    state = read_state(path)
    net = build_net(state["arch"])
    net.load_state_dict(state["q"])
    with open(os.path.join(path, SPACES), "rb") as f:
        _, act_space = pickle.load(f)["default_policy"]
    return QTOptController(net, act_space, state["cem"], name=f"qt_opt@{state['updates']}")
