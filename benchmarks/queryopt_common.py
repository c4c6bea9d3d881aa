"""Shared pieces of the queryopt benchmarks (not a benchmark itself)."""

from __future__ import annotations

import contextlib
import json
import math
import os
import platform
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
MACHINE = f"{os.cpu_count()}-core CPU, no GPU ({platform.processor() or platform.machine()})"


@contextlib.contextmanager
def database(dsn: str | None):
    """The embedded server (started and stopped here unless it already ran) or ``dsn``."""
    from rlsuite.apps.queryopt.db import Database
    from rlsuite.apps.queryopt.server import EmbeddedServer

    srv = None
    if dsn is None:
        srv = EmbeddedServer().start()
        dsn = srv.dsn
    db = Database(dsn)
    try:
        yield db
    finally:
        db.close()
        if srv is not None and srv.started_here:
            srv.stop()


def write_json(name: str, payload: dict) -> str:
    os.makedirs(RESULTS, exist_ok=True)
    path = os.path.join(RESULTS, f"{name}.json")
    payload = {
        "machine": MACHINE,
        "time": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        **payload,
    }
    with open(path, "w") as f:
        json.dump(
            payload,
            f,
            indent=2,
            default=lambda o: None if isinstance(o, float) and math.isnan(o) else str(o),
        )
    return path


def speedup_plot(rows: list[dict], path: str, title: str) -> None:
    """Per-query PostgreSQL vs rewritten time (log scale)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(max(6, 0.35 * len(rows) + 2), 4))
    x = range(len(rows))
    ax.bar([i - 0.2 for i in x], [r["postgres_s"] for r in rows], 0.4, label="PostgreSQL")
    ax.bar([i + 0.2 for i in x], [r["rewritten_s"] for r in rows], 0.4, label="learned rewrite")
    ax.set_yscale("log")
    ax.set_xlabel("held-out query")
    ax.set_ylabel("runtime (s, log)")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
