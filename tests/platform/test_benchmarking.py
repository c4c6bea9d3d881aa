"""The platform's benchmark measures (rlsuite.platform.benchmarking): every learning-table
row and ES row is a valid plan, RLlib's example configs are the examples' envs, and the
pure summaries on hand-made cells and timings."""

from __future__ import annotations

import dataclasses
import math

import pytest

from rlsuite.platform.benchmarking import es_rows, rates
from rlsuite.platform.benchmarking.learning_cells import our_plan
from rlsuite.platform.benchmarking.learning_tasks import TASKS


@pytest.mark.parametrize("key", list(TASKS))
def test_every_learning_row_is_a_valid_plan_beside_its_rllib_example(key, tmp_path):
    task = TASKS[key]
    if "data" in task.ours:  # the offline row: one episode of its expert in its layout
        from rlsuite.platform.benchmarking.learning_tasks import CartPolePD
        from rlsuite.platform.demonstrations import record_episodes

        record_episodes(CartPolePD(), task.env, 1, str(tmp_path / "part-000.parquet"), seed=0)
        task = dataclasses.replace(task, ours={**task.ours, "data": str(tmp_path)})
    for impl in task.impls[1:]:  # each plan's fields are checked ("did you mean")
        plan = our_plan(task, impl, seed=3)
        assert (plan.env, plan.seed) == (task.env, 3)
    assert task.rllib_config().env == task.env
    assert task.source.startswith("rllib/examples/algorithms/")


def test_every_es_row_is_a_valid_es_plan():
    from rlsuite.platform.es import ESPlan

    for impl, by_task in es_rows.IMPLS.items():
        for key, values in by_task.items():
            assert ESPlan(env=es_rows.TASKS[key].env, seed=0, **values).env.endswith("-v5"), impl


def _es_cell(seed, reached):
    return {"task": "es-swimmer", "impl": "ars_n8", "seed": seed, "best_eval_return": 80.0,
            "reached": reached}  # fmt: skip


def test_es_summary_takes_the_median_of_the_seeds_that_reached_and_names_the_others():
    hit = {"75% of TRPO": {"env_steps": 100_000, "wall_s": 10.0, "train_wall_s": 8.0}}
    far = {"75% of TRPO": {"env_steps": 300_000, "wall_s": 30.0, "train_wall_s": 20.0}}
    cells = {"a": _es_cell(0, hit), "b": _es_cell(1, far), "c": _es_cell(2, {})}
    row = es_rows.summarise(cells)["es-swimmer"]["ars_n8"]["75% of TRPO"]
    assert (row["reached"], row["median_env_steps"], row["median_wall_s"]) == (2, 200_000, 20.0)
    assert row["best_return_not_reached"] == {"2": 80.0}
    assert row["within_salimans_steps"] is False  # a seed did not reach it
    assert row["salimans_over_ours_steps"] == round(1_230_000 / 200_000, 3)


def test_breakdown_splits_a_shortfall_into_cpu_stragglers_and_dispatch():
    rows = [
        {"steps": 1000, "wall_s": 1.0, "cpu_s": 0.5},
        {"steps": 1000, "wall_s": 2.0, "cpu_s": 1.0},
    ]
    b = rates.breakdown(rows, driver_wall=2.5)
    assert b["runner_cpu_us_per_step"] == pytest.approx(750.0)
    assert b["runner_cpu_per_wall"] == pytest.approx(0.5)
    assert b["straggler_loss"] == pytest.approx(0.25)  # mean wall 1.5 of the slowest's 2
    assert b["dispatch_loss"] == pytest.approx(0.2)  # 2 s of the driver's 2.5


def test_the_hand_written_ppo_and_the_plain_loop_step_a_real_env():
    out = rates.handwritten_ppo(
        "CartPole-v1", num_envs=2, batch=64, minibatch=32, epochs=1, iterations=1
    )
    assert out["iteration_steps_per_s"] < out["rollout_steps_per_s"]  # the update costs time
    assert rates.plain_loop("CartPole-v1", 100) > 0


def test_a_run_to_target_stops_at_the_target_or_at_the_step_budget(ray_local):
    from rlsuite.platform.backends.registry import make_backend
    from rlsuite.platform.benchmarking.to_target import train_to_target
    from tests._plans import ppo

    def run(target: float):
        rows: list[int] = []
        plan = ppo("CartPole-v1", 200, 100, 1, seed=0)
        return rows, train_to_target(make_backend(plan), target, 600, 600.0,
                                     lambda steps, wall, row: rows.append(steps))  # fmt: skip

    rows, missed = run(math.inf)  # never reached: the step budget stops it
    assert missed.reached is None and missed.env_steps_run >= 600 > rows[-2]
    assert rows == sorted(rows) and rows[-1] == missed.env_steps_run
    assert missed.best_return > 0 and missed.wall_s_run > 0
    # any finished episode returns more than 0 (a row before one has a NaN return: not it)
    rows, hit = run(0.0)
    assert hit.reached and hit.reached["env_steps"] == hit.env_steps_run == rows[-1]
    assert hit.env_steps_run < 600


def test_a_run_to_target_can_stop_on_its_own_score_and_finish_before_the_backend_stops(
    ray_local, tmp_path
):
    from rlsuite.platform.backends.registry import make_backend
    from rlsuite.platform.benchmarking.to_target import train_to_target
    from tests._plans import ppo

    finished: list[tuple[int, float]] = []

    def finish(steps: int, wall: float) -> None:
        backend.save(str(tmp_path))  # the backend still runs
        finished.append((steps, wall))

    backend = make_backend(ppo("CartPole-v1", 200, 100, 1, seed=0))
    # a score of its own (a greedy probe's, say) stops it at the first row at
    # 400 steps or more, whatever the return
    run = train_to_target(backend, 1.0, 10_000, 600.0,
                          lambda steps, wall, row: 2.0 if steps >= 400 else -math.inf, finish)  # fmt: skip
    assert run.reached and run.reached["env_steps"] == run.env_steps_run >= 400
    assert finished == [(run.env_steps_run, finished[0][1])]
    assert 0 < finished[0][1] <= run.wall_s_run
    assert any(tmp_path.iterdir())
