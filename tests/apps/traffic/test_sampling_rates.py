"""The sampling benchmark's measurements on real SUMO: the raw libsumo loop of each road and
its env stepped in this process, one copy or several in one simulation (a few steps each; the
rates' sizes are the benchmark's business, not a test's)."""

from __future__ import annotations

import math

import pytest

from rlsuite.apps.traffic.benchmarking import env_rate, raw_rate


@pytest.mark.parametrize(
    ("env_id", "cfg", "copies"),
    [
        ("rlsuite/Ring-v0", {"warmup_steps": 0, "horizon": 30}, 2),
        ("rlsuite/Ring2Lane-v0", {"warmup_steps": 0, "horizon": 30}, 2),
        ("rlsuite/Merge-v0", {"horizon": 30}, 2),
        ("rlsuite/MergeMulti-v0", {"horizon": 30}, 0),
    ],
)
def test_each_road_is_measured_raw_and_through_its_env(env_id, cfg, copies) -> None:
    rates = [raw_rate(env_id, 40), env_rate(env_id, cfg, 40)]
    if copies:  # whole episodes of both copies, a reset between them
        rates.append(env_rate(env_id, cfg, 80, copies))
    assert all(math.isfinite(r) and r > 0 for r in rates)
