"""``qopt-bench serve`` and ``qopt-bench plugin {install,status}``: the in-server optimizer plugin.

NAME
    qopt-bench serve  - answer the pg_qopt extension with a model's decisions
    qopt-bench plugin - build/install the pg_qopt extension, or show its state

SYNOPSIS
    qopt-bench serve [--chooser measured|rules|model] [--budget-s S] [--model PATH] [--rules R1,R2] [--learn]
                     [--workload W [--scale SF]] [--socket PATH | --listen localhost:PORT]
                     [--wait-ms MS] [--rewards PATH] [--dsn DSN]
                     [--store PATH [--window N]] [--learn [--retrain-every N] [--retrain-seconds S]]
                     [--explore SHARE] [--regression-threshold X] [--regression-runs K] [--guard-margin X]
    qopt-bench serve stats [--socket PATH | --listen localhost:PORT] [--json PATH]
    qopt-bench plugin install [--build-dir DIR]
    qopt-bench plugin status  [--dsn DSN] [--socket PATH]

DESCRIPTION
    pg_qopt is a PostgreSQL 15 extension (C, built with PGXS against
    `pg_config`). When a session has `qopt.enabled = on`, it sends every
    top-level SELECT to the model server and plans the rewritten SQL (or the
    planner arm) it answers; anything going wrong means the standard plan. Load
    it per session with `LOAD 'pg_qopt'`, or for unchanged clients through
    PGOPTIONS, e.g.

        PGOPTIONS="-c session_preload_libraries=pg_qopt -c qopt.enabled=on \\
                   -c qopt.server=/tmp/rlsuite-qopt-0/model.sock" psql ...

    Settings: qopt.enabled (off), qopt.server (socket path or localhost:PORT;
    superuser), qopt.timeout_ms (50), qopt.mode (rewrite | arms | off),
    qopt.send_rewards (on). EXPLAIN shows a "Query Optimizer" line.

    Not asked: statements with parameters (so prepared statements with $n
    keep the standard plan), queries inside functions, DO blocks and
    triggers, cursors (DECLARE), CREATE TABLE AS, SELECT ... FOR UPDATE.

    A new statement's decision is by default the measured one: the candidate
    rewrites (every rule that applies, its pairs with the planner arms, the
    cost-greedy choice) run within --budget-s and the fastest is served once
    its rows are verified; a statement too slow to finish has them compared
    with DuckDB's answer on the same tables (its postgres scanner) or, where
    DuckDB cannot run it, on the workload's small copy (tpcds: SF 0.01).
    Until then the standard plan serves it; from the next run on, the
    verified rewrite. --rules and --model rewrites are verified the same way.
    A rewrite that cannot be verified is never served: EXPLAIN's note says
    why ("standard plan, measured: no rewrite: no faster candidate could be
    verified (...)"), and a served one what its rows were compared on.

    serve caches each decision per statement text and per query shape
    (literals stripped); a cached answer takes microseconds. A new statement
    is decided on a background worker: the extension gets the standard plan
    when the decision takes longer than --wait-ms, and the rewrite from then
    on. Runtimes the extension reports are kept per decision (--rewards
    appends them to a JSON-lines file). Without --dsn, serve uses the embedded
    server (started if needed, stopped on exit if it started it).

    Online learning, as Bao does it. --store PATH keeps an experience store
    (SQLite): per measured execution the query shape (literals replaced by
    ?), the features the model saw, the decision, how it was served and the
    runtime, for the newest --window executions; it survives restarts, and
    a file that is not such a store is refused, never overwritten. --learn
    retrains the DQN (the platform's replay plan, as `qopt-bench train`) on
    the store every --retrain-every new runtimes or --retrain-seconds, in a
    niced process of its own (serving never waits on it; one that dies is
    restarted, and it ends with the server), and swaps the new model in only when, on recently seen shapes, its choices
    are not predicted slower than the current model's by more than
    --guard-margin; a failed retrain keeps the current model.

    What a server learns over (its actions: what exploration tries and a
    retrained model chooses from) is recorded, by name, in the store, which
    refuses a server over other rules. --learn alone starts from no model
    (the standard plan) and learns over the MDP's default rules (`qopt-bench
    rules`). --learn --rules R1,R2,R3 serves those rules in order until a
    model passes the guard and learns over exactly them, in that order. A
    --model's actions are the rules it was trained over, in its order (a
    16-rule model with decorrelate_scalar and not_in_exact retrains as one);
    --rules with --model may only repeat them (in the model's order), and
    other rules are refused: drop --rules, or leave out --model to learn
    over the rules you name.

    Every rewrite has its rows checked against the original's before it is
    served, and that check times both: a shape is served the decision
    measured fastest when it is at least 1.25x faster than the standard plan
    (on the shape's own executions, else in its check), otherwise the
    model's choice. At most --explore of any 100 answers try a decision not
    yet measured (or measure the standard plan again); one whose check ran
    over 2x the original's is never tried. A shape whose original ran past
    --timeout-ms is never explored (one run of its standard plan would hold
    a client's statement for minutes). `serve --learn` starts its
    retrain process before it listens. A shape whose served
    decision is slower than the standard plan by more than
    --regression-threshold over its last --regression-runs executions falls
    back to the standard plan, and the server logs why. `serve stats` asks a
    running server: per-shape speed-ups, regressions caught, model versions.

EXIT STATUS
    0 success; 2 bad usage or a failure (the message says what to do).
"""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.console import Console

from rlsuite.cli_common import USER_ERRORS, add_flags, add_json_flag, json_text, write_json

if TYPE_CHECKING:
    from rlsuite.apps.queryopt.plugin.modelserver import ModelServer
    from rlsuite.apps.queryopt.plugin.online import OnlineConfig

console = Console()


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``serve`` and ``plugin`` to qopt-bench's subcommands.

    Each parsed namespace carries ``qopt_plugin_handler`` (a function of the namespace
    returning the exit status), so the caller dispatches with
    ``args.qopt_plugin_handler(args)`` whatever its own dispatch table holds.
    """
    from rlsuite.apps.queryopt.plugin.protocol import default_socket
    from rlsuite.apps.queryopt.workloads import WORKLOAD_NAMES

    s = subparsers.add_parser(
        "serve",
        help="the model server the pg_qopt extension asks",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    s.add_argument(
        "action",
        nargs="?",
        choices=("stats",),
        help="stats: show a running server's per-shape speed-ups, regressions and models",
    )
    s.add_argument("--model", help="checkpoint or run directory from `qopt-bench train`")
    s.add_argument(
        "--rules",
        help="comma-separated fixed rules, applied in order (no model); with --learn, the "
        "rules learned over; with --model, only the model's own rules in its order",
    )
    s.add_argument(
        "--chooser",
        choices=("measured", "rules", "model"),
        default=None,
        help="how a new statement's decision is made (default: measured, or rules / model "
        "with --rules / --model): measured runs the candidates within --budget-s and serves "
        "the fastest verified one, with --rules only those rules",
    )
    s.add_argument(
        "--budget-s",
        type=float,
        default=60.0,
        help="measured: seconds of measuring per new statement, in the background (60)",
    )
    s.add_argument(
        "--workload",
        choices=WORKLOAD_NAMES,
        default=None,
        help="workload whose schema the queries use (default: the model's; joins for --rules)",
    )
    s.add_argument(
        "--scale",
        type=float,
        default=None,
        help="tpcds, tpch: the scale factor of the data served (default: the workload's, 1 "
        "for tpcds)",
    )
    a = s.add_mutually_exclusive_group()
    a.add_argument("--socket", default=None, help=f"Unix socket path (default {default_socket()})")
    a.add_argument("--listen", default=None, help="TCP instead: localhost:PORT (this machine only)")
    s.add_argument(
        "--wait-ms",
        type=float,
        default=40.0,
        help="how long a request waits for a new decision (default 40; keep it below "
        "qopt.timeout_ms)",
    )
    s.add_argument("--rewards", default=None, help="append reported runtimes here (JSON lines)")
    s.add_argument(
        "--timeout-ms",
        type=int,
        default=60_000,
        help="statement_timeout of the model's own database work",
    )
    s.add_argument("--dsn", default=None, help="libpq DSN (default: the embedded server)")
    o = s.add_argument_group("online learning")
    # fmt: off
    add_flags(
        o,
        ("--store", None, None, "experience store (SQLite file), kept across runs"),
        ("--window", int, 5000, "executions the store keeps (5000)"),
        ("--learn", bool, False, "retrain from the store in the background"),
        ("--retrain-every", int, 50, "retrain after N new runtimes (50)"),
        ("--retrain-seconds", float, 120.0, "or after S seconds (120)"),
        ("--explore", float, 0.05, "max share of answers that explore (0.05)"),
        ("--regression-threshold", float, 0.2, "fall back when this much slower than the standard plan (0.2 = 20%%)"),
        ("--regression-runs", int, 3, "...over this many executions (3)"),
        ("--guard-margin", float, 0.05, "a new model may be predicted this much slower at most (0.05)"),
        ("--models-dir", None, None, "where retrained models go (default: STORE.models)"),
        ("--max-steps", int, 2, "rewrites per decision without --model (2)"),
        ("--train-iterations", int, 2, "training iterations per retrain (2)"),
    )
    # fmt: on
    add_json_flag(s, "serve stats: the full answer")
    s.set_defaults(qopt_plugin_handler=cmd_serve)

    p = subparsers.add_parser(
        "plugin",
        help="build/install the pg_qopt extension, or show its state",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ps = p.add_subparsers(dest="plugin_action", required=True, metavar="ACTION")
    i = ps.add_parser(
        "install", help="build with PGXS and copy pg_qopt.so into pg_config --pkglibdir"
    )
    i.add_argument("--build-dir", default=None, help="where to compile (default: a temp directory)")
    i.set_defaults(qopt_plugin_handler=cmd_install)
    st = ps.add_parser("status", help="installed? current? loads? settings? model server up?")
    st.add_argument(
        "--dsn", default=None, help="libpq DSN (default: the embedded server, if running)"
    )
    st.add_argument(
        "--socket", default=None, help=f"model server to ask (default {default_socket()})"
    )
    add_json_flag(st, "the status too")
    st.set_defaults(qopt_plugin_handler=cmd_status)


def cmd_install(args: argparse.Namespace) -> int:
    from rlsuite.apps.queryopt.plugin.build import install

    with console.status("building pg_qopt (PGXS)"):
        dest = install(args.build_dir)
    console.print(f"installed {dest}\nload it with LOAD 'pg_qopt' (or session_preload_libraries)")
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    from rich.table import Table

    from rlsuite.apps.queryopt.plugin.build import status
    from rlsuite.apps.queryopt.plugin.protocol import default_socket, request
    from rlsuite.apps.queryopt.server import EmbeddedServer

    dsn = args.dsn
    if dsn is None:
        srv = EmbeddedServer()
        dsn = srv.dsn if srv.running() else None
    st = status(dsn)
    sock = args.socket or default_socket()
    try:
        server = request(sock, {"op": "stats"}, timeout_s=1.0)
    except (OSError, ValueError) as e:
        server = {"error": f"no model server at {sock}: {e}"}
    t = Table(title="pg_qopt")
    t.add_column("item")
    t.add_column("state")
    t.add_row("library", st.installed or "[red]not installed[/] (qopt-bench plugin install)")
    t.add_row("built from these sources", "yes" if st.current else "no (reinstall to update)")
    t.add_row(
        "LOAD on the server",
        {
            None: "not tried (no running server; pass --dsn)",
            True: "ok",
            False: f"[red]{st.error}[/]",
        }[st.loads],
    )
    for k, v in st.settings.items():
        t.add_row(k, v)
    if "error" in server:
        t.add_row("model server", server["error"])
    else:
        t.add_row("model server", f"{sock}: {server['decider']} on {server['schema']}")
        for k in ("requests", "exact_hits", "shape_hits", "misses", "rewards", "cached_shapes"):
            t.add_row(f"  {k}", str(server[k]))
    console.print(t)
    if args.json:
        write_json(args.json, {"plugin": st.__dict__, "model_server": server})
    return 0


def cmd_stats(args: argparse.Namespace) -> int:
    """``serve stats``: what a running model server has learned and caught."""
    from rich.table import Table

    from rlsuite.apps.queryopt.plugin.protocol import default_socket, request

    address = args.listen or args.socket or default_socket()
    try:
        st = request(address, {"op": "stats"}, timeout_s=5.0)
    except (OSError, ValueError) as e:
        raise RuntimeError(f"no model server answers at {address}: {e}") from e
    t = Table(title=f"model server {address}: {st['decider']} (model v{st['model_version']})")
    for c in ("shape", "runs", "served", "standard ms", "served ms", "speed-up", "fallback"):
        t.add_column(c, justify="left" if c in ("shape", "served", "fallback") else "right")
    for r in sorted(st["shapes"], key=lambda r: -r["executions"]):
        t.add_row(
            r["shape"][:60],
            str(r["executions"]),
            "+".join(r["served"]) or "standard",
            _ms(r["standard_ms"]),
            _ms(r["served_ms"]),
            f"{r['speedup']:.2f}x" if r["speedup"] else "",
            "yes" if r["blocked"] else "",
        )
    console.print(t)
    console.print(
        f"answers {st['answers']}, explored {st['explored']} (share <= {st['explore_share']}), "
        f"rewards {st['rewards']}, regressions caught {len(st['regressions_caught'])}"
    )
    for r in st["regressions_caught"]:
        console.print(f"  [yellow]regression[/] {r['shape'][:60]}: {r['reason']}", highlight=False)
    for m in st["models"]:
        console.print(f"  model v{m['version']}: {m['name']} {m.get('path', '')}", highlight=False)
    for r in st["retrains"]:
        what = "swapped" if r["swapped"] else r.get("reason", "not swapped")
        console.print(f"  retrain v{r['version']} ({r['seconds']:.1f} s): {what}", highlight=False)
    if args.json:
        write_json(args.json, st)
    return 0


def _ms(v: float | None) -> str:
    return "" if v is None else f"{v:.2f}"


def _rule_names(text: str | None) -> list[str]:
    return [n.strip() for n in (text or "").split(",") if n.strip()]


def check_model_rules(model_rules: Sequence[str], named: Sequence[str]) -> None:
    """``serve --model M --rules R1,R2``: the rules must be the model's own, in its order (a
    model acts over the rules it was trained over and nothing else); raises ValueError with
    one sentence that says what to do otherwise."""
    from rlsuite.apps.queryopt.rules import RULE_NAMES

    if tuple(named) == tuple(model_rules):
        return
    own = (
        "the MDP's default 14 (`qopt-bench rules` lists them)"
        if tuple(model_rules) == RULE_NAMES
        else f"its own {len(model_rules)} ({', '.join(model_rules)})"
    )
    raise ValueError(
        f"--rules names {', '.join(named)}, but the model acts over the "
        f"rules it was trained over, in their order, {own}: drop --rules to serve and retrain "
        "the model over its own rules, or leave out --model to serve and learn over the rules "
        "you name (serve --learn --rules R1,R2 --store PATH)"
    )


def serve_chooser(args: argparse.Namespace) -> str | None:
    """Check serve's flags (no database, no model loaded); the chooser (None: --learn from
    no model or from --rules)."""
    chooser = args.chooser or ("model" if args.model else "rules" if args.rules else None)
    if chooser is None and not args.learn:
        chooser = "measured"
    if chooser == "model" and not args.model:
        raise ValueError("--chooser model needs --model PATH")
    if chooser == "rules" and not args.rules:
        raise ValueError("--chooser rules needs --rules R1,R2")
    if chooser == "rules" and args.model:
        raise ValueError("--chooser rules serves fixed rules: leave out --model")
    if chooser == "measured" and (args.model or args.learn):
        raise ValueError("--chooser measured goes without --model and --learn")
    if args.rules is not None:
        from rlsuite.apps.queryopt.rules import named

        if not _rule_names(args.rules):
            raise ValueError("--rules needs at least one rule (see `qopt-bench rules`)")
        named(_rule_names(args.rules))  # an unknown or repeated rule: refused with the list
    if args.model and args.rules:
        from rlsuite.apps.queryopt.train import model_actions

        check_model_rules(model_actions(args.model), _rule_names(args.rules))
    if args.budget_s <= 0:
        raise ValueError(f"--budget-s must be > 0, got {args.budget_s}")
    if args.wait_ms < 0:
        raise ValueError(f"--wait-ms must be >= 0, got {args.wait_ms}")
    if args.scale is not None:
        if args.workload not in ("tpcds", "tpch"):
            raise ValueError("--scale goes with --workload tpcds or tpch")
        if not args.scale > 0:
            raise ValueError(f"--scale must be > 0, got {args.scale}")
    if args.learn and not args.store:
        raise ValueError("--learn needs --store PATH: a writable file for the experience store")
    return chooser


def build_server(args: argparse.Namespace, dsn: str, online: OnlineConfig) -> ModelServer:
    """The model server ``serve`` runs (not started), its decider, experience store and,
    with --learn, its :class:`~.learner.OnlineLearner` (not started), on the server ``dsn``.

    The server's actions, which the store records and every retrain learns over: a
    --model's own rules; --rules's, in their order; else the MDP's default rules."""
    from rlsuite.apps.queryopt.plugin.decider import MeasuredDecider, ModelDecider, RulesDecider
    from rlsuite.apps.queryopt.plugin.experience import ExperienceStore
    from rlsuite.apps.queryopt.plugin.learner import OnlineLearner
    from rlsuite.apps.queryopt.plugin.modelserver import ModelServer
    from rlsuite.apps.queryopt.plugin.protocol import default_socket
    from rlsuite.apps.queryopt.workloads import get

    chooser = serve_chooser(args)
    wcfg = {"scale": args.scale} if args.scale is not None else None
    names = _rule_names(args.rules)
    if chooser == "measured":
        decider = MeasuredDecider(
            dsn,
            args.workload or "joins",
            wcfg,
            budget_s=args.budget_s,
            timeout_ms=args.timeout_ms,
            rules=names,
            max_steps=args.max_steps,
        )
    elif args.model:  # --rules, if given, are the model's own (serve_chooser checked)
        decider = ModelDecider(args.model, dsn, args.workload, wcfg, timeout_ms=args.timeout_ms)
    else:  # --rules in order; none: --learn from no model, the standard plan until a model
        # passes the guard. Its actions: those rules, or the MDP's default ones
        decider = RulesDecider(dsn, args.workload or "joins", names, wcfg, max_steps=args.max_steps)
    store = None
    if args.store:
        store = ExperienceStore(
            args.store, decider.schema, window=args.window, rules=decider.actions
        )
    server = ModelServer(
        args.listen or args.socket or default_socket(),
        decider,
        wait_ms=args.wait_ms,
        rewards_path=args.rewards,
        online=online,
        store=store,
        check_timeout_ms=args.timeout_ms,
    )
    if args.learn:
        wcfg = dict(decider.workload_config)
        w = get(decider.workload, **wcfg)
        server.learner = OnlineLearner(
            online,
            store,
            args.models_dir or f"{store.path}.models",
            dsn=dsn,
            workload=w.name,
            workload_config=wcfg,
            max_steps=decider.max_steps,
            make_decider=lambda ckpt: ModelDecider(
                ckpt, dsn, workload=w.name, workload_config=wcfg, timeout_ms=args.timeout_ms
            ),
            swap=server.swap,
            current_choices=server.current_choices,
            rules=decider.own_rules,  # the server's actions: every retrain keeps them
        )
    return server


def cmd_serve(args: argparse.Namespace) -> int:
    import logging

    from rlsuite.apps.queryopt.plugin.online import OnlineConfig
    from rlsuite.apps.queryopt.plugin.protocol import check_address, default_socket
    from rlsuite.apps.queryopt.server import EmbeddedServer
    from rlsuite.apps.queryopt.workloads import get

    if args.action == "stats":
        return cmd_stats(args)
    chooser = serve_chooser(args)
    online = OnlineConfig(
        explore_share=args.explore,
        regression_threshold=args.regression_threshold,
        regression_runs=args.regression_runs,
        retrain_every=args.retrain_every,
        retrain_seconds=args.retrain_seconds,
        guard_margin=args.guard_margin,
        iterations=args.train_iterations,
        max_steps=args.max_steps,
    )
    online.validate()
    address = args.listen or args.socket or default_socket()
    check_address(address)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    wcfg = {"scale": args.scale} if args.scale is not None else {}
    shipped = (
        chooser == "measured"
        and not args.rules
        and get(args.workload or "joins", **wcfg).shipped_model
    )
    if args.model or args.learn or shipped:
        import torch

        # one thread for the model's forward passes: it is tiny, and OpenMP's idle threads
        # spin on the cores that the served queries (and their sessions) run on
        torch.set_num_threads(1)
    srv = None
    dsn = args.dsn
    if dsn is None:
        srv = EmbeddedServer()
        srv.start()
        dsn = srv.dsn
    try:
        server = build_server(args, dsn, online)
        decider = server.decider
        if server.learner is not None:
            console.print("starting the retrain process (Ray, the training code) before serving")
            server.learner.warm()
            server.learner.start()
        signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
        # answers must not wait 5 ms (Python's default) for the GIL while the decision
        # worker parses and checks statements in the background. Cold starts from no
        # model (history/queryopt.md, "the cold start", 6 servers each): the first 50
        # executions at 0.95x the standard plans' time with 0.5 ms, 1.06x with 0.1 ms,
        # 1.18x with 0.05 ms. The worker is interrupted only while an answer waits.
        sys.setswitchinterval(0.00005)
        console.print(
            f"serving {decider.name} for schema {decider.schema} on {address}\n"
            f'clients: PGOPTIONS="-c session_preload_libraries=pg_qopt -c qopt.enabled=on '
            f'-c qopt.server={address}"',
            highlight=False,
        )
        sys.stdout.flush()
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            console.print(
                json_text({k: v for k, v in server.summary().items() if k != "decisions"}, None)
            )
    finally:
        if srv is not None and srv.started_here:
            srv.stop()
    return 0


def build_parser() -> argparse.ArgumentParser:
    """A stand-alone parser with only these subcommands (``python -m ...plugin.cli``)."""
    p = argparse.ArgumentParser(
        prog="qopt-bench", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    register(p.add_subparsers(dest="command", required=True, metavar="COMMAND"))
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.qopt_plugin_handler(args)
    except (*USER_ERRORS, RuntimeError, OSError) as e:
        console.print(f"[red]qopt-bench {args.command}: {e}[/]")
        return 2


if __name__ == "__main__":
    sys.exit(main())
