"""Build and install the ``pg_qopt`` extension with PGXS, and report its state.

The C sources ship inside this package; :func:`build` copies them into a build
directory and runs ``make`` with the server's ``pg_config`` (Debian:
``postgresql-server-dev-15``); :func:`install` copies ``pg_qopt.so`` into
``pg_config --pkglibdir`` (world-readable, since the server runs as
``postgres``). A session then loads it with ``LOAD 'pg_qopt'`` (or
``session_preload_libraries`` / ``shared_preload_libraries``).

Example::

    >>> from rlsuite.apps.queryopt.plugin.build import install
    >>> install()                                  # doctest: +SKIP
    PosixPath('/usr/lib/postgresql/15/lib/pg_qopt.so')
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

SOURCE_DIR = Path(__file__).resolve().parent
"""Where ``pg_qopt.c`` and its PGXS ``Makefile`` live."""
LIBRARY = "pg_qopt"
HOW_TO_GET_HEADERS = (
    "Install the server headers: as root `apt-get install postgresql-server-dev-15` "
    "(the same major version as the server), then restart running servers."
)


class PluginError(RuntimeError):
    """The extension could not be built, installed or loaded; the message says what to do."""


def pg_config(arg: str, pg_config_path: str | None = None) -> str:
    """One ``pg_config`` answer (e.g. ``--pkglibdir``)."""
    exe = pg_config_path or os.environ.get("PG_CONFIG") or shutil.which("pg_config")
    if not exe:
        raise PluginError(f"pg_config not found. {HOW_TO_GET_HEADERS}")
    try:
        out = subprocess.run([exe, arg], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        raise PluginError(f"`{exe} {arg}` failed: {e}. {HOW_TO_GET_HEADERS}") from e
    return out.stdout.strip()


def source_digest() -> str:
    """A short hash of the C source and Makefile (tells whether a build is current)."""
    h = hashlib.sha256()
    for name in ("pg_qopt.c", "Makefile"):
        h.update((SOURCE_DIR / name).read_bytes())
    return h.hexdigest()[:16]


def default_build_dir() -> Path:
    return Path(tempfile.gettempdir()) / f"rlsuite-pg_qopt-build-{os.geteuid()}"


def build(build_dir: Path | str | None = None, pg_config_path: str | None = None) -> Path:
    """Compile ``pg_qopt.so`` (skipped when the sources did not change); returns its path."""
    exe = pg_config_path or os.environ.get("PG_CONFIG") or shutil.which("pg_config")
    if not exe:
        raise PluginError(f"pg_config not found. {HOW_TO_GET_HEADERS}")
    include = Path(pg_config("--includedir-server", exe))
    if not (include / "postgres.h").exists():
        raise PluginError(f"no server headers in {include}. {HOW_TO_GET_HEADERS}")
    bdir = Path(build_dir) if build_dir else default_build_dir()
    bdir.mkdir(parents=True, exist_ok=True)
    so = bdir / f"{LIBRARY}.so"
    stamp = bdir / "source.sha"
    digest = source_digest() + ":" + pg_config("--version", exe)
    if so.exists() and stamp.exists() and stamp.read_text() == digest:
        return so
    for name in ("pg_qopt.c", "Makefile"):
        shutil.copyfile(SOURCE_DIR / name, bdir / name)
    make = shutil.which("make")
    if not make:
        raise PluginError(
            "`make` not found: install build-essential (apt-get install build-essential)"
        )
    proc = subprocess.run(
        [make, "-C", str(bdir), f"PG_CONFIG={exe}", "with_llvm=no"],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0 or not so.exists():
        raise PluginError(
            f"building pg_qopt failed (exit {proc.returncode}):\n{(proc.stderr or proc.stdout)[-3000:]}"
        )
    stamp.write_text(digest)
    return so


def installed_path(pg_config_path: str | None = None) -> Path:
    """Where the server looks for ``pg_qopt.so``."""
    return Path(pg_config("--pkglibdir", pg_config_path)) / f"{LIBRARY}.so"


def install(build_dir: Path | str | None = None, pg_config_path: str | None = None) -> Path:
    """Build if needed and copy ``pg_qopt.so`` into the server's library directory."""
    so = build(build_dir, pg_config_path)
    dest = installed_path(pg_config_path)
    if dest.exists() and dest.read_bytes() == so.read_bytes():
        return dest
    try:
        tmp = dest.with_name(f".{LIBRARY}.so.tmp{os.getpid()}")
        shutil.copyfile(so, tmp)
        os.chmod(tmp, 0o755)
        os.replace(tmp, dest)  # atomic: running servers keep the old mapping
    except PermissionError as e:
        raise PluginError(
            f"cannot write {dest}: {e}. Run `qopt-bench plugin install` as root (or with sudo)."
        ) from e
    return dest


@dataclass
class PluginStatus:
    """What :func:`status` found."""

    installed: str | None
    """Path of the installed library, None when missing."""
    current: bool
    """The installed library is the one these sources build."""
    loads: bool | None
    """``LOAD 'pg_qopt'`` worked on the given server (None: not tried)."""
    settings: dict[str, str]
    """The ``qopt.*`` settings seen by that session after LOAD."""
    error: str | None = None
    """Why loading failed."""


def status(dsn: str | None = None, pg_config_path: str | None = None) -> PluginStatus:
    """Installed? Built from these sources? Loads on ``dsn`` (when given), with which settings?"""
    dest = installed_path(pg_config_path)
    installed = str(dest) if dest.exists() else None
    current = False
    if installed:
        bdir = default_build_dir()
        so = bdir / f"{LIBRARY}.so"
        stamp = bdir / "source.sha"
        current = (
            so.exists()
            and stamp.exists()
            and stamp.read_text().split(":")[0] == source_digest()
            and so.read_bytes() == dest.read_bytes()
        )
    loads, settings, error = None, {}, None
    if dsn is not None:
        from rlsuite.apps.queryopt.engines.postgres import admin_execute

        try:
            rows = admin_execute(
                dsn,
                "LOAD 'pg_qopt'; SELECT name, setting FROM pg_settings "
                "WHERE name LIKE 'qopt.%' ORDER BY name",
            )
            settings = {r[0]: r[1] for r in rows}
            loads = True
        except Exception as e:  # noqa: BLE001 - reported, not raised
            loads, error = False, str(e).strip()
    return PluginStatus(installed, current, loads, settings, error)
