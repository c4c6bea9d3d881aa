"""Figures: the ring's space-time diagram."""

from __future__ import annotations

import os
from collections.abc import Mapping

import numpy as np


def space_time_diagram(
    traj: Mapping[str, np.ndarray], path: str, title: str = "ring space-time diagram"
) -> str:
    """Every vehicle's position along the ring over time, coloured by speed; AVs drawn in black.

    ``traj`` is what ``RingEnv.trajectories()`` returns (``t``, ``x``, ``v``, ``ids``,
    ``length``, ``warmup_s``). Stop-and-go waves show as dark bands drifting backwards.
    """
    if "lane" in traj:
        return lanes_space_time_diagram(traj, path, title)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t, x, v, ids = traj["t"], traj["x"], traj["v"], [str(i) for i in traj["ids"]]
    if len(t) == 0:
        raise ValueError("no trajectory recorded: run an episode with record=True first")
    fig, ax = plt.subplots(figsize=(10, 5), dpi=110)
    tt = np.repeat(t[:, None], x.shape[1], axis=1)
    sc = ax.scatter(
        tt.ravel(),
        x.ravel(),
        c=v.ravel(),
        s=0.4,
        cmap="RdYlGn",
        vmin=0,
        vmax=max(float(np.percentile(v, 99)), 1.0),
        rasterized=True,
    )
    for j, vid in enumerate(ids):
        if vid.startswith("av"):
            xs = x[:, j].copy()
            xs[1:][np.abs(np.diff(xs)) > float(traj["length"]) / 2] = np.nan  # no wrap lines
            ax.plot(t, xs, color="black", lw=0.8, label=vid if j == ids.index(vid) else None)
    warm = float(traj.get("warmup_s", 0.0))
    if warm > 0:
        ax.axvline(warm, color="blue", ls="--", lw=1, label="control starts")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("position along the loop (m)")
    ax.set_ylim(0, float(traj["length"]))
    ax.set_title(title)
    fig.colorbar(sc, ax=ax, label="speed (m/s)")
    if any(i.startswith("av") for i in ids) or warm > 0:
        ax.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


def lanes_space_time_diagram(
    traj: Mapping[str, np.ndarray], path: str, title: str = "ring space-time diagram"
) -> str:
    """:func:`space_time_diagram` of a multi-lane ring: one panel per lane (left lane on
    top), each showing the vehicles while they are in that lane; the AV in black, its lane
    changes where its line jumps between panels.

    ``traj`` is what ``Ring2LaneEnv.trajectories()`` returns: the single-lane keys plus
    ``lane`` (steps, vehicles) and ``lanes``.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t, x, v, lane = traj["t"], traj["x"], traj["v"], traj["lane"]
    ids = [str(i) for i in traj["ids"]]
    if len(t) == 0:
        raise ValueError("no trajectory recorded: run an episode with record=True first")
    n_lanes, length = int(traj["lanes"]), float(traj["length"])
    vmax = max(float(np.percentile(v, 99)), 1.0)
    fig, axes = plt.subplots(n_lanes, 1, figsize=(10, 3.2 * n_lanes), dpi=110, sharex=True)
    tt = np.repeat(t[:, None], x.shape[1], axis=1)
    warm = float(traj.get("warmup_s", 0.0))
    for k in range(n_lanes):
        ax = axes[n_lanes - 1 - k]
        m = lane == k
        sc = ax.scatter(tt[m], x[m], c=v[m], s=0.4, cmap="RdYlGn", vmin=0, vmax=vmax,
                        rasterized=True)  # fmt: skip
        for j, vid in enumerate(ids):
            if vid.startswith("av"):
                xs = np.where(lane[:, j] == k, x[:, j], np.nan)
                xs[1:][np.abs(np.diff(x[:, j])) > length / 2] = np.nan  # no wrap lines
                ax.plot(t, xs, color="black", lw=0.9, label=vid)
        if warm > 0:
            ax.axvline(warm, color="blue", ls="--", lw=1, label="control starts")
        ax.set_ylim(0, length)
        ax.set_ylabel(f"lane {k}: position (m)")
        ax.legend(loc="upper right", fontsize=8)
        fig.colorbar(sc, ax=ax, label="speed (m/s)")
    axes[0].set_title(title)
    axes[-1].set_xlabel("time (s)")
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path
