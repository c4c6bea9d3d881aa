"""Learning table, ES rows: the ``es`` plan on MuJoCo against Salimans et al. 2017, Table 3.

Env steps of the perturbed rollouts until the central policy's deterministic return on 5
held-out seeds reaches 50% or 75% of TRPO's score, against the steps Salimans et al.
needed (:mod:`rlsuite.platform.benchmarking.es_rows`: the tasks, the impls, the cells).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from rlsuite.bench import Benchmark, Row, Value, pub


@dataclass(frozen=True)
class Settings:
    tasks: str = "es-swimmer,es-halfcheetah"
    """rows, comma-separated"""
    impls: str = "ars_zoo,ars_n8,es_mlp"
    """impls, comma-separated (a row without the impl skips it)"""
    max_env_steps: int = 0
    """stop each cell here (a smoke run; 0: the row's budget)"""
    out: str = "platform_learning_es"
    """results name (benchmarks/results/platform/OUT.json)"""


def run(ctx) -> int:
    from rlsuite.bench.settings import picked
    from rlsuite.platform.benchmarking import es_rows
    from rlsuite.platform.envs import spec

    s = ctx.settings
    tasks = picked(s.tasks, list(es_rows.TASKS), "task")
    impls = picked(s.impls, list(es_rows.IMPLS), "impl")
    for key in tasks:
        spec(es_rows.TASKS[key].env)  # without MuJoCo: the install line, before any run
    path = ctx.path(s.out)
    results = json.loads(path.read_text()) if path.exists() else {}
    cells = results.setdefault("cells", {})
    results["anchor"] = es_rows.SOURCE
    for key in tasks:
        for impl in [i for i in impls if key in es_rows.IMPLS[i]]:
            for seed in ctx.seeds or ((0,) if ctx.quick else (0, 1, 2)):
                cid = f"{key}|{impl}|{seed}"
                if ctx.resume and cid in cells:
                    ctx.say(f"{cid}: done, skipped (--resume)")
                    continue
                ctx.say(f"{cid}: running")
                cell = cells[cid] = es_rows.run_cell(key, impl, seed, s.max_env_steps)
                results["summary"] = es_rows.summarise(cells)
                ctx.save(s.out, results)
                got = ", ".join(
                    f"{n} at {h['env_steps']:,} steps" for n, h in cell["reached"].items()
                )
                ctx.say(f"{cid}: {got or 'not reached'}; best {cell['best_eval_return']:.1f}")
    results["summary"] = es_rows.summarise(cells)
    ctx.save(s.out, results)
    if (fig := es_rows.plot(results)) is not None:
        ctx.save_plot(s.out, fig)
    table = []
    for key, row in results["summary"].items():
        for impl, thresholds in row.items():
            for name, r in thresholds.items():
                table.append({"task": key, "impl": impl, "threshold": name,
                              "reached": f"{r['reached']}/{len(r['seeds'])}",
                              "median env steps": r["median_env_steps"],
                              "Salimans' steps": r["salimans_steps"]})  # fmt: skip
    ctx.table(table)
    return 0


def _to(task, impl, share, target, env, published, what="ARS-style"):
    """Env steps to ``share`` of TRPO's return (``target``) against Salimans et al.'s."""
    return Row("platform", f"`es` plan ({what}) to {target} ({share} of TRPO), {env}-v5",
               "env steps, median of 3 seeds", "platform_learning_es.json",
               Value(("summary", task, impl, f"{share} of TRPO", "median_env_steps")),
               pub(f"Salimans et al. 2017, Table 3, {env}-v1", published),
               f"rlsuite bench run platform_learning_es --tasks {task} --impls {impl} --seeds 0,1,2 "
               "--resume", fmt="{:,.0f}", lower_is_better=True)  # fmt: skip


BENCHMARK = Benchmark(
    run=run,
    settings=Settings,
    quick=dict(tasks="es-swimmer", impls="ars_n8", max_env_steps=20_000),
    seeds=True,
    resume=True,
    rows=(
        _to("es-halfcheetah", "ars_zoo", "50%", 793.6, "HalfCheetah", 830_000),
        _to("es-halfcheetah", "ars_zoo", "75%", 1589.8, "HalfCheetah", 1_420_000),
        _to("es-swimmer", "ars_n8", "75%", 99.7, "Swimmer", 1_230_000, "ARS, 8 directions"),
    ),
)
