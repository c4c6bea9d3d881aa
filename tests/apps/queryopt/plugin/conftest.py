"""Fixtures for pg_qopt: the extension installed, sockets the postgres user can reach, psql."""

from __future__ import annotations

import json
import os
import shutil
import socketserver
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rlsuite.apps.queryopt.workloads.joins import SEED_QUERY

SCHEMA = "qopt_joins"
SMALL_QUERY = "SELECT R.b, count(1) FROM R, S WHERE R.b = S.b AND R.a <= 500 GROUP BY R.b"
"""A join query that runs fast with and without eager aggregation."""


@pytest.fixture(scope="session")
def plugin_lib():
    """Build (PGXS) and install pg_qopt.so once per session."""
    from rlsuite.apps.queryopt.plugin.build import install

    return install()


@pytest.fixture(scope="session")
def sock_dir():
    """A directory the server's `postgres` user can enter (sockets are made 0666)."""
    d = Path(f"/tmp/rlsuite-qopt-test-{os.getpid()}")
    d.mkdir(exist_ok=True)
    os.chmod(d, 0o711)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def rules_server(sock: str | Path, dsn: str, workload: str) -> Any:
    """The real model server at ``sock`` (rules backend: eager aggregation on ``workload``,
    e.g. ``joins`` or ``schema:shop``), in this process: a context manager that starts it
    and closes it."""
    from rlsuite.apps.queryopt.plugin.decider import RulesDecider
    from rlsuite.apps.queryopt.plugin.modelserver import ModelServer

    decider = RulesDecider(dsn, workload, ["eager_aggregation"])
    return ModelServer(str(sock), decider, wait_ms=20_000)


def plugin_dsn(dsn: str, sock: str | Path, timeout_ms: int = 5000, extra: str = "") -> str:
    """``dsn`` whose sessions load pg_qopt and ask ``sock``."""
    return (
        f"{dsn} options='-c session_preload_libraries=pg_qopt -c qopt.enabled=on "
        f"-c qopt.server={sock} -c qopt.timeout_ms={timeout_ms} {extra}'"
    )


def psql(
    dsn: str, sql: str, pgoptions: str | None = None, timeout: float = 120
) -> tuple[int, str, str]:
    """Run ``sql`` through a plain psql client (unaligned, tuples only)."""
    env = dict(os.environ)
    env.pop("PGOPTIONS", None)
    if pgoptions:
        env["PGOPTIONS"] = pgoptions
    p = subprocess.run(
        ["psql", dsn, "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-c", sql],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )
    return p.returncode, p.stdout, p.stderr


def pgoptions(sock: str | Path, timeout_ms: int = 5000, extra: str = "") -> str:
    return (
        f"-c session_preload_libraries=pg_qopt -c qopt.enabled=on -c qopt.server={sock} "
        f"-c qopt.timeout_ms={timeout_ms} -c search_path={SCHEMA},public {extra}"
    )


class FakeServer:
    """A model server stand-in that answers what a test says (malformed, slow, fixed arm)."""

    def __init__(
        self,
        path: Path,
        reply: Callable[[dict], bytes | None],
        delay_s: float = 0.0,
        keep: bool = False,
    ):
        """``keep``: answer any number of lines per connection, as the model server does;
        otherwise one line, then the connection is closed."""
        self.path, self.reply, self.delay_s = Path(path), reply, delay_s
        self.requests: list[dict] = []
        self.connections = 0
        outer = self

        class H(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                outer.connections += 1
                while True:
                    line = self.rfile.readline()
                    if not line:
                        return
                    msg = json.loads(line)
                    outer.requests.append(msg)
                    if outer.delay_s:
                        time.sleep(outer.delay_s)
                    out = outer.reply(msg)
                    if out is not None:
                        try:
                            self.wfile.write(out)
                            self.wfile.flush()
                        except OSError:
                            return
                    if not keep:
                        return

        class S(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
            daemon_threads = True

        if self.path.exists():
            self.path.unlink()
        self.server = S(str(self.path), H)
        os.chmod(self.path, 0o666)
        # shutdown() waits for the next poll: 0.05 s instead of socketserver's 0.5
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def plans(self) -> list[dict]:
        return [r for r in self.requests if r.get("op") == "plan"]

    def __enter__(self) -> FakeServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.path.unlink(missing_ok=True)


@pytest.fixture
def fake_server(sock_dir):
    made: list[FakeServer] = []

    def make(
        reply, delay_s: float = 0.0, name: str = "fake.sock", keep: bool = False
    ) -> FakeServer:
        fs = FakeServer(sock_dir / name, reply, delay_s, keep)
        made.append(fs)
        return fs.__enter__()

    yield make
    for fs in made:
        fs.__exit__()


@pytest.fixture(scope="session")
def seed_rows(db):
    """The seed query's rows with the standard plan (about 3 s)."""
    return db.run(SEED_QUERY, SCHEMA).rows
