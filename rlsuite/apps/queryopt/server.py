"""The embedded PostgreSQL server: a throwaway cluster in a private cache directory.

The cluster is created once with the server binaries on this machine (``initdb``)
and reused across runs (its data stays loaded); the server listens only on a
Unix socket inside that directory. Whoever starts the server stops it again
(``stop()``, the context manager, or the ``atexit`` hook); a server that was
already running is reused and left running. As root, the server runs as the
``postgres`` user, because PostgreSQL refuses to run as root.

Example::

    >>> from rlsuite.apps.queryopt.server import EmbeddedServer
    >>> with EmbeddedServer() as srv:          # doctest: +SKIP
    ...     print(srv.dsn)
    host=/var/tmp/rlsuite-pg-0/sock port=5432 dbname=rlsuite user=postgres
"""

from __future__ import annotations

import atexit
import os
import pwd
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

DATABASE = "rlsuite"
PORT = 5432
HOW_TO_INSTALL = (
    "Install the PostgreSQL server binaries: as root, `bash scripts/system-deps.sh` "
    "(or `apt-get install postgresql`); or point qopt-bench at an existing server with "
    "--dsn 'host=... dbname=... user=...'."
)


class ServerError(RuntimeError):
    """The embedded server could not be found, created, started or stopped."""


def default_root() -> Path:
    """Where the embedded cluster lives: ``$RLSUITE_PG_DIR``, else a per-user cache directory.

    As root the default is ``/var/tmp/rlsuite-pg-0`` because the ``postgres``
    user cannot enter root's home directory.
    """
    env = os.environ.get("RLSUITE_PG_DIR")
    if env:
        return Path(env).expanduser().absolute()
    if os.geteuid() == 0:
        return Path("/var/tmp/rlsuite-pg-0")
    return Path("~/.cache/rlsuite/pg").expanduser()


def find_bindir() -> Path:
    """The directory holding ``initdb``, ``pg_ctl`` and ``postgres``."""
    candidates: list[Path] = []
    if os.environ.get("RLSUITE_PG_BINDIR"):
        candidates.append(Path(os.environ["RLSUITE_PG_BINDIR"]))
    pg_config = shutil.which("pg_config")
    if pg_config:
        try:
            out = subprocess.run(
                [pg_config, "--bindir"], capture_output=True, text=True, check=True
            )
            candidates.append(Path(out.stdout.strip()))
        except (OSError, subprocess.CalledProcessError):
            pass
    base = Path("/usr/lib/postgresql")
    if base.is_dir():
        for v in sorted(base.iterdir(), key=lambda p: p.name, reverse=True):
            candidates.append(v / "bin")
    initdb = shutil.which("initdb")
    if initdb:
        candidates.append(Path(initdb).parent)
    for c in candidates:
        if (c / "initdb").exists() and (c / "pg_ctl").exists():
            return c
    raise ServerError(f"no PostgreSQL server binaries (initdb, pg_ctl) found. {HOW_TO_INSTALL}")


@dataclass
class EmbeddedServer:
    """One embedded PostgreSQL cluster under ``root`` (data in ``root/data``, socket in ``root/sock``)."""

    root: Path | None = None
    """The cache directory (default: :func:`default_root`)."""
    port: int = PORT
    """Names the socket file; the server opens no TCP port."""

    def __post_init__(self) -> None:
        self.root = Path(self.root) if self.root is not None else default_root()
        self.started_here = False
        self._atexit_registered = False

    # ------------------------------------------------------------------ paths
    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    @property
    def socket_dir(self) -> Path:
        return self.root / "sock"

    @property
    def log_file(self) -> Path:
        return self.root / "server.log"

    @property
    def dsn(self) -> str:
        """libpq connection string of the app's database on this server."""
        return f"host={self.socket_dir} port={self.port} dbname={DATABASE} user={self._db_user()}"

    def _db_user(self) -> str:
        return "postgres" if os.geteuid() == 0 else pwd.getpwuid(os.geteuid()).pw_name

    # --------------------------------------------------------------- running
    def _run(self, args: list[str], check: bool = True) -> subprocess.CompletedProcess:
        cmd = [str(a) for a in args]
        if os.geteuid() == 0:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd="/")
        if check and proc.returncode != 0:
            raise ServerError(
                f"`{' '.join(cmd)}` failed (exit {proc.returncode}): "
                f"{(proc.stderr or proc.stdout).strip()[-2000:]}"
            )
        return proc

    def _prepare_root(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        self.socket_dir.mkdir(exist_ok=True)
        if len(str(self.socket_dir)) > 90:
            raise ServerError(
                f"socket directory {self.socket_dir} is too long for a Unix socket path; "
                "set RLSUITE_PG_DIR to a shorter directory"
            )
        if os.geteuid() == 0:
            pg = pwd.getpwnam("postgres")
            for p in (self.root, self.socket_dir):
                os.chown(p, pg.pw_uid, pg.pw_gid)
                os.chmod(p, 0o700)
            # root's parents must be enterable by postgres
            for parent in self.root.parents:
                if parent == Path("/"):
                    break
                mode = parent.stat().st_mode
                if not mode & 0o001:
                    raise ServerError(
                        f"the postgres user cannot enter {parent} (mode {oct(mode & 0o777)}); "
                        "set RLSUITE_PG_DIR to a directory under /var/tmp or /tmp"
                    )

    def initialized(self) -> bool:
        return (self.data_dir / "PG_VERSION").exists()

    def running(self) -> bool:
        if not self.initialized():
            return False
        bindir = find_bindir()
        return (
            self._run([bindir / "pg_ctl", "status", "-D", self.data_dir], check=False).returncode
            == 0
        )

    def init(self) -> None:
        """Create the cluster (once) and the app's database."""
        bindir = find_bindir()
        self._prepare_root()
        if not self.initialized():
            self._run(
                [
                    bindir / "initdb",
                    "-D",
                    self.data_dir,
                    "--auth=trust",
                    "-U",
                    self._db_user(),
                    "--encoding=UTF8",
                    "--locale=C",
                    "--no-sync",
                ]
            )
            conf = self.data_dir / "postgresql.conf"
            extra = (
                "\n# rlsuite embedded server\n"
                "listen_addresses = ''\n"
                f"unix_socket_directories = '{self.socket_dir}'\n"
                f"port = {self.port}\n"
                "fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n"
                "shared_buffers = 128MB\nmax_connections = 40\n"
                "max_parallel_workers_per_gather = 0\n"
                "jit = off\n"
            )
            self._append_as_owner(conf, extra)

    def _append_as_owner(self, path: Path, text: str) -> None:
        with open(path, "a") as f:
            f.write(text)

    def start(self, timeout_s: float = 60.0) -> EmbeddedServer:
        """Create the cluster if needed and start the server unless it already runs."""
        self.init()
        if self.running():
            return self
        bindir = find_bindir()
        self._run(
            [
                bindir / "pg_ctl",
                "start",
                "-w",
                "-t",
                str(int(timeout_s)),
                "-D",
                self.data_dir,
                "-l",
                self.log_file,
                "-o",
                f"-k {self.socket_dir} -p {self.port}",
            ]
        )
        self.started_here = True
        if not self._atexit_registered:
            atexit.register(self._stop_at_exit)
            self._atexit_registered = True
        self._ensure_database()
        return self

    def _ensure_database(self) -> None:

        from rlsuite.apps.queryopt.engines.postgres import admin_execute

        base = f"host={self.socket_dir} port={self.port} dbname=postgres user={self._db_user()}"
        deadline = time.time() + 30
        while True:
            try:
                exists = admin_execute(
                    base, "SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,)
                )
                break
            except Exception:  # noqa: BLE001 - server still starting
                if time.time() > deadline:
                    raise
                time.sleep(0.2)
        if not exists:
            admin_execute(base, f'CREATE DATABASE "{DATABASE}"', autocommit=True)

    def stop(self) -> None:
        """Stop the server (fast shutdown) if it runs."""
        if self.initialized() and self.running():
            self._run([find_bindir() / "pg_ctl", "stop", "-m", "fast", "-w", "-D", self.data_dir])
        self.started_here = False

    def _stop_at_exit(self) -> None:
        if self.started_here:
            try:
                self.stop()
            except Exception:  # noqa: BLE001 - nothing more to do at exit
                pass

    def destroy(self) -> None:
        """Stop the server and delete the cluster's directory."""
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> EmbeddedServer:
        self.start()
        self._ensure_database()
        return self

    def __exit__(self, *exc) -> None:
        if self.started_here:
            self.stop()
