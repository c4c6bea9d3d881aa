"""The learning table's summary of its cells: medians over seeds, ours against RLlib's, the
comparison at common steps of rows run to a budget, and the learning curves' figure.

A cell's ``curve`` has a point per iteration: ``[steps, wall_s, mean return of the episodes
that ended in it, their count]``.
"""

from __future__ import annotations

import math
from statistics import median
from typing import Any

from rlsuite.platform.benchmarking.learning_tasks import TASKS

WALL_TARGET = 0.6
"""A row passes when ours' median wall time to the threshold is at most this times RLlib's."""


def _median(xs: list[float]) -> float | None:
    return median(xs) if xs else None


def reached_steps(reached: dict[str, Any]) -> int:
    """Steps to the threshold (cells written before the offline row say ``env_steps``)."""
    return reached["steps"] if "steps" in reached else reached["env_steps"]


def _iteration_s(cell: dict[str, Any]) -> float | None:
    walls = [p[1] for p in cell["curve"]]
    return _median([b - a for a, b in zip(walls, walls[1:])])


def last_episodes_mean(curve: list[list[float]], n: int) -> dict[str, Any]:
    """The mean return of the last ``n`` training episodes, from the curve's per-iteration
    means and counts (the oldest iteration counted gives its mean for its share of the
    ``n``: exact when the ``n`` episodes end on an iteration's boundary).

    >>> last_episodes_mean([[100, 1.0, 10.0, 4], [300, 3.0, 40.0, 2]], 4)
    {'mean': 25.0, 'episodes': 4}
    """
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
    """Rows run to their budget where some cell stopped short of it (a cap on the wall
    time): each impl's median return of the last ``final_episodes`` episodes at the fewest
    steps any cell of the row reached, so both sides are compared at the same steps."""
    out: dict[str, Any] = {}
    for key, task in TASKS.items():
        cells = [c for c in results.get("cells", {}).values() if c["task"] == key]
        if not task.final_episodes or len({c["steps"] for c in cells}) < 2:
            continue
        common = min(c["steps"] for c in cells)
        row: dict[str, Any] = {"steps": common, "episodes": task.final_episodes}
        for impl in sorted({c["impl"] for c in cells}):
            curves = [[p for p in c["curve"] if p[0] <= common] for c in cells if c["impl"] == impl]
            means = [last_episodes_mean(cv, task.final_episodes)["mean"] for cv in curves]
            row[impl] = _median([m for m in means if m is not None])
        out[key] = row
    return out


def summarise(results: dict[str, Any]) -> dict[str, Any]:
    """Per task and impl: seeds run, seeds reached, median steps and wall to the threshold
    (over the seeds that reached it), and ours / RLlib's of those medians."""
    cells = results.get("cells", {})
    out: dict[str, Any] = {}
    for key, task in TASKS.items():
        row: dict[str, Any] = {}
        for impl in task.impls:
            cs = [c for c in cells.values() if c["task"] == key and c["impl"] == impl]
            if cs:
                row[impl] = _impl_summary(task, cs)
        base = row.get("rllib")
        for impl, s in row.items():
            if impl == "rllib" or not base:
                continue
            for what in ("steps", "wall_s"):
                a, b = s[f"median_{what}_to_threshold"], base[f"median_{what}_to_threshold"]
                s[f"{what}_ratio_vs_rllib"] = round(a / b, 3) if a and b else None
            a, b = s["median_iteration_s"], base["median_iteration_s"]
            # cells written before machine_cpus was recorded ran on the 2-core machine
            same_machine = (
                len({c.get("machine_cpus", 2) for c in cells.values() if c["task"] == key}) <= 1
            )
            s["iteration_s_ratio_vs_rllib"] = round(a / b, 3) if a and b and same_machine else None
            if not task.anchor:  # a row with an anchor is held to it, not to RLlib's wall time
                ratio = s["wall_s_ratio_vs_rllib"]
                s["passed"] = (
                    s["reached"] == len(s["seeds"]) and ratio is not None and ratio <= WALL_TARGET
                )
        if row:
            out[key] = row
    return out


def _impl_summary(task: Any, cs: list[dict[str, Any]]) -> dict[str, Any]:
    hit = [c for c in cs if c["reached"]]
    s: dict[str, Any] = {
        "seeds": sorted(c["seed"] for c in cs),
        "reached": len(hit),
        "step_unit": task.step_unit,
        "median_steps_to_threshold": _median([reached_steps(c["reached"]) for c in hit]),
        "median_iterations_to_threshold": _median(
            [c["reached"].get("iterations", len(c["curve"])) for c in hit]
        ),
        "median_wall_s_to_threshold": _median([c["reached"]["wall_s"] for c in hit]),
        # robust to another process's burst on the shared machine: the median iteration
        "median_iteration_s": _median([_iteration_s(c) for c in cs]),
        "best_return_not_reached": {
            str(c["seed"]): c["best_return"] for c in cs if not c["reached"]
        },
    }
    if task.final_episodes:
        k = f"final_return_last_{task.final_episodes}"
        s[f"median_{k}"] = _median(
            [c[k]["mean"] for c in cs if c.get(k, {}).get("mean") is not None]
        )
        s["final_steps"] = {str(c["seed"]): c["steps"] for c in cs}
    if task.eval_episodes:
        evals = [c["eval_deterministic"]["mean"] for c in cs if "eval_deterministic" in c]
        s["median_eval_deterministic"] = _median(evals)
    if task.anchor:
        m = s.get(f"median_final_return_last_{task.final_episodes}")
        s["anchor"] = task.anchor
        s["ratio_vs_anchor"] = round(m / task.threshold, 3) if m else None
    return s


def overlap_vs_default(summary: dict[str, Any], cells: dict[str, Any]) -> dict[str, Any]:
    """Does ``overlap=true`` reach each sync threshold in no more steps than the default?"""
    out = {}
    for key, task in TASKS.items():
        if "ours_overlap" not in task.variants or key not in summary:
            continue
        per_seed: dict[str, dict[str, Any]] = {}
        for c in cells.values():
            if c["task"] == key and c["impl"] in ("ours", "ours_overlap"):
                hit = reached_steps(c["reached"]) if c["reached"] else None
                per_seed.setdefault(str(c["seed"]), {})[c["impl"]] = hit
        s, o = summary[key].get("ours", {}), summary[key].get("ours_overlap", {})
        a, b = s.get("median_steps_to_threshold"), o.get("median_steps_to_threshold")
        fewer = (
            None
            if a is None or b is None
            else (b <= a and o.get("reached", 0) >= s.get("reached", 0))
        )
        out[key] = {
            "steps_to_threshold_per_seed": per_seed,
            "median_default": a,
            "median_overlap": b,
            "overlap_no_more_steps": fewer,
        }
    return out


def table_rows(results: dict[str, Any]) -> list[dict[str, Any]]:
    """The summary as table rows: per task and impl, seeds reached, the medians to the
    threshold and the ratios against RLlib's (and the return at the budget, if held to it)."""
    rows = []
    for key, row in results.get("summary", {}).items():
        task = TASKS[key]
        for impl, s in row.items():
            final = s.get(f"median_final_return_last_{task.final_episodes}")
            rows.append(
                {
                    "task": f"{task.plan} {task.env} >= {task.threshold:g}",
                    "impl": impl,
                    "reached": f"{s['reached']}/{len(s['seeds'])}",
                    f"{task.step_unit} to thr.": s["median_steps_to_threshold"],
                    "wall s to thr.": s["median_wall_s_to_threshold"],
                    **{
                        f"{r} ratio": s.get(f"{r}_ratio_vs_rllib")
                        for r in ("steps", "wall_s", "iteration_s")
                    },
                    "best (not reached)": s["best_return_not_reached"] or "",
                    "final": "" if final is None else final,
                }
            )
    return rows


def plot(results: dict[str, Any]) -> Any:
    """Learning curves, ours against RLlib's, one panel per task (None without cells)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = [k for k in TASKS if any(c["task"] == k for c in results["cells"].values())]
    if not keys:
        return None
    fig, axes = plt.subplots(1, len(keys), figsize=(6 * len(keys), 4), squeeze=False)
    colours = {
        "rllib": "tab:blue",
        "ours": "tab:orange",
        "ours_overlap": "tab:green",
        "ours_32envs": "tab:red",
        "ours_local": "tab:purple",
    }
    for ax, key in zip(axes[0], keys, strict=True):
        task, seen = TASKS[key], set()
        for c in sorted(results["cells"].values(), key=lambda c: (c["impl"], c["seed"])):
            if c["task"] != key or not c["curve"]:
                continue
            # iterations in which no episode ended report NaN: plot those that scored
            pts = [p for p in c["curve"] if not math.isnan(p[2])]
            label = c["impl"] if c["impl"] not in seen else None
            seen.add(c["impl"])
            ax.plot(
                [p[0] for p in pts],
                [p[2] for p in pts],
                color=colours.get(c["impl"], "grey"),
                alpha=0.8,
                label=label,
            )
        ax.axhline(task.threshold, color="k", ls="--", lw=0.8)
        ax.axvline(task.budget_steps, color="k", ls=":", lw=0.8)
        online = task.updates_per_iteration is None
        ax.set_title(f"{task.plan} on {task.env}")
        ax.set_xlabel("env steps sampled" if online else "learner updates")
        ax.set_ylabel(
            "episode return (the iteration's episodes)" if online else "evaluation return"
        )
        ax.legend()
    return fig


def finish(results: dict):
    """``results`` completed with the rows described, the summary, overlap against the
    default, the comparison at common steps and the criterion; the figure (None: no cells)."""
    from rlsuite.platform.benchmarking.learning_tasks import describe

    results["tasks"] = {k: describe(t) for k, t in TASKS.items()}
    results["summary"] = summarise(results)
    results["overlap_vs_default"] = overlap_vs_default(results["summary"], results["cells"])
    results["at_common_steps"] = at_common_steps(results)
    results["criterion"] = (
        "every seed of ours reaches RLlib's threshold within RLlib's budget, and ours' median "
        f"wall time to it is <= {WALL_TARGET}x RLlib's"
    )
    return plot(results)
