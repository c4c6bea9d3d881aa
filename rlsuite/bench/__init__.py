"""The benchmarks' one tool: short declarations under ``benchmarks/<app>/``, one runner.

    rlsuite bench list                         every benchmark, its claim, the RESULTS rows it feeds
    rlsuite bench run NAME [--quick] [--resume] [--seeds 0,1,2] [its flags]
    rlsuite bench smoke [--rows] [NAME ...]    every (or each named) --quick form in turn;
                                               --rows: every RESULTS command in quick form
    rlsuite bench report [--check]             RESULTS.md's table from the JSON (make results)

A benchmark is a file ``benchmarks/<app>/<name>.py`` (app: platform, traffic, queryopt or
hierarchy) that declares ``BENCHMARK``::

    from dataclasses import dataclass

    from rlsuite.bench import Benchmark, Row, Value, command, pub


    @dataclass(frozen=True)
    class Settings:
        iterations: int = 50
        \"\"\"training iterations\"\"\"


    def run(ctx):                     # ctx: rlsuite.bench.Context
        ...                           # the app's library calls, with ctx.settings / ctx.seeds
        ctx.save("platform_example", {"summary": {"mean_return": 475.0}})
        return ctx.verdict({"mean return >= 450": True})   # PASS/FAIL lines; the exit status


    BENCHMARK = Benchmark(            # in benchmarks/platform/example.py: platform_example
        claim="sync PPO reaches 450 on CartPole-v1 within 100k env steps",
        run=run, settings=Settings, quick=dict(iterations=2),
        rows=(Row("platform", "sync PPO, CartPole-v1", "mean return", "platform_example.json",
                  Value(("summary", "mean_return")), pub("target", 450.0),
                  command("platform_example")),),
    )

The runner owns the rest: every settings field is a ``--flag`` (its docstring the help);
``--quick`` runs the smoke form with the ``quick`` values and writes under
``runs/bench-quick/``; ``--seeds`` and ``--resume`` reach ``ctx.seeds`` and ``ctx.resume``
(``ctx.load(stem)`` gives the earlier JSON to resume from); heavy benchmarks hold
``/tmp/rlsuite-heavy.lock``; ``ctx.save`` writes ``benchmarks/results/<app>/<stem>.json``
with a ``run`` record (command, settings, seeds, machine, versions, wall seconds);
``ctx.table``, ``ctx.save_plot`` and ``ctx.progress`` print tables, save PNGs and show
progress; ``ctx.run_dir("runs/bench/NAME")`` is where a training run goes (under
``runs/bench-quick/`` for a quick run). The file's name gives the benchmark's name
(``benchmarks/platform/example.py`` is ``platform_example``) and its docstring the claim
unless ``claim=`` says it shorter. Apps keep their shared settings and steps beside their
code (``rlsuite.apps.traffic.benchmarking.TrainingSettings``,
``rlsuite.apps.queryopt.benchmarking.TrainSettings``): subclass them. A benchmark that is
still a script gives ``script="name.py"`` instead of ``run``; its flags pass through, and it
finds its folder with :func:`results_dir`. A converted benchmark's old script name stays
as a three-line alias (``rlsuite.bench.runner.alias``) for one release.

Rows reach the table at the top of ``benchmarks/RESULTS.md`` through ``rlsuite bench
report`` (``make results``), which reads each row's number from
``benchmarks/results/<app>/<file>`` by its key path; a test fails when the table is stale.
Rows whose command is an app's own CLI (``traffic-train evaluate ...``) are declared as
``ROWS = (...)`` in a file of that app's folder.
"""

from rlsuite.bench.declare import (
    APPS,
    Anchor,
    Benchmark,
    Row,
    Value,
    command,
    here,
    pub,
    repo_root,
    results_dir,
)
from rlsuite.bench.runner import Context

__all__ = [
    "APPS",
    "Anchor",
    "Benchmark",
    "Context",
    "Row",
    "Value",
    "command",
    "here",
    "pub",
    "repo_root",
    "results_dir",
]
