"""``qopt-bench ... --engine spark``: the train, run and rewrite commands on Spark SQL.

:mod:`rlsuite.apps.queryopt.cli` parses the flags and hands a command here when
``--engine spark`` is given (``setup`` is one command for every engine, there);
everything else about the commands (their output, exit status, JSON) is the same as
on PostgreSQL.
"""

from __future__ import annotations

import argparse
import contextlib
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

from rich.console import Console

from rlsuite.cli_common import ray_cluster, write_json

if TYPE_CHECKING:
    from rlsuite.apps.queryopt.engines.base import Engine

console = Console()


def check_args(args: argparse.Namespace) -> None:
    """Refuse flag combinations that mean nothing on Spark, with the reason."""
    if getattr(args, "dsn", None):
        raise ValueError(
            "--dsn names a PostgreSQL server and --engine spark runs on Spark; give one of them "
            "(--spark-master URL uses an existing Spark cluster)"
        )
    if getattr(args, "reward", "runtime") == "cost":
        raise ValueError("--reward cost is PostgreSQL's estimate; on Spark the reward is runtime")


@contextlib.contextmanager
def engine(args: argparse.Namespace) -> Iterator[Engine]:
    """The Spark engine of ``--spark-master`` and ``--spark-dir`` (embedded local[*] by default)."""
    from rlsuite.apps.queryopt.engines import open_engine

    os.environ.setdefault("PYARROW_IGNORE_TIMEZONE", "1")
    eng = open_engine("spark", master=args.spark_master or "local[*]", home=args.spark_dir)
    console.print(f"[dim]Spark {eng.master}, files in {eng.home}[/]")
    try:
        yield eng
    finally:
        eng.close()


def cmd_train(args: argparse.Namespace, w) -> int:
    from rlsuite.apps.queryopt import spark_train as T

    wcfg = {k: getattr(w, k) for k in ("udf_cost", "scale") if hasattr(w, k)}
    cfg = T.SparkTrainConfig(
        master=args.spark_master or "local[*]",
        spark_dir=str(args.spark_dir) if args.spark_dir else None,
        workload=w.name,
        workload_config=wcfg,
        num_queries=args.queries,
        max_steps=args.max_steps,
        timeout_ms=args.timeout_ms or 10_000,
        iterations=args.iterations,
        env_steps_per_iteration=args.env_steps,
        num_env_runners=args.num_env_runners or 0,
        learning_starts=min(100, args.env_steps),
        seed=args.seed,
    )
    cfg.validate()
    with engine(args) as eng:
        eng.ensure_workload(w)
        with ray_cluster(args):
            res = T.train(cfg, args.run_dir, resume=args.resume, progress=True)
    console.print(
        f"checkpoint: {res.checkpoint}\nfinal return {res.final_return:.4f} after "
        f"{res.iterations} iterations, {res.env_steps} env steps, {res.wall_time_s:.0f} s"
    )
    return 0


def rewriter(args: argparse.Namespace, eng, w):
    """--model or --rules (default: eager aggregation, then the filter after aggregation)."""
    from rlsuite.apps.queryopt import spark_rules as S

    if getattr(args, "model", None):
        from rlsuite.apps.queryopt.spark_train import LearnedSparkRewriter

        wcfg = {k: getattr(w, k) for k in ("udf_cost", "scale") if hasattr(w, k)}
        return LearnedSparkRewriter(
            args.model,
            master=eng.master,
            spark_dir=str(eng.home),
            workload=w.name,
            workload_config=wcfg,
            timeout_ms=args.timeout_ms,
        )
    names = [n.strip() for n in (args.rules or "").split(",") if n.strip()]
    if not names:
        names = ["eager_aggregation", "filter_after_aggregation"]
    return S.SparkRules(eng, w.schema, names, w.settings(), timeout_ms=args.timeout_ms)


def cmd_run(args: argparse.Namespace, w) -> int:
    from rich.progress import Progress

    from rlsuite.apps.queryopt.bench import compare

    with engine(args) as eng:
        eng.ensure_workload(w)
        from rlsuite.apps.queryopt.spark_rules import spark_queries

        queries = spark_queries(w, args.split, args.queries, args.query_seed)
        rw = rewriter(args, eng, w)
        try:
            with Progress(console=console, transient=True) as bar:
                task = bar.add_task(f"{w.name}: {len(queries)} queries", total=len(queries))
                res = compare(
                    eng,
                    w,
                    queries,
                    rw,
                    timeout_ms=args.timeout_ms,
                    repeat=args.repeat,
                    progress=lambda i, row: bar.advance(task),
                )
        finally:
            rw.close()
    console.print(res.table())
    if args.json:
        write_json(args.json, res.to_dict())
        console.print(f"wrote {args.json}")
    return 0


def cmd_rewrite(args: argparse.Namespace, w) -> int:
    with engine(args) as eng:
        eng.ensure_workload(w)
        base = dict(w.settings())
        before = eng.explain(args.sql, w.schema, base)  # Spark's own error, with the position
        rw = rewriter(args, eng, w)
        try:
            d = rw.rewrite(args.sql, check=True)
        finally:
            rw.close()
        after = eng.explain(d.sql, w.schema, d.settings) if d.applied else before
    console.rule("original (Spark's plan)")
    console.print(args.sql, markup=False, highlight=False)
    console.print("\n".join(eng.plan_lines(before)), markup=False, highlight=False)
    console.rule("rewritten" if d.applied else "unchanged")
    console.print(d.sql, markup=False, highlight=False)
    extra = {k: v for k, v in d.settings.items() if base.get(k) != v}
    if extra:
        console.print(f"settings: {extra}")
    console.print(f"rewrites: {', '.join(d.applied) or 'none'}")
    for k, v in d.reasons.items():
        console.print(f"{k}: {v}", markup=False, style="dim")
    if d.applied:
        console.print("\n".join(eng.plan_lines(after)), markup=False, highlight=False)
    console.print(
        {
            True: "[green]rows match[/]",
            False: "[red]ROWS DIFFER: kept the original[/]",
            None: "rows not compared (nothing rewritten)",
        }[d.rows_match]
    )
    if args.json:
        write_json(
            args.json,
            {
                "engine": "spark",
                "original": args.sql,
                "sql": d.sql,
                "settings": d.settings,
                "rewrites": list(d.applied),
                "reasons": d.reasons,
                "rows_match": d.rows_match,
            },
        )
    return 1 if d.rows_match is False else 0


COMMANDS = {"train": cmd_train, "run": cmd_run, "rewrite": cmd_rewrite}


def main(args: argparse.Namespace, workload) -> int:
    """Run ``args.command`` on Spark for ``workload`` (built by the caller from the flags)."""
    check_args(args)
    return COMMANDS[args.command](args, workload)
