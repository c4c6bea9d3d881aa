"""hier-train: argument parsing, and a tiny-budget run of each synthesis subcommand."""

from __future__ import annotations

import json
import os

import pytest

from rlsuite.apps.hierarchy.cli import build_parser, main
from rlsuite.apps.hierarchy.synthesis.experiment import SynthesisConfig, evaluate_saved


def test_parse_synthesis_arguments():
    args = build_parser().parse_args(
        [
            "synthesis",
            "--strong",
            "3",
            "--weak",
            "40",
            "--models",
            "php,npi",
            "--lengths",
            "10,1000",
            "--json",
            "x.json",
            "--workers",
            "0",
        ]
    )
    assert (args.strong, args.weak, args.models, args.lengths) == (
        3,
        40,
        ("php", "npi"),
        (10, 1000),
    )
    assert args.json == "x.json" and args.workers == 0


@pytest.mark.parametrize(
    "argv,needle",
    [
        (["synthesis", "--strong", "-1"], "cannot be negative"),
        (["synthesis", "--weak", "-5"], "cannot be negative"),
        (["synthesis", "--models", "php,gpt"], "unknown model 'gpt'"),
        (["synthesis", "--lengths", "10,0"], "positive"),
        (["evaluate"], "--model"),
    ],
)
def test_bad_arguments_exit_2_with_a_clear_message(argv, needle, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    assert needle in capsys.readouterr().err


def test_config_validation_messages():
    with pytest.raises(ValueError, match="no demonstrations"):
        SynthesisConfig(strong=0, weak=0).validate()
    with pytest.raises(ValueError, match="unknown model"):
        SynthesisConfig(models=("php", "transformer")).validate()
    assert main(["synthesis", "--strong", "0", "--weak", "0", "--workers", "0"]) == 2


def test_no_command_prints_help(capsys):
    assert main([]) == 2
    assert "hier-train" in capsys.readouterr().out


def test_trace_command(capsys):
    assert main(["trace", "--length", "2", "--seed", "1"]) == 0
    out = capsys.readouterr().out
    assert "ADD1[pc=0] WRITE(out" in out and "LSHIFT" in out
    assert main(["trace", "--length", "2", "--weak"]) == 0
    assert "STOP" in capsys.readouterr().out


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("synthesis")
    js = out / "r.json"
    rc = main(
        [
            "synthesis",
            "--strong",
            "2",
            "--weak",
            "6",
            "--epochs",
            "5",
            "--lengths",
            "2,4",
            "--problems",
            "3",
            "--workers",
            "0",
            "--out-dir",
            str(out),
            "--json",
            str(js),
        ]
    )
    assert rc == 0
    return out, js


def test_synthesis_smoke_writes_models_json_and_png(tiny_run):
    out, js = tiny_run
    data = json.loads(js.read_text())
    assert [r["model"] for r in data["results"]] == ["php", "flat-lstm", "npi"]
    for r in data["results"]:
        assert set(r["accuracy"]) == {"2", "4"} and all(0 <= v <= 1 for v in r["accuracy"].values())
        assert os.path.exists(r["path"])
    assert data["results"][2]["weak"] == 0  # NPI trains on strong traces only
    assert os.path.getsize(out / "accuracy_vs_length.png") > 1000


def test_evaluate_smoke(tiny_run, tmp_path, capsys):
    out, _ = tiny_run
    js = tmp_path / "e.json"
    assert (
        main(
            [
                "evaluate",
                "--model",
                str(out / "php.pt"),
                "--lengths",
                "3",
                "--problems",
                "2",
                "--workers",
                "0",
                "--json",
                str(js),
            ]
        )
        == 0
    )
    assert "exact-match accuracy" in capsys.readouterr().out
    assert set(json.loads(js.read_text())["accuracy"]) == {"3"}
    assert main(["evaluate", "--model", str(tmp_path / "nope.pt"), "--workers", "0"]) == 2


@pytest.mark.slow
def test_parallel_evaluation_on_ray_matches_in_process(tiny_run, ray_local):
    out, _ = tiny_run
    path = str(out / "php.pt")
    par = evaluate_saved(path, "php", (2, 3), 4, num_workers=2)
    seq = evaluate_saved(path, "php", (2, 3), 4, num_workers=0)
    assert par["accuracy"] == seq["accuracy"] and par["digit_accuracy"] == seq["digit_accuracy"]
