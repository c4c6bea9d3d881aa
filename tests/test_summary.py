"""benchmarks/summary.py: the results table is current, bad input names the file, ratios.

Pure and fast: the real results JSON files are read, nothing is run.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SPEC = importlib.util.spec_from_file_location(
    "rlsuite_bench_summary", ROOT / "benchmarks" / "summary.py"
)
summary = importlib.util.module_from_spec(SPEC)
sys.modules[SPEC.name] = summary  # dataclasses look their module up by name
SPEC.loader.exec_module(summary)

RESULTS_MD = ROOT / "benchmarks" / "RESULTS.md"


def _files() -> set[str]:
    names = set()
    for row in summary.ROWS:
        names.add(row.file)
        for value in (row.value, row.anchor.measured if row.anchor else None):
            if value is not None and value.file:
                names.add(value.file)
    return names


@pytest.fixture
def sandbox(tmp_path):
    """A results folder linking the real JSON files, and a stale copy of RESULTS.md."""
    results = tmp_path / "results"
    results.mkdir()
    for name in _files():  # some in a subfolder (device/)
        (results / name).parent.mkdir(parents=True, exist_ok=True)
        (results / name).symlink_to(summary.RESULTS_DIR / name)
    target = tmp_path / "RESULTS.md"
    text = RESULTS_MD.read_text()
    begin = text.index(summary.BEGIN) + len(summary.BEGIN)
    end = text.index(summary.END)
    # A stale table, so that a run that wrote anything would change the file.
    target.write_text(text[:begin] + "\n| stale |\n" + text[end:])
    return results, target


def test_the_table_in_results_md_is_what_the_json_files_give():
    assert summary.is_current(RESULTS_MD), "benchmarks/RESULTS.md is stale: run `make results`"
    assert summary.main(["--check"]) == 0


def test_every_row_reads_a_number_and_the_block_sits_between_the_markers():
    block = summary.table()
    lines = block.strip().split("\n")
    assert len(lines) == 2 + len(summary.ROWS)
    text = RESULTS_MD.read_text()
    assert text.count(summary.BEGIN) == 1 and text.count(summary.END) == 1
    assert block in text.split(summary.BEGIN, 1)[1].split(summary.END, 1)[0]


def test_a_stale_table_fails_the_check_and_a_run_brings_it_up_to_date(sandbox, capsys):
    results, target = sandbox
    assert not summary.is_current(target, results)
    assert summary.main(["--check", "--target", str(target), "--results-dir", str(results)]) == 1
    assert "stale" in capsys.readouterr().err
    assert summary.main(["--target", str(target), "--results-dir", str(results)]) == 0
    assert summary.is_current(target, results)
    outside = target.read_text().replace(summary.table(results_dir=results), "")
    assert outside == RESULTS_MD.read_text().replace(summary.table(), "")


def test_a_changed_number_in_a_results_file_makes_the_table_stale(sandbox):
    results, target = sandbox
    name = "traffic_bottleneck.json"
    data = json.loads((summary.RESULTS_DIR / name).read_text())
    data["rows"]["learned"]["outflow_veh_h"] = 1234.0
    (results / name).unlink()
    (results / name).write_text(json.dumps(data))
    assert summary.main(["--target", str(target), "--results-dir", str(results)]) == 0
    assert "| 1,234 |" in target.read_text()
    assert not summary.is_current(RESULTS_MD, results)


def _run_and_expect_failure(results, target, capsys) -> str:
    before = target.read_bytes()
    assert summary.main(["--target", str(target), "--results-dir", str(results)]) == 1
    err = capsys.readouterr().err
    assert target.read_bytes() == before, "RESULTS.md must be left as it was"
    assert sorted(p.name for p in target.parent.iterdir() if p.is_file()) == ["RESULTS.md"]
    assert err.count("\n") == 1, err
    return err


def test_a_missing_results_file_is_named_and_the_target_left_unchanged(sandbox, capsys):
    results, target = sandbox
    (results / "queryopt_tpch.json").unlink()
    err = _run_and_expect_failure(results, target, capsys)
    assert f"{results / 'queryopt_tpch.json'}: missing" in err
    assert "Traceback" not in err


def test_a_malformed_results_file_is_named_and_the_target_left_unchanged(sandbox, capsys):
    results, target = sandbox
    (results / "hierarchy_sort.json").unlink()
    (results / "hierarchy_sort.json").write_text('{"results": [')
    err = _run_and_expect_failure(results, target, capsys)
    assert f"{results / 'hierarchy_sort.json'}: not valid JSON" in err
    assert "line 1" in err


def test_a_key_path_that_does_not_resolve_is_named(sandbox, capsys):
    results, target = sandbox
    (results / "traffic_merge.json").unlink()
    (results / "traffic_merge.json").write_text(json.dumps({"variants": {"0": {"rows": {}}}}))
    err = _run_and_expect_failure(results, target, capsys)
    assert f"{results / 'traffic_merge.json'}: no key variants.0.rows.learned" in err


def test_a_value_that_is_not_a_number_is_named(sandbox, capsys):
    results, target = sandbox
    name = "platform_es.json"
    data = json.loads((summary.RESULTS_DIR / name).read_text())
    data["solve"]["es"]["time_to_solve_s"] = None
    (results / name).unlink()
    (results / name).write_text(json.dumps(data))
    err = _run_and_expect_failure(results, target, capsys)
    assert f"{results / name}: solve.es.time_to_solve_s is None, not a finite number" in err


def test_files_in_the_repository_are_named_from_its_root():
    with pytest.raises(
        summary.SummaryError, match=r"^benchmarks/results/no_such_file\.json: missing"
    ):
        summary.load("no_such_file.json", summary.RESULTS_DIR)


def test_a_target_without_markers_is_refused(tmp_path, capsys):
    target = tmp_path / "RESULTS.md"
    target.write_text("# Results\n\nno markers here\n")
    assert summary.main(["--target", str(target)]) == 1
    assert "summary:begin" in capsys.readouterr().err
    assert target.read_text() == "# Results\n\nno markers here\n"


def test_ratio_is_oriented_so_that_above_one_means_ahead():
    assert summary.ratio(9.48, 5.96) == pytest.approx(9.48 / 5.96)
    assert summary.ratio(7.43, 8.26) < 1
    # lower is better: 0.27 s of waiting against 1.23 s is 4.5x ahead
    assert summary.ratio(0.27, 1.23, lower_is_better=True) == pytest.approx(1.23 / 0.27)
    assert summary.ratio(104.0, 47.0, lower_is_better=True) < 1
    assert summary.ratio(1.0, 0.0) is None
    assert summary.ratio(0.0, 2.0, lower_is_better=True) is None


def test_a_row_with_a_divisor_a_selector_and_a_measured_anchor(tmp_path):
    (tmp_path / "x.json").write_text(
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
    row = summary.Row(
        "app",
        "task",
        "speed / human",
        "x.json",
        summary.Value(("rows", {"controller": "learned"}, "speed"), over=("rows", 1, "speed")),
        summary.Anchor("measured here: other", measured=summary.Value(("other", "speed"))),
        "cmd | with a pipe",
    )
    line = summary.table((row,), tmp_path).strip().split("\n")[-1]
    assert line == (
        "| app | task | speed / human | 1.50 | 6.00 (measured here: other) | 0.25 "
        "| `cmd \\| with a pipe` | - |"
    )


def test_a_selector_must_match_exactly_one_element(tmp_path):
    (tmp_path / "x.json").write_text(json.dumps({"rows": [{"k": 1, "v": 1}, {"k": 1, "v": 2}]}))
    row = summary.Row("a", "t", "m", "x.json", summary.Value(("rows", {"k": 1}, "v")), None, "c")
    with pytest.raises(summary.SummaryError, match=r"x\.json: 2 list element matches rows\[k=1\]"):
        summary.table((row,), tmp_path)
