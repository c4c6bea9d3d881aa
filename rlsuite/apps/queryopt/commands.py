"""The commands of ``qopt-bench``, each written once for every engine.

:mod:`rlsuite.apps.queryopt.cli` parses the flags and calls ``COMMANDS[command](args)``.
A command opens the engine of ``--engine`` (PostgreSQL: ``--dsn`` or the embedded
server; Spark: ``--spark-master`` and ``--spark-dir``) and asks the engine's
:class:`~rlsuite.apps.queryopt.spaces.RewriteSpace` for what differs (its rules, its
generated queries, its checks); no command checks an engine's name.
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

from rich.console import Console

from rlsuite.apps.queryopt.spaces import RewriteSpace, space_of
from rlsuite.cli_common import ray_cluster, write_json

if TYPE_CHECKING:
    from rlsuite.apps.queryopt.engines.base import Engine

console = Console()


def space(args: argparse.Namespace) -> RewriteSpace:
    """The rewrite space of ``--engine`` (PostgreSQL without the flag)."""
    return space_of(getattr(args, "engine", "postgres"))


def check_engine_flags(args: argparse.Namespace) -> None:
    """Refuse flags that are not the chosen engine's, with the reason."""
    sp = space(args)
    spark_flags = getattr(args, "spark_master", None) or getattr(args, "spark_dir", None)
    if sp.engine == "postgres" and spark_flags:
        raise ValueError("--spark-master and --spark-dir go with --engine spark")
    if sp.engine == "spark" and getattr(args, "dsn", None):
        raise ValueError(
            "--dsn names a PostgreSQL server and --engine spark runs on Spark; give one of them "
            "(--spark-master URL uses an existing Spark cluster)"
        )
    reward = getattr(args, "reward", None)
    if reward is not None and reward not in sp.rewards:
        raise ValueError(
            f"--reward {reward} is not one of {sp.label}'s rewards ({', '.join(sp.rewards)})"
        )


@contextlib.contextmanager
def session(args: argparse.Namespace) -> Iterator[Engine]:
    """The engine of ``--engine`` with its flags, for one command."""
    with space(args).session(
        getattr(args, "dsn", None),
        getattr(args, "spark_master", None),
        getattr(args, "spark_dir", None),
        say=console.print,
    ) as eng:
        yield eng


def workload_of(args: argparse.Namespace):
    """The workload of ``--workload`` (with ``--udf-cost``, ``--scale``) or ``--schema``."""
    from rlsuite.apps.queryopt.workloads import get

    if getattr(args, "schema", None):
        return _own_schema(args)
    kw = {}
    if getattr(args, "udf_cost", None) is not None:
        if args.workload != "udf":
            raise ValueError("--udf-cost is for --workload udf")
        kw["udf_cost"] = args.udf_cost
    if getattr(args, "scale", None) is not None:
        if args.workload not in ("tpch", "tpcds"):
            raise ValueError("--scale is for --workload tpch or tpcds")
        kw["scale"] = args.scale
    return get(args.workload, **kw)


def _own_schema(args: argparse.Namespace):
    """``--schema S`` (and ``run --queries FILE.sql``): the user's schema, read-only."""
    from rlsuite.apps.queryopt.workloads.own import OwnSchema

    if getattr(args, "engine", "postgres") != "postgres":
        raise ValueError("--schema is for --engine postgres")
    if getattr(args, "udf_cost", None) is not None or getattr(args, "scale", None) is not None:
        raise ValueError("--udf-cost and --scale are for the app's workloads, not --schema")
    if args.command in ("setup", "train"):
        raise ValueError(
            f"{args.command} is for the app's own workloads; with --schema use rewrite, run "
            "or serve (the app never writes into your schema)"
        )
    qfile = getattr(args, "queries", None)
    if args.command == "run" and not isinstance(qfile, str):
        raise ValueError("run --schema S needs --queries FILE.sql: your queries, `;`-separated")
    w = OwnSchema(args.schema, qfile if isinstance(qfile, str) else None)
    for n, stmt, why in w.skipped:
        console.print(f"[yellow]skipped statement {n} ({stmt}): {why}[/]")
    return w


def _workload_config(w) -> dict:
    return {k: getattr(w, k) for k in ("udf_cost", "scale") if hasattr(w, k)}


def _queries_of(args: argparse.Namespace, w) -> list[str]:
    """The queries ``run`` measures: the file's (``--queries FILE.sql``) or generated ones."""
    from rlsuite.apps.queryopt.workloads.own import OwnSchema, read_queries

    if isinstance(w, OwnSchema):
        return w.queries(args.split, 0)
    if isinstance(args.queries, str):
        queries, skipped = read_queries(args.queries)
        for n, stmt, why in skipped:
            console.print(f"[yellow]skipped statement {n} ({stmt}): {why}[/]")
        return queries
    return space(args).queries(w, args.split, args.queries, args.query_seed)


def chooser_of(args: argparse.Namespace) -> str:
    """The chooser of ``--chooser``, else ``model`` with --model, ``rules`` with --rules,
    else the engine's default (PostgreSQL: ``measured``); refused where it does not fit."""
    sp = space(args)
    model, rules = getattr(args, "model", None), getattr(args, "rules", None)
    c = getattr(args, "chooser", None) or (
        "model" if model else "rules" if rules else sp.default_chooser
    )
    if c not in sp.choosers:
        raise ValueError(f"--chooser {c}: {sp.label}'s choosers are {', '.join(sp.choosers)}")
    if c == "model" and not model:
        raise ValueError("--chooser model needs --model PATH")
    if c == "rules" and not rules and c != sp.default_chooser:
        raise ValueError("--chooser rules needs --rules R1,R2")
    if c == "cost" and (model or rules):
        raise ValueError("--chooser cost takes neither --model nor --rules")
    if getattr(args, "budget_s", 1.0) <= 0:
        raise ValueError(f"--budget-s must be > 0, got {args.budget_s}")
    return c


def _rewriter(args: argparse.Namespace, eng: Engine, w):
    """The rewriter of :func:`chooser_of` (with --model's choice among the measured
    chooser's candidates)."""
    sp = space(args)
    chooser = chooser_of(args)
    model = getattr(args, "model", None)
    if chooser == "measured" and model is None and not getattr(args, "rules", None):
        model = w.shipped_model  # its choice is one more candidate
    learned = None
    if model:
        from rlsuite.apps.queryopt.train import LearnedRewriter

        try:
            learned = LearnedRewriter(
                model,
                workload=w.name,
                workload_config=_workload_config(w),
                timeout_ms=args.timeout_ms,
                engine=sp.engine,
                **sp.env_options(eng),
            )
        except Exception as e:  # noqa: BLE001 - only the shipped model may fail quietly
            if model == getattr(args, "model", None):
                raise
            console.print(f"[dim]the shipped model is left out ({type(e).__name__}: {e})[/]")
        else:
            if model != getattr(args, "model", None):
                console.print(f"[dim]the shipped model's choice is a candidate: {model}[/]")
    if chooser == "model":
        return learned
    check_schema = getattr(args, "check_schema", None) or getattr(w, "check_schema", None)
    if check_schema is not None and check_schema != w.schema:
        if check_schema not in eng.visible_schemas():
            raise ValueError(
                f"--check-schema {check_schema!r} does not exist or this user may not read it; "
                f"schemas it can see: {', '.join(eng.visible_schemas()) or 'none'}"
            )
    names = list(names_in(args.rules))
    budget = getattr(args, "budget_s", None) or 60.0
    return sp.rewriter(
        eng,
        w,
        names,
        args.timeout_ms,
        check_schema,
        chooser=chooser,
        budget_s=budget,
        model=learned,
    )


def cmd_setup(args: argparse.Namespace) -> int:
    from rich.table import Table

    w = workload_of(args)
    with session(args) as eng:
        with console.status(f"loading {w.name} into {w.schema} on {eng.label}"):
            # (and the small copy that too-slow queries are row-checked on, where there is one)
            loaded = eng.ensure_workload(w, seed=args.seed, force=args.force)
        if not loaded:
            console.print(f"{w.schema} is already loaded on {eng.label} (use --force to reload)")
        counts = eng.row_counts(w.schema)
        eng.run("SELECT 1", w.schema)  # the engine starts and reads the schema
    t = Table(title=f"workload {w.name} on {eng.label} ({w.schema})")
    t.add_column("table")
    t.add_column("rows", justify="right")
    for k in sorted(counts):
        t.add_row(k, f"{counts[k]:.0f}")
    console.print(t)
    return 0


def names_in(text: str | None) -> tuple[str, ...]:
    """The names of a comma-separated flag value (``--rules``, ``--shapes``), blanks dropped."""
    return tuple(n.strip() for n in (text or "").split(",") if n.strip())


def cmd_train(args: argparse.Namespace) -> int:
    from rlsuite.apps.queryopt import train as T

    sp = space(args)
    w = workload_of(args)
    steps = args.env_steps or sp.defaults["env_steps_per_iteration"]
    with session(args) as eng:
        cfg = T.TrainConfig(
            engine=sp.engine,
            **sp.env_options(eng),
            workload=w.name,
            workload_config=_workload_config(w),
            num_queries=args.queries,
            max_steps=args.max_steps,
            timeout_ms=args.timeout_ms,
            reward=args.reward,
            iterations=args.iterations,
            num_env_runners=args.num_env_runners,
            env_steps_per_iteration=steps,
            learning_starts=min(100, steps),
            seed=args.seed,
            rules=names_in(args.rules),
        )
        cfg.validate()
        eng.ensure_workload(w)
        with ray_cluster(args):
            res = T.train(cfg, args.run_dir, resume=args.resume, progress=True)
    console.print(
        f"checkpoint: {res.checkpoint}\nfinal return {res.final_return:.4f} after "
        f"{res.iterations} iterations, {res.env_steps} env steps, {res.wall_time_s:.0f} s"
    )
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from rich.progress import Progress

    from rlsuite.apps.queryopt.bench import compare

    w = workload_of(args)
    with session(args) as eng:
        eng.ensure_workload(w)
        queries = _queries_of(args, w)
        rw = _rewriter(args, eng, w)
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


def cmd_rewrite(args: argparse.Namespace) -> int:
    sp = space(args)
    w = workload_of(args)
    check = args.check or sp.check_rows
    with session(args) as eng:
        eng.ensure_workload(w)
        base = dict(w.settings())
        before = eng.explain(args.sql, w.schema, base)  # the engine's own error, if any
        rw = _rewriter(args, eng, w)
        try:
            d = rw.rewrite(args.sql, check=check)
        finally:
            rw.close()
        after = eng.explain(d.sql, w.schema, d.settings) if d.applied else before
    plain = {"markup": False, "highlight": False}
    console.rule(f"original ({sp.label}'s plan)")
    console.print(args.sql, **plain)
    console.print("\n".join(eng.plan_lines(before)), **plain)
    console.rule("rewritten" if d.applied else "unchanged")
    console.print(d.sql, **plain)
    extra = {k: v for k, v in d.settings.items() if base.get(k) != v}
    if extra:
        console.print(f"settings: {extra}", **plain)
    console.print(f"rewrites: {', '.join(d.applied) or 'none'}")
    for k, v in d.reasons.items():
        console.print(f"{k}: {v}", markup=False, style="dim")
    if d.applied:
        console.print("\n".join(eng.plan_lines(after)), **plain)
    if check or d.rows_match is not None:
        from rlsuite.apps.queryopt.verify import guarantee

        where = f" ({guarantee(d.checked_on, w.schema)})" if d.checked_on else ""
        console.print(
            {
                True: f"[green]rows match[/]{where}",
                False: "[red]ROWS DIFFER: kept the original[/]",
                None: "rows not compared (nothing rewritten or a timeout)",
            }[d.rows_match]
        )
    if args.json:
        write_json(
            args.json,
            {
                "engine": sp.engine,
                "original": args.sql,
                "sql": d.sql,
                "settings": d.settings,
                "rewrites": list(d.applied),
                "reasons": d.reasons,
                "rows_match": d.rows_match,
                "checked_on": d.checked_on,
            },
        )
    return 1 if d.rows_match is False else 0


def cmd_generate(args: argparse.Namespace) -> int:
    from collections import Counter

    from rlsuite.apps.queryopt.workloads import shapes as G

    names = G.check_shapes(list(names_in(args.shapes)))
    if args.n < 1:
        raise ValueError(f"--n must be >= 1, got {args.n}")
    w = workload_of(args)
    rejected: list[str] = []

    with session(args) as eng:
        eng.ensure_workload(w)

        qs = G.generate(args.n, args.seed, names, accept=G.planned_by(eng, w.schema, rejected))
    text = G.to_file(qs)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        console.print(text, markup=False, highlight=False, end="")
    counts = Counter(shape for shape, _ in qs)
    where = f" to {args.out}" if args.out else ""
    say = console if args.out else Console(stderr=True)  # stdout holds the queries
    say.print(
        f"wrote {len(qs)} queries{where} (seed {args.seed}; planned on {w.schema}): "
        + ", ".join(f"{k} {v}" for k, v in counts.items())
        + (f"; {len(rejected)} draws PostgreSQL rejected were dropped" if rejected else ""),
        highlight=False,
    )
    return 0


def cmd_server(args: argparse.Namespace) -> int:
    from rlsuite.apps.queryopt.server import EmbeddedServer

    srv = EmbeddedServer()
    if args.action == "start":
        srv.start()
        srv.started_here = False  # keep it running after this command
        console.print(f"running: {srv.dsn}")
    elif args.action == "stop":
        srv.stop()
        console.print("stopped")
    else:
        up = srv.running()
        console.print(
            f"{'running' if up else 'stopped'}: {srv.root}" + (f"\n{srv.dsn}" if up else "")
        )
    return 0


def cmd_rules(args: argparse.Namespace) -> int:
    from rich.table import Table

    sp = space(args)
    t = Table(title=sp.title)
    t.add_column("action", justify="right")
    t.add_column("rewrite")
    t.add_column("what it does")
    for i, (name, what) in enumerate(sp.descriptions()):
        t.add_row(str(i), name, what)
    t.add_row(str(len(sp.names)), "STOP", "end the episode; run the current query")
    for name, what in sp.more_rules():
        t.add_row("-", name, f"{what} (not a default action: name it in --rules)")
    for name, why in sp.refused.items():
        t.add_row("-", name, f"refused: {why}")
    console.print(t)
    return 0


COMMANDS = {
    "setup": cmd_setup,
    "train": cmd_train,
    "run": cmd_run,
    "rewrite": cmd_rewrite,
    "generate": cmd_generate,
    "server": cmd_server,
    "rules": cmd_rules,
}
