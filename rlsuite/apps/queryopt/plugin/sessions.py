"""Measuring pg_qopt from outside, as deployed (``rlsuite bench run queryopt_plugin`` and
``queryopt_online``): the model server as its own process, the session options that load the
plugin, EXPLAIN's planning time, and one plain ``psql`` client timed."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence


def plugin_options(sock: str, timeout_ms: int) -> str:
    """``PGOPTIONS`` (or libpq ``options``) of a session that loads pg_qopt and asks ``sock``."""
    return (
        f"-c session_preload_libraries=pg_qopt -c qopt.enabled=on -c qopt.server={sock} "
        f"-c qopt.timeout_ms={timeout_ms}"
    )


@contextlib.contextmanager
def model_server(sock: str, dsn: str, args: Sequence[str], log_path: str | None = None, wait_s: float = 300) -> Iterator[subprocess.Popen]:  # fmt: skip
    """``qopt-bench serve --socket SOCK --dsn DSN ARGS`` as its own process, until its
    socket answers; terminated (killed after 60 s) on leaving."""
    from rlsuite.apps.queryopt.plugin.protocol import alive

    cmd = [sys.executable, "-m", "rlsuite.apps.queryopt.plugin.cli", "serve", "--socket", sock, "--dsn", dsn, *args]  # fmt: skip
    log = open(log_path, "w") if log_path else subprocess.DEVNULL  # noqa: SIM115 - closed below
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.time() + wait_s
        while not alive(sock):
            if proc.poll() is not None or time.time() > deadline:
                where = f"its log: {log_path}" if log_path else "run `qopt-bench serve` by hand to see why"  # fmt: skip
                raise RuntimeError(f"the model server did not start; {where}")
            time.sleep(0.2)
        yield proc
    finally:
        proc.terminate()  # the server ends its retrain process itself
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
        if log_path:
            log.close()


def planning_ms(db, schema: str, sql: str) -> tuple[float, str]:
    """EXPLAIN's planning time of ``sql`` in ``db``'s session, and the plugin's note."""
    conn = db.conn
    with conn.cursor() as cur:
        cur.execute(f"SET search_path TO {schema}, public")
        cur.execute(f"EXPLAIN (SUMMARY, FORMAT JSON) {sql}")
        doc = cur.fetchone()[0]
    conn.rollback()
    if isinstance(doc, str):
        doc = json.loads(doc)
    return float(doc[0]["Planning Time"]), doc[0].get("Query Optimizer", "")


def psql_run(dsn: str, sql: str, options: str, sep: str = "|") -> tuple[float, list[str] | None, str]:  # fmt: skip
    """Time one plain psql client; its output lines (fields split by ``sep``; None when psql
    failed) and stderr."""
    env = dict(os.environ, PGOPTIONS=options)
    t0 = time.perf_counter()
    cmd = ["psql", dsn, "-X", "-q", "-A", "-t", "-F", sep, "-v", "ON_ERROR_STOP=1", "-c", sql]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    dt = time.perf_counter() - t0
    return dt, (p.stdout.splitlines() if p.returncode == 0 else None), p.stderr.strip()
