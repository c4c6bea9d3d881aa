"""Every declaration under ``benchmarks/<app>/`` is well-formed, and ``rlsuite bench list``
and ``run``'s errors work. Pure and fast: the declarations are loaded, nothing is run."""

from __future__ import annotations

import dataclasses
import re

import pytest

from rlsuite import cli
from rlsuite.bench import registry, report, runner
from rlsuite.bench.declare import APPS, Benchmark

DECL = registry.load()
ROOT = registry.benchmarks_dir()


def test_names_are_unique_and_start_with_their_app():
    names = [b.name for b in DECL.benchmarks]
    assert len(names) == len(set(names))
    assert all(b.name.startswith(b.app + "_") for b in DECL.benchmarks)
    assert {b.app for b in DECL.benchmarks} == set(APPS)


@pytest.mark.parametrize("bench", DECL.benchmarks, ids=lambda b: b.name)
def test_a_declaration_runs_something_with_a_quick_form(bench: Benchmark):
    assert bench.claim.strip(), "a benchmark says what it shows"
    assert bench.quick, "a benchmark has a --quick smoke form"
    if bench.script:
        assert (ROOT / bench.script).is_file()
    else:
        fields = {f.name for f in dataclasses.fields(bench.settings)} if bench.settings else set()
        assert set(bench.quick) <= fields
    runner.build_parser(bench).format_help()  # every flag and help renders


def test_every_row_reads_a_file_of_its_app_and_names_a_real_benchmark():
    names = {b.name for b in DECL.benchmarks}
    for row in DECL.rows:
        for name in row.files():
            assert (report.RESULTS_DIR / row.app / name).is_file(), (row.task, name)
        for named in re.findall(r"rlsuite bench run (\w+)", row.command):
            assert named in names, row.command


def test_the_results_are_grouped_by_app():
    top = {p.name for p in report.RESULTS_DIR.iterdir() if not p.name.startswith(".")}
    assert set(APPS) <= top
    assert not [p for p in report.RESULTS_DIR.glob("*.json")], "results go in an app folder"


def test_bench_list_shows_every_benchmark_and_its_rows(capsys):
    assert cli.main(["bench", "list"]) == 0
    out = capsys.readouterr().out
    for bench in DECL.benchmarks:
        assert bench.name in out
    assert "bottleneck 0" in out  # a RESULTS row's task


def test_an_unknown_benchmark_is_one_line_with_the_nearest_names(capsys):
    assert cli.main(["bench", "run", "traffic_mege"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "did you mean traffic_merge" in err


def test_a_declaration_must_run_exactly_one_thing():
    with pytest.raises(ValueError, match="exactly one of run= and script="):
        Benchmark(name="traffic_x", app="traffic", claim="c")
    with pytest.raises(ValueError, match="did you mean 'traffic'"):
        Benchmark(name="x", app="trafic", claim="c", script="x.py")


def test_every_old_script_name_that_is_an_alias_names_a_benchmark():
    names = {b.name for b in DECL.benchmarks}
    aliases = {}
    for path in ROOT.glob("*.py"):
        found = re.findall(r'alias\("(\w+)"\)', path.read_text())
        if found:
            aliases[path.stem] = found[0]
    assert aliases, "converted benchmarks keep their old script name as an alias"
    assert all(name in names and name == stem for stem, name in aliases.items()), aliases
    scripts = {b.script for b in DECL.benchmarks if b.script}
    assert not {f"{stem}.py" for stem in aliases} & scripts, "an alias is not also a script"


def test_every_results_md_command_of_a_declared_function_parses():
    """A converted benchmark keeps the flags RESULTS.md quotes (its old script name or
    ``rlsuite bench run NAME``); script benchmarks pass their flags to the script itself."""
    import shlex

    text = (ROOT / "RESULTS.md").read_text()
    functions = {b.name: b for b in DECL.benchmarks if b.run is not None}
    pattern = r"(?:benchmarks/(\w+)\.py|rlsuite bench run (\w+))([^`|&\n]*)"
    parsed = 0
    for script, named, args in re.findall(pattern, text):
        bench = functions.get(script or named)
        if bench is not None:
            runner.build_parser(bench).parse_args(shlex.split(args))
            parsed += 1
    assert parsed >= 4
