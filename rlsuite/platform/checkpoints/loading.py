"""Load a checkpoint as a controller: everything inference needs is in it.

An rlsuite checkpoint (:mod:`rlsuite.platform.checkpoints.layout`) is the backend's
own state plus ``rlsuite.json`` (plan, env id and config, iteration) and
``spaces.pkl`` (observation and action spaces). ``load_controller`` needs nothing
else: not the run, not the app's CLI, not Ray. The checkpoint's plan says which
backend wrote it, and that backend builds the controller. Controllers act
deterministically (the distribution's mode: argmax for discrete actions, the mean
for continuous ones, mapped to the env's bounds the way RLlib's runners do).

Example::

    >>> ctrl = load_controller("runs/cartpole")            # doctest: +SKIP
    >>> ctrl.act(obs)                                        # doctest: +SKIP
    1
"""

from __future__ import annotations

from typing import Any

from rlsuite.platform.checkpoints.layout import metadata, resolve


def load_controller(path: str) -> Any:
    """A deterministic controller (``act(obs)``, ``reset(seed)``) from a checkpoint or
    run directory, built by the backend of the checkpoint's plan."""
    # Imported here, not at the top: the plans and backends import this package for its
    # layout, and `from rlsuite.platform import checkpoints` stays light (no torch, no RLlib).
    from rlsuite.platform.backends.registry import backend_class
    from rlsuite.platform.optimizers import plan_class

    ckpt = resolve(path)
    meta = metadata(ckpt)
    return backend_class(plan_class(meta["plan"])).load_controller(ckpt, meta)
