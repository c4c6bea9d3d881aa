"""A trained ES policy as a controller, and reading an ES checkpoint's state.

:func:`load_controller` needs only the checkpoint directory (its layout:
:mod:`rlsuite.platform.checkpoints.layout`), not Ray and not the env.
"""

from __future__ import annotations

import json
import os
import pickle
from typing import Any

import gymnasium as gym
import numpy as np

from rlsuite.platform.checkpoints.layout import ES_ARRAYS, ES_PARAMS, ES_STATE, SPACES, state_file
from rlsuite.platform.es.policy import OBS_CLIP, ESPolicy, RunningStat

STATE_FORMAT = 1
"""Version of the ES state file's format."""


def read_state(path: str) -> dict[str, Any]:
    """The ES state file of checkpoint ``path``, checked to be of this version's format."""
    f = state_file(path, ES_STATE, "an es", "ESTrainer.save_checkpoint or training.train")
    with open(f) as fh:
        state = json.load(fh)
    if state.get("format") != STATE_FORMAT:
        raise ValueError(
            f"{path}: es checkpoint format {state.get('format')!r} is not "
            f"{STATE_FORMAT}; it was written by another rlsuite version"
        )
    return state


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
        self._state: dict[Any, Any] = {}
        """Each agent's recurrent state in the running episode (empty: feed-forward)."""

    @property
    def recurrent(self) -> bool:
        """Whether the policy carries a state from step to step (cleared by :meth:`reset`)."""
        return bool(self.policy.recurrent)

    def __getstate__(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d["policy"] = (
            self.policy.observation_space,
            self.policy.action_space,
            self.policy.hidden,
            self.policy.activation,
            self.policy.recurrent,
            self.policy.cell_size,
            self.policy.action_head,
        )
        return d

    def __setstate__(self, d: dict[str, Any]) -> None:
        d = dict(d)
        d["policy"] = ESPolicy(*d["policy"])
        self.__dict__.update(d)
        self.policy.set_params(self.theta)

    def reset(self, seed: int | None = None) -> None:
        """Start an episode: clear the recurrent state (nothing to do when feed-forward)."""
        self._state = {}

    def _act_one(self, obs: Any, agent: Any = None) -> Any:
        x = self.policy.flat_obs(obs)
        if x.shape != (self.policy.obs_dim,):
            raise ValueError(
                f"observation with {x.size} values given to policy {self.name}, which was "
                f"trained on {self.policy.observation_space} ({self.policy.obs_dim} values); "
                "evaluate it on an env that observes the same (its checkpoint's rlsuite.json "
                "records the training env config)"
            )
        if self.filter_obs:
            x = np.clip((x - self.obs_mean) / self.obs_std, -OBS_CLIP, OBS_CLIP)
        return self.policy.act(x, self._state, agent)

    def act(self, observation: Any) -> Any:
        """The action for ``observation``; a dict of per-agent observations gets a dict of
        actions, so a policy trained for one agent can also drive every agent of a
        multi-agent env that observes the same."""
        if self.multi_agent or (
            isinstance(observation, dict)
            and not isinstance(self.policy.observation_space, gym.spaces.Dict)
        ):
            return {agent: self._act_one(o, agent) for agent, o in observation.items()}
        return self._act_one(observation)

    def to_torch(self):
        """The network (raw outputs, before the action head) as a torch module; with a GRU
        its ``forward(x, h)`` returns ``(out, h)``."""
        return self.policy.to_torch(self.theta)


def load_controller(path: str) -> ESController:
    """The central policy saved in es checkpoint directory ``path``."""
    state = read_state(path)
    with open(os.path.join(path, SPACES), "rb") as f:
        obs_space, act_space = pickle.load(f)["default_policy"]
    arch = state["policy"]
    policy = ESPolicy(
        obs_space,
        act_space,
        arch["hidden"],
        arch["activation"],
        arch.get("recurrent", ""),
        arch.get("cell_size", 16),
        arch.get("action_head", "tanh"),
    )
    theta = np.load(os.path.join(path, ES_PARAMS))
    stat = RunningStat(policy.obs_dim)
    with np.load(os.path.join(path, ES_ARRAYS)) as arr:
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
