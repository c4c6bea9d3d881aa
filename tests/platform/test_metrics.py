"""A run's metric files: JSON lines that survive a kill, CSV with every column, the PNG."""

from rlsuite.platform import metrics


def test_jsonl_keeps_rows_up_to_a_line_cut_by_a_kill(tmp_path):
    log = metrics.MetricsLog(str(tmp_path), rows=[{"iteration": 1, "env_steps": 5}])
    log.add({"iteration": 2, "env_steps": 9, "episode_return_mean": 3.5})
    log.close()
    path = tmp_path / metrics.JSONL
    with open(path, "a") as f:
        f.write('{"iteration": 3, "env_st')  # the kill came mid-line
    rows = metrics.read_jsonl(str(path))
    assert [r["iteration"] for r in rows] == [1, 2]
    assert metrics.has_run(str(tmp_path))
    assert (tmp_path / metrics.TENSORBOARD).is_dir()


def test_csv_has_the_union_of_columns_and_the_curve_is_drawn(tmp_path):
    rows = [
        {"iteration": 1, "env_steps": 10, "episode_return_mean": float("nan")},
        {"iteration": 2, "env_steps": 20, "episode_return_mean": 2.0, "eval_return_mean": 3.0},
    ]
    metrics.write_csv(str(tmp_path), rows)
    header = (tmp_path / metrics.CSV).read_text().splitlines()[0]
    assert header == "iteration,env_steps,episode_return_mean,eval_return_mean"
    png = metrics.plot_learning_curve(rows, str(tmp_path / metrics.PNG))
    assert png and (tmp_path / metrics.PNG).stat().st_size > 0
    assert metrics.plot_learning_curve(rows[:1], str(tmp_path / "none.png")) is None
