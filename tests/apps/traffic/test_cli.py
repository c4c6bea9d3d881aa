"""traffic-train: argument parsing and tiny-budget smoke runs on real SUMO."""

from __future__ import annotations

import json

import pytest

from rlsuite.apps.traffic import cli
from rlsuite.apps.traffic.scenarios import parse_ring_length

TINY = ["--horizon", "30", "--warmup", "20"]


def test_parse_evaluate_arguments():
    a = cli.build_parser().parse_args(["evaluate", "--scenario", "ring", "--controller", "pi",
                                       "--ring-length", "220:270", "--episodes", "3", "--json",
                                       "x.json", "--env-set", "accel_noise=0.1"])  # fmt: skip
    assert (a.command, a.scenario, a.controller, a.episodes) == ("evaluate", "ring", "pi", 3)
    assert a.env_set == [("accel_noise", 0.1)]
    from rlsuite.apps.traffic.scenarios import get

    assert cli.env_config(a, get("ring")) == {"ring_length": [220.0, 270.0], "accel_noise": 0.1}


def test_parse_train_and_tune_arguments():
    a = cli.build_parser().parse_args(["train", "--scenario", "ring", "--plan", "sync",
                                       "--workers", "3", "--iterations", "7", "--address",
                                       "10.0.0.1:6379", "--plan-set", "hidden=[32,32]"])  # fmt: skip
    assert (a.plan, a.workers, a.iterations, a.address) == ("sync", 3, 7, "10.0.0.1:6379")
    assert a.plan_set == [("hidden", [32, 32])]
    from rlsuite.apps.traffic.scenarios import get

    plan = cli._plan(a, get("ring"), {})
    assert plan.hidden == (32, 32) and plan.num_env_runners == 3
    # the ring's returns (~800) need the critic's loss unclamped; --plan-set still wins
    assert plan.vf_clip_param == 1e6 and plan.normalize_actions is False
    t = cli.build_parser().parse_args(
        ["tune", "--samples", "2", "--scheduler", "pbt", "--search", "lr=loguniform:1e-5:1e-3"]
    )
    space = cli.parse_search(t.search)
    assert set(space) == {"lr"} and t.scheduler == "pbt"


@pytest.mark.parametrize(
    "text, expected", [("230", 230.0), ("220:270", (220.0, 270.0)), ("220-270", (220.0, 270.0))]
)
def test_parse_ring_length(text, expected):
    assert parse_ring_length(text) == expected


def test_help_reads_like_a_man_page(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    for section in ("NAME", "SYNOPSIS", "DESCRIPTION", "SCENARIOS", "EXAMPLES", "EXIT STATUS"):
        assert section in out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["evaluate", "--scenario", "highway", "--controller", "pi"], "unknown scenario 'highway'"),
        (["evaluate", "--controller", "pi", "--ring-length", "5000"], "out of range"),
        (["evaluate", "--controller", "pi", "--ring-length", "abc"], "not a number of metres"),
        (["evaluate", "--controller", "pi", "--env-set", "num_vehicles=60"], "too many vehicles"),
        (["evaluate", "--controller", "no/such/checkpoint"], "neither a baseline"),
        (["evaluate", "--controller", "pi", "--episodes", "0"], "--episodes must be >= 1"),
        (["evaluate", "--controller", "pi", "--avs", "3"], "--avs applies to"),
        (["tune", "--search", "lr=normal:1:2"], "bad --search entry"),
    ],
)
def test_bad_input_is_a_clear_error(argv, message, capsys):
    assert cli.main(argv) == 2
    assert message in capsys.readouterr().err


def test_evaluate_smoke_writes_table_json_and_png(tmp_path, capsys):
    out = tmp_path / "pi.json"
    rc = cli.main(["evaluate", "--scenario", "ring", "--controller", "pi", "--episodes", "2",
                   "--workers", "0", "--json", str(out), *TINY])  # fmt: skip
    assert rc == 0
    data = json.loads(out.read_text())
    assert len(data["episodes"]) == 2 and data["controller"] == "pi"
    assert data["summary"]["mean_speed"]["mean"] > 0
    png = tmp_path / "pi.png"
    assert png.exists() and png.read_bytes()[:4] == b"\x89PNG"
    assert "mean_speed" in capsys.readouterr().out
