"""A run's metric files: JSON lines, CSV, TensorBoard scalars, a learning-curve PNG, and
the progress bar of a run in the terminal.

    run_dir/
      metrics.jsonl        one JSON row per iteration (appended as it goes)
      metrics.csv          the same as a table (rewritten at every checkpoint)
      learning_curve.png   episode return against env steps
      tb/                  TensorBoard scalars

Example::

    >>> log = MetricsLog("runs/x", rows=[])                      # doctest: +SKIP
    >>> log.add({"iteration": 1, "env_steps": 4000, "episode_return_mean": 21.0})  # doctest: +SKIP
    >>> log.close()                                               # doctest: +SKIP
"""

from __future__ import annotations

import csv
import json
import math
import os
from typing import Any

JSONL = "metrics.jsonl"
CSV = "metrics.csv"
PNG = "learning_curve.png"
TENSORBOARD = "tb"


class MetricsLog:
    """The metric files of one run: rows go to JSON lines and TensorBoard as they come."""

    def __init__(self, run_dir: str, rows: list[dict[str, Any]]):
        """Start the log with ``rows`` (a resumed run's earlier rows; ``[]`` for a new run)."""
        self.run_dir = run_dir
        self.jsonl = os.path.join(run_dir, JSONL)
        rewrite_jsonl(self.jsonl, rows)
        self.writer = tensorboard_writer(run_dir)

    def add(self, row: dict[str, Any]) -> None:
        """Append one iteration's row (TensorBoard's step: its ``env_steps``)."""
        append_jsonl(self.jsonl, row)
        if self.writer is not None:
            for k, v in row.items():
                if isinstance(v, int | float) and not math.isnan(v):
                    self.writer.add_scalar(k, v, row.get("env_steps", 0))

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None


def has_run(run_dir: str) -> bool:
    """Whether ``run_dir`` already holds a run's metrics."""
    return os.path.exists(os.path.join(run_dir, JSONL))


def read_jsonl(path: str) -> list[dict[str, Any]]:
    """The rows of a JSON-lines file (up to a line cut by a kill); ``[]`` if there is none."""
    if not os.path.exists(path):
        return []
    rows = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError:  # a line cut by a kill
                    break
    return rows


def rewrite_jsonl(path: str, rows: list[dict[str, Any]]) -> None:
    """Write ``rows`` as the whole JSON-lines file."""
    with open(path, "w") as f:
        for r in rows:
            f.write(json.dumps(r, default=_jsonable) + "\n")


def append_jsonl(path: str, row: dict[str, Any]) -> None:
    """Append one row and flush it (a killed run keeps every finished iteration)."""
    with open(path, "a") as f:
        f.write(json.dumps(row, default=_jsonable) + "\n")
        f.flush()


def _jsonable(v: Any) -> Any:
    try:
        return float(v)
    except (TypeError, ValueError):
        return str(v)


def write_csv(run_dir: str, rows: list[dict[str, Any]]) -> None:
    """Write ``metrics.csv``: every row, with the union of their columns."""
    if not rows:
        return
    keys = list(dict.fromkeys(k for r in rows for k in r))
    with open(os.path.join(run_dir, CSV), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)


def tensorboard_writer(run_dir: str):
    """A TensorBoard writer for ``run_dir/tb`` (None without tensorboardX)."""
    try:
        from tensorboardX import SummaryWriter
    except ImportError:  # pragma: no cover - tensorboardX is a core dependency
        return None
    return SummaryWriter(os.path.join(run_dir, TENSORBOARD))


def plot_learning_curve(
    rows: list[dict[str, Any]], path: str, title: str = "", y: str = "episode_return_mean"
) -> str | None:
    """Episode return against env steps as a PNG; returns the path (None if nothing to plot)."""
    pts = [
        (r.get("env_steps", r["iteration"]), r.get(y))
        for r in rows
        if isinstance(r.get(y), int | float) and not math.isnan(r[y])
    ]
    if not pts:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5), dpi=120)
    xs, ys = zip(*pts, strict=True)
    ax.plot(xs, ys, marker="o", ms=3)
    ax.set_xlabel("env steps")
    ax.set_ylabel(y.replace("_", " "))
    ax.set_title(title)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def progress_info(row: dict[str, Any]) -> str:
    """The progress bar's text for one row: the return and the sampling speed, and for
    plans whose learner runs beside the sampling (``async_grad``, ``apex``) the updates/s,
    the learner's busy share, the staleness and the replay size where the row has them.

    >>> progress_info({"episode_return_mean": 21.0, "env_steps_this_iter": 400,
    ...                "time_this_iter_s": 2.0, "learner_utilisation": 0.5,
    ...                "updates_per_s": 30.0, "staleness_mean": 1.25, "replay_size": 900})
    'return    21.00      200 steps/s      30 updates/s  learner  50% busy  staleness 1.2  replay 900'
    """
    ret = row.get("episode_return_mean", math.nan)
    sps = row.get("env_steps_this_iter", 0) / max(row.get("time_this_iter_s") or 1e-9, 1e-9)
    info = f"return {ret:8.2f}  {sps:7.0f} steps/s"
    if "learner_utilisation" in row:  # plans whose learner runs beside the sampling
        info += f"  {row.get('updates_per_s', 0):6.0f} updates/s"
        info += f"  learner {100 * row['learner_utilisation']:3.0f}% busy"
    staleness = row.get("staleness_mean", row.get("weight_staleness"))
    if staleness is not None and not math.isnan(staleness):
        info += f"  staleness {staleness:.1f}"
    replay = row.get("replay_size", row.get("learner/replay_size"))
    if replay is not None:
        info += f"  replay {replay:.0f}"
    return info


class Progress:
    """A rich progress bar of training: iterations, the return, the sampling speed."""

    def __init__(self, show: bool, plan: Any, start: int, total: int):
        self.bar = None
        if not show:
            return
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        self.bar = Progress(
            TextColumn(f"[bold]{plan.name}[/] on {plan.env}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[info]}"),
            TimeElapsedColumn(),
        )
        self.bar.start()
        self.task = self.bar.add_task("train", total=total, completed=start, info="")

    def update(self, it: int, row: dict[str, Any]) -> None:
        if self.bar is not None:
            self.bar.update(self.task, completed=it, info=progress_info(row))

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
