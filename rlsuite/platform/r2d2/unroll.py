"""R2D2's recurrent Q-learning on one batch of sequences (torch), learner and runners alike.

A replayed sequence (:func:`rlsuite.platform.r2d2.sequences.pack`, then
:func:`finish`) has ``b + m`` steps (``b`` burn-in, left-padded where the episode began
less than ``b`` steps before; ``m`` with a loss, right-padded at the episode's end), one
more observation after its last real step (the bootstrap of its last n-step targets),
and the recurrent state stored before its first burn-in step. :func:`unroll` runs a
Q-network over it: the burn-in without gradient from the stored state (each row from
its first real step: a row whose burn-in is all padding keeps the stored state), then
the ``m + 1`` steps after it. :func:`sequence_td` gives the TD errors of R2D2's n-step
double-Q targets, with the value rescaling ``h``, inside the sequence: step ``t`` takes
``k = min(n, steps left)`` rewards and bootstraps from step ``t + k``.

The Q-network is RLlib's DQN RLModule with its LSTM encoder (``compute_q_values`` for
the online network, ``forward_target`` for the target); its state is RLlib's
``{"h": [B, 1, cell], "c": [B, 1, cell]}``, stored in replay as one vector ``[h, c]``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rlsuite.platform.r2d2.rescale import h, h_inv


def flat_state(state: Any) -> np.ndarray:
    """RLlib's LSTM state ``{"h": [..., 1, cell], "c": ...}`` (numpy; or a list of
    per-step states) as ``[..., 2 cell]``."""
    if isinstance(state, list | tuple):
        state = {k: np.stack([s[k] for s in state]) for k in ("h", "c")}
    hh, cc = np.asarray(state["h"]), np.asarray(state["c"])
    lead = hh.shape[:-2]
    return np.concatenate([hh.reshape(*lead, -1), cc.reshape(*lead, -1)], -1).astype(np.float32)


def split_state(flat: Any) -> dict[str, Any]:
    """The inverse of :func:`flat_state` on a batch (torch ``[B, 2 cell]``)."""
    cell = flat.shape[-1] // 2
    return {
        "h": flat[:, :cell].reshape(-1, 1, cell).contiguous(),
        "c": flat[:, cell:].reshape(-1, 1, cell).contiguous(),
    }


def finish(packed: dict[str, np.ndarray], burn_in: int) -> dict[str, np.ndarray]:
    """Packed sequences (columns ``obs``, ``actions``, ``rewards``, ``next_obs``,
    ``terminateds`` and :func:`~rlsuite.platform.r2d2.sequences.pack`'s ``mask``,
    ``loss_mask`` and ``state``) as replay items: ``obs`` gets one more step, the
    observation after the last real step; ``done`` says that step ended the episode by
    termination; ``pad`` is the number of padded burn-in steps."""
    obs, loss = packed["obs"], packed["loss_mask"]
    n, total = loss.shape
    real = loss.sum(1)  # steps with a loss
    last = burn_in + real - 1
    rows = np.arange(n)
    ext = np.zeros((n, total + 1, *obs.shape[2:]), dtype=np.float32)
    ext[:, :total] = obs
    ext[rows, last + 1] = packed["next_obs"][rows, last]
    return {
        "obs": ext,
        "actions": packed["actions"].astype(np.int64),
        "rewards": packed["rewards"].astype(np.float32),
        "loss_mask": loss,
        "state": packed["state"].astype(np.float32),
        "pad": np.argmax(packed["mask"], axis=1).astype(np.int64),
        "done": packed["terminateds"][rows, last].astype(bool),
    }


def unroll(forward: Any, obs: Any, state: Any, pad: Any, burn_in: int) -> Any:
    """Q-values ``[B, T - burn_in, A]`` of a sequence batch (``obs``: ``[B, T, ...]``,
    ``state``: ``[B, 2 cell]``, ``pad``: ``[B]``) under ``forward`` (an RLlib DQN
    module's ``compute_q_values`` or ``forward_target``): the burn-in unrolled without
    gradient from the stored state, then the rest from there."""
    import torch
    from ray.rllib.core.columns import Columns

    st = split_state(state)
    if burn_in:
        with torch.no_grad():
            h0, c0 = st["h"].clone(), st["c"].clone()
            for p in torch.unique(pad).tolist():
                if p >= burn_in:  # no real burn-in step: the stored state stands
                    continue
                rows = pad == p
                out = forward(
                    {
                        Columns.OBS: obs[rows, p:burn_in],
                        Columns.STATE_IN: {"h": st["h"][rows], "c": st["c"][rows]},
                    }
                )[Columns.STATE_OUT]
                h0[rows], c0[rows] = out["h"], out["c"]
        st = {"h": h0, "c": c0}
    return forward({Columns.OBS: obs[:, burn_in:], Columns.STATE_IN: st})["qf_preds"]


def sequence_td(
    q: Any,
    q_target: Any,
    batch: dict[str, Any],
    *,
    burn_in: int,
    n_step: int,
    gamma: float,
    double_q: bool = True,
    rescale_eps: float | None = 1e-3,
) -> tuple[Any, Any, Any]:
    """R2D2's TD errors on the ``m`` steps after the burn-in: ``(td [B, m], q_sa [B, m],
    target [B, m])``, zero where there is no loss (``loss_mask``).

    ``q``, ``q_target``: online and target Q-values ``[B, m + 1, A]`` (:func:`unroll`).
    The target of step ``t`` is ``h(G + gamma^k (1 - term) h^-1(Q_target(s_{t+k}, a*)))``
    with ``a*`` the online argmax (double Q), ``G`` the ``k`` discounted rewards and
    ``term`` set where ``t + k`` is the episode's terminal step; ``rescale_eps=None``
    drops ``h``."""
    import torch

    actions = batch["actions"][:, burn_in:].long()
    rewards = batch["rewards"][:, burn_in:].float()
    loss_mask = batch["loss_mask"][:, burn_in:]
    b, m = rewards.shape
    real = loss_mask.sum(1, keepdim=True)  # [B, 1]
    t = torch.arange(m, device=rewards.device).unsqueeze(0)
    k = torch.clamp(real - t, min=1, max=n_step)  # [B, m]
    padded = torch.cat([rewards, rewards.new_zeros(b, n_step)], 1)
    ret = sum((gamma**j) * padded[:, j : j + m] * (j < k) for j in range(n_step))
    boot = (t + k).clamp(max=m)
    q_sa = q[:, :m].gather(2, actions.unsqueeze(2)).squeeze(2)
    with torch.no_grad():
        pick = q if double_q else q_target
        a_star = pick.gather(1, boot.unsqueeze(2).expand(-1, -1, q.shape[2])).argmax(2)
        q_boot = q_target.gather(1, boot.unsqueeze(2).expand(-1, -1, q.shape[2]))
        q_boot = q_boot.gather(2, a_star.unsqueeze(2)).squeeze(2)
        term = batch["done"].unsqueeze(1) & (t + k == real)
        if rescale_eps is not None:
            q_boot = h_inv(q_boot, rescale_eps)
        target = ret + (gamma**k) * (~term).float() * q_boot
        if rescale_eps is not None:
            target = h(target, rescale_eps)
    mask = loss_mask.float()
    return (q_sa - target) * mask, q_sa, target
