"""The runners' losses: A3C's n-step actor-critic and GORILA's Q-learning, on RLlib modules.

Both are plain functions of a module and a batch; a runner calls one, then
``backward()``, and pushes the gradient. :func:`advantages` turns a rollout into A3C's
targets; :class:`Replay` is GORILA's runner-local replay memory.

Example::

    >>> import numpy as np
    >>> adv, ret = advantages(np.ones((3, 1)), np.zeros((3, 1)), np.zeros((3, 1)),
    ...                       np.zeros(1), np.zeros((3, 1), bool), gamma=0.5, lambda_=1.0)
    >>> ret[:, 0].tolist()
    [1.75, 1.5, 1.0]
"""

from __future__ import annotations

from typing import Any

import numpy as np


def advantages(
    rewards: np.ndarray,
    values: np.ndarray,
    next_values: np.ndarray,
    last_values: np.ndarray,
    ends: np.ndarray,
    gamma: float,
    lambda_: float,
) -> tuple[np.ndarray, np.ndarray]:
    """GAE advantages and value targets of a ``[T, n_envs]`` rollout.

    ``values[t]``: V of the observation acted on at t. ``next_values[t]``: V of the
    observation after step t's action (0 where the episode terminated; the final
    observation's value where it was truncated), used where ``ends[t]`` (the episode
    ended there, either way); elsewhere the next row's value is, and ``last_values``
    after the last row. ``lambda_=1`` gives A3C's bootstrapped n-step return."""
    t_len = len(rewards)
    adv = np.zeros_like(rewards, dtype=np.float32)
    gae = np.zeros(rewards.shape[1], dtype=np.float32)
    for t in reversed(range(t_len)):
        following = last_values if t == t_len - 1 else values[t + 1]
        nxt = np.where(ends[t], next_values[t], following)
        delta = rewards[t] + gamma * nxt - values[t]
        gae = delta + gamma * lambda_ * np.where(ends[t], 0.0, gae)
        adv[t] = gae
    return adv, adv + values


def a3c_loss(
    module: Any,
    obs: Any,
    actions: Any,
    adv: Any,
    value_targets: Any,
    vf_loss_coeff: float,
    entropy_coeff: float,
) -> tuple[Any, dict[str, float]]:
    """A3C's loss on one rollout, summed over its steps as RLlib's A3C did:
    ``-sum(logp * adv) + vf_loss_coeff * 0.5 * sum((V - target)^2) - entropy_coeff * sum(H)``.
    Returns the loss tensor and its parts as numbers."""
    from ray.rllib.core.columns import Columns

    out = module.forward_train({Columns.OBS: obs})
    dist = module.get_train_action_dist_cls().from_logits(out[Columns.ACTION_DIST_INPUTS])
    logp = dist.logp(actions)
    entropy = dist.entropy()
    values = module.compute_values({Columns.OBS: obs}, embeddings=out.get(Columns.EMBEDDINGS))
    pi_loss = -(logp * adv).sum()
    vf_loss = 0.5 * ((values - value_targets) ** 2).sum()
    ent = entropy.sum()
    total = pi_loss + vf_loss_coeff * vf_loss - entropy_coeff * ent
    n = max(1, len(adv))
    stats = {
        "policy_loss": float(pi_loss.detach()) / n,
        "vf_loss": float(vf_loss.detach()) / n,
        "entropy": float(ent.detach()) / n,
    }
    return total, stats


def dqn_loss(
    module: Any, target: Any, batch: dict[str, np.ndarray], gamma: float, double_q: bool
) -> tuple[Any, dict[str, float]]:
    """One-step Q-learning's Huber loss on a replay batch, the target from ``target``
    (double Q: the online module picks the next action, the target module values it)."""
    import torch
    from ray.rllib.core.columns import Columns

    obs = torch.as_tensor(batch["obs"])
    nxt = torch.as_tensor(batch["next_obs"])
    act = torch.as_tensor(batch["actions"], dtype=torch.long)
    q = module.compute_q_values({Columns.OBS: obs})["qf_preds"]
    q_sel = q.gather(1, act[:, None])[:, 0]
    with torch.no_grad():
        q_next_t = target.compute_q_values({Columns.OBS: nxt})["qf_preds"]
        if double_q:
            best = module.compute_q_values({Columns.OBS: nxt})["qf_preds"].argmax(1)
        else:
            best = q_next_t.argmax(1)
        q_next = q_next_t.gather(1, best[:, None])[:, 0]
        y = (
            torch.as_tensor(batch["rewards"])
            + gamma * (1.0 - torch.as_tensor(batch["terminated"], dtype=torch.float32)) * q_next
        )
    loss = torch.nn.functional.smooth_l1_loss(q_sel, y)
    return loss, {"qf_loss": float(loss.detach()), "q_mean": float(q_sel.detach().mean())}


class Replay:
    """A runner's own replay memory of transitions (GORILA: one per actor), a ring buffer."""

    def __init__(self, capacity: int, obs_dim: int, seed: int):
        self.capacity = capacity
        self.obs = np.zeros((capacity, obs_dim), np.float32)
        self.next_obs = np.zeros((capacity, obs_dim), np.float32)
        self.actions = np.zeros(capacity, np.int64)
        self.rewards = np.zeros(capacity, np.float32)
        self.terminated = np.zeros(capacity, np.float32)
        self.size, self.pos = 0, 0
        self.rng = np.random.default_rng(seed)

    def add(self, obs, actions, rewards, next_obs, terminated) -> None:
        """Add one step of every env (rows of equal length)."""
        for i in range(len(actions)):
            p = self.pos
            self.obs[p], self.next_obs[p] = obs[i], next_obs[i]
            self.actions[p], self.rewards[p] = actions[i], rewards[i]
            self.terminated[p] = terminated[i]
            self.pos = (p + 1) % self.capacity
            self.size = min(self.size + 1, self.capacity)

    def sample(self, n: int) -> dict[str, np.ndarray]:
        idx = self.rng.integers(0, self.size, size=n)
        return {
            "obs": self.obs[idx],
            "next_obs": self.next_obs[idx],
            "actions": self.actions[idx],
            "rewards": self.rewards[idx],
            "terminated": self.terminated[idx],
        }
