"""Shared pieces of the queryopt benchmarks (not a benchmark itself): the training flags,
train-then-compare, the embedded database, the results file and the speed-up plot."""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import platform
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rlsuite.bench import results_dir

RESULTS = results_dir("queryopt")
MACHINE = f"{os.cpu_count()}-core CPU, no GPU ({platform.processor() or platform.machine()})"


def training_parser(
    name: str,
    doc: str,
    iterations: int,
    max_steps: int,
    train_timeout_ms: int,
    test_timeout_ms: int,
    reward_help: str,
) -> argparse.ArgumentParser:
    """The flags of a train-then-test benchmark (defaults per benchmark); it adds its own."""
    ap = argparse.ArgumentParser(
        description=doc, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--iterations", type=int, default=iterations)
    ap.add_argument("--train-timeout-ms", type=int, default=train_timeout_ms)
    ap.add_argument("--test-timeout-ms", type=int, default=test_timeout_ms)
    ap.add_argument("--max-steps", type=int, default=max_steps)
    ap.add_argument(
        "--reward", choices=("runtime", "relative"), default="relative", help=reward_help
    )
    ap.add_argument("--dsn", default=None)
    ap.add_argument("--run-dir", default=f"runs/bench/{name}")
    return ap


def train_and_compare(
    db,
    w,
    queries: Sequence[str],
    args: argparse.Namespace,
    progress: Callable[[int, Any], None],
    repeat: int = 1,
    workload_config: Mapping[str, Any] | None = None,
    **train: Any,
):
    """Train the DQN rewriter from scratch in ``args.run_dir`` (embedded Ray, 2 CPUs) on
    workload ``w``, then time ``queries`` with PostgreSQL's plan and with the learned
    rewrites. ``train`` holds the :class:`TrainConfig` fields the benchmark sets itself.
    Returns the training result, the training seconds and the comparison."""
    from rlsuite.apps.queryopt import train as T
    from rlsuite.apps.queryopt.bench import compare
    from rlsuite.platform import cluster

    cfg = T.TrainConfig(
        dsn=db.dsn,
        workload=w.name,
        workload_config=dict(workload_config or {}),
        max_steps=args.max_steps,
        reward=args.reward,
        timeout_ms=args.train_timeout_ms,
        iterations=args.iterations,
        learning_starts=100,
        target_update_freq=100,
        **train,
    )
    shutil.rmtree(args.run_dir, ignore_errors=True)
    t0 = time.time()
    with cluster.local_cluster(num_cpus=2):
        res = T.train(cfg, args.run_dir, progress=True)
    train_s = time.time() - t0
    on = {} if workload_config is None else dict(workload=w.name, workload_config=workload_config)
    rw = T.LearnedRewriter(args.run_dir, db.dsn, timeout_ms=args.test_timeout_ms, **on)
    try:
        b = compare(
            db,
            w,
            queries,
            rw,
            timeout_ms=args.test_timeout_ms,
            repeat=repeat,
            progress=progress,
        )
    finally:
        rw.close()
    return res, train_s, b


def train_summary(res, train_s: float) -> dict[str, Any]:
    """The results file's ``train`` entry."""
    return {
        "iterations": res.iterations,
        "env_steps": res.env_steps,
        "wall_s": train_s,
        "final_return": res.final_return,
    }


@contextlib.contextmanager
def database(dsn: str | None):
    """The embedded server (started and stopped here unless it already ran) or ``dsn``: the
    CLI's own session on PostgreSQL, without its console line."""
    from rlsuite.apps.queryopt.spaces import PostgresSpace

    with PostgresSpace().session(dsn, say=lambda _line: None) as db:
        yield db


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


def save_comparison(name: str, payload: dict, bench, plot_title: str, console) -> str:
    """Write ``results/<name>.json`` (``payload`` followed by the comparison's summary and
    rows) and ``<name>.png`` (its :func:`speedup_plot`); returns the JSON's path."""
    queries = bench.to_dict()
    path = write_json(name, {**payload, **queries})
    speedup_plot(queries["queries"], os.path.join(RESULTS, f"{name}.png"), plot_title)
    console.print(f"wrote {path}")
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
