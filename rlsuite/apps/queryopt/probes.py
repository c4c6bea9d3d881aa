"""What the query-optimizer app needs from this machine, for ``rlsuite info``.

Announced in the ``rlsuite.probes`` entry-point group; each :class:`Probe` says
which component, whether it was found, and how to get it.
"""

from __future__ import annotations

import os
import shutil

from rlsuite.cli_common import Probe, dist_version

HOW = "pip install -e '.[queryopt]'"


def probes() -> list[Probe]:
    """The PostgreSQL server and its headers, psycopg2 and sqlglot; pyspark and Java for Spark."""
    from rlsuite.apps.queryopt.plugin.build import PluginError, pg_config
    from rlsuite.apps.queryopt.server import ServerError, find_bindir

    try:
        initdb = str(find_bindir() / "initdb")
    except ServerError:
        initdb = None
    try:
        include = pg_config("--includedir-server")
        headers = include if os.path.exists(os.path.join(include, "postgres.h")) else None
    except PluginError:
        headers = None
    return [
        Probe(
            "PostgreSQL server (initdb, pg_ctl)",
            initdb,
            "as root: apt-get install -y postgresql (make test/demo do this when run as root)",
        ),
        Probe(
            "PostgreSQL server headers (PGXS)",
            headers,
            "as root: apt-get install -y postgresql-server-dev-15 (make test does this as root)",
        ),
        Probe("psycopg2", dist_version("psycopg2-binary") or dist_version("psycopg2"), HOW),
        Probe("sqlglot", dist_version("sqlglot"), HOW),
        Probe("pyspark (--engine spark)", dist_version("pyspark"), HOW),
        Probe(
            "Java runtime (--engine spark)",
            os.environ.get("JAVA_HOME") or shutil.which("java"),
            "as root: apt-get install -y openjdk-17-jre-headless (make test/demo do this as root)",
        ),
    ]
