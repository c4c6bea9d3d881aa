"""qopt-bench: the DQN query rewriter on PostgreSQL.

NAME
    qopt-bench - load workloads, train the learned rewriter, benchmark it, rewrite SQL

SYNOPSIS
    qopt-bench setup   --workload {joins,udf,tpch,tpcds} [--scale S] [--seed N] [--dsn DSN]
    qopt-bench train   --workload W [--queries N] [--iterations K] [--run-dir DIR] [--dsn DSN]
    qopt-bench run     --workload W (--model PATH | --rules R1,R2) [--json PATH] [--dsn DSN]
    qopt-bench run     --schema S --queries FILE.sql (--model PATH | --rules R1,R2) --dsn DSN
    qopt-bench rewrite "SQL" [--workload W | --schema S] [--model PATH | --rules R1,R2] [--check]
    qopt-bench server  {start,stop,status}
    qopt-bench rules
    qopt-bench setup | train | run | rewrite ... --engine spark [--spark-master URL] [--spark-dir DIR]

DESCRIPTION
    Without --dsn every command uses the embedded PostgreSQL server: a cluster
    created once under $RLSUITE_PG_DIR (default /var/tmp/rlsuite-pg-0 as root,
    ~/.cache/rlsuite/pg otherwise), started when needed and stopped again when
    the command ends (unless it was already running: `qopt-bench server start`
    keeps one up). With --dsn the commands use that server; the app only ever
    writes into its own schemas (qopt_joins, qopt_udf, qopt_tpch, qopt_tpcds_sf*),
    and measured queries run read-only with a statement_timeout.

    Your own database: --schema S makes rewrite, run and serve read the schema S
    as it is (a user with only USAGE on S and SELECT on its tables will do).
    `run --queries FILE.sql` runs the file's queries (separated by `;`); a
    statement that is not a SELECT is skipped, with the reason. A rewrite is
    kept only when PostgreSQL plans it, and with --check only when its rows are
    the original's and it does not run slower; when the original runs past
    --timeout-ms, the rows are compared on --check-schema (a small copy with the
    same tables; the tpcds workload's is its SF 0.01 schema) instead.

    With --engine spark the same commands run on Spark SQL: an embedded local[*]
    session (pyspark, Java 17), or the cluster of --spark-master spark://HOST:PORT.
    Data is loaded as Parquet under --spark-dir (default $RLSUITE_SPARK_DIR or
    /var/tmp/rlsuite-spark-<uid>); the rewrites are the rules through sqlglot's Spark
    dialect plus join hints (BROADCAST, MERGE, SHUFFLE_HASH, SHUFFLE_REPLICATE_NL per
    relation) and adaptive-execution switches; PostgreSQL's planner arms are refused
    with the reason. Every rewrite's rows are compared with Spark's own answer.

EXIT STATUS
    0 success; 1 `rewrite --check` found different rows; 2 bad usage or a
    failure (the message says what to do).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING

from rich.console import Console

from rlsuite.cli_common import add_cluster_flags, add_json_flag, ray_cluster, write_json

if TYPE_CHECKING:
    from rlsuite.apps.queryopt.engines.base import Engine

console = Console()


def build_parser() -> argparse.ArgumentParser:
    from rlsuite.apps.queryopt.engines import ENGINE_NAMES
    from rlsuite.apps.queryopt.rules import RULE_NAMES
    from rlsuite.apps.queryopt.workloads import WORKLOAD_NAMES

    p = argparse.ArgumentParser(
        prog="qopt-bench", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def common(sp: argparse.ArgumentParser, workload: bool = True) -> None:
        sp.add_argument(
            "--dsn",
            default=None,
            help="libpq DSN of an existing server (default: the embedded server)",
        )
        sp.add_argument(
            "--engine",
            choices=ENGINE_NAMES,
            default="postgres",
            help="the database the queries run on (default: postgres)",
        )
        sp.add_argument(
            "--spark-master",
            default=None,
            metavar="URL",
            help="with --engine spark: an existing cluster's master (default: embedded local[*])",
        )
        sp.add_argument(
            "--spark-dir",
            default=None,
            metavar="DIR",
            help="with --engine spark: Spark's private directory (data, warehouse, scratch)",
        )
        if workload:
            wg = sp.add_mutually_exclusive_group()
            wg.add_argument(
                "--workload",
                choices=WORKLOAD_NAMES,
                default="joins",
                help="workload (default: joins)",
            )
            wg.add_argument(
                "--schema",
                default=None,
                metavar="S",
                help="your own schema instead of a workload: read as it is, never written",
            )
            sp.add_argument(
                "--udf-cost",
                type=int,
                default=None,
                help="udf workload: loop iterations per UDF call (the drift knob)",
            )
            sp.add_argument(
                "--scale",
                type=float,
                default=None,
                help="tpch / tpcds workload: scale factor (default 0.1 / 1)",
            )

    s = sub.add_parser(
        "setup",
        help="load a workload's data into its schema",
        description="Create the workload's schema (qopt_<workload>) and load its "
        "generated data; reruns replace it only with --force.",
    )
    common(s)
    s.add_argument("--seed", type=int, default=0, help="data generator seed")
    s.add_argument("--force", action="store_true", help="reload even if already loaded")

    t = sub.add_parser(
        "train",
        help="train the DQN rewriter (platform replay plan)",
        description="Train a DQN (2 hidden layers) on generated training queries; "
        "reward = -runtime capped by --timeout-ms. Writes checkpoints, metrics and "
        "a learning curve to --run-dir.",
    )
    common(t)
    t.add_argument("--queries", type=int, default=50, help="training queries (default 50)")
    t.add_argument("--iterations", type=int, default=10, help="training iterations (default 10)")
    t.add_argument("--run-dir", default="runs/queryopt", help="output directory")
    t.add_argument(
        "--timeout-ms",
        type=int,
        default=None,
        help="runtime cap while training (default 1000; 10000 on Spark)",
    )
    t.add_argument("--max-steps", type=int, default=3, help="rewrites per episode")
    t.add_argument(
        "--reward",
        choices=("runtime", "cost"),
        default="runtime",
        help="runtime (-seconds) or cost (PostgreSQL's estimate, no execution)",
    )
    t.add_argument(
        "--num-env-runners",
        type=int,
        default=None,
        help="parallel env runners (default 2; 0 on Spark: one JVM)",
    )
    t.add_argument(
        "--env-steps", type=int, default=100, help="with --engine spark: env steps per iteration"
    )
    t.add_argument("--seed", type=int, default=0, help="training seed")
    t.add_argument("--resume", action="store_true", help="continue the run in --run-dir")
    add_cluster_flags(t, num_cpus=False)

    r = sub.add_parser(
        "run",
        help="benchmark held-out queries: PostgreSQL vs the rewriter",
        description="Per query: PostgreSQL's time, the rewriter's time, speed-up, "
        "rewrites chosen and whether the rows match; then the geometric-mean "
        "speed-up, total time and number of regressions.",
    )
    common(r)
    g = r.add_mutually_exclusive_group(required=True)
    g.add_argument("--model", help="checkpoint or run directory from `qopt-bench train`")
    g.add_argument("--rules", help=f"comma-separated fixed rules: {', '.join(RULE_NAMES)}")
    r.add_argument(
        "--queries",
        type=_count_or_file,
        default=20,
        metavar="N|FILE.sql",
        help="N held-out queries of the workload (default 20), or a file of queries "
        "separated by `;` (needed with --schema)",
    )
    r.add_argument("--split", choices=("train", "test"), default="test")
    r.add_argument("--query-seed", type=int, default=0)
    r.add_argument("--timeout-ms", type=int, default=60_000, help="statement_timeout per query")
    r.add_argument("--repeat", type=int, default=1, help="runs per query; the fastest counts")
    r.add_argument(
        "--check-schema",
        default=None,
        metavar="S",
        help="compare rows here when the original runs past --timeout-ms (a small copy)",
    )
    add_json_flag(r, "the results")

    w = sub.add_parser(
        "rewrite",
        help="rewrite one SQL query and show both plans",
        description="Print the rewritten SQL, the rewrites and both plans. Without "
        "--model or --rules, every rule PostgreSQL's cost model finds cheaper is "
        "applied greedily. --check runs both and exits 1 when the rows differ.",
    )
    w.add_argument("sql", help="the SELECT query")
    common(w)
    g = w.add_mutually_exclusive_group()
    g.add_argument("--model", help="checkpoint or run directory from `qopt-bench train`")
    g.add_argument("--rules", help="comma-separated rules to apply in order")
    w.add_argument("--check", action="store_true", help="run both queries and compare rows")
    w.add_argument("--timeout-ms", type=int, default=60_000)
    w.add_argument(
        "--check-schema",
        default=None,
        metavar="S",
        help="with --check: compare rows on this small copy of the schema when the original "
        "runs past --timeout-ms (default: the workload's own, tpcds: its SF 0.01 schema)",
    )
    add_json_flag(w, "the decision")

    v = sub.add_parser("server", help="start, stop or inspect the embedded server")
    v.add_argument("action", choices=("start", "stop", "status"))

    ru = sub.add_parser("rules", help="list the rewrite rules (the MDP's actions)")
    ru.add_argument(
        "--engine",
        choices=ENGINE_NAMES,
        default="postgres",
        help="whose actions: PostgreSQL's rules and planner arms, or Spark's",
    )
    try:  # `serve` and `plugin` come from the in-server plugin when it is there
        from rlsuite.apps.queryopt.plugin.cli import register
    except ImportError:
        register = None
    if register is not None:
        register(sub)
        serve = sub.choices.get("serve")
        if serve is not None:
            serve.add_argument(
                "--schema",
                default=None,
                metavar="S",
                help="serve queries over your own schema S (read-only; with --rules)",
            )
    return p


def _count_or_file(text: str) -> int | str:
    """``--queries``: a count of generated queries, or the path of a file of queries."""
    if text.isdigit():
        return int(text)
    if not text.endswith(".sql") and not os.path.exists(text):
        raise argparse.ArgumentTypeError(f"{text!r} is neither a count nor a .sql file")
    return text


@contextlib.contextmanager
def _database(dsn: str | None) -> Iterator[Engine]:
    """The PostgreSQL engine on ``dsn``, or on the embedded server (started if needed)."""
    from rlsuite.apps.queryopt.engines import open_engine
    from rlsuite.apps.queryopt.server import EmbeddedServer

    srv = None
    if dsn is None:
        srv = EmbeddedServer()
        console.print(f"[dim]embedded PostgreSQL in {srv.root}[/]")
        srv.start()
        dsn = srv.dsn
    db = open_engine("postgres", dsn=dsn)
    try:
        yield db
    finally:
        db.close()
        if srv is not None and srv.started_here:
            srv.stop()


@contextlib.contextmanager
def _engine(args: argparse.Namespace) -> Iterator[Engine]:
    """The engine of ``--engine`` with its flags (PostgreSQL: ``--dsn`` or the embedded server)."""
    if getattr(args, "engine", "postgres") == "spark":
        from rlsuite.apps.queryopt import spark_cli

        with spark_cli.engine(args) as eng:
            yield eng
    else:
        with _database(args.dsn) as db:
            yield db


def _workload(args: argparse.Namespace):
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
    return w.queries(args.split, args.queries, args.query_seed)


def cmd_setup(args: argparse.Namespace) -> int:
    from rich.table import Table

    w = _workload(args)
    with _engine(args) as eng:
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


def cmd_train(args: argparse.Namespace) -> int:
    from rlsuite.apps.queryopt import train as T

    w = _workload(args)
    wcfg = {k: getattr(w, k) for k in ("udf_cost", "scale") if hasattr(w, k)}
    with _database(args.dsn) as db:
        w.ensure(db)
        cfg = T.TrainConfig(
            dsn=db.dsn,
            workload=w.name,
            workload_config=wcfg,
            num_queries=args.queries,
            max_steps=args.max_steps,
            timeout_ms=args.timeout_ms or 1000,
            reward=args.reward,
            iterations=args.iterations,
            num_env_runners=2 if args.num_env_runners is None else args.num_env_runners,
            seed=args.seed,
        )
        cfg.validate()
        with ray_cluster(args):
            res = T.train(cfg, args.run_dir, resume=args.resume, progress=True)
    console.print(
        f"checkpoint: {res.checkpoint}\nfinal return {res.final_return:.4f} after "
        f"{res.iterations} iterations, {res.env_steps} env steps, {res.wall_time_s:.0f} s"
    )
    return 0


def _rewriter(args: argparse.Namespace, db, w, greedy: bool = False):
    """The rewriter asked for: --model, --rules, or (``greedy``) by PostgreSQL's cost."""
    from rlsuite.apps.queryopt.rewriter import FixedRules, GreedyByCost

    if getattr(args, "model", None):
        from rlsuite.apps.queryopt.train import LearnedRewriter

        wcfg = {k: getattr(w, k) for k in ("udf_cost", "scale") if hasattr(w, k)}
        return LearnedRewriter(
            args.model, db.dsn, workload=w.name, workload_config=wcfg, timeout_ms=args.timeout_ms
        )
    check_schema = getattr(args, "check_schema", None) or getattr(w, "check_schema", None)
    if check_schema is not None and check_schema != w.schema:
        if check_schema not in db.visible_schemas():
            raise ValueError(
                f"--check-schema {check_schema!r} does not exist or this user may not read it; "
                f"schemas it can see: {', '.join(db.visible_schemas()) or 'none'}"
            )
    if greedy:
        return GreedyByCost(
            db, w.schema, w.settings(), timeout_ms=args.timeout_ms, check_schema=check_schema
        )
    names = [n.strip() for n in (args.rules or "").split(",") if n.strip()]
    return FixedRules(
        db, w.schema, names, w.settings(), timeout_ms=args.timeout_ms, check_schema=check_schema
    )


def cmd_run(args: argparse.Namespace) -> int:
    from rich.progress import Progress

    from rlsuite.apps.queryopt.bench import compare

    w = _workload(args)
    with _database(args.dsn) as db:
        w.ensure(db)
        queries = _queries_of(args, w)
        rw = _rewriter(args, db, w)
        try:
            with Progress(console=console, transient=True) as bar:
                task = bar.add_task(f"{w.name}: {len(queries)} queries", total=len(queries))
                res = compare(
                    db,
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
    w = _workload(args)
    with _database(args.dsn) as db:
        w.ensure(db)
        base = dict(w.settings())
        rw = _rewriter(args, db, w, greedy=not (args.model or args.rules))
        try:
            d = rw.rewrite(args.sql, check=args.check)
        finally:
            rw.close()
        sql, settings, applied, reasons, match = (
            d.sql,
            d.settings,
            d.applied,
            d.reasons,
            d.rows_match,
        )
        before = db.explain(args.sql, w.schema, base)
        after = db.explain(sql, w.schema, settings) if applied else before
    console.rule("original")
    console.print(args.sql)
    console.print("\n".join(db.plan_lines(before)))
    console.rule("rewritten" if applied else "unchanged")
    console.print(sql)
    extra = {k: v for k, v in settings.items() if base.get(k) != v}
    if extra:
        console.print(f"settings: {extra}")
    console.print(f"rewrites: {', '.join(applied) or 'none'}")
    for k, v in reasons.items():
        console.print(f"[dim]{k}: {v}[/]")
    if applied:
        console.print("\n".join(db.plan_lines(after)))
    if args.check:
        console.print(
            {
                True: f"[green]rows match[/] (compared on {d.checked_on})",
                False: "[red]ROWS DIFFER[/]",
                None: "rows not compared (nothing rewritten or a timeout)",
            }[match]
        )
    if args.json:
        write_json(
            args.json,
            {
                "original": args.sql,
                "sql": sql,
                "settings": settings,
                "rewrites": list(applied),
                "reasons": reasons,
                "rows_match": match,
                "checked_on": d.checked_on,
            },
        )
    return 1 if match is False else 0


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

    from rlsuite.apps.queryopt.rules import RULES, STOP

    if getattr(args, "engine", "postgres") == "spark":
        from rlsuite.apps.queryopt import spark_rules as S

        t = Table(title="Spark rewrites (MDP actions)")
        t.add_column("action", justify="right")
        t.add_column("rewrite")
        t.add_column("what it does")
        for i, a in enumerate(S.ACTIONS):
            t.add_row(str(i), a.name, a.description)
        t.add_row(str(S.STOP), "STOP", "end the episode; run the current query")
        for name, why in S.REFUSED.items():
            t.add_row("-", name, f"refused: {why}")
        console.print(t)
        return 0
    t = Table(title="rewrite rules (MDP actions)")
    t.add_column("action", justify="right")
    t.add_column("rule")
    t.add_column("what it does")
    for i, r in enumerate(RULES):
        t.add_row(str(i), r.name, " ".join(r.description.split()))
    t.add_row(str(STOP), "STOP", "end the episode; run the current query")
    console.print(t)
    return 0


COMMANDS = {
    "setup": cmd_setup,
    "train": cmd_train,
    "run": cmd_run,
    "rewrite": cmd_rewrite,
    "server": cmd_server,
    "rules": cmd_rules,
}


def _serve_own_schema(args: argparse.Namespace) -> None:
    """``serve --schema S``: the fixed rules over the user's schema (a ``schema:S`` workload)."""
    if args.command != "serve":
        return
    if not args.rules:
        raise ValueError(
            "serve --schema S goes with --rules R1,R2 (a trained model serves the schema it "
            "was trained on)"
        )
    if args.workload:
        raise ValueError("give --workload or --schema, not both")
    args.workload = "schema:" + args.schema


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        handler = getattr(args, "qopt_plugin_handler", None)
        if handler is not None:
            if getattr(args, "schema", None):
                _serve_own_schema(args)
            return int(handler(args))
        if getattr(args, "engine", "postgres") == "spark" and args.command != "rules":
            from rlsuite.apps.queryopt import spark_cli

            spark_cli.check_args(args)
            if args.command in spark_cli.COMMANDS:
                return spark_cli.main(args, _workload(args))
        elif getattr(args, "spark_master", None) or getattr(args, "spark_dir", None):
            raise ValueError("--spark-master and --spark-dir go with --engine spark")
        return COMMANDS[args.command](args)
    except (ValueError, RuntimeError, FileNotFoundError, FileExistsError) as e:
        console.print(f"[red]qopt-bench {args.command}: {e}[/]")
        return 2


if __name__ == "__main__":
    os.environ.setdefault("RAY_DEDUP_LOGS", "0")
    sys.exit(main())
