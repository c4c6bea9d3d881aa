"""The bottleneck's road options on real SUMO: ``capacity_drop`` (the default: the drivers'
wider spread of desired speeds that makes the all-human road break down as Flow's did) and
``sumo_version`` (another SUMO release), with their bad combinations."""

from __future__ import annotations

import numpy as np
import pytest

from rlsuite.apps.traffic.envs.bottleneck import (
    CAPACITY_DROP_SPEED_DEV,
    BottleneckConfig,
    BottleneckEnv,
)
from rlsuite.apps.traffic.networks import flow_sumo_human


def speed_factors(**options) -> np.ndarray:
    """The speed factors SUMO drew for the drivers that entered in the first 150 s."""
    env = BottleneckEnv(av_share=0.0, warmup_steps=0, horizon=300, **options)
    try:
        env.reset(seed=3)
        sim, drawn = env.core.sim, {}
        for _ in range(300):
            env.step(np.zeros(env.action_space.shape, np.float32))
            for v in sim.vehicle_ids():
                if v not in drawn:
                    drawn[v] = sim.call("vehicle", "getSpeedFactor", v)
        return np.array(list(drawn.values()))
    finally:
        env.close()


def test_capacity_drop_widens_the_drivers_spread_of_desired_speeds():
    assert BottleneckConfig(capacity_drop=False).drivers() == flow_sumo_human()
    wide, flow = speed_factors(), speed_factors(capacity_drop=False)  # the default: wide
    assert len(wide) > 60 and len(flow) > 60
    # speedDev 0.2 against Flow's 0.1 (SUMO truncates both draws alike: about 0.16 and 0.08)
    assert wide.std() > 1.5 * flow.std()
    assert BottleneckConfig().drivers().speed_dev == CAPACITY_DROP_SPEED_DEV


def outflows(seeds: tuple[int, ...], **options) -> list[float]:
    """Flow's outflow (veh/h, last 500 s) of all-human episodes of these seeds."""
    env = BottleneckEnv(av_share=0.0, **options)
    try:
        zero, out = np.zeros(env.action_space.shape, np.float32), []
        for s in seeds:
            env.reset(seed=s)
            done = False
            while not done:
                _, _, term, trunc, _ = env.step(zero)
                done = term or trunc
            out.append(env.episode_metrics()["outflow_veh_h"])
        return out
    finally:
        env.close()


def test_the_default_road_breaks_down_at_high_inflow():
    # seeds on which Flow's own drivers flow freely at 1900 veh/h (about 1760 veh/h out)
    broken, free = outflows((1, 2)), outflows((1, 2), capacity_drop=False)
    assert BottleneckConfig().inflow == 1900.0
    assert min(free) > 1600, free
    assert max(broken) < 1100, broken  # Flow's all-human road: 1023 +- 263
    # the capacity drop: more vehicles in, fewer out (1400 veh/h still flows on seed 1)
    assert outflows((1,), inflow=1400.0)[0] > broken[0] + 200


@pytest.mark.parametrize(
    "options, match",
    [
        ({"capacity_drop": True, "human_type": {"min_gap": 2.5, "speed_dev": 0.3}},
         "capacity_drop sets the drivers' speed_dev to 0.2, but human_type sets speed_dev=0.3"),
        ({"human_type": {"min_gap": 2.5, "speed_dev": 0.3}},  # the default road: say the way out
         "human_type sets speed_dev=0.3: set capacity_drop=false"),
        ({"sumo_version": "0.1.0"}, "eclipse-sumo==0.1.0"),
    ],
)  # fmt: skip
def test_contradicting_or_missing_road_options_say_what_to_do(options, match):
    with pytest.raises(ValueError, match=match):
        BottleneckConfig(**options)
