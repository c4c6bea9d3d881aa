"""R2D2's StatelessCartPole measurements (``benchmarks/platform/r2d2.py``, which declares
their settings and rows): the per-plan summary of cells trained to a return, with the plans
compared at equal env steps, and the plot of their curves.
"""

from __future__ import annotations

import os
import statistics


def _common_steps(out: dict, seed: str) -> int:
    """The fewest env steps any plan ran on ``seed``."""
    return min(cells[seed]["env_steps_run"] for cells in out.values() if seed in cells)


def _best_within(curve: list, env_steps: int) -> float | None:
    """The best smoothed return of a curve's points at or below ``env_steps``."""
    got = [p["episode_return_mean"] for p in curve if p["env_steps"] <= env_steps]
    got = [r for r in got if r == r]  # NaN: no episode ended yet
    return max(got) if got else None


def _rate(cell: dict) -> float | None:
    """A cell's env steps per training second (all its pieces)."""
    return round(cell["env_steps_run"] / cell["wall_s_run"], 1) if cell.get("wall_s_run") else None


def summary(out: dict, s) -> dict:
    """Per plan: seeds run and reached, the medians over the seeds that reached 350, the
    best return, and each seed's env steps and wall seconds run (a cut run says where)."""
    per = {}
    for name, seeds in out.items():
        done = [v for v in seeds.values() if v["reached"]]
        within = {k: _best_within(v["curve"], _common_steps(out, k)) for k, v in seeds.items()}
        got = [r for r in within.values() if r is not None]
        per[name] = dict(
            seeds=len(seeds),
            reached=len(done),
            all_reached=len(done) == len(seeds),
            none_reached=not done,
            median_env_steps_to_target=statistics.median(v["env_steps"] for v in done)
            if done
            else None,
            median_wall_s_to_target=statistics.median(v["wall_s"] for v in done) if done else None,
            best_return=max(v["best_return"] for v in seeds.values()),
            best_return_per_seed={k: v["best_return"] for k, v in seeds.items()},
            env_steps_run={k: v["env_steps_run"] for k, v in seeds.items()},
            wall_s_run={k: v.get("wall_s_run") for k, v in seeds.items()},
            min_env_steps_run=min(v["env_steps_run"] for v in seeds.values()),
            # the plans side by side at equal env steps: each seed's best return up to the
            # fewest env steps any plan ran on that seed (a plan that stops at 350 or is cut)
            common_env_steps={k: _common_steps(out, k) for k in seeds},
            best_return_within_common_env_steps=within,
            median_best_return_within_common_env_steps=statistics.median(got) if got else None,
            env_steps_per_s={k: _rate(v) for k, v in seeds.items()},
            pieces={k: len(v.get("pieces", [])) or 1 for k, v in seeds.items()},
        )
    return dict(plans=out, summary=per, target=s.target, max_env_steps=s.max_env_steps,
                max_wall_s=s.max_wall_s, cpus=os.cpu_count())  # fmt: skip


def plot(out: dict, s, plans: tuple):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
    for i, name in enumerate(p for p in plans if p in out):
        for j, c in enumerate(out[name].values()):
            xs = [r["env_steps"] for r in c["curve"]]
            ws = [r["wall_s"] for r in c["curve"]]
            ys = [r["episode_return_mean"] for r in c["curve"]]
            label = name if j == 0 else None
            axes[0].plot(xs, ys, color=f"C{i}", alpha=0.8, label=label)
            axes[1].plot(ws, ys, color=f"C{i}", alpha=0.8, label=label)
    for ax, x in zip(axes, ("env steps", "wall seconds (2 shared cores)")):
        ax.axhline(s.target, color="grey", ls="--", lw=0.8)
        ax.set_xlabel(x)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("smoothed return (20 episodes)")
    axes[0].legend()
    fig.suptitle(f"StatelessCartPole to {s.target:g} within {s.max_env_steps:,} env steps")
    return fig
