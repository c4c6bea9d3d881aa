"""A backend's Ray: started when none is up, and its actors ended (envs closed first)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def start() -> bool:
    """Start an embedded local Ray unless the driver is connected to one; True when this
    call started it (the caller stops it, :func:`rlsuite.platform.cluster.shutdown`)."""
    import ray

    from rlsuite.platform import cluster

    if ray.is_initialized():
        return False
    cluster.init()
    return True


def end_actors(closing: Sequence[Any], others: Sequence[Any] = (), timeout_s: float = 10.0) -> None:
    """Close the envs of actors ``closing`` (their ``close`` method, waited for up to
    ``timeout_s``: a TraCI env owns a SUMO child process), then kill them and ``others``;
    actors already dead are passed over."""
    import ray

    pending = []
    for a in closing:
        try:
            pending.append(a.close.remote())
        except Exception:  # noqa: BLE001 - already dead
            pass
    if pending:
        ray.wait(pending, num_returns=len(pending), timeout=timeout_s)
    for a in [*closing, *others]:
        try:
            ray.kill(a, no_restart=True)
        except Exception:  # noqa: BLE001 - already dead
            pass
