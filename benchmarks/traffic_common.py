"""What the traffic training benchmarks share: saving their result and its two-panel PNG."""

from __future__ import annotations

import json
import os

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


def save_training_result(
    name: str, out: dict, metric: str, curve_label: str, curve_title: str, bar_label: str,
    bar_title: str,
) -> str:  # fmt: skip
    """Write ``results/<name>.json`` and ``<name>.png``: the learning curve (episode return
    against wall-clock) beside a bar per controller of ``metric`` (the learned one first)."""
    os.makedirs(RESULTS, exist_ok=True)
    path = os.path.join(RESULTS, f"{name}.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=2, default=str)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4), dpi=110)
    a.plot([c["wall_s"] / 60 for c in out["curve"]],
           [c["episode_return_mean"] for c in out["curve"]], marker="o")  # fmt: skip
    a.set_xlabel("training wall-clock (min)")
    a.set_ylabel(curve_label)
    a.set_title(curve_title)
    names = [r["controller"] for r in out["rows"]]
    b.bar(names, [r[metric] for r in out["rows"]],
          color=["tab:green"] + ["grey"] * (len(names) - 1))  # fmt: skip
    b.set_ylabel(bar_label)
    b.set_title(bar_title)
    fig.tight_layout()
    fig.savefig(os.path.join(RESULTS, f"{name}.png"))
    plt.close(fig)
    return path
