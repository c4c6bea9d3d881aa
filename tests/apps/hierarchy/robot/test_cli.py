"""The robot subcommands of hier-train: parsing, errors and tiny-budget smoke runs."""

from __future__ import annotations

import json

import pytest

from rlsuite.apps.hierarchy.robot import recording as D
from rlsuite.apps.hierarchy.robot.cli import build_parser, main


def test_parsing():
    p = build_parser()
    a = p.parse_args(["robot", "--demos", "20,5, 10", "--supervision", "both", "--json", "x.json"])
    assert a.demos == [5, 10, 20] and a.supervision == "both" and a.json == "x.json"
    assert a.episodes == 100 and a.workers is None and not a.no_flat
    b = p.parse_args(["robot-demos", "--n", "7", "--task", "stack", "--weak", "--workers", "0"])
    assert (b.n, b.task, b.weak, b.workers) == (7, "stack", True, 0)
    c = p.parse_args(["robot-reuse", "--counts", "1,3"])
    assert c.counts == [1, 3] and c.first_demos == 20


@pytest.mark.parametrize(
    "argv, message",
    [
        (["robot", "--demos", "0"], "positive whole number"),
        (["robot", "--demos", "ten"], "positive whole number"),
        (["robot", "--demos", "5", "--supervision", "medium"], "invalid choice: 'medium'"),
        (["robot-demos"], "--n"),
        (["robot-demos", "--n", "3", "--task", "juggle"], "invalid choice: 'juggle'"),
        (["robot", "--demos", "5", "--workers", "-1"], "whole number >= 0"),
    ],
)
def test_bad_arguments_are_rejected_with_the_reason(argv, message, capsys):
    with pytest.raises(SystemExit) as e:
        build_parser().parse_args(argv)
    assert e.value.code == 2
    assert message in capsys.readouterr().err


def test_help_reads_like_a_man_page(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["robot", "--help"])
    out = capsys.readouterr().out
    assert "EXAMPLES" in out and "OUTPUT" in out and "--supervision" in out


def test_missing_demo_file_is_a_clear_error(capsys, tmp_path):
    rc = main(
        ["robot", "--demos", "2", "--workers", "0", "--demo-file", str(tmp_path / "none.npz")]
    )
    assert rc == 2
    assert "hier-train robot-demos" in capsys.readouterr().err


def test_smoke_robot_demos_then_robot(tmp_path):
    demos = tmp_path / "demos.npz"
    assert main(["robot-demos", "--n", "2", "--workers", "0", "--out", str(demos)]) == 0
    assert len(D.load(str(demos))) == 2
    out = tmp_path / "res.json"
    argv = [
        "robot",
        "--demos",
        "1,2",
        "--episodes",
        "2",
        "--workers",
        "0",
        "--train-steps",
        "30",
        "--supervision",
        "both",
        "--demo-file",
        str(demos),
        "--json",
        str(out),
        "--save",
        str(tmp_path / "models"),
    ]
    assert main(argv) == 0
    res = json.loads(out.read_text())
    assert [r["demos"] for r in res["rows"]] == [1, 2]
    assert set(res["rows"][0]["success"]) == {"hierarchical-strong", "hierarchical-weak", "flat"}
    assert (tmp_path / "res.png").stat().st_size > 1000
    assert (tmp_path / "models" / "pick_place-2demos-flat.pt").exists()
    # asking for more demonstrations than the file holds says so
    assert main(["robot", "--demos", "3", "--workers", "0", "--demo-file", str(demos)]) == 2


def test_smoke_robot_reuse(tmp_path):
    out = tmp_path / "reuse.json"
    argv = [
        "robot-reuse",
        "--counts",
        "1",
        "--first-demos",
        "1",
        "--episodes",
        "1",
        "--workers",
        "0",
        "--train-steps",
        "20",
        "--json",
        str(out),
    ]
    assert main(argv) == 0
    res = json.loads(out.read_text())
    assert set(res["success"]) == {"reuse", "retrain", "recreate", "scratch"}
    assert (tmp_path / "reuse.png").exists()


def test_demo_section_returns_table_rows():
    from rlsuite.apps.hierarchy.robot.demo import run

    rows = run(demos=2, episodes=2, num_workers=0)
    assert [r["controller"] for r in rows][0] == "scripted expert" and rows[0]["value"] == 1.0
    assert {r["app"] for r in rows} == {"hierarchy"} and len(rows) == 4
    assert all(isinstance(r["value"], float) and 0.0 <= r["value"] <= 1.0 for r in rows)
