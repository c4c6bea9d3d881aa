"""Which backend runs a plan: backend key (a plan's ``backend``) -> backend class.

Example::

    >>> from rlsuite.platform.backends.registry import backend_class
    >>> from rlsuite.platform.optimizers import SyncPlan
    >>> backend_class(SyncPlan).__name__
    'RLlibBackend'
"""

from __future__ import annotations

from typing import Any

from rlsuite.platform.async_grad.trainer import AsyncGradBackend
from rlsuite.platform.backends.base import Backend
from rlsuite.platform.backends.rllib import RLlibBackend
from rlsuite.platform.es.trainer import ESTrainer
from rlsuite.platform.qtopt.trainer import QTOptTrainer

BACKENDS: dict[str, type] = {
    "rllib": RLlibBackend,
    "es": ESTrainer,
    "async_grad": AsyncGradBackend,
    "qt_opt": QTOptTrainer,
}
"""Every backend by key."""


def backend_class(plan: Any) -> type:
    """The backend class that runs ``plan`` (a plan or a plan class)."""
    key = plan.backend
    if key not in BACKENDS:
        raise ValueError(
            f"plan {plan.name!r} names backend {key!r}, which is not one of {', '.join(BACKENDS)}"
        )
    return BACKENDS[key]


def make_backend(plan: Any) -> Backend:
    """Build the backend for ``plan``: an RLlib algorithm, ES workers, ..."""
    return backend_class(plan)(plan)
