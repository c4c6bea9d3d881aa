"""The shared runner: settings become flags, ``--quick`` and flags override defaults, the JSON
carries its run record, scripts get their flags, and the heavy-job lock is shared with an
outer ``flock`` instead of deadlocking on it."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from dataclasses import dataclass

import pytest

from rlsuite.bench import Benchmark, runner
from rlsuite.bench.declare import RESULTS_ENV


@dataclass(frozen=True)
class Settings:
    episodes: int = 10
    """seeded episodes"""
    speed: bool = False
    """also measure speed"""
    plan_set: tuple[str, ...] = ()
    """plan fields KEY=VALUE"""


def _run(ctx: runner.Context) -> int:
    s = ctx.settings
    ctx.save("platform_toy", {"episodes": s.episodes, "speed": s.speed, "sets": list(s.plan_set)})
    return 0 if s.episodes > 0 else 3


TOY = Benchmark(
    name="platform_toy",
    app="platform",
    claim="a toy",
    run=_run,
    settings=Settings,
    quick=dict(episodes=1),
    seeds=True,
    heavy=False,
)


def test_settings_are_flags_with_their_docstrings():
    text = runner.build_parser(TOY).format_help()
    assert "--episodes EPISODES" in text and "seeded episodes (default: 10)" in text
    assert "--speed, --no-speed" in text and "--plan-set" in text and "--seeds" in text


def test_quick_then_flags_override_the_defaults_and_the_json_has_its_run(tmp_path, monkeypatch):
    monkeypatch.setenv(RESULTS_ENV, str(tmp_path))
    argv = ["--speed", "--plan-set", "lr=0.1", "--plan-set", "gamma=0.9", "--seeds", "0,1"]
    assert runner.run(TOY, sys.modules[__name__], argv) == 0
    data = json.loads((tmp_path / "platform" / "platform_toy.json").read_text())
    assert (data["episodes"], data["speed"], data["sets"]) == (10, True, ["lr=0.1", "gamma=0.9"])
    run = data["run"]
    assert run["seeds"] == [0, 1] and run["quick"] is False
    assert run["command"].startswith("rlsuite bench run platform_toy --speed")
    assert run["machine"]["usable_cpus"] >= 1 and "ray" in run["versions"]

    monkeypatch.chdir(tmp_path)  # --quick writes under ./runs/bench-quick
    assert runner.run(TOY, sys.modules[__name__], ["--quick"]) == 0
    quick = tmp_path / "runs" / "bench-quick" / "results" / "platform" / "platform_toy.json"
    assert json.loads(quick.read_text())["episodes"] == 1
    assert runner.run(TOY, sys.modules[__name__], ["--episodes", "0"]) == 3


def test_a_results_name_may_name_a_subfolder(tmp_path):
    ctx = runner.Context(bench=TOY, settings=Settings(), seeds=None, quick=False, resume=False,
                         results=tmp_path / "platform", argv=[])  # fmt: skip
    path = ctx.save("device/platform_toy", {"episodes": 1})
    assert path == tmp_path / "platform" / "device" / "platform_toy.json" and path.exists()


def test_a_bad_flag_is_refused_by_argparse(capsys):
    with pytest.raises(SystemExit):
        runner.run(TOY, sys.modules[__name__], ["--episodes", "many"])
    assert "invalid int value" in capsys.readouterr().err


def test_a_script_gets_its_quick_flags_and_the_rest(capfd):
    alias = Benchmark(
        name="platform_alias",
        app="platform",
        claim="the report's old script name",
        script="summary.py",
        quick=("--check",),
        heavy=False,
    )
    assert runner.run(alias, None, ["--quick"]) == 0
    out = capfd.readouterr().out
    assert "summary.py --check" in out and "is current" in out


def test_the_lock_an_outer_flock_holds_is_used_not_waited_on(tmp_path):
    lock = tmp_path / "heavy.lock"
    code = textwrap.dedent(
        f"""
        from rlsuite.bench.runner import heavy_lock
        with heavy_lock({str(lock)!r}):
            print("inside")
        """
    )
    out = subprocess.run(
        ["flock", str(lock), sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0 and out.stdout.strip() == "inside", out.stderr


def test_a_lock_held_by_this_process_is_reused_and_a_body_error_passes_through(tmp_path):
    lock = str(tmp_path / "heavy.lock")
    with runner.heavy_lock(lock):  # bench smoke --hold-lock, then each command's own
        with runner.heavy_lock(lock, say=pytest.fail):  # would wait (and say so) if not reused
            pass
        with pytest.raises(FileNotFoundError), runner.heavy_lock(lock, say=pytest.fail):
            raise FileNotFoundError("a benchmark's own error")


def test_quick_flags_of_a_script():
    assert runner.quick_flags({"minutes": 0.1, "no_flat": True, "off": False}) == [
        "--minutes",
        "0.1",
        "--no-flat",
    ]
    assert runner.quick_flags(("all", "60")) == ["all", "60"]


def test_picked_names_are_all_by_default_and_an_unknown_one_names_the_nearest():
    from rlsuite.bench.settings import picked

    assert picked("", ["a", "bb"], "task") == ["a", "bb"]
    assert picked("bb,", ["a", "bb"], "task") == ["bb"]
    with pytest.raises(ValueError, match="unknown task 'b'; did you mean 'bb'"):
        picked("b", ["a", "bb"], "task")
