"""What each env runner does for Ape-X, inside its own process.

:func:`sample_and_push` is sent to RLlib's env runners (``foreach_env_runner_async``):
it takes the newest broadcast weights, fixes the runner's own epsilon (Ape-X's
``eps ** (1 + alpha i / (N - 1))``), samples with RLlib's runner, turns the episodes into
n-step transitions (:func:`n_step_transitions`), computes their initial priorities from
the runner's own Q-values (:func:`initial_priorities`: the absolute n-step TD error) and
pushes them to a replay shard. Only counts and the runner's metrics go back to the
driver. A push to a shard that died is not retried: it is reported as lost.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rlsuite.platform.apex.plan import runner_epsilon

PUSHES = "_apex_pushes"
VERSION = "_apex_weights_version"
EPSILON = "_apex_epsilon"


def n_step_transitions(episodes: list[Any], n: int, gamma: float) -> dict[str, np.ndarray]:
    """The n-step transitions of episode chunks, as columns.

    Step ``t`` of a chunk of ``L`` steps gets ``k = min(n, L - t)`` rewards, discounted,
    and the observation ``k`` steps on; ``terminateds`` is set only where those ``k``
    steps end the episode by termination (a truncated or unfinished chunk bootstraps
    from its last observation). ``n_step`` is ``k``, the exponent of RLlib's DQN loss's
    ``gamma ** n_step``."""
    cols: dict[str, list[np.ndarray]] = {
        k: [] for k in ("obs", "actions", "rewards", "new_obs", "terminateds", "n_step")
    }
    for ep in episodes:
        length = len(ep)
        if length == 0:
            continue
        obs = np.asarray(ep.get_observations(), dtype=np.float32)
        rewards = np.asarray(ep.get_rewards(), dtype=np.float64)
        t = np.arange(length)
        k = np.minimum(n, length - t)
        padded = np.concatenate([rewards, np.zeros(n)])
        ret = sum((gamma**j) * padded[t + j] * (j < k) for j in range(n))
        cols["obs"].append(obs[:length])
        cols["actions"].append(np.asarray(ep.get_actions(), dtype=np.int64))
        cols["rewards"].append(np.asarray(ret, dtype=np.float32))
        cols["new_obs"].append(obs[t + k])
        cols["terminateds"].append((t + k == length) & bool(ep.is_terminated))
        cols["n_step"].append(k.astype(np.float32))
    return {key: np.concatenate(v) for key, v in cols.items()} if cols["obs"] else {}


def initial_priorities(module: Any, items: dict[str, np.ndarray], gamma: float) -> np.ndarray:
    """|n-step TD error| of each transition under ``module``'s Q-values (the runner's
    copy of the online network, bootstrapping from its greedy value, as Ape-X's actors)."""
    import torch
    from ray.rllib.core.columns import Columns

    with torch.no_grad():
        both = np.concatenate([items["obs"], items["new_obs"]])
        q = module.compute_q_values({Columns.OBS: torch.from_numpy(both)})["qf_preds"].numpy()
    m = len(items["obs"])
    q_sa = q[np.arange(m), items["actions"]]
    target = items["rewards"] + (gamma ** items["n_step"]) * (~items["terminateds"]) * q[m:].max(
        axis=1
    )
    return np.abs(target - q_sa)


def set_epsilon(runner: Any, epsilon: float) -> None:
    """Fix the runner's module at exploration rate ``epsilon`` (RLlib's DQN module keeps
    its epsilon in a schedule, updated at every exploring forward pass)."""
    from ray.rllib.utils.schedules.scheduler import Scheduler

    runner.module.epsilon_schedule = Scheduler(fixed_value_or_schedule=epsilon, framework="torch")
    setattr(runner, EPSILON, epsilon)


def sample_and_push(
    runner: Any,
    *,
    shards: list[Any],
    weights: list[Any],
    version: int,
    epsilon: float,
    epsilon_alpha: float,
    n_step: int,
    gamma: float,
    items_fn: Any = None,
    **items_kwargs: Any,
) -> dict[str, Any]:
    """One Ape-X actor step on an RLlib env runner (run through its ``apply``).

    ``weights``: ``[ObjectRef]`` of the learner's newest weights (in a list, so that Ray
    does not fetch it unless the runner's are older than ``version``). ``items_fn``:
    what the sampled episodes become, ``items_fn(runner, episodes, n_step=, gamma=,
    **items_kwargs) -> (columns, priorities)`` (``None``: n-step transitions with their
    initial priorities; a sequence replay passes its own)."""
    import ray

    if version > getattr(runner, VERSION, -1):
        runner.set_state({"rl_module": ray.get(weights[0])})
        setattr(runner, VERSION, version)
    index = int(runner.worker_index) - 1
    eps = runner_epsilon(epsilon, epsilon_alpha, index, int(runner.num_workers))
    if getattr(runner, EPSILON, None) != eps:
        set_epsilon(runner, eps)
    episodes = runner.sample()
    steps = sum(len(e) for e in episodes)
    if items_fn is None:
        items = n_step_transitions(episodes, n_step, gamma)
        priorities = None
    else:
        items, priorities = items_fn(runner, episodes, n_step=n_step, gamma=gamma, **items_kwargs)
    pushes = getattr(runner, PUSHES, 0)
    setattr(runner, PUSHES, pushes + 1)
    shard = (index + pushes) % len(shards)
    out = {
        "metrics": runner.get_metrics(),
        "env_steps": steps,
        "shard": shard,
        "added": 0,
        "generation": -1,
        "lost": 0,
        "version": getattr(runner, VERSION, -1),
        "epsilon": eps,
    }
    if not items:
        return out
    if priorities is None:
        priorities = initial_priorities(runner.module, items, gamma)
    try:
        out["added"], out["generation"] = ray.get(shards[shard].add.remote(items, priorities))
    except ray.exceptions.RayActorError:
        out["lost"] = len(priorities)
    return out
