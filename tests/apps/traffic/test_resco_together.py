"""benchmarks/traffic_resco_together.py's own logic: its files and run root apart from the
single-map benchmark's, maps of different episode lengths refused, the run's env config
(the maps and their common padding) and each map alone in that padding, the maps' own
policies read from the single-map results. Nothing is trained."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "benchmarks"))
SPEC = importlib.util.spec_from_file_location(
    "rlsuite_bench_resco_together", ROOT / "benchmarks" / "traffic_resco_together.py"
)
bench = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(bench)


def test_results_and_runs_apart_from_the_single_map_benchmark() -> None:
    args = bench.parse_args(["--maps", "cologne1,ingolstadt1"])
    assert os.path.basename(args.json) == "traffic_resco_together.json"
    assert args.run_root.endswith(os.path.join("benchmarks", "traffic_resco_together"))
    tagged = bench.parse_args(["--tag", "x", "--json", "y.json", "--run-root", "r"])
    assert (tagged.json, tagged.run_root) == ("y.json", "r")


def test_maps_of_different_episode_lengths_are_refused() -> None:
    bench.check_maps(["cologne1", "ingolstadt21"])  # 360 decisions each
    with pytest.raises(SystemExit, match="arterial4x4: 720"):
        bench.check_maps(["cologne1", "arterial4x4"])


def test_the_runs_env_config_and_each_map_alone(tmp_path) -> None:
    args = bench.parse_args(["--sumo", "1.28"])
    cfg = bench.env_config(args, ["cologne1", "cologne3"], str(tmp_path))
    assert cfg["networks"] == "cologne1,cologne3" and cfg["pad_phases"] == 4
    assert cfg["episode_log"] == str(tmp_path / "episodes.jsonl")
    alone = bench.single_map(cfg, "cologne3")
    assert alone == {"network": "cologne3", "pad_lanes": cfg["pad_lanes"], "pad_phases": 4,
                     "sumo_version": "1.28"}  # fmt: skip


def test_own_policies_take_each_maps_best_held_out_policy() -> None:
    own = bench.own_policies()
    # cologne1: the shipped DQN (27.15) is below the PPO run (30.92) in another file
    assert own["cologne1"]["plan"] == "replay" and own["cologne1"]["delay"] < 28
