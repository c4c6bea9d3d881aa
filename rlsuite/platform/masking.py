"""Action masks read from the observation: RLlib modules whose policy never picks an action
that the env marks unavailable.

An env whose discrete actions are not all available in every state (a traffic light with
fewer phases than the policy shared by a network's lights has actions) puts a 0/1 mask over
its ``Discrete(n)`` actions into its flat observation, ``n`` entries from some offset. A
plan with ``action_mask_offset`` set trains with one of the modules below instead of
RLlib's default (the rest of the module is RLlib's own):

- ``sync`` (PPO): the masked actions' logits become the float minimum, so they are never
  sampled, their probability is 0 in the loss and the entropy, and the argmax ignores them.
- ``replay`` (DQN): the masked actions' Q-values become -inf wherever RLlib computes them:
  the greedy action, the random action of epsilon-greedy (RLlib draws it among the finite
  Q-values), and the double-Q / max target of the next state.

The mask stays in the observation, so the network sees it too. The offset travels in the
module's ``model_config`` (``action_mask_offset``), so a checkpoint restores the mask.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
from ray.rllib.algorithms.dqn.dqn_learner import QF_PREDS
from ray.rllib.algorithms.dqn.torch.default_dqn_torch_rl_module import DefaultDQNTorchRLModule
from ray.rllib.algorithms.ppo.torch.default_ppo_torch_rl_module import DefaultPPOTorchRLModule
from ray.rllib.core.columns import Columns

KEY = "action_mask_offset"
"""The ``model_config`` key of the mask's first index in the observation."""


def mask_slice(observation_space: gym.Space, action_space: gym.Space, offset: int) -> slice:
    """Where the mask over ``action_space``'s actions lies in a flat observation; raises a
    ``ValueError`` that says what does not fit."""
    if not isinstance(action_space, gym.spaces.Discrete):
        raise ValueError(f"action_mask_offset needs a Discrete action space, got {action_space}")
    shape = getattr(observation_space, "shape", None)
    if not shape or len(shape) != 1:
        raise ValueError(
            f"action_mask_offset needs a flat (1-D Box) observation, got {observation_space}"
        )
    n = int(action_space.n)
    if not 0 <= offset <= shape[0] - n:
        raise ValueError(
            f"action_mask_offset={offset}: a mask of {n} actions does not fit in an "
            f"observation of {shape[0]} values (the offset must be in [0, {shape[0] - n}])"
        )
    return slice(offset, offset + n)


def _available(module: Any, batch: dict) -> Any:
    """The batch's mask as booleans, ``[..., n]`` (any leading batch / time axes)."""
    return batch[Columns.OBS][..., module.mask_slice] > 0.5


class MaskedPPOTorchRLModule(DefaultPPOTorchRLModule):
    """RLlib's PPO module with the observation's action mask applied to its logits."""

    def setup(self) -> None:
        super().setup()
        self.mask_slice = mask_slice(
            self.observation_space, self.action_space, int(self.model_config[KEY])
        )

    def _masked(self, out: dict, batch: dict) -> dict:
        import torch

        logits = out[Columns.ACTION_DIST_INPUTS]
        floor = torch.finfo(logits.dtype).min
        out[Columns.ACTION_DIST_INPUTS] = torch.where(_available(self, batch), logits, floor)
        return out

    def _forward(self, batch: dict, **kwargs: Any) -> dict:
        return self._masked(super()._forward(batch, **kwargs), batch)

    def _forward_train(self, batch: dict, **kwargs: Any) -> dict:
        return self._masked(super()._forward_train(batch, **kwargs), batch)


class MaskedDQNTorchRLModule(DefaultDQNTorchRLModule):
    """RLlib's DQN module (dueling and double Q included) with the observation's action
    mask applied to every Q-value it computes, online and target network alike."""

    def setup(self) -> None:
        super().setup()
        self.mask_slice = mask_slice(
            self.observation_space, self.action_space, int(self.model_config[KEY])
        )

    def _qf_forward_helper(self, batch: dict, encoder: Any, head: Any) -> dict:
        out = super()._qf_forward_helper(batch, encoder, head)
        out[QF_PREDS] = out[QF_PREDS].masked_fill(~_available(self, batch), float("-inf"))
        return out
