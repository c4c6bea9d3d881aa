"""qopt-bench: the DQN query rewriter on PostgreSQL.

NAME
    qopt-bench - load workloads, train the learned rewriter, benchmark it, rewrite SQL

SYNOPSIS
    qopt-bench setup   --workload {joins,udf,tpch} [--scale S] [--seed N] [--dsn DSN]
    qopt-bench train   --workload W [--queries N] [--iterations K] [--run-dir DIR] [--dsn DSN]
    qopt-bench run     --workload W (--model PATH | --rules R1,R2) [--json PATH] [--dsn DSN]
    qopt-bench rewrite "SQL" [--workload W] [--model PATH | --rules R1,R2] [--check] [--dsn DSN]
    qopt-bench server  {start,stop,status}
    qopt-bench rules
    qopt-bench setup | train | run | rewrite ... --engine spark [--spark-master URL] [--spark-dir DIR]

DESCRIPTION
    Without --dsn every command uses the embedded PostgreSQL server: a cluster
    created once under $RLSUITE_PG_DIR (default /var/tmp/rlsuite-pg-0 as root,
    ~/.cache/rlsuite/pg otherwise), started when needed and stopped again when
    the command ends (unless it was already running: `qopt-bench server start`
    keeps one up). With --dsn the commands use that server; the app only ever
    writes into its own schemas (qopt_joins, qopt_udf, qopt_tpch), and measured
    queries run read-only with a statement_timeout.

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

from rich.console import Console

from rlsuite.cli_common import add_cluster_flags, add_json_flag, ray_cluster, write_json

console = Console()


def build_parser() -> argparse.ArgumentParser:
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
            choices=("postgres", "spark"),
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
            sp.add_argument(
                "--workload",
                choices=WORKLOAD_NAMES,
                default="joins",
                help="workload (default: joins)",
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
                help="tpch workload: scale factor (default 0.1)",
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
    r.add_argument("--queries", type=int, default=20, help="held-out test queries (default 20)")
    r.add_argument("--split", choices=("train", "test"), default="test")
    r.add_argument("--query-seed", type=int, default=0)
    r.add_argument("--timeout-ms", type=int, default=60_000, help="statement_timeout per query")
    r.add_argument("--repeat", type=int, default=1, help="runs per query; the fastest counts")
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
    add_json_flag(w, "the decision")

    v = sub.add_parser("server", help="start, stop or inspect the embedded server")
    v.add_argument("action", choices=("start", "stop", "status"))

    ru = sub.add_parser("rules", help="list the rewrite rules (the MDP's actions)")
    ru.add_argument(
        "--engine",
        choices=("postgres", "spark"),
        default="postgres",
        help="whose actions: PostgreSQL's rules and planner arms, or Spark's",
    )
    try:  # `serve` and `plugin` come from the in-server plugin when it is there
        from rlsuite.apps.queryopt.plugin.cli import register
    except ImportError:
        register = None
    if register is not None:
        register(sub)
    return p


@contextlib.contextmanager
def _database(dsn: str | None) -> Iterator[object]:
    from rlsuite.apps.queryopt.db import Database
    from rlsuite.apps.queryopt.server import EmbeddedServer

    srv = None
    if dsn is None:
        srv = EmbeddedServer()
        console.print(f"[dim]embedded PostgreSQL in {srv.root}[/]")
        srv.start()
        dsn = srv.dsn
    db = Database(dsn)
    try:
        yield db
    finally:
        db.close()
        if srv is not None and srv.started_here:
            srv.stop()


def _workload(args: argparse.Namespace):
    from rlsuite.apps.queryopt.workloads import get

    kw = {}
    if getattr(args, "udf_cost", None) is not None:
        if args.workload != "udf":
            raise ValueError("--udf-cost is for --workload udf")
        kw["udf_cost"] = args.udf_cost
    if getattr(args, "scale", None) is not None:
        if args.workload != "tpch":
            raise ValueError("--scale is for --workload tpch")
        kw["scale"] = args.scale
    return get(args.workload, **kw)


def cmd_setup(args: argparse.Namespace) -> int:
    from rich.table import Table

    w = _workload(args)
    with _database(args.dsn) as db:
        if w.is_loaded(db) and not args.force:
            console.print(f"{w.schema} is already loaded (use --force to reload)")
        else:
            with console.status(f"loading {w.name} into {w.schema}"):
                w.setup(db, seed=args.seed)
        counts = db.row_counts(w.schema)
    t = Table(title=f"workload {w.name} in schema {w.schema}")
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
    if greedy:
        return GreedyByCost(db, w.schema, w.settings(), timeout_ms=args.timeout_ms)
    names = [n.strip() for n in (args.rules or "").split(",") if n.strip()]
    return FixedRules(db, w.schema, names, w.settings(), timeout_ms=args.timeout_ms)


def cmd_run(args: argparse.Namespace) -> int:
    from rich.progress import Progress

    from rlsuite.apps.queryopt.bench import compare

    w = _workload(args)
    with _database(args.dsn) as db:
        w.ensure(db)
        queries = w.queries(args.split, args.queries, args.query_seed)
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


def _plan_text(plan: dict, indent: int = 0) -> list[str]:
    node = plan.get("Plan", plan)
    line = (
        "  " * indent
        + f"{node.get('Node Type')}  (cost {node.get('Total Cost')}, rows {node.get('Plan Rows')})"
    )
    out = [line]
    for c in node.get("Plans", []) or []:
        out += _plan_text(c, indent + 1)
    return out


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
    console.print("\n".join(_plan_text(before)))
    console.rule("rewritten" if applied else "unchanged")
    console.print(sql)
    extra = {k: v for k, v in settings.items() if base.get(k) != v}
    if extra:
        console.print(f"settings: {extra}")
    console.print(f"rewrites: {', '.join(applied) or 'none'}")
    for k, v in reasons.items():
        console.print(f"[dim]{k}: {v}[/]")
    if applied:
        console.print("\n".join(_plan_text(after)))
    if args.check:
        console.print(
            {
                True: "[green]rows match[/]",
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


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        handler = getattr(args, "qopt_plugin_handler", None)
        if handler is not None:
            return int(handler(args))
        if getattr(args, "engine", "postgres") == "spark" and args.command != "rules":
            from rlsuite.apps.queryopt import spark_cli

            return spark_cli.main(args, _workload(args))
        if getattr(args, "spark_master", None) or getattr(args, "spark_dir", None):
            raise ValueError("--spark-master and --spark-dir go with --engine spark")
        return COMMANDS[args.command](args)
    except (ValueError, RuntimeError, FileNotFoundError, FileExistsError) as e:
        console.print(f"[red]qopt-bench {args.command}: {e}[/]")
        return 2


if __name__ == "__main__":
    os.environ.setdefault("RAY_DEDUP_LOGS", "0")
    sys.exit(main())
