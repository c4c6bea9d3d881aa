"""``rlsuite bench smoke --rows``: which commands a RESULTS table becomes in quick form (pure
logic on toy declarations; the runs themselves are ``make bench-smoke``)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from rlsuite.bench import Benchmark
from rlsuite.bench.smoke import commands, quick_form


@dataclass(frozen=True)
class Settings:
    part: str = "all"
    """which part"""
    episodes: int = 100
    """episodes"""
    originals: str = "full"
    """an earlier run's JSON"""
    run_dir: str = ""
    """the training run"""
    json: str = ""
    """where the JSON goes"""
    ship: bool = False
    """ship the policy"""
    plan_set: tuple[str, ...] = ()
    """plan fields"""


QUICK = dict(part="small", episodes=1, originals="quick")
TOY = Benchmark(
    name="platform_toy", run=print, settings=Settings, seeds=True, resume=True, quick=QUICK
)
BARE = Benchmark(name="platform_bare", run=print)


def test_choices_stay_budgets_and_outside_writes_go():
    argv = ["--part", "learning", "--episodes", "50", "--originals", "full_run", "--seeds",
            "0,1,2", "--resume", "--json", "benchmarks/results/x.json", "--ship",
            "--run-dir", "runs/bench/toy", "--plan-set", "lr=0.1", "--plan-set", "gamma=0.9"]  # fmt: skip
    assert quick_form(TOY, argv) == (
        "--quick", "--part", "learning", "--seeds", "0", "--run-dir", "runs/bench-quick/toy",
        "--plan-set", "lr=0.1", "--plan-set", "gamma=0.9",
    )  # fmt: skip


def test_an_unknown_flag_in_a_row_is_an_error():
    with pytest.raises(ValueError, match="'--episode' in a RESULTS command"):
        quick_form(TOY, ["--episode", "3"])


def test_first_pass_covers_every_benchmark_then_the_rest_once_each():
    rows = [
        "rlsuite bench run platform_toy --part a --seeds 0,1,2",
        "rlsuite bench run platform_toy --part a --seeds 0,1 --episodes 9",  # same quick form
        "rlsuite bench run platform_toy --part b && rlsuite bench run platform_toy --part c",
        "rlsuite bench run platform_gone --x 1",  # not chosen: left out
        "traffic-train evaluate --controller pi --episodes 4 --workers 0",
    ]
    got = [(c.name, c.argv) for c in commands([TOY, BARE], rows)]
    assert got == [
        ("platform_toy", ("--quick", "--part", "a", "--seeds", "0")),
        ("platform_bare", ("--quick",)),
        (
            "traffic-train",
            (
                "traffic-train",
                "evaluate",
                "--controller",
                "pi",
                "--workers",
                "0",
                "--episodes",
                "1",
            ),
        ),  # fmt: skip
        ("platform_toy", ("--quick", "--part", "b")),
        ("platform_toy", ("--quick", "--part", "c")),
    ]
    assert [c.name for c in commands([TOY], rows, cli_rows=False)] == ["platform_toy"] * 3
