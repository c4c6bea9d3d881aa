"""pg_qopt's cold start: the first 50-execution windows of a fresh ``serve --learn`` from no
model, over several fresh servers.

Each repetition starts a new model server (no model, a new experience store), opens a
plugin session warmed with pg_qopt off (as in ``queryopt_online.py``), and streams ``--n``
executions of the udf workload's 10 queries at the cheap UDF cost in a shuffled cycle.
Each window's speed-up is the standard plans' time (the median over 5-15 rounds of plain
runs through the queries) over the plugin session's; every execution's rows are compared
with the standard plan's. ``--detail`` also prints each of the first 100 executions as
``query:+ms`` over its standard plan.

Usage:
    flock /tmp/rlsuite-heavy.lock nice -n 5 .venv/bin/python \
        benchmarks/queryopt_online_coldstart.py [--reps 4] [--n 150] [--detail]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
from types import SimpleNamespace

import numpy as np
import queryopt_online as B
from rich.console import Console
from rich.table import Table

from rlsuite.apps.queryopt.benchmarking import database

WINDOW = 50


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--reps", type=int, default=4, help="fresh servers (4)")
    ap.add_argument("--n", type=int, default=150, help="executions per server (150)")
    ap.add_argument("--detail", action="store_true", help="print the first 100 executions")
    ap.add_argument("--dsn", default=None)
    args = ap.parse_args()
    if args.n < WINDOW:
        raise SystemExit(f"--n must be at least {WINDOW}, got {args.n}")

    from rlsuite.apps.queryopt.plugin.build import install
    from rlsuite.apps.queryopt.plugin.protocol import request
    from rlsuite.apps.queryopt.workloads import get
    from rlsuite.apps.queryopt.workloads.udf import SEED_QUERY

    console = Console()
    install()
    w = get("udf")
    # the main benchmark's settings: serve's, the plugin's timeout, a warmed plugin session
    opts = SimpleNamespace(
        wait_ms=5.0, retrain_every=50, explore=0.05, qopt_timeout_ms=50, warm_session=True
    )
    rows = []
    with database(args.dsn) as db, B.restored_udf(db.dsn, w.schema):
        w.ensure(db)
        B.set_udf_cost(db.dsn, w.schema, 100)
        queries = [SEED_QUERY, *w.queries("test", 9, 0)]
        base, result_rows = B.baseline(db, w.schema, queries, [100], 5, console, drift=False)
        for rep in range(args.reps):
            tmp = tempfile.mkdtemp(prefix="qopt-cold-")
            os.chmod(tmp, 0o711)
            sock = os.path.join(tmp, "s.sock")
            proc, log = B.start_server(
                sock, db.dsn, os.path.join(tmp, "store.sqlite"), None, opts,
                os.path.join(tmp, "serve.log"),
            )  # fmt: skip
            try:
                trace = B.run_stream(
                    db.dsn, w.schema, queries, [100], args.n, base, result_rows, sock, opts,
                    console, rep, 0.0, drift=False,
                )  # fmt: skip
                stats = request(sock, {"op": "stats"}) or {}
            finally:
                proc.terminate()
                proc.wait()
                log.close()
                shutil.rmtree(tmp, ignore_errors=True)
            wins = [B.ratio(trace[a : a + WINDOW]) for a in range(0, args.n - WINDOW + 1, WINDOW)]
            wrong = sum(1 for e in trace if not e["same_rows"])
            rows.append((rep, wins, stats.get("explored"), wrong))
            console.print(f"server {rep}: windows " + ", ".join(f"{x:.2f}x" for x in wins))
            if args.detail:
                console.print(
                    " ".join(
                        f"{e['query']}:{(e['s'] - e['standard_s']) * 1e3:+.1f}" for e in trace[:100]
                    ),
                    highlight=False,
                )
    t = Table(title=f"pg_qopt cold start from no model, {WINDOW}-execution windows")
    n_windows = len(rows[0][1])
    for c in ("server", *(f"window {k + 1}" for k in range(n_windows)), "explored", "wrong"):
        t.add_column(c, justify="right")
    for rep, wins, explored, wrong in rows:
        t.add_row(str(rep), *(f"{x:.2f}x" for x in wins), str(explored), str(wrong))
    means = [f"{np.mean([r[1][k] for r in rows]):.2f}x" for k in range(n_windows)]
    t.add_row("mean", *means, "", "")
    console.print(t)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
