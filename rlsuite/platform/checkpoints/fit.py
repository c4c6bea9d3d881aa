"""Whether a checkpoint's policy can act on an env, decided from its recorded spaces.

A checkpoint records the observation and action spaces it was trained on
(:data:`~rlsuite.platform.checkpoints.layout.SPACES`) and whether it acts for the agents
of a multi-agent env (``rlsuite.json``). :func:`check_fits` compares them with an env's
own spaces, so a policy that cannot act there (another observation size, another
action space, agents it has no module for) is refused with one sentence before any
worker or simulation starts. Shapes decide, not bounds: a ring policy trained on
220-270 m rings observes the same three values on a 230 m ring. Needs neither torch,
nor RLlib, nor Ray.

Example::

    >>> check_fits("benchmarks/policies/merge_es", "rlsuite/Ring-v0", spaces)  # doctest: +SKIP
    ValueError: policy merge_es acts for the agents of a multi-agent env ...
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Mapping
from typing import Any

from rlsuite.platform.checkpoints.layout import SPACES, metadata, resolve

ADVICE = (
    "evaluate it on an env that observes the same (its checkpoint's rlsuite.json records "
    "the training env config)"
)
"""How every refusal ends: what to change."""


def recorded_spaces(path: str) -> dict[Any, tuple[Any, Any]]:
    """The ``{key: (observation_space, action_space)}`` a checkpoint was trained on: one
    entry for a single or shared policy, one per agent for per-agent policies."""
    with open(os.path.join(resolve(path), SPACES), "rb") as f:
        return dict(pickle.load(f))


def _dim(space: Any) -> int | None:
    import gymnasium as gym

    try:
        return int(gym.spaces.flatdim(space))
    except Exception:  # noqa: BLE001 - a space gymnasium cannot flatten: no size to compare
        return None


def _size(space: Any) -> str:
    """``shape (3,) (3 values)``, or the number of values of a space with no shape."""
    shape = getattr(space, "shape", None)
    values = f"{_dim(space)} values"
    return f"shape {tuple(shape)} ({values})" if shape is not None else values


def _same_action(a: Any, b: Any) -> bool:
    """Same kind of action space and same size (bounds may differ: the env clips)."""
    import gymnasium as gym
    import numpy as np

    if type(a) is not type(b):
        return False
    if isinstance(a, gym.spaces.Discrete):
        return int(a.n) == int(b.n)
    if isinstance(a, gym.spaces.MultiDiscrete):
        return np.array_equal(a.nvec, b.nvec)
    if getattr(a, "shape", None) is not None and getattr(b, "shape", None) is not None:
        return tuple(a.shape) == tuple(b.shape)
    return _dim(a) == _dim(b)


def _same_observation(a: Any, b: Any) -> bool:
    import gymnasium as gym

    if isinstance(a, gym.spaces.Box) and isinstance(b, gym.spaces.Box):
        return tuple(a.shape) == tuple(b.shape)
    return _dim(a) == _dim(b)


def check_fits(
    path: str,
    env_id: str,
    env_spaces: Mapping[Any, tuple[Any, Any]],
    env_config: Mapping[str, Any] | None = None,
) -> None:
    """Raise ``ValueError`` (one sentence: what does not fit, and what to do) when the policy
    of checkpoint ``path`` cannot act on env ``env_id`` whose spaces are ``env_spaces``
    (``{None: (obs, act)}`` single-agent, ``{agent: (obs, act)}`` multi-agent, as
    :func:`rlsuite.platform.envs.spaces` gives them). A single-agent policy may drive every
    agent of a multi-agent env whose agents observe and act as it was trained to."""
    meta = metadata(path)
    name = os.path.basename(os.path.normpath(os.fspath(path)))
    trained = recorded_spaces(path)
    trained_on = f"{meta.get('env')!r} with env_config {meta.get('env_config', {})}"
    env = f"{env_id!r}" + (f" with env_config {dict(env_config)}" if env_config else "")
    env_multi = None not in env_spaces
    if meta.get("multi_agent") and not env_multi:
        raise ValueError(
            f"policy {name} acts for the agents of the multi-agent env {trained_on}, and "
            f"{env} is a single-agent env; {ADVICE}"
        )
    per_agent = bool(meta.get("multi_agent")) and meta.get("policies", "shared") != "shared"
    if per_agent:
        missing = [a for a in env_spaces if a not in trained and str(a) not in trained]
        if missing:
            raise ValueError(
                f"policy {name} has one module per agent for {len(trained)} agents "
                f"({', '.join(map(str, trained))}) of {trained_on}, and {env} has agents "
                f"it has no module for ({', '.join(map(str, missing))}); {ADVICE}"
            )
    first = next(iter(trained.values()))
    for agent, (obs, act) in env_spaces.items():
        t_obs, t_act = trained.get(agent, trained.get(str(agent), first)) if per_agent else first
        who = f"{env}" if agent is None else f"agent {agent!r} of {env}"
        if not _same_observation(t_obs, obs):
            raise ValueError(
                f"observations of {_size(obs)} from {who} cannot go to policy {name}, which was "
                f"trained on observations of {_size(t_obs)} from {trained_on}; {ADVICE}"
            )
        if not _same_action(t_act, act):
            raise ValueError(
                f"policy {name} acts in {t_act} (trained on {trained_on}) and {who} takes "
                f"actions in {act}; {ADVICE}"
            )
