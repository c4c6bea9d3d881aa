"""One policy for several RESCO maps (rlsuite.apps.traffic.resco_multimap): its results file
apart from the single-map benchmark's, maps of different episode lengths refused, the run's env config
(the maps and their common padding) and each map alone in that padding, the maps' own
policies read from the single-map results. Nothing is trained."""

from __future__ import annotations

import pytest

from rlsuite.apps.traffic import resco_multimap as bench
from rlsuite.apps.traffic.resco_training import RescoSettings as S
from rlsuite.bench import results_dir


def test_results_and_runs_apart_from_the_single_map_benchmark() -> None:
    assert bench.results_stem(S(maps="cologne1,ingolstadt1")) == "traffic_resco_together"
    assert bench.results_stem(S(tag="x")) == "traffic_resco_together_x"
    assert bench.results_stem(S(tag="x", json="out/y.json")) == "y"


def test_maps_of_different_episode_lengths_are_refused() -> None:
    bench.check_maps(["cologne1", "ingolstadt21"])  # 360 decisions each
    with pytest.raises(ValueError, match="arterial4x4: 720"):
        bench.check_maps(["cologne1", "arterial4x4"])


def test_the_runs_env_config_and_each_map_alone(tmp_path) -> None:
    args = S(sumo="1.28")
    cfg = bench.env_config(args, ["cologne1", "cologne3"], str(tmp_path))
    assert cfg["networks"] == "cologne1,cologne3" and cfg["pad_phases"] == 4
    assert cfg["episode_log"] == str(tmp_path / "episodes.jsonl")
    alone = bench.single_map(cfg, "cologne3")
    assert alone == {"network": "cologne3", "pad_lanes": cfg["pad_lanes"], "pad_phases": 4,
                     "sumo_version": "1.28"}  # fmt: skip


def test_own_policies_take_each_maps_best_held_out_policy() -> None:
    own = bench.own_policies(results_dir("traffic"))
    # cologne1: the shipped DQN (27.15) is below the PPO run (30.92) in another file
    assert own["cologne1"]["plan"] == "replay" and own["cologne1"]["delay"] < 28


def _row(m: str, learned: float | None, fixed: float | None) -> dict:
    from rlsuite.apps.traffic import resco

    held = {} if learned is None else {"learned": {"delay_mean": learned}}
    if fixed is not None:
        held["fixed"] = {"delay_mean": fixed}
    return {"map": m, "published": resco.PUBLISHED[m], "heldout": held}


def test_the_shared_policy_ships_only_when_every_map_beats_a_learner_and_fixed() -> None:
    # cologne1's RESCO learners: IDQN 26.05 ... IPPO 43.24; cologne8's: IPPO 21.62 ... 60.42
    good = [_row("cologne1", 30.0, 56.0), _row("cologne8", 28.2, 63.4)]
    assert bench.ship_blockers(good) == []
    assert bench.ship_blockers([*good, _row("cologne3", None, None)]) == ["cologne3 not scored yet"]
    (why,) = bench.ship_blockers([_row("cologne1", 44.0, 56.0), good[1]])
    assert why.startswith("cologne1 44.00") and "beaten: none" in why
    (why,) = bench.ship_blockers([good[0], _row("cologne8", 28.2, 27.0)])  # above fixed
    assert why.startswith("cologne8 28.20")
    (why,) = bench.ship_blockers([good[0], _row("cologne8", 28.2, None)])  # fixed not scored
    assert why.startswith("cologne8")
