"""qopt-bench: argument parsing, and a tiny-budget smoke run of every subcommand."""

from __future__ import annotations

import json

import pytest

from rlsuite.apps.queryopt import cli
from rlsuite.apps.queryopt.workloads.joins import SEED_QUERY


def test_parsing_and_help(capsys):
    p = cli.build_parser()
    a = p.parse_args(
        ["train", "--workload", "udf", "--queries", "7", "--udf-cost", "50", "--dsn", "x"]
    )
    assert (a.command, a.workload, a.queries, a.udf_cost, a.dsn) == ("train", "udf", 7, 50, "x")
    a = p.parse_args(["run", "--model", "m", "--json", "o.json"])
    assert (a.model, a.json, a.split, a.workload) == ("m", "o.json", "test", "joins")
    a = p.parse_args(["rewrite", "SELECT 1", "--check", "--rules", "eager_aggregation"])
    assert a.check and a.rules == "eager_aggregation" and a.sql == "SELECT 1"
    a = p.parse_args(["run"])  # the measured chooser by default
    assert (a.chooser, a.budget_s, a.model, a.rules) == (None, 60.0, None, None)
    with pytest.raises(SystemExit):
        p.parse_args(["run", "--chooser", "fastest"])
    with pytest.raises(SystemExit):
        p.parse_args(["setup", "--workload", "nosuch"])
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    out = capsys.readouterr().out
    assert "SYNOPSIS" in out and "--dsn" in out


def test_wrong_option_for_workload_is_a_clear_error(capsys, dsn):
    assert cli.main(["setup", "--workload", "joins", "--udf-cost", "5", "--dsn", dsn]) == 2
    assert "--udf-cost is for --workload udf" in capsys.readouterr().out


def test_setup_rules_and_server_status(capsys, db, dsn, pg_server, monkeypatch):
    assert cli.main(["setup", "--workload", "joins", "--dsn", dsn]) == 0
    out = capsys.readouterr().out
    assert "already loaded" in out and "10000" in out
    assert cli.main(["rules"]) == 0
    assert "eager_aggregation" in capsys.readouterr().out
    monkeypatch.setenv("RLSUITE_PG_DIR", str(pg_server.root))
    assert cli.main(["server", "status"]) == 0
    assert "running" in capsys.readouterr().out


def test_rewrite_check_and_json(capsys, db, dsn, tmp_path):
    out_json = tmp_path / "d.json"
    rc = cli.main(["rewrite", SEED_QUERY, "--check", "--dsn", dsn, "--json", str(out_json)])
    out = capsys.readouterr().out
    assert rc == 0 and "rows match" in out and "eager_aggregation" in out
    d = json.loads(out_json.read_text())
    # measured: eager aggregation, alone or with the planner arm that ran fastest with it
    assert d["rewrites"][0] == "eager_aggregation" and d["rows_match"] is True
    assert cli.main(["rewrite", "SELECT * FROM nosuch", "--dsn", dsn]) == 2
    assert "does not exist" in capsys.readouterr().out
    assert cli.main(["rewrite", SEED_QUERY, "--rules", "nope", "--dsn", dsn]) == 2
    assert "unknown rule 'nope'" in capsys.readouterr().out


def test_train_refuses_an_unknown_rule_before_training(capsys, dsn, tmp_path):
    run_dir = tmp_path / "run"
    args = ["train", "--workload", "joins", "--rules", "unnest_subqueries,nope"]
    assert cli.main([*args, "--run-dir", str(run_dir), "--dsn", dsn]) == 2
    assert "unknown rule 'nope'" in capsys.readouterr().out and not run_dir.exists()


def _run(tmp_path, dsn: str, args: str) -> dict:
    """``qopt-bench run ARGS --dsn DSN``, which must succeed; the JSON it wrote."""
    out_json = tmp_path / "r.json"
    assert cli.main(["run", *args.split(), "--dsn", dsn, "--json", str(out_json)]) == 0
    return json.loads(out_json.read_text())


def test_run_with_fixed_rules(capsys, db, dsn, tmp_path):
    res = _run(
        tmp_path, dsn, "--workload udf --rules filter_after_aggregation --queries 2 --udf-cost 200"
    )
    assert res["summary"]["queries"] == 2 and res["summary"]["wrong_results"] == 0
    assert all(q["rewrites"] == ["filter_after_aggregation"] for q in res["queries"])
    assert "geometric-mean speed-up" in capsys.readouterr().out


@pytest.mark.slow
def test_train_then_run_with_the_model(ray_local, db, dsn, tmp_path, capsys):
    run_dir = tmp_path / "run"
    rc = cli.main(
        [
            "train",
            "--workload",
            "joins",
            "--queries",
            "2",
            "--iterations",
            "1",
            "--max-steps",
            "1",
            "--timeout-ms",
            "100",
            "--num-env-runners",
            "0",  # sampled in the driver: remote runners are trained in test_train.py
            "--run-dir",
            str(run_dir),
            "--rules",
            "decorrelate_scalar, unnest_subqueries,arm_no_nestloop",
            "--dsn",
            dsn,
        ]
    )
    assert rc == 0 and (run_dir / "queryopt.json").exists()
    side = json.loads((run_dir / "queryopt.json").read_text())  # the model acts over its own
    assert side["train_config"]["rules"] == [
        "decorrelate_scalar",
        "unnest_subqueries",
        "arm_no_nestloop",
    ]
    res = _run(tmp_path, dsn, f"--workload joins --model {run_dir} --queries 1 --timeout-ms 100")
    assert res["summary"]["queries"] == 1 and res["summary"]["wrong_results"] == 0
