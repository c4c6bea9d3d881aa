"""Shared fixtures: a real local Ray with two CPUs, shared by the test modules that ask for
it, and handed on to the next module only when the last one left it clean."""

from __future__ import annotations

import os
import sys
import time

import pytest

os.environ.setdefault("RAY_DEDUP_LOGS", "0")
os.environ.setdefault("RLSUITE_TORCH_THREADS", "1")

RAY_CPUS = 2


def _clean(timeout: float = 5.0) -> bool:
    """One node with all its CPUs free: no actor or task a module left behind holds one
    (a stopped algorithm's actors give their CPUs back asynchronously, hence the wait)."""
    import ray

    deadline = time.time() + timeout
    while True:
        try:
            total = ray.cluster_resources().get("CPU", 0)
            free = ray.available_resources().get("CPU", 0)
            nodes = [n for n in ray.nodes() if n.get("Alive")]
        except Exception:  # a Ray that lost its node is not one to hand on
            return False
        if total == RAY_CPUS and free == total and len(nodes) == 1:
            return True
        if time.time() > deadline:
            return False
        time.sleep(0.1)


@pytest.fixture(scope="module")
def ray_local():
    """An embedded Ray with 2 CPUs for the tests of one module.

    Starting and stopping Ray costs about 4 s, so one instance serves every module that
    asks for it in turn. A module that leaves it holding CPUs, or with a lost node, gets it
    stopped at its end, and the next module starts a fresh one: no module sees another's
    actors. The session's end stops it (``pytest_sessionfinish``)."""
    import ray

    from rlsuite.platform import cluster

    if ray.is_initialized() and not _clean():
        cluster.shutdown()
    info = cluster.init(num_cpus=RAY_CPUS)
    try:
        yield info
    finally:
        if ray.is_initialized() and not _clean():
            cluster.shutdown()


@pytest.fixture(scope="module")
def no_ray():
    """For the modules that start, join or check for Ray themselves: the shared one is
    stopped first."""
    if "ray" in sys.modules:
        from rlsuite.platform import cluster

        cluster.shutdown()
    yield


def pytest_sessionfinish(session, exitstatus):
    if "ray" in sys.modules:
        import ray

        if ray.is_initialized():
            ray.shutdown()
