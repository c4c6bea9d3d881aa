"""qopt-bench: the DQN query rewriter on PostgreSQL.

NAME
    qopt-bench - load workloads, train the learned rewriter, benchmark it, rewrite SQL

SYNOPSIS
    qopt-bench setup   --workload {joins,udf,tpch,tpcds} [--scale S] [--seed N] [--dsn DSN]
    qopt-bench train   --workload W [--queries N] [--iterations K] [--run-dir DIR] [--dsn DSN]
    qopt-bench run     --workload W [--chooser C] [--budget-s S] [--model PATH | --rules R1,R2] [--json PATH]
    qopt-bench run     --schema S --queries FILE.sql [--chooser C] [--model PATH | --rules R1,R2] --dsn DSN
    qopt-bench rewrite "SQL" [--workload W | --schema S] [--chooser C] [--budget-s S]
                       [--model PATH | --rules R1,R2] [--check]
    qopt-bench generate --workload tpcds [--n 200] [--seed S] [--shapes A,B] [--out FILE.sql]
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

    The default decision (--chooser measured) measures the candidates: the
    cost-greedy choice, every rule that applies, each query-shape rule paired
    with each planner arm, and --model's choice when given. They run within
    --budget-s seconds per query (the original first, under a third of it),
    and the fastest one at least 10% faster than the original is used only once
    its rows are verified: against the original's when the original finishes;
    else against DuckDB's answer on the same tables (its postgres scanner,
    "equal on the full data"), or, when DuckDB cannot run it, on the small copy
    ("equal there, not proven on the full data"). Otherwise the original stays,
    with the reason. --chooser cost applies each rule PostgreSQL's estimate finds
    cheaper (nothing runs); rules and model are --rules and --model alone.

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
import os
import sys

from rlsuite.apps.queryopt.commands import console
from rlsuite.cli_common import USER_ERRORS, add_cluster_flags, add_flags, add_json_flag


def build_parser() -> argparse.ArgumentParser:
    from rlsuite.apps.queryopt.engines import ENGINE_NAMES
    from rlsuite.apps.queryopt.rules import ALL_NAMES
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
    # fmt: off
    add_flags(
        t,
        ("--queries", int, 50, "training queries (default 50)"),
        ("--iterations", int, 10, "training iterations (default 10)"),
        ("--run-dir", None, "runs/queryopt", "output directory"),
        ("--timeout-ms", int, None, "runtime cap while training (default 1000; 10000 on Spark)"),
        ("--max-steps", int, 3, "rewrites per episode"),
        ("--reward", ("runtime", "relative", "cost"), None, "runtime (-seconds), relative (-seconds / the engine's own plan's) or cost (PostgreSQL's estimate, no execution); default runtime, relative on Spark"),
        ("--num-env-runners", int, None, "parallel env runners (default 2; 0 on Spark: one JVM)"),
        ("--env-steps", int, None, "env steps per training iteration (default 1000; 100 on Spark)"),
        ("--seed", int, 0, "training seed"),
        ("--rules", None, None, "comma-separated rules the DQN acts over, in this order (PostgreSQL; default: the MDP's actions; `qopt-bench rules` lists every rule)"),
        ("--resume", bool, False, "continue the run in --run-dir"),
    )
    # fmt: on
    add_cluster_flags(t, num_cpus=False)

    r = sub.add_parser(
        "run",
        help="benchmark held-out queries: PostgreSQL vs the rewriter",
        description="Per query: PostgreSQL's time, the rewriter's time, speed-up, "
        "rewrites chosen and whether the rows match; then the geometric-mean "
        "speed-up, total time and number of regressions.",
    )
    common(r)
    g = r.add_mutually_exclusive_group()
    g.add_argument("--model", help="checkpoint or run directory from `qopt-bench train`")
    g.add_argument("--rules", help=f"comma-separated fixed rules: {', '.join(ALL_NAMES)}")
    chooser_flags(r)
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
        "--chooser, --model or --rules, the candidates are measured within --budget-s and "
        "the fastest verified one is used (the original otherwise, with the reason). "
        "--check runs both and exits 1 when the rows differ.",
    )
    w.add_argument("sql", help="the SELECT query")
    common(w)
    g = w.add_mutually_exclusive_group()
    g.add_argument("--model", help="checkpoint or run directory from `qopt-bench train`")
    g.add_argument("--rules", help="comma-separated rules to apply in order")
    chooser_flags(w)
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

    gen = sub.add_parser(
        "generate",
        help="write random queries of the subquery shapes analysts write",
        description="Random queries over TPC-DS's schema, the shapes in turn (correlated "
        "scalar subqueries in WHERE, through a join, in HAVING, in the SELECT list, on two "
        "columns; EXISTS, NOT EXISTS, IN, NOT IN) with realistic predicates. Each is kept only "
        "when PostgreSQL plans it on the workload's schema (SF 0.01 unless --scale), so none it "
        "rejects is written; the same --seed gives the same file. Read it back with "
        "`run --workload tpcds --queries FILE.sql`.",
    )
    gen.add_argument("--workload", choices=("tpcds",), default="tpcds", help="(default tpcds)")
    gen.add_argument("--scale", type=float, default=0.01, help="schema to plan on (0.01)")
    gen.add_argument("--n", type=int, default=200, help="how many queries (default 200)")
    gen.add_argument("--seed", type=int, default=0, help="the generator's seed")
    gen.add_argument("--shapes", default=None, help="comma-separated shapes (default: all)")
    gen.add_argument("--out", default=None, metavar="FILE.sql", help="write here (default: stdout)")
    gen.add_argument("--dsn", default=None, help="libpq DSN (default: the embedded server)")

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


def chooser_flags(sp: argparse.ArgumentParser) -> None:
    """``--chooser`` and ``--budget-s`` (rewrite, run)."""
    from rlsuite.apps.queryopt.choosers import CHOOSERS, DEFAULT_BUDGET_S

    sp.add_argument(
        "--chooser",
        choices=tuple(CHOOSERS),
        default=None,
        help="how rewrites are chosen: "
        + "; ".join(f"{k}: {v}" for k, v in CHOOSERS.items())
        + " (default: measured; model with --model, rules with --rules; Spark: rules)",
    )
    sp.add_argument(
        "--budget-s",
        type=float,
        default=DEFAULT_BUDGET_S,
        help=f"measured: seconds of measuring per query (default {DEFAULT_BUDGET_S:g})",
    )


def _count_or_file(text: str) -> int | str:
    """``--queries``: a count of generated queries, or the path of a file of queries."""
    if text.isdigit():
        return int(text)
    if not text.endswith(".sql") and not os.path.exists(text):
        raise argparse.ArgumentTypeError(f"{text!r} is neither a count nor a .sql file")
    return text


def _serve_own_schema(args: argparse.Namespace) -> None:
    """``serve --schema S``: the measured default or fixed rules over the user's schema (a
    ``schema:S`` workload)."""
    if args.command != "serve":
        return
    if args.model or args.learn:
        raise ValueError(
            "serve --schema S goes with --rules R1,R2 or the measured default (a trained model "
            "serves the schema it was trained on)"
        )
    if args.workload:
        raise ValueError("give --workload or --schema, not both")
    args.workload = "schema:" + args.schema


def main(argv: list[str] | None = None) -> int:
    from rlsuite.apps.queryopt.commands import COMMANDS, check_engine_flags

    args = build_parser().parse_args(argv)
    try:
        handler = getattr(args, "qopt_plugin_handler", None)
        if handler is not None:
            if getattr(args, "schema", None):
                _serve_own_schema(args)
            return int(handler(args))
        check_engine_flags(args)
        return COMMANDS[args.command](args)
    except (*USER_ERRORS, RuntimeError) as e:
        console.print(f"[red]qopt-bench {args.command}: {e}[/]")
        return 2


if __name__ == "__main__":
    os.environ.setdefault("RAY_DEDUP_LOGS", "0")
    sys.exit(main())
