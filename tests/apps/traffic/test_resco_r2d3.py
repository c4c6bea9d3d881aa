"""The demonstrations benchmark's plan (``benchmarks/traffic/resco_r2d3.py``): a multi-light
map's lights all count as env steps (one step of them all with one network per light), SUMO's release and each light's index reach the env
config, the one-light runs keep the plan they ran with, and a network that is not RESCO's
is refused. Nothing is trained or simulated (the networks' files are read)."""

from __future__ import annotations

import json
import os
import sys

import pytest

from rlsuite.apps.traffic import sumo_versions
from rlsuite.bench import registry

BENCH = next(b for b in registry.load().benchmarks if b.name == "traffic_resco_r2d3")
plan_of = sys.modules[BENCH.run.__module__].plan_of
S = BENCH.settings
RESULTS = os.path.join(os.path.dirname(__file__), "..", "..", "..", "benchmarks", "results")
DQFD = dict(large_margin_coeff=1.0, demo_ratio=0.1, prioritized=False, epsilon_share=0.5,
            episodes=45, snapshot_every=5, val_snapshots=9, minutes=8, tag="dqfd")  # fmt: skip


def test_a_one_light_run_keeps_the_plan_it_ran_with():
    cfg, lights, plan = plan_of(S(**DQFD))
    with open(os.path.join(RESULTS, "traffic", "traffic_resco_r2d3_ingolstadt1_dqfd.json")) as f:
        ran = json.load(f)["plan"]
    assert cfg == {"network": "ingolstadt1"} and lights == 1
    assert plan.to_dict() == ran


def test_every_light_of_a_multi_light_map_counts_as_an_env_step():
    try:
        sumo_versions.sumo_home_for("1.9.2")
    except ValueError:
        pytest.skip("SUMO 1.9.2 is not installed here (make sumo-1.9.2 installs it)")
    s = S(map="cologne8", sumo="1.9.2", light_index=True, training_intensity=8.0,
          demonstrator="greedy", demo_episodes=10, **DQFD)  # fmt: skip
    cfg, lights, plan = plan_of(s)
    assert lights == 8
    assert cfg == {"network": "cologne8", "sumo_version": "1.9.2", "light_index": True}
    assert plan.env_steps_per_iteration == plan.learning_starts == 8 * 360  # one episode each
    assert plan.epsilon_timesteps == int(0.5 * 8 * 360 * 45)
    assert plan.training_intensity == 8.0
    assert plan.demonstrations == "rlsuite.apps.traffic.demonstrators:greedy:10"


def test_one_network_per_light_steps_the_lights_together_with_their_masks():
    s = S(map="cologne3", demonstrator="greedy", per_light=True, **DQFD)
    cfg, lights, plan = plan_of(s)
    assert lights == 3 and plan.env == "rlsuite/Signals-v0" and plan.policies == "per_agent"
    assert plan.env_steps_per_iteration == plan.learning_starts == 360  # one step of every light
    assert plan.action_mask_offset >= 0 and plan.large_margin_coeff == 1.0


def test_a_network_that_is_not_rescos_is_refused():
    with pytest.raises(ValueError, match="RESCO's maps"):
        plan_of(S(map="2x2grid"))


def test_training_episodes_are_logged_and_the_best_is_rescos_rule(tmp_path):
    module = sys.modules[BENCH.run.__module__]
    log = str(tmp_path / "episodes.jsonl")
    cfg, _, plan = plan_of(S(**DQFD), episode_log=log)
    assert plan.env_config == {**cfg, "episode_log": log} and "episode_log" not in cfg
    with open(log, "w") as f:  # the demonstrator's episodes are seeded from 10**6 up
        for seed, delay in [(1_000_000, 9.0), (0, 30.0), (1, 21.5), (2, 24.0), (1_000_001, 8.0)]:
            f.write(json.dumps({"seed": seed, "delay": delay}) + "\n")
    got = module.training_episodes(log)
    assert got == {"delay": [30.0, 21.5, 24.0], "best": {"delay": 21.5, "episode": 2}}
    assert module.training_episodes(str(tmp_path / "none.jsonl")) == {"delay": [], "best": None}
