"""Learning table, the report: the summary of the cells (medians over seeds, ours against
RLlib's), the rich table and the PNG of learning curves. The cells are run and merged into
the JSON by ``platform_learning.py``, which writes this module's summary and plot into it
after each cell.
"""

from __future__ import annotations

import math
from typing import Any

from platform_learning_tasks import TASKS, Task  # noqa: E402

WALL_TARGET = 0.6
"""A row passes when ours' median wall time to the threshold is at most this times RLlib's."""


def impls_of(task: Task) -> list[str]:
    return ["rllib", "ours", *task.variants]


def reached_steps(reached: dict[str, Any]) -> int:
    """Steps to the threshold (cells written before the offline row say ``env_steps``)."""
    return reached["steps"] if "steps" in reached else reached["env_steps"]


def _median(xs: list[float]) -> float | None:
    xs = sorted(xs)
    if not xs:
        return None
    n = len(xs)
    return xs[n // 2] if n % 2 else 0.5 * (xs[n // 2 - 1] + xs[n // 2])


def _iteration_s(cell: dict[str, Any]) -> float | None:
    walls = [p[1] for p in cell["curve"]]
    return _median([b - a for a, b in zip(walls, walls[1:])])


def _iterations_to(cell: dict[str, Any]) -> int:
    """Iterations to the threshold: the curve's first point at it (a cell stops there)."""
    return cell["reached"].get("iterations", len(cell["curve"]))


def last_episodes_mean(curve: list[list[float]], n: int) -> dict[str, Any]:
    """The mean return of the last ``n`` training episodes, from the curve's per-iteration
    means and counts (the oldest iteration counted gives its mean for its share of the
    ``n``: exact when the ``n`` episodes end on an iteration's boundary)."""
    total, count = 0.0, 0
    for point in reversed(curve):
        if len(point) < 4 or not point[3] or math.isnan(point[2]):
            continue
        take = min(point[3], n - count)
        total, count = total + take * point[2], count + take
        if count == n:
            break
    return {"mean": round(total / count, 2) if count else None, "episodes": count}


def at_common_steps(results: dict[str, Any]) -> dict[str, Any]:
    """Rows run to their budget (``run_to_budget``) where some cell stopped short of it (a
    cap on the wall time): each impl's median return of the last ``final_episodes``
    episodes at the fewest steps any cell of the row reached, so that both sides are
    compared at the same step count."""
    out: dict[str, Any] = {}
    for key, task in TASKS.items():
        cells = [c for c in results.get("cells", {}).values() if c["task"] == key]
        if not task.final_episodes or len({c["steps"] for c in cells}) < 2:
            continue
        common = min(c["steps"] for c in cells)
        row: dict[str, Any] = {"steps": common, "episodes": task.final_episodes}
        for impl in sorted({c["impl"] for c in cells}):
            means = [
                last_episodes_mean([p for p in c["curve"] if p[0] <= common], task.final_episodes)
                for c in cells
                if c["impl"] == impl
            ]
            row[impl] = _median([m["mean"] for m in means if m["mean"] is not None])
        out[key] = row
    return out


def summarise(results: dict[str, Any]) -> dict[str, Any]:
    """Per task and impl: seeds run, seeds reached, median steps and wall to the threshold
    (over the seeds that reached it), and ours / RLlib's of those medians."""
    cells = results.get("cells", {})
    out: dict[str, Any] = {}
    for key, task in TASKS.items():
        row: dict[str, Any] = {}
        for impl in impls_of(task):
            cs = [c for c in cells.values() if c["task"] == key and c["impl"] == impl]
            if not cs:
                continue
            hit = [c for c in cs if c["reached"]]
            row[impl] = {
                "seeds": sorted(c["seed"] for c in cs),
                "reached": len(hit),
                "step_unit": task.step_unit,
                "median_steps_to_threshold": _median([reached_steps(c["reached"]) for c in hit]),
                "median_iterations_to_threshold": _median([_iterations_to(c) for c in hit]),
                "median_wall_s_to_threshold": _median([c["reached"]["wall_s"] for c in hit]),
                # robust to another process's burst on the shared machine: the median
                # iteration's seconds (same steps per iteration on both sides)
                "median_iteration_s": _median([_iteration_s(c) for c in cs]),
                "best_return_not_reached": {
                    str(c["seed"]): c["best_return"] for c in cs if not c["reached"]
                },
            }
            if task.final_episodes:
                k = f"final_return_last_{task.final_episodes}"
                row[impl][f"median_{k}"] = _median(
                    [c[k]["mean"] for c in cs if c.get(k, {}).get("mean") is not None]
                )
                row[impl]["final_steps"] = {str(c["seed"]): c["steps"] for c in cs}
            if task.eval_episodes:
                row[impl]["median_eval_deterministic"] = _median(
                    [c["eval_deterministic"]["mean"] for c in cs if "eval_deterministic" in c]
                )
            if task.anchor:
                m = row[impl].get(f"median_final_return_last_{task.final_episodes}")
                row[impl]["anchor"] = task.anchor
                row[impl]["ratio_vs_anchor"] = round(m / task.threshold, 3) if m else None
        base = row.get("rllib")
        for impl, s in row.items():
            if impl == "rllib" or not base:
                continue
            for what in ("steps", "wall_s"):
                a, b = s[f"median_{what}_to_threshold"], base[f"median_{what}_to_threshold"]
                s[f"{what}_ratio_vs_rllib"] = round(a / b, 3) if a and b else None
            a, b = s["median_iteration_s"], base["median_iteration_s"]
            same_machine = len(_machines(cells, key)) <= 1
            s["iteration_s_ratio_vs_rllib"] = round(a / b, 3) if a and b and same_machine else None
            if task.anchor:
                continue  # held to the anchor (ratio_vs_anchor), not to RLlib's wall time
            s["passed"] = (
                s["reached"] == len(s["seeds"])
                and s["wall_s_ratio_vs_rllib"] is not None
                and s["wall_s_ratio_vs_rllib"] <= WALL_TARGET
            )
        if row:
            out[key] = row
    return out


def _machines(cells: dict[str, Any], key: str) -> set[int]:
    """The CPU counts the task's cells ran on (cells written before it was recorded: the
    2-core machine)."""
    return {c.get("machine_cpus", 2) for c in cells.values() if c["task"] == key}


def overlap_vs_default(summary: dict[str, Any], cells: dict[str, Any]) -> dict[str, Any]:
    """Does ``overlap=true`` reach each sync threshold in no more steps than the default?"""
    out = {}
    for key, task in TASKS.items():
        if "ours_overlap" not in task.variants or key not in summary:
            continue
        per_seed = {}
        for c in cells.values():
            if c["task"] == key and c["impl"] in ("ours", "ours_overlap"):
                hit = reached_steps(c["reached"]) if c["reached"] else None
                per_seed.setdefault(str(c["seed"]), {})[c["impl"]] = hit
        s, o = summary[key].get("ours", {}), summary[key].get("ours_overlap", {})
        a, b = s.get("median_steps_to_threshold"), o.get("median_steps_to_threshold")
        out[key] = {
            "steps_to_threshold_per_seed": per_seed,
            "median_default": a,
            "median_overlap": b,
            "overlap_no_more_steps": (
                None
                if a is None or b is None
                else (b <= a and o.get("reached", 0) >= s.get("reached", 0))
            ),
        }
    return out


def plot(results: dict[str, Any], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = [k for k in TASKS if any(c["task"] == k for c in results["cells"].values())]
    if not keys:
        return
    fig, axes = plt.subplots(1, len(keys), figsize=(6 * len(keys), 4), squeeze=False)
    colours = {
        "rllib": "tab:blue",
        "ours": "tab:orange",
        "ours_overlap": "tab:green",
        "ours_32envs": "tab:red",
        "ours_local": "tab:purple",
    }
    for ax, key in zip(axes[0], keys, strict=True):
        task = TASKS[key]
        seen = set()
        for c in sorted(results["cells"].values(), key=lambda c: (c["impl"], c["seed"])):
            if c["task"] != key or not c["curve"]:
                continue
            # iterations in which no episode ended report NaN (Pendulum's 40 envs end
            # theirs together, every ~8 iterations; RLlib's BC evaluates every 3rd):
            # plot the iterations that scored
            pts = [p for p in c["curve"] if not math.isnan(p[2])]
            xs, ys = [p[0] for p in pts], [p[2] for p in pts]
            label = c["impl"] if c["impl"] not in seen else None
            seen.add(c["impl"])
            ax.plot(xs, ys, color=colours.get(c["impl"], "grey"), alpha=0.8, label=label)
        ax.axhline(task.threshold, color="k", ls="--", lw=0.8)
        ax.axvline(task.budget_steps, color="k", ls=":", lw=0.8)
        ax.set_title(f"{task.plan} on {task.env}")
        ax.set_xlabel(
            "env steps sampled" if task.updates_per_iteration is None else "learner updates"
        )
        ax.set_ylabel(
            "episode return (mean of the iteration's episodes)"
            if task.updates_per_iteration is None
            else "evaluation return (5 episodes)"
        )
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def table(results: dict[str, Any]) -> Any:
    from rich.table import Table

    t = Table(title="platform plans vs RLlib's tuned examples (2 CPUs)")
    for col in (
        "task",
        "impl",
        "reached",
        "steps to thr. (median)",
        "wall s to thr. (median)",
        "steps ratio",
        "wall ratio",
        "s/iter ratio",
        "best (not reached)",
    ):
        t.add_column(col)
    for key, row in results.get("summary", {}).items():
        task = TASKS[key]
        for impl, s in row.items():
            n = len(s["seeds"])
            t.add_row(
                f"{task.plan} {task.env} >= {task.threshold:g} in "
                + (
                    f"{task.budget_steps // 1000}k"
                    if task.updates_per_iteration is None
                    else f"{task.budget_steps} updates"
                ),
                impl,
                f"{s['reached']}/{n}",
                _fmt(s["median_steps_to_threshold"], "{:,.0f}"),
                _fmt(s["median_wall_s_to_threshold"], "{:.0f}"),
                *(
                    "" if impl == "rllib" else _fmt(s.get(f"{r}_ratio_vs_rllib"), "{:.2f}x", "-")
                    for r in ("steps", "wall_s", "iteration_s")
                ),
                ", ".join(
                    f"s{k}: " + _fmt(v, "{:.0f}", "no episode ended")
                    for k, v in s["best_return_not_reached"].items()
                )
                + _final_text(task, s),
            )
    for key, why in results.get("skipped", {}).items():
        t.add_row(key, "-", "not run", "", "", "", "", "", why[:60] + "...")
    return t


def _final_text(task: Task, s: dict[str, Any]) -> str:
    """The return at the budget, for rows held to it (``run_to_budget``)."""
    if not task.final_episodes:
        return ""
    m = s.get(f"median_final_return_last_{task.final_episodes}")
    ev = s.get("median_eval_deterministic")
    return (
        f" last {task.final_episodes} ep.: {_fmt(m, '{:.0f}', '-')}"
        + (f", eval {ev:.0f}" if ev is not None else "")
        + (f" ({s['ratio_vs_anchor']:.2f}x anchor)" if s.get("ratio_vs_anchor") else "")
    )


def _fmt(v: Any, f: str, missing: str = "not reached") -> str:
    return missing if v is None else f.format(v)
