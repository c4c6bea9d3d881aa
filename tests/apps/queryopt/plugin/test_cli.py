"""qopt-bench serve / plugin: parsing, and tiny smoke runs of each subcommand."""

from __future__ import annotations

import argparse
import json

import pytest

from rlsuite.apps.queryopt.plugin import cli


def parse(argv):
    return cli.build_parser().parse_args(argv)


def test_register_adds_serve_and_plugin_to_any_parser():
    p = argparse.ArgumentParser(prog="qopt-bench")
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("setup")
    cli.register(sub)
    a = p.parse_args(["serve", "--rules", "eager_aggregation", "--socket", "/tmp/x.sock"])
    assert a.command == "serve" and a.qopt_plugin_handler is cli.cmd_serve
    assert a.rules == "eager_aggregation" and a.socket == "/tmp/x.sock" and a.wait_ms == 40.0
    a = p.parse_args(["plugin", "status", "--dsn", "host=/x dbname=y"])
    assert a.plugin_action == "status" and a.qopt_plugin_handler is cli.cmd_status
    assert p.parse_args(["plugin", "install"]).qopt_plugin_handler is cli.cmd_install


@pytest.mark.parametrize(
    "argv",
    [
        ["serve", "--rules", "r", "--socket", "/a", "--listen", "localhost:1"],
        ["serve", "--rules", "r", "--workload", "nope"],
        ["plugin"],
        ["plugin", "uninstall"],
    ],
)
def test_bad_usage_exits_2(argv, capsys):
    with pytest.raises(SystemExit) as e:
        parse(argv)
    assert e.value.code == 2


def test_serve_chooser_flags_that_do_not_fit_are_refused(capsys):
    # refused before anything starts (plain `serve` is the measured chooser)
    assert parse(["serve"]).chooser is None and parse(["serve"]).budget_s == 60.0
    assert cli.main(["serve", "--chooser", "model"]) == 2
    assert "--chooser model needs --model PATH" in capsys.readouterr().out
    assert cli.main(["serve", "--chooser", "measured", "--model", "m"]) == 2
    assert "goes without --model" in capsys.readouterr().out
    # --model with --rules: only the model's own rules (test_online_named_rules.py)
    assert cli.main(["serve", "--model", "m", "--rules", "r"]) == 2
    assert "unknown rule 'r'" in capsys.readouterr().out
    assert cli.main(["serve", "--model", "m", "--rules", "eager_aggregation"]) == 2
    assert "is not an rlsuite checkpoint" in capsys.readouterr().out
    assert cli.main(["serve", "--budget-s", "0"]) == 2
    assert "--budget-s must be > 0" in capsys.readouterr().out
    assert parse(["serve", "--workload", "tpcds", "--scale", "0.01"]).scale == 0.01
    assert cli.main(["serve", "--scale", "0.01"]) == 2
    assert "--scale goes with --workload tpcds or tpch" in capsys.readouterr().out
    assert cli.main(["serve", "--workload", "tpcds", "--scale", "0"]) == 2
    assert "--scale must be > 0" in capsys.readouterr().out


def test_help_reads_like_a_man_page(capsys):
    with pytest.raises(SystemExit):
        parse(["serve", "--help"])
    out = capsys.readouterr().out
    for section in ("NAME", "SYNOPSIS", "DESCRIPTION", "EXIT STATUS", "qopt.timeout_ms"):
        assert section in out


def test_serve_rejects_bad_values_with_a_clear_message(dsn, capsys):
    assert cli.main(["serve", "--rules", "no_such_rule", "--dsn", dsn]) == 2
    assert "unknown rule 'no_such_rule'" in capsys.readouterr().out
    assert cli.main(["serve", "--rules", "eager_aggregation", "--wait-ms", "-1", "--dsn", dsn]) == 2
    assert "--wait-ms must be >= 0" in capsys.readouterr().out
    rc = cli.main(
        ["serve", "--rules", "eager_aggregation", "--listen", "example.com:80", "--dsn", dsn]
    )
    assert rc == 2 and "this machine only" in " ".join(capsys.readouterr().out.split())


def test_plugin_install_and_status_smoke(dsn, plugin_lib, tmp_path, capsys):
    assert cli.main(["plugin", "install"]) == 0
    assert "installed" in capsys.readouterr().out
    out_json = tmp_path / "status.json"
    assert (
        cli.main(
            [
                "plugin",
                "status",
                "--dsn",
                dsn,
                "--socket",
                str(tmp_path / "none.sock"),
                "--json",
                str(out_json),
            ]
        )
        == 0
    )
    st = json.loads(out_json.read_text())
    assert st["plugin"]["loads"] is True and st["plugin"]["current"] is True
    assert st["plugin"]["settings"]["qopt.enabled"] == "off"
    assert "no model server" in st["model_server"]["error"]
