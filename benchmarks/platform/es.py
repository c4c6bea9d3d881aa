"""Benchmark of the ``es`` plan on Pendulum-v1: its scaling with workers and its time to solve.

``--part scaling``: population 64 fixed (strong) and ``--pairs-per-worker`` per worker
(weak), seconds per generation and env steps/s; pass: 2 workers >= 1.8x one.
``--part solve``: ES to a return of -200 (confirmed on 20 seeded episodes) beside the
``sync`` plan, each within its budget; pass: ES solves it. Each part updates its key of
the results JSON (:mod:`rlsuite.platform.benchmarking.es_measures`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from rlsuite.bench import Benchmark, Row, Value, here, pub


@dataclass(frozen=True)
class Settings:
    part: str = "scaling,solve"
    """which parts: scaling, solve (comma-separated)"""
    out: str = "platform_es"
    """results name (benchmarks/results/platform/OUT.json); each part updates its key"""

    # scaling: Pendulum-v1, a (64, 64) policy, population 64 and PAIRS_PER_WORKER per worker
    workers: str = "1,2"
    """worker counts, e.g. 1,2,4,8,15 (counts above the CPUs this process can use: skipped)"""
    generations: int = 10
    """measured generations per cell, after one of warm-up"""
    pairs_per_worker: int = 16
    """antithetic pairs per worker in the weak runs"""

    # solve: Pendulum-v1 to -200, ES and then PPO
    budget: float = 600.0
    """ES wall budget (s), shared by the ES settings tried in turn"""
    ppo_budget: float = 900.0
    """PPO wall budget (s)"""


def run(ctx) -> int:
    from rlsuite.platform.benchmarking import es_measures as es
    from rlsuite.platform.machine import usable_cpus

    s = ctx.settings
    path = ctx.path(s.out)
    results = json.loads(path.read_text()) if path.exists() else {}
    parts = s.part.split(",")
    if set(parts) - {"scaling", "solve"}:
        raise ValueError(f"unknown part in {s.part!r}; say scaling, solve or both")
    if "scaling" in parts:
        workers = [int(n) for n in s.workers.split(",")]
        scaling = es.scaling(s.generations, workers, usable_cpus(), s.pairs_per_worker, ctx.say)
        results["scaling"] = scaling
        ctx.save(s.out, results)
        keys = ("s_per_generation", "env_steps_per_s", "efficiency_vs_1")
        rows = [
            {"workers": n, **{k: r.get(k, "") for k in keys}} for n, r in scaling["runs"].items()
        ]
        ctx.table(rows, "es, population 64")
    if "solve" in parts:
        results["solve"] = es.solve(s.budget, s.ppo_budget, ctx.say)
        ctx.save(s.out, results)
        keys = ("solved", "time_to_solve_s", "env_steps_to_solve", "time_to_rllib_target_s")
        ctx.table([{"plan": p, **{k: results["solve"][p][k] for k in keys}} for p in ("es", "sync")],
                  "Pendulum-v1 to -200 (and RLlib's target, -300)")  # fmt: skip
    return ctx.verdict({results[p]["criterion"]: results[p]["passed"] for p in parts})


# fmt: off
BENCHMARK = Benchmark(run=run, settings=Settings, quick=dict(part="scaling", generations=2, workers="1,2", pairs_per_worker=2, budget=20.0, ppo_budget=20.0), rows=(
    Row("platform", "`es` plan, Pendulum-v1", "seconds to return >= -200", "platform_es.json",
        Value(("solve", "es", "time_to_solve_s")),
        here("`sync` PPO, same run", "solve", "sync", "time_to_solve_s"),
        "rlsuite bench run platform_es --part solve --budget 600 --ppo-budget 600", fmt="{:.0f} s", lower_is_better=True),
    Row("platform", "`es` plan, 1 -> 2 workers", "speed-up, population 64", "platform_es_scaling_2cpu.json",
        Value(("scaling", "speedup")), pub("linear, Salimans et al. 2017", 2.0),
        "rlsuite bench run platform_es --part scaling --workers 1,2,4,8,15 --out platform_es_scaling_2cpu",
        fmt="{:.2f}x"),
))
# fmt: on
