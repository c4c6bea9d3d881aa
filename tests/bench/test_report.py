"""``rlsuite bench report``: the results table is current, bad input names the file, ratios.

Pure and fast: the real results JSON files are read, nothing is run.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlsuite import cli
from rlsuite.bench import registry, report
from rlsuite.bench.declare import Anchor, Row, Value

ROOT = Path(__file__).resolve().parents[2]
RESULTS_MD = ROOT / "benchmarks" / "RESULTS.md"
ROWS = registry.load().rows


def _report(*args: str) -> int:
    return cli.main(["bench", "report", *args])


def _files() -> set[str]:
    return {f"{row.app}/{name}" for row in ROWS for name in row.files()}


@pytest.fixture
def sandbox(tmp_path):
    """A results folder linking the real JSON files, and a stale copy of RESULTS.md."""
    results = tmp_path / "results"
    results.mkdir()
    for name in _files():  # <app>/<file>, some in a subfolder (platform/device/)
        (results / name).parent.mkdir(parents=True, exist_ok=True)
        (results / name).symlink_to(report.RESULTS_DIR / name)
    target = tmp_path / "RESULTS.md"
    text = RESULTS_MD.read_text()
    begin = text.index(report.BEGIN) + len(report.BEGIN)
    end = text.index(report.END)
    # A stale table, so that a run that wrote anything would change the file.
    target.write_text(text[:begin] + "\n| stale |\n" + text[end:])
    return results, target


def test_the_table_in_results_md_is_what_the_json_files_give():
    assert report.is_current(ROWS, RESULTS_MD), "benchmarks/RESULTS.md is stale: run `make results`"
    assert _report("--check") == 0


def test_every_row_reads_a_number_and_the_block_sits_between_the_markers():
    block = report.table(ROWS)
    lines = block.strip().split("\n")
    assert len(lines) == 2 + len(ROWS)
    text = RESULTS_MD.read_text()
    assert text.count(report.BEGIN) == 1 and text.count(report.END) == 1
    assert block in text.split(report.BEGIN, 1)[1].split(report.END, 1)[0]


def test_a_stale_table_fails_the_check_and_a_run_brings_it_up_to_date(sandbox, capsys):
    results, target = sandbox
    assert not report.is_current(ROWS, target, results)
    assert _report("--check", "--target", str(target), "--results-dir", str(results)) == 1
    assert "stale" in capsys.readouterr().err
    assert _report("--target", str(target), "--results-dir", str(results)) == 0
    assert report.is_current(ROWS, target, results)
    outside = target.read_text().replace(report.table(ROWS, results), "")
    assert outside == RESULTS_MD.read_text().replace(report.table(ROWS), "")


def test_a_changed_number_in_a_results_file_makes_the_table_stale(sandbox):
    results, target = sandbox
    name = "traffic/traffic_bottleneck.json"
    data = json.loads((report.RESULTS_DIR / name).read_text())
    data["rows"]["learned"]["outflow_veh_h"] = 1234.0
    (results / name).unlink()
    (results / name).write_text(json.dumps(data))
    assert _report("--target", str(target), "--results-dir", str(results)) == 0
    assert "| 1,234 |" in target.read_text()
    assert not report.is_current(ROWS, RESULTS_MD, results)


def _run_and_expect_failure(results, target, capsys) -> str:
    before = target.read_bytes()
    assert _report("--target", str(target), "--results-dir", str(results)) == 1
    err = capsys.readouterr().err
    assert target.read_bytes() == before, "RESULTS.md must be left as it was"
    assert sorted(p.name for p in target.parent.iterdir() if p.is_file()) == ["RESULTS.md"]
    assert err.count("\n") == 1, err
    return err


def test_a_missing_results_file_is_named_and_the_target_left_unchanged(sandbox, capsys):
    results, target = sandbox
    (results / "queryopt/queryopt_tpch.json").unlink()
    err = _run_and_expect_failure(results, target, capsys)
    assert f"{results / 'queryopt/queryopt_tpch.json'}: missing" in err
    assert "Traceback" not in err


def test_a_malformed_results_file_is_named_and_the_target_left_unchanged(sandbox, capsys):
    results, target = sandbox
    (results / "hierarchy/hierarchy_sort.json").unlink()
    (results / "hierarchy/hierarchy_sort.json").write_text('{"results": [')
    err = _run_and_expect_failure(results, target, capsys)
    assert f"{results / 'hierarchy/hierarchy_sort.json'}: not valid JSON" in err
    assert "line 1" in err


def test_a_key_path_that_does_not_resolve_is_named(sandbox, capsys):
    results, target = sandbox
    (results / "traffic/traffic_merge.json").unlink()
    (results / "traffic/traffic_merge.json").write_text(
        json.dumps({"variants": {"0": {"rows": {}}}})
    )
    err = _run_and_expect_failure(results, target, capsys)
    assert f"{results / 'traffic/traffic_merge.json'}: no key variants.0.rows.learned" in err


def test_a_value_that_is_not_a_number_is_named(sandbox, capsys):
    results, target = sandbox
    name = "platform/platform_es.json"
    data = json.loads((report.RESULTS_DIR / name).read_text())
    data["solve"]["es"]["time_to_solve_s"] = None
    (results / name).unlink()
    (results / name).write_text(json.dumps(data))
    err = _run_and_expect_failure(results, target, capsys)
    assert f"{results / name}: solve.es.time_to_solve_s is None, not a finite number" in err


def test_files_in_the_repository_are_named_from_its_root():
    with pytest.raises(
        report.SummaryError, match=r"^benchmarks/results/traffic/no_such_file\.json: missing"
    ):
        report.load("traffic/no_such_file.json", report.RESULTS_DIR)


def test_a_target_without_markers_is_refused(tmp_path, capsys):
    target = tmp_path / "RESULTS.md"
    target.write_text("# Results\n\nno markers here\n")
    assert _report("--target", str(target)) == 1
    assert "summary:begin" in capsys.readouterr().err
    assert target.read_text() == "# Results\n\nno markers here\n"


def test_ratio_is_oriented_so_that_above_one_means_ahead():
    assert report.ratio(9.48, 5.96) == pytest.approx(9.48 / 5.96)
    assert report.ratio(7.43, 8.26) < 1
    # lower is better: 0.27 s of waiting against 1.23 s is 4.5x ahead
    assert report.ratio(0.27, 1.23, lower_is_better=True) == pytest.approx(1.23 / 0.27)
    assert report.ratio(104.0, 47.0, lower_is_better=True) < 1
    assert report.ratio(1.0, 0.0) is None
    assert report.ratio(0.0, 2.0, lower_is_better=True) is None


def test_a_row_with_a_divisor_a_selector_and_a_measured_anchor(tmp_path):
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "x.json").write_text(
        json.dumps(
            {
                "rows": [
                    {"controller": "learned", "speed": 3.0},
                    {"controller": "human", "speed": 2.0},
                ],
                "other": {"speed": 6.0},
            }
        )
    )
    row = Row(
        "app",
        "task",
        "speed / human",
        "x.json",
        Value(("rows", {"controller": "learned"}, "speed"), over=("rows", 1, "speed")),
        Anchor("measured here: other", measured=Value(("other", "speed"))),
        "cmd | with a pipe",
    )
    line = report.table((row,), tmp_path).strip().split("\n")[-1]
    assert line == (
        "| app | task | speed / human | 1.50 | 6.00 (measured here: other) | 0.25 "
        "| `cmd \\| with a pipe` | - |"
    )


def test_a_selector_must_match_exactly_one_element(tmp_path):
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "x.json").write_text(
        json.dumps({"rows": [{"k": 1, "v": 1}, {"k": 1, "v": 2}]})
    )
    row = Row("app", "t", "m", "x.json", Value(("rows", {"k": 1}, "v")), None, "c")
    with pytest.raises(report.SummaryError, match=r"x\.json: 2 list element matches rows\[k=1\]"):
        report.table((row,), tmp_path)
