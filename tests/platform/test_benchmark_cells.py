"""The pure summaries of the platform benchmarks' cells (async_grad, apex, cartpole450)."""

from types import SimpleNamespace

from rlsuite.platform.benchmarking import apex_cells, async_grad_cells, cartpole450_cells


def test_async_grad_medians_are_per_shard_count_against_the_first():
    rows = [{"num_shards": n, "updates_per_s": u} for n, u in ((1, 10), (1, 30), (1, 20), (2, 5))]
    med = async_grad_cells.medians(rows, [1, 2, 4])
    assert med == {
        "1": {"updates_per_s": 20, "vs_one_shard": 1.0},
        "2": {"updates_per_s": 5, "vs_one_shard": 0.25},
    }


def test_apex_learning_summary_takes_medians_over_the_seeds_that_reached():
    out = {
        "0": dict(reached=True, env_steps=100, wall_s=10.0),
        "1": dict(reached=False),
        "2": dict(reached=True, env_steps=300, wall_s=30.0),
    }
    summary = apex_cells.learning_summary(out, SimpleNamespace(target=150.0, max_env_steps=1000))
    got = summary["summary"]
    assert (got["seeds"], got["reached"], got["all_reached"]) == (3, 2, False)
    assert (got["median_env_steps_to_target"], got["median_wall_s_to_target"]) == (200, 20.0)


def test_cartpole450_summary_counts_a_miss_at_the_budget_and_its_wall_time():
    cells = {
        "apex": {
            "0": dict(reached=True, env_steps=1000, wall_s=5.0, best_return=460.0),
            "1": dict(reached=False, wall_s_run=50.0, best_return=300.0),
            "2": dict(reached=True, env_steps=3000, wall_s=9.0, best_return=455.0),
        }
    }
    got = cartpole450_cells.summary(cells, SimpleNamespace(target=450.0, max_env_steps=300_000))
    assert got["plans"]["apex"] == dict(
        seeds=3, reached=2, median_env_steps=3000, median_wall_s=9.0, best_return=460.0
    )


def test_cartpole450_tuned_cell_changes_only_the_named_settings():
    plan = cartpole450_cells.cell_plan("async_grad+tuned", 0, "async_grad:gamma=0.99,lr=0.001")
    assert (plan.gamma, plan.lr, plan.num_runners) == (0.99, 0.001, 1)
