"""``rlsuite bench list | run NAME [...] | report [--check]``: the benchmarks' one entry point."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add ``bench`` and its three commands to the ``rlsuite`` parser."""
    b = sub.add_parser(
        "bench",
        help="list, run and report the benchmarks under benchmarks/",
        description="The benchmarks declared under benchmarks/<app>/: list them, run one "
        "(--quick for its smoke form), or regenerate the table at the top of "
        "benchmarks/RESULTS.md from their JSON.",
    )
    bs = b.add_subparsers(dest="bench_command", required=True, metavar="COMMAND")
    lst = bs.add_parser("list", help="every benchmark, its claim and the RESULTS rows it feeds")
    lst.add_argument("--app", help="only this app's benchmarks")
    r = bs.add_parser(
        "run",
        help="run one benchmark (NAME --help lists its flags)",
        add_help=False,
        prefix_chars="\0",  # every flag after NAME belongs to the benchmark
    )
    r.add_argument("name", metavar="NAME")
    r.add_argument("args", nargs=argparse.REMAINDER, metavar="FLAGS")
    sm = bs.add_parser(
        "smoke", help="run every benchmark's --quick form (make bench-smoke) and tabulate"
    )
    sm.add_argument("names", nargs="*", metavar="NAME", help="only these (default: all)")
    sm.add_argument("--app", help="only this app's benchmarks")
    sm.add_argument("--device", action="store_true", help="include the GPU-machine ones")
    sm.add_argument(
        "--rows",
        action="store_true",
        help="every distinct RESULTS command in its quick form, then the plain --quick of "
        "benchmarks without a row (what make bench-smoke runs)",
    )
    sm.add_argument(
        "--hold-lock",
        action="store_true",
        help="hold the heavy-job lock across the whole run instead of taking it per command "
        "(on a shared machine other jobs then wait, rather than slip in between)",
    )
    rep = bs.add_parser("report", help="regenerate RESULTS.md's table from the results JSON")
    rep.add_argument("--check", action="store_true", help="exit 1 if the table is stale")
    rep.add_argument("--target", type=Path, default=None, help="the markdown file")
    rep.add_argument("--results-dir", type=Path, default=None, help="the results root")


def main(args: argparse.Namespace) -> int:
    from rlsuite.bench import registry

    decl = registry.load()
    if args.bench_command == "list":
        return _list(decl, args.app)
    if args.bench_command == "run":
        from rlsuite.bench import runner

        bench = decl.get(args.name)
        return runner.run(bench, decl.modules[bench.name], list(args.args))
    if args.bench_command == "smoke":
        return _smoke(decl, args)
    return _report(decl, args)


def _list(decl, app: str | None) -> int:
    import textwrap

    shown = [b for b in decl.benchmarks if not app or b.app == app]
    for b in shown:
        kind = f"script benchmarks/{b.script}" if b.script else "declared run"
        print(f"{b.name}  ({kind}{', needs the GPU machine' if b.device else ''})")
        print(textwrap.fill(" ".join(b.claim.split()), 96, initial_indent="    ",
                            subsequent_indent="    "))  # fmt: skip
        for r in b.rows:
            print(f"    row: {r.task} | {r.metric}")
    print(f"{len(shown)} benchmarks; rlsuite bench run NAME [--quick] (NAME --help: its flags)")
    return 0


def _smoke(decl, args: argparse.Namespace) -> int:
    """The chosen benchmarks' quick forms (every RESULTS command's with ``--rows``), one table."""
    from rlsuite.bench import smoke

    chosen = [decl.get(n) for n in args.names] or [
        b
        for b in decl.benchmarks
        if (not args.app or b.app == args.app) and (args.device or not b.device)
    ]
    if args.rows:
        rows = [r.command for r in decl.rows if not args.app or r.app == args.app]
        todo = smoke.commands(chosen, rows, cli_rows=not args.names)
        title = "bench smoke --rows (every RESULTS command, --quick)"
    else:
        todo, title = [smoke.SmokeCommand(b.name, ("--quick",)) for b in chosen], "bench smoke"
    if not args.hold_lock:
        return smoke.run_all(decl, todo, title)
    from rlsuite.bench.runner import heavy_lock

    with heavy_lock():  # the runner's own lock per command then finds this one held
        return smoke.run_all(decl, todo, title)


def _report(decl, args: argparse.Namespace) -> int:
    from rlsuite.bench import report

    target = args.target or report.TARGET
    results = args.results_dir or report.RESULTS_DIR
    try:
        if args.check:
            if not report.is_current(decl.rows, target, results):
                print(
                    f"bench report: the table in {target} is stale; run `make results`",
                    file=sys.stderr,
                )
                return 1
            print(f"bench report: the table in {target} is current ({len(decl.rows)} rows)")
            return 0
        changed = report.write(decl.rows, target, results)
    except report.SummaryError as err:
        print(f"bench report: {err}", file=sys.stderr)
        return 1
    print(f"bench report: {len(decl.rows)} rows, {target} {'updated' if changed else 'unchanged'}")
    return 0
