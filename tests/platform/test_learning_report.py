"""The learning table's report (rlsuite.platform.benchmarking.learning_report), pure logic on
hand-made curves: the mean of the last n episodes from per-iteration means, and the
comparison of the two sides at the fewest steps any cell reached (cells cut by a wall-time
cap, or run on another machine)."""

from __future__ import annotations

from rlsuite.platform.benchmarking import learning_report as report


def test_last_episodes_mean_weights_each_iteration_by_its_episodes_and_skips_empty_ones():
    # columns: steps, wall_s, mean return of the episodes that ended, their count
    curve = [[100, 1.0, 10.0, 4], [200, 2.0, float("nan"), 0], [300, 3.0, 40.0, 2]]
    # the last 4 episodes: 2 at 40, then 2 of the first iteration's 4 at 10
    assert report.last_episodes_mean(curve, 4) == {"mean": 25.0, "episodes": 4}
    assert report.last_episodes_mean(curve, 100) == {"mean": 20.0, "episodes": 6}
    assert report.last_episodes_mean(curve[1:2], 5) == {"mean": None, "episodes": 0}


def _cell(impl, seed, points, machine_cpus=2):
    return {
        "task": "ppo-halfcheetah",
        "impl": impl,
        "seed": seed,
        "steps": points[-1][0],
        "curve": points,
        "reached": None,
        "best_return": max(p[2] for p in points),
        "machine_cpus": machine_cpus,
    }


def test_a_cut_cell_compares_both_sides_at_its_steps_and_no_s_per_iteration_across_machines():
    ours = _cell("ours", 0, [[500, 1.0, 100.0, 100], [1000, 2.0, 900.0, 100]])
    theirs = _cell("rllib", 0, [[250, 1.0, 50.0, 100], [600, 2.0, 300.0, 100]], machine_cpus=16)
    results = {"cells": {"a": ours, "b": theirs}}
    common = report.at_common_steps(results)["ppo-halfcheetah"]
    # ours at 600 steps is its 500-step point, not its final 900
    assert common == {"steps": 600, "episodes": 100, "ours": 100.0, "rllib": 300.0}
    summary = report.summarise(results)["ppo-halfcheetah"]
    assert summary["ours"]["iteration_s_ratio_vs_rllib"] is None
    theirs["machine_cpus"] = 2
    assert report.summarise(results)["ppo-halfcheetah"]["ours"]["iteration_s_ratio_vs_rllib"] == 1.0


def test_cells_all_at_the_budget_need_no_common_step_comparison():
    a = _cell("ours", 0, [[500, 1.0, 100.0, 100], [1000, 2.0, 900.0, 100]])
    b = _cell("rllib", 0, [[500, 1.0, 80.0, 100], [1000, 2.0, 700.0, 100]])
    assert report.at_common_steps({"cells": {"a": a, "b": b}}) == {}


def test_finish_completes_the_results_and_draws_nothing_without_cells():
    results = {"cells": {}}
    assert report.finish(results) is None
    assert set(results) == {"cells", "tasks", "summary", "overlap_vs_default", "at_common_steps", "criterion"}  # fmt: skip
    assert f"<= {report.WALL_TARGET}x" in results["criterion"]
