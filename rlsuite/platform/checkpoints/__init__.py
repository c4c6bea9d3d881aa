"""Checkpoints: their on-disk layout and loading one as a controller.

    layout    file names, the ``latest`` pointer, ``rlsuite.json`` (written and read)
    loading   ``load_controller``: a checkpoint or run directory -> a controller

Example::

    >>> from rlsuite.platform import checkpoints
    >>> ctrl = checkpoints.load_controller("runs/cartpole")   # doctest: +SKIP
    >>> checkpoints.metadata("runs/cartpole")["plan"]          # doctest: +SKIP
    'sync'
"""

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
    "SPACES",
    "latest_checkpoint",
    "load_controller",
    "metadata",
    "resolve",
    "write_checkpoint",
    "write_meta",
]
