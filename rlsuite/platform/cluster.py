"""Start, join and stop Ray.

The default is an embedded local Ray sized to the machine; ``address`` joins an
existing cluster started with ``ray start --head``. Used as a context manager so
that every process this module starts is stopped again::

    >>> from rlsuite.platform.cluster import local_cluster
    >>> with local_cluster(num_cpus=2) as info:   # doctest: +SKIP
    ...     info.num_cpus
    2
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass

from rlsuite.platform.machine import usable_cpus


@dataclass(frozen=True)
class ClusterInfo:
    """What the driver is connected to."""

    address: str
    """The GCS address of the Ray cluster."""
    num_cpus: float
    """CPUs the cluster offers in total."""
    num_gpus: float
    """GPUs the cluster offers in total."""
    num_nodes: int
    """Alive nodes."""
    started_here: bool
    """True when this process started the (embedded) Ray instance and will stop it."""


def configure_driver_threads(num_threads: int | None = None) -> None:
    """Give torch in the driver a sane thread count.

    Ray pins worker processes to one thread but not the driver, which hosts the
    local env runner and the learner. Torch's default (one thread per core)
    oversubscribes a busy machine badly (one PPO update measured 157 s instead of
    ~15 s), so the driver uses ``num_threads`` (default: ``RLSUITE_TORCH_THREADS``
    or 1).
    """
    import torch

    n = num_threads or int(os.environ.get("RLSUITE_TORCH_THREADS", "1"))
    torch.set_num_threads(max(1, n))


def init(
    num_cpus: int | None = None,
    address: str | None = None,
    num_gpus: int | None = None,
    quiet: bool = True,
) -> ClusterInfo:
    """Connect the driver to Ray and return what it found.

    Args:
        num_cpus: CPUs for an embedded local Ray (default: the CPUs this process can
            use, :func:`rlsuite.platform.machine.usable_cpus`: its CPU affinity and
            cgroup quota, not the machine's count).
            Not allowed together with ``address``: a cluster's size is its own.
        address: ``host:port`` of a running cluster (``ray start --head``), or
            ``"auto"``. ``None`` starts an embedded local Ray, even when a cluster
            started on this machine is running (a bare ``ray.init()`` would join the
            latest one that ``ray start`` or a test cluster recorded, then refuse
            ``num_cpus``); ``"auto"`` joins that one.
        num_gpus: GPUs for an embedded local Ray (default: what Ray detects).
        quiet: keep Ray's driver log quiet.
    """
    import ray

    if address is not None and num_cpus is not None:
        raise ValueError(
            "num_cpus is only for an embedded local Ray; a cluster joined with "
            f"address={address!r} has its own size. Drop one of the two."
        )
    if num_cpus is not None and num_cpus < 1:
        raise ValueError(f"num_cpus must be >= 1, got {num_cpus}")
    configure_driver_threads()
    started_here = False
    if not ray.is_initialized():
        kwargs: dict = dict(include_dashboard=False, log_to_driver=not quiet)
        if quiet:
            kwargs["logging_level"] = "ERROR"
        # Let the workers find our package even when it is not installed (plain checkout).
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        pythonpath = _pythonpath_with(root)
        if address is None:
            kwargs["address"] = "local"  # Ray's word for "start a new one, join none"
            kwargs["num_cpus"] = num_cpus or usable_cpus()
            if num_gpus is not None:
                kwargs["num_gpus"] = num_gpus
            started_here = True
        else:
            # a cluster's nodes have their own environment: the job's runtime env carries it
            kwargs["address"] = address
            kwargs["runtime_env"] = {"env_vars": {"PYTHONPATH": pythonpath}}
        try:
            with _environ(PYTHONPATH=pythonpath if address is None else None):
                ray.init(**kwargs)
        except Exception as e:
            if address is not None and "auth" in str(e).lower():
                raise ConnectionError(
                    f"the Ray cluster at {address!r} refused this driver's token ({e}). "
                    "Ray >= 2.59 turns token authentication on for clusters started with "
                    "`ray start --head`: give the driver the head's token (RAY_AUTH_TOKEN, "
                    "or the file `ray get-auth-token` reads), or start the head with "
                    "RAY_AUTH_MODE=disabled on a trusted network."
                ) from e
            if isinstance(e, ConnectionError):
                raise ConnectionError(
                    f"could not join the Ray cluster at {address!r}: {e}. Start one with "
                    "`ray start --head` and pass the address it prints, or omit --address "
                    "to run on an embedded local Ray."
                ) from e
            raise
        _exit_cleanly_on_sigterm()
    return info(started_here=started_here)


def _exit_on_sigterm(signum: int, frame: object) -> None:
    sys.exit(128 + signum)


def _exit_cleanly_on_sigterm() -> None:
    """Make SIGTERM raise ``SystemExit`` in the driver again, so that ``finally`` blocks
    and Ray's own shutdown run to a plain exit. ``ray.init`` leaves a C-level handler on
    SIGTERM that dumps a stack and ends the driver with SIGABRT; the embedded Ray's
    dashboard and runtime-env agents were seen to outlive such drivers. A Python handler
    set before (Ray's, or the caller's) is kept; only the C-level one is replaced."""
    if threading.current_thread() is not threading.main_thread():
        return  # Python handlers can only be set from the main thread
    current = signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, current if callable(current) else _exit_on_sigterm)


@contextlib.contextmanager
def _environ(**values: str | None):
    """Set environment variables (``None``: leave it) for the block, then restore them.

    An embedded Ray's raylet, and every worker it starts, inherit the driver's environment
    at ``ray.init``. Handing them ``PYTHONPATH`` this way instead of through a job runtime
    env keeps each worker's start a plain process start: a runtime env sends every worker
    through Ray's runtime-env agent and an extra Python process first (``setup_worker.py``),
    about 1 s per actor on 2 cores, and keeps the workers Ray starts ahead of time from
    serving the job's actors."""
    saved = {k: os.environ.get(k) for k, v in values.items() if v is not None}
    os.environ.update({k: v for k, v in values.items() if v is not None})
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _pythonpath_with(root: str) -> str:
    parts = [root] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return os.pathsep.join(dict.fromkeys(parts))


def info(started_here: bool = False) -> ClusterInfo:
    """Describe the cluster the driver is connected to."""
    import ray

    res = ray.cluster_resources()
    nodes = [n for n in ray.nodes() if n.get("Alive")]
    ctx = ray.get_runtime_context()
    return ClusterInfo(
        address=getattr(ctx, "gcs_address", "") or "",
        num_cpus=float(res.get("CPU", 0)),
        num_gpus=float(res.get("GPU", 0)),
        num_nodes=len(nodes),
        started_here=started_here,
    )


def shutdown() -> None:
    """Disconnect from Ray; an embedded instance is stopped with all its workers."""
    import ray

    if ray.is_initialized():
        ray.shutdown()


@contextlib.contextmanager
def local_cluster(
    num_cpus: int | None = None, address: str | None = None, num_gpus: int | None = None
) -> Iterator[ClusterInfo]:
    """``init`` on entry, ``shutdown`` on exit (only if this call connected)."""
    import ray

    was_up = ray.is_initialized()
    cluster = init(num_cpus=num_cpus, address=address, num_gpus=num_gpus)
    try:
        yield cluster
    finally:
        if not was_up:
            shutdown()
