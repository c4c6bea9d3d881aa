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
import logging
import os
import signal
import socket
import sys
import tempfile
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
            with _environ(PYTHONPATH=pythonpath):
                ray.init(**kwargs)
        else:
            # a cluster's nodes have their own environment: the job's runtime env carries it
            kwargs["address"] = address
            kwargs["runtime_env"] = {"env_vars": {"PYTHONPATH": pythonpath}}
            _join(address, kwargs)
        _exit_cleanly_on_sigterm()
    return info(started_here=started_here)


def _join(address: str, kwargs: dict) -> None:
    """``ray.init`` joining the cluster at ``address``, or one :class:`ConnectionError`
    that says what was wrong and what to do.

    Token authentication, which ``ray start --head`` turns on (Ray >= 2.59), stays on: the
    driver takes the token the way Ray's own client does for a cluster it finds by itself
    (``RAY_AUTH_TOKEN``, the file ``RAY_AUTH_TOKEN_PATH`` names, or ``~/.ray/auth_token``),
    which Ray does not do for an explicit address. ``RAY_AUTH_MODE`` set by the user wins.
    Ray's core prints a warning line per retry while it fails to connect; those lines are
    held back and replaced by the error (kept as they were when the join succeeds)."""
    import ray

    _use_token_if_available()
    unreachable = _unreachable(address)
    if unreachable:
        raise ConnectionError(
            f"no Ray head answers at {address!r} ({unreachable}). Start one with "
            "`ray start --head` and pass the address it prints, or omit --address to run "
            "on an embedded local Ray."
        )
    with held_stderr() as held:
        try:
            ray.init(**kwargs)
        except Exception as e:
            held.drop()
            if _mentions_auth(e):
                raise ConnectionError(
                    f"the Ray cluster at {address!r} refused this driver's token. Give the "
                    "driver the head's token: on the head, `ray get-auth-token` prints it; "
                    "set it here as RAY_AUTH_TOKEN (or RAY_AUTH_TOKEN_PATH to a file with it)."
                ) from None
            raise ConnectionError(
                f"could not join the Ray cluster at {address!r} ({_first_line(e)}). Check "
                "that `ray start --head` runs there and that this machine runs the same Ray "
                "version, or omit --address to run on an embedded local Ray."
            ) from None


def _use_token_if_available() -> None:
    """Turn on token mode for this driver when the user left ``RAY_AUTH_MODE`` unset and a
    token is at hand, as Ray's client does for a cluster found with ``address="auto"``."""
    if "RAY_AUTH_MODE" in os.environ:
        return
    try:  # Ray's own rule and token lookup; a Ray without token auth has neither
        from ray._private.authentication import authentication_token_setup as auth
    except ImportError:
        return
    # Ray's rule logs "token authentication is enabled for this Ray cluster", which is
    # about a cluster this process would start, not the one it joins
    log = logging.getLogger(auth.__name__)
    level = log.level
    log.setLevel(logging.ERROR)
    try:
        auth.maybe_enable_token_auth_if_token_available(warn_if_disabled=False)
    finally:
        log.setLevel(level)


def _unreachable(address: str, timeout_s: float = 3.0) -> str | None:
    """Why nothing listens at ``host:port`` (a refused or timed-out TCP connect), or
    ``None`` when something does or the address is not of that form (``auto``,
    ``ray://``: Ray checks those itself)."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or "://" in address:
        return None
    try:
        with socket.create_connection((host or "127.0.0.1", int(port)), timeout=timeout_s):
            return None
    except OSError as e:
        return e.strerror or type(e).__name__


def _mentions_auth(e: BaseException) -> bool:
    """Ray says a token was refused only in the cause's text (``InvalidAuthToken``,
    ``Unauthenticated``), under a plain "Failed to connect"."""
    words = ("invalidauthtoken", "unauthenticated", "authentication token")
    seen: BaseException | None = e
    while seen is not None:
        if any(w in str(seen).lower() for w in words):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _first_line(e: BaseException) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0]


class HeldStderr:
    """What :func:`held_stderr` captured; :meth:`drop` discards it."""

    def __init__(self) -> None:
        self.dropped = False
        self.filters: tuple[str, ...] = ()

    def drop(self) -> None:
        self.dropped = True


@contextlib.contextmanager
def held_stderr(*filters: str) -> Iterator[HeldStderr]:
    """Hold back what this process writes to its standard error (file descriptor 2, where
    Ray's C++ core logs) during the block, then write it out, less the lines that contain
    one of ``filters``, or nothing once :meth:`HeldStderr.drop` was called."""
    held = HeldStderr()
    held.filters = filters
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as buf:
        os.dup2(buf.fileno(), 2)
        try:
            yield held
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            if not held.dropped:
                buf.seek(0)
                lines = buf.read().splitlines(keepends=True)
                keep = [ln for ln in lines if not any(f.encode() in ln for f in filters)]
                if keep:
                    os.write(2, b"".join(keep))


# Ray's core logs this line at ERROR level when an actor that may restart (max_restarts > 0)
# gets a constructor argument by reference: RLlib's EnvRunnerGroup passes the
# AlgorithmConfig to every env runner as one ``ray.put`` object, and rlsuite restarts
# crashed runners, so every run with remote runners printed it in red. Ray's worry
# (ray-project/ray#53727) is an argument lost before a restart; this one is owned and pinned
# by the driver while the runner group lives, and is lost only with the driver's own node,
# which ends the run anyway. It is harmless here, so the line is dropped while the runners
# are created (:func:`quiet_runner_creation`); every other line passes.
RESTART_ARG_WARNING = "has constructor arguments in the object store and max_restarts > 0"


def quiet_runner_creation() -> contextlib.AbstractContextManager:
    """Around a block that creates env runners (``build_algo``): Ray's harmless restart
    warning (:data:`RESTART_ARG_WARNING`) is dropped, all other output kept."""
    return held_stderr(RESTART_ARG_WARNING)


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
