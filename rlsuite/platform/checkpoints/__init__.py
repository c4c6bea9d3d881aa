"""Checkpoints: their on-disk layout and loading one as a controller.

    layout    file names, the ``latest`` pointer, ``rlsuite.json`` (written and read)
    loading   ``load_controller``: a checkpoint or run directory -> a controller
    export    ``export_policy``: a small policy-only copy of a checkpoint, to ship

Example::

    >>> from rlsuite.platform import checkpoints
    >>> ctrl = checkpoints.load_controller("runs/cartpole")   # doctest: +SKIP
    >>> checkpoints.metadata("runs/cartpole")["plan"]          # doctest: +SKIP
    'sync'
"""

from rlsuite.platform.checkpoints.export import export_policy
from rlsuite.platform.checkpoints.layout import (
    LEARNER_EXTRA,
    META,
    SPACES,
    latest_checkpoint,
    metadata,
    resolve,
    write_checkpoint,
    write_meta,
)
from rlsuite.platform.checkpoints.loading import load_controller

__all__ = [
    "LEARNER_EXTRA",
    "META",
    "export_policy",
    "SPACES",
    "latest_checkpoint",
    "load_controller",
    "metadata",
    "resolve",
    "write_checkpoint",
    "write_meta",
]
