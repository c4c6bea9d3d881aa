"""The cross-entropy method over actions: ``argmax_a Q(s, a)`` for a continuous action.

QT-Opt (Kalashnikov et al. 2018) has no actor network: it picks the action that
maximises its Q-function by CEM, both to act and to compute the Bellman target. For
every state of a batch, CEM draws ``samples`` actions from a Gaussian, keeps the
``elites`` with the highest Q, refits the Gaussian's mean and standard deviation to
them, and repeats ``iterations`` times (the paper's 64 / 10 / 3). Actions live in the
box ``[-1, 1]^d`` (the env's bounds are mapped onto it); samples are clipped to it.

Example::

    >>> import torch
    >>> def q(obs, act):   # best action: the observation itself
    ...     return -((act - obs) ** 2).sum(-1)
    >>> obs = torch.tensor([[0.3, -0.5]])
    >>> a, v = cem_argmax(q, obs, action_dim=2, generator=torch.Generator().manual_seed(0))
    >>> bool(((a - obs).abs() < 0.2).all())
    True
"""

from __future__ import annotations

from collections.abc import Callable

import torch

QFunction = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
"""``q(obs [N, ...], act [N, d]) -> [N]``."""


def cem_argmax(
    q: QFunction,
    obs: torch.Tensor,
    action_dim: int,
    samples: int = 64,
    elites: int = 10,
    iterations: int = 3,
    generator: torch.Generator | None = None,
    init_std: float = 1.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The best action CEM finds for each state of ``obs`` ``[B, ...]``, and its Q-value.

    Returns ``(actions [B, action_dim], values [B])``: for each state, the sampled
    action with the highest Q over all iterations (not the last mean, whose value
    is unknown). ``q`` is called once per iteration on ``B * samples`` pairs.
    """
    if not 1 <= elites <= samples:
        raise ValueError(f"elites must be in [1, samples={samples}], got {elites}")
    if iterations < 1:
        raise ValueError(f"iterations must be >= 1, got {iterations}")
    b = obs.shape[0]
    dev = obs.device
    rep = obs.unsqueeze(1).expand(b, samples, *obs.shape[1:]).reshape(b * samples, *obs.shape[1:])
    mean = torch.zeros(b, action_dim, device=dev)
    std = torch.full((b, action_dim), float(init_std), device=dev)
    best_a = torch.zeros(b, action_dim, device=dev)
    best_q = torch.full((b,), -torch.inf, device=dev)
    rows = torch.arange(b, device=dev)
    for _ in range(iterations):
        noise = torch.randn(b, samples, action_dim, generator=generator).to(dev)
        a = (mean.unsqueeze(1) + std.unsqueeze(1) * noise).clamp(-1.0, 1.0)
        v = q(rep, a.reshape(b * samples, action_dim)).reshape(b, samples)
        top = v.topk(elites, dim=1)
        elite = a[rows.unsqueeze(1), top.indices]  # [B, elites, d]
        mean = elite.mean(1)
        std = elite.std(1, unbiased=False) + 1e-3
        better = top.values[:, 0] > best_q
        best_q = torch.where(better, top.values[:, 0], best_q)
        best_a = torch.where(better.unsqueeze(1), elite[:, 0], best_a)
    return best_a, best_q
