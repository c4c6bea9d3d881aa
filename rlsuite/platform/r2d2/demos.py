"""R2D3's demonstrations inside replay, and DQfD's large-margin loss.

R2D3 (Paine et al. 2019) keeps a demonstration buffer beside the agent's replay; each
element of a training batch is drawn from the demonstrations with probability ``rho``
(``demo_ratio``), independently (Acme's ``sample_from_datasets([agent, demos], [1 - rho,
rho])``). DQfD (Hester et al. 2018) adds, on demonstrated steps, the large-margin loss
``max_a [Q(s, a) + l(a_E, a)] - Q(s, a_E)`` with ``l = margin`` for ``a != a_E``, 0 else.

Example::

    >>> import numpy as np
    >>> mask = demo_mask(10_000, 0.25, np.random.default_rng(0))
    >>> bool(0.23 < mask.mean() < 0.27)
    True
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

MARGIN = 0.8
"""DQfD's margin (DI-engine's R2D3 config uses 0.8 too)."""


def check_demo_ratio(rho: Any) -> None:
    """Raise ``ValueError`` unless ``rho`` is a number in [0, 1]."""
    ok = isinstance(rho, int | float | np.floating | np.integer) and not isinstance(rho, bool)
    if not ok or not 0.0 <= float(rho) <= 1.0:
        raise ValueError(
            f"demo_ratio must be a number in [0, 1] (the probability that a batch element "
            f"is a demonstration; R2D3 uses 1/256, DI-engine 1/4), got {rho!r}"
        )


def demo_mask(n: int, rho: float, rng: np.random.Generator) -> np.ndarray:
    """Which of ``n`` batch elements come from the demonstrations: one Bernoulli(rho)
    draw each."""
    check_demo_ratio(rho)
    return rng.random(n) < rho


def mixed_batch(
    n: int,
    rho: float,
    rng: np.random.Generator,
    agent: Callable[[int], dict[str, np.ndarray]],
    demos: Callable[[int], dict[str, np.ndarray]],
) -> dict[str, np.ndarray]:
    """A batch of ``n`` elements, each from ``demos`` with probability ``rho`` else from
    ``agent`` (``f(k)`` gives ``k`` elements as columns); ``is_demo`` marks the former."""
    mask = demo_mask(n, rho, rng)
    k = int(mask.sum())
    parts = [(f(c), flag) for f, c, flag in ((agent, n - k, False), (demos, k, True)) if c]
    out: dict[str, np.ndarray] = {}
    for key, first in parts[0][0].items():
        first = np.asarray(first)
        col = np.zeros((n, *first.shape[1:]), dtype=first.dtype)
        for batch, flag in parts:
            col[mask == flag] = batch[key]
        out[key] = col
    out["is_demo"] = mask
    return out


def large_margin_loss(q: Any, demo_actions: Any, is_demo: Any, margin: float = MARGIN) -> Any:
    """DQfD's supervised loss, averaged over the demonstrated elements (0 without any):
    ``max_a [Q(s, a) + margin * (a != a_E)] - Q(s, a_E)`` (torch; ``q``: ``[B, A]``)."""
    import torch

    a = demo_actions.long()
    bonus = torch.full_like(q, float(margin))
    bonus.scatter_(1, a.unsqueeze(1), 0.0)
    per = (q + bonus).max(1).values - q.gather(1, a.unsqueeze(1)).squeeze(1)
    m = is_demo.to(q.dtype)
    return (per * m).sum() / m.sum().clamp(min=1.0)
