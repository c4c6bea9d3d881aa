"""Shared fixtures: a real local Ray with two CPUs, started per test module and shut down."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("RAY_DEDUP_LOGS", "0")
os.environ.setdefault("RLSUITE_TORCH_THREADS", "1")


@pytest.fixture(scope="module")
def ray_local():
    """An embedded Ray with 2 CPUs for the tests of one module; stopped afterwards."""
    from rlsuite.platform import cluster

    info = cluster.init(num_cpus=2)
    try:
        yield info
    finally:
        cluster.shutdown()
