"""The shared CLI toolkit: one grammar for --set and --search, count types, cluster flags,
JSON output, and the probes every app announces to ``rlsuite info``."""

from __future__ import annotations

import argparse
import importlib.metadata
import json

import numpy as np
import pytest

from rlsuite import cli_common as C


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="demo")
    C.add_set_flag(p)
    C.add_set_flag(p, "--env-set", what="an env option", example="accel_noise=0.1")
    C.add_search_flag(p)
    C.add_cluster_flags(p, workers="parallel workers", workers_default=2)
    C.add_json_flag(p)
    return p


# --------------------------------------------------------------------------- --set


def test_set_values_are_json_when_they_can_be():
    assert C.parse_sets(["lr=1e-3", "hidden=[64,64]", "policies=shared", "x=null", "y=true"]) == {
        "lr": 1e-3,
        "hidden": [64, 64],
        "policies": "shared",
        "x": None,
        "y": True,
    }
    # a value may itself hold '='; a later entry for a key wins
    assert C.parse_sets(["expr=a=b", "lr=1", "lr=2"]) == {"expr": "a=b", "lr": 2}
    assert C.parse_sets(None) == {}


def test_set_flag_and_parse_sets_agree():
    a = _parser().parse_args(["--set", "lr=1e-3", "--set", "hidden=[32,32]", "--env-set", "k=v"])
    assert a.set == [("lr", 1e-3), ("hidden", [32, 32])] and a.env_set == [("k", "v")]
    assert C.parse_sets(a.set) == C.parse_sets(["lr=1e-3", "hidden=[32,32]"])


@pytest.mark.parametrize("bad", ["lr", "=3"])
def test_bad_set_says_what_was_wrong_and_how_to_write_it(bad, capsys):
    with pytest.raises(ValueError, match="key=value") as e:
        C.parse_sets([bad])
    assert repr(bad) in str(e.value) and "e.g. lr=3e-4" in str(e.value)
    with pytest.raises(SystemExit) as e:
        _parser().parse_args(["--env-set", bad])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "argument --env-set" in err and "expected key=value" in err and repr(bad) in err


# --------------------------------------------------------------------------- --search


@pytest.mark.parametrize(
    "bare, bracketed, values",
    [
        ("choice:5,10", "choice:[5,10]", (5, 10)),
        ("grid:1e-3,1e-4", "grid:[1e-3,1e-4]", (1e-3, 1e-4)),
        ("choice:relu,tanh", "choice:[relu,tanh]", ("relu", "tanh")),
        ("choice:[64,64],[128,128]", "choice:[[64,64],[128,128]]", ([64, 64], [128, 128])),
        ("choice: 0.0, 0.01", "choice:[0.0, 0.01]", (0.0, 0.01)),
    ],
)
def test_both_spellings_of_a_list_are_the_same_entry(bare, bracketed, values):
    assert C.search_spec(bare) == C.search_spec(bracketed)
    assert C.search_spec(bare).values == values


def test_distributions():
    assert C.search_spec("uniform:0.9:0.99") == C.SearchSpec("uniform", (0.9, 0.99))
    assert C.search_spec("loguniform:1e-5:1e-3") == C.SearchSpec("loguniform", (1e-5, 1e-3))
    assert C.search_spec("choice:[[64,64]]").values == ([64, 64],)  # one list to choose


def test_parse_search_builds_tune_domains_from_text_or_pairs():
    from ray import tune

    text = C.parse_search(["lr=loguniform:1e-4:1e-2", "n=choice:5,10", "g=grid:[1,2]"])
    a = _parser().parse_args(["--search", "lr=loguniform:1e-4:1e-2", "--search", "n=choice:[5,10]"])
    assert a.search == [("lr", "loguniform:1e-4:1e-2"), ("n", "choice:[5,10]")]
    pairs = C.parse_search(a.search)
    assert isinstance(text["lr"], tune.search.sample.Float)
    assert 1e-4 <= text["lr"].sample() <= 1e-2 and 1e-4 <= pairs["lr"].sample() <= 1e-2
    assert text["n"].categories == pairs["n"].categories == [5, 10]
    assert text["g"] == {"grid_search": [1, 2]}


@pytest.mark.parametrize(
    "entry, problem",
    [
        ("lr=normal:0:1", "unknown search kind 'normal'"),
        ("lr=1e-3", "unknown search kind '1e-3'"),
        ("lr=uniform:1", "uniform takes two numbers LO:HI"),
        ("lr=uniform:a:b", "uniform takes two numbers LO:HI"),
        ("lr=uniform:2:1", "needs LO < HI"),
        ("lr=loguniform:0:1", "needs 0 < LO < HI"),
        ("lr=choice:", "choice needs at least one value"),
        ("lr=grid:[]", "grid needs at least one value"),
        ("lr", "write KEY=SPEC"),
    ],
)
def test_bad_search_says_what_was_wrong_and_how_to_write_it(entry, problem):
    with pytest.raises(ValueError) as e:
        C.parse_search([entry])
    msg = str(e.value)
    assert msg.startswith(f"bad --search entry {entry!r}: ") and problem in msg
    assert "e.g. " in msg  # a correct example to copy


def test_search_flag_checks_the_key_when_parsing(capsys):
    with pytest.raises(SystemExit):
        _parser().parse_args(["--search", "loguniform:1e-4:1e-2"])
    assert "argument --search: expected key=spec" in capsys.readouterr().err
    # the spec itself is checked by the command, which exits 2 with the message
    assert _parser().parse_args(["--search", "lr=normal:0:1"]).search == [("lr", "normal:0:1")]


# --------------------------------------------------------------------------- counts


def test_count_types():
    assert C.nonneg_int("0") == 0 and C.positive_int("3") == 3
    assert C.positive_ints("10, 100,1000") == (10, 100, 1000)
    for fn, text, message in [
        (C.nonneg_int, "-1", "a count cannot be negative"),
        (C.nonneg_int, "x", "whole number >= 0, got 'x'"),
        (C.positive_int, "0", "positive whole number, got 0"),
        (C.positive_int, "ten", "positive whole number, got 'ten'"),
        (C.positive_ints, "5,0", "positive whole number, got 0"),
        (C.positive_ints, ",", "comma-separated positive whole numbers, e.g. 5,10,20"),
    ]:
        with pytest.raises(argparse.ArgumentTypeError, match=message):
            fn(text)


# --------------------------------------------------------------------------- cluster, JSON


def test_cluster_flags(capsys):
    a = _parser().parse_args([])
    assert (a.address, a.num_cpus, a.workers, a.json) == (None, None, 2, None)
    a = _parser().parse_args(["--address", "auto", "--num-cpus", "4", "--workers", "0"])
    assert (a.address, a.num_cpus, a.workers) == ("auto", 4, 0)
    with pytest.raises(SystemExit):
        _parser().parse_args(["--num-cpus", "0"])
    assert "argument --num-cpus: expected a positive whole number" in capsys.readouterr().err
    p = argparse.ArgumentParser()
    C.add_cluster_flags(p, num_cpus=False)
    assert vars(p.parse_args([])) == {"address": None}


def test_no_workers_means_no_ray():
    import contextlib

    cm = C.ray_cluster(_parser().parse_args(["--workers", "0"]))
    assert isinstance(cm, contextlib.nullcontext)  # nothing is started


def test_write_json_makes_folders_and_plain_numbers(tmp_path):
    path = tmp_path / "a" / "b" / "r.json"
    data = {"x": np.float32(0.5), "v": np.arange(3), "p": tmp_path, "n": 1}
    assert C.write_json(str(path), data) == str(path)
    assert json.loads(path.read_text()) == {"x": 0.5, "v": [0, 1, 2], "p": str(tmp_path), "n": 1}
    assert C.json_text({"a": 1}, None) == '{"a": 1}'


# --------------------------------------------------------------------------- probes


def test_every_app_announces_its_probes():
    eps = {ep.name: ep for ep in importlib.metadata.entry_points(group=C.PROBES_GROUP)}
    assert set(eps) == {"traffic", "queryopt", "hierarchy"}
    for name, ep in eps.items():
        probes = ep.load()()
        assert probes and all(isinstance(p, C.Probe) and p.component and p.how for p in probes)
        assert ep.value.startswith(f"rlsuite.apps.{name}.probes:")


def test_toolkit_imports_no_app():
    import subprocess
    import sys

    code = (
        "import sys, rlsuite.cli, rlsuite.cli_common; "
        "print(sorted(m for m in sys.modules if m.startswith('rlsuite.apps') or m == 'sumo'))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
