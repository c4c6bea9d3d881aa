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


def train_for_minutes(plan, run_dir: str, minutes: float, chunk: int, workers: int, console):
    """Train ``plan`` from scratch in ``run_dir`` on an embedded Ray of ``workers`` CPUs, in
    chunks of ``chunk`` iterations (resumed from the checkpoint) until ``minutes`` of wall-clock
    have passed (at least one chunk). Returns the last ``TrainResult``, the learning curve
    (one row per chunk) and the training seconds."""
    import shutil
    import time

    from rlsuite.platform import cluster, training

    if os.path.exists(run_dir):
        shutil.rmtree(run_dir)
    t0 = time.time()
    curve: list[dict] = []
    with cluster.local_cluster(num_cpus=workers):
        iterations = 0
        while not curve or time.time() - t0 < minutes * 60:
            iterations += chunk
            res = training.train(plan, iterations=iterations, run_dir=run_dir,
                                 resume=iterations > chunk, progress=True,
                                 checkpoint_every=chunk)  # fmt: skip
            curve.append(dict(iteration=res.iterations, env_steps=res.env_steps,
                              wall_s=time.time() - t0, episode_return_mean=res.final_return))  # fmt: skip
            console.print(f"it {res.iterations}: {res.env_steps} env steps, return "
                          f"{res.final_return:.1f}, {(time.time() - t0) / 60:.1f} min")  # fmt: skip
    return res, curve, time.time() - t0
