"""R2D2's value rescaling (Pohlen et al. 2018, used by R2D2): targets are computed as
``h(r + gamma^n h^-1(Q_target))``, so the network fits values of a compressed scale.

    h(x)    = sign(x) (sqrt(|x| + 1) - 1) + eps x
    h^-1(x) = sign(x) (((sqrt(1 + 4 eps (|x| + 1 + eps)) - 1) / (2 eps))^2 - 1)

Both work on numpy arrays and torch tensors.

Example::

    >>> import numpy as np
    >>> x = np.array([-100.0, -1.0, 0.0, 2.5, 1e4])
    >>> bool(np.allclose(h_inv(h(x)), x))
    True
    >>> round(float(h(np.array(99.0))), 3)    # sqrt(100) - 1 + 0.099
    9.099
"""

from __future__ import annotations

from typing import Any

EPSILON = 1e-3
"""R2D2's eps."""


def _ops(x: Any) -> tuple[Any, Any, Any]:
    if hasattr(x, "detach"):  # torch
        import torch

        return torch.sign, torch.sqrt, torch.abs
    import numpy as np

    return np.sign, np.sqrt, np.abs


def h(x: Any, eps: float = EPSILON) -> Any:
    """The rescaling ``sign(x) (sqrt(|x| + 1) - 1) + eps x``."""
    sign, sqrt, absolute = _ops(x)
    return sign(x) * (sqrt(absolute(x) + 1.0) - 1.0) + eps * x


def h_inv(x: Any, eps: float = EPSILON) -> Any:
    """The inverse of :func:`h`."""
    sign, sqrt, absolute = _ops(x)
    inner = (sqrt(1.0 + 4.0 * eps * (absolute(x) + 1.0 + eps)) - 1.0) / (2.0 * eps)
    return sign(x) * (inner * inner - 1.0)
