"""What the traffic training benchmarks share: their flags, training for a wall-clock budget,
evaluating controllers on the same episodes, and saving the result with its two-panel PNG."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rlsuite.bench import results_dir

RESULTS = results_dir("traffic")
MACHINE = "2-core CPU, no GPU, shared"


def training_parser(
    name: str,
    doc: str,
    minutes: float = 10.0,
    chunk: int = 5,
    chunk_help: str = "iterations between progress reports",
) -> argparse.ArgumentParser:
    """The flags every training benchmark takes: --minutes, --workers, --chunk and --run-dir
    (default ``runs/benchmarks/<name>``); the benchmark adds its own."""
    p = argparse.ArgumentParser(
        description=doc, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--minutes", type=float, default=minutes, help="training wall-clock budget")
    p.add_argument("--workers", type=int, default=2, help="env runners")
    p.add_argument("--chunk", type=int, default=chunk, help=chunk_help)
    p.add_argument("--run-dir", default=os.path.join("runs", "benchmarks", name))
    return p


def add_demonstrations_flag(p: argparse.ArgumentParser, help: str) -> None:
    """``--demonstrations EPISODES`` (default 0): recorded PI episodes to warm-start from."""
    p.add_argument("--demonstrations", type=int, default=0, metavar="EPISODES", help=help)


def evaluate_controllers(
    env_id: str, names: Sequence[str], controller: Callable[[str], tuple[Any, dict]],
    episodes: Any, cfg: Mapping[str, Any], columns: Mapping[str, str],
    say: Callable[[dict], str], console,
) -> list[dict]:  # fmt: skip
    """One row per controller name, evaluated on the same seeded ``episodes`` (a count or
    seeds): ``controller(name)`` gives the controller and its extra env config; ``columns``
    maps a row key to the evaluation summary's metric (its mean is kept); ``say(row)`` is
    printed after each."""
    from rlsuite.platform import evaluation

    rows = []
    for name in names:
        ctrl, extra = controller(name)
        ev = evaluation.evaluate(
            ctrl, evaluation.scenarios(env_id, episodes, {**cfg, **extra}), num_workers=0,
            name=name,
        )  # fmt: skip
        s = ev.summary
        rows.append({"controller": name, **{k: s[m]["mean"] for k, m in columns.items()}})
        console.print(say(rows[-1]))
    return rows


def finish(
    name: str, argv: list[str] | None, plan, cfg: dict, res, curve: list[dict], rows: list[dict],
    train_s: float, checks: Mapping[str, bool], console, bars: list[dict] | None = None,
    script: str | None = None, **plot: str,
) -> int:  # fmt: skip
    """Print each check's PASS/FAIL, save the result (:func:`save_training_result` with
    ``plot``'s labels) and return the exit status (0 when every check passed).
    ``script`` names the benchmark script in the recorded command when it is not ``name``."""
    for k, ok in checks.items():
        console.print(f"{'PASS' if ok else 'FAIL'}  {k}")
    out = dict(benchmark=name, machine=MACHINE, plan=plan.to_dict(), env_config=cfg,
               curve=curve, rows=rows, train_s=train_s, checkpoint=res.checkpoint,
               checks=dict(checks),
               command=f"flock /tmp/rlsuite-heavy.lock .venv/bin/python benchmarks/{script or name}.py "
               + " ".join(argv if argv is not None else sys.argv[1:]))  # fmt: skip
    save_training_result(name, out, bars=bars, **plot)
    return 0 if all(checks.values()) else 1


def save_training_result(
    name: str, out: dict, metric: str, curve_label: str, curve_title: str, bar_label: str,
    bar_title: str, bars: list[dict] | None = None,
) -> str:  # fmt: skip
    """Write ``results/<name>.json`` and ``<name>.png``: the learning curve (episode return
    against wall-clock) beside a bar per controller of ``metric`` (the learned one first):
    one per row of ``out["rows"]``, or of ``bars`` when given."""
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
    bars = out["rows"] if bars is None else bars
    names = [r["controller"] for r in bars]
    b.bar(names, [r[metric] for r in bars],
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


def sampler_rate(
    env_id: str, env_config: Mapping[str, Any], steps: int, scalar: bool = False, **plan: Any
) -> float:
    """Env steps/s of ONE RLlib env runner of the platform's sync plan (its module acting,
    no learning) on ``env_id``, after one warm-up sample of the same size. ``scalar``: one
    scalar env in the runner even where the env has a vector entry point (the path before
    it had one); ``plan`` may set ``num_envs_per_env_runner`` (copies in its vector env)."""
    import time

    from rlsuite.platform import cluster, envs, optimizers

    envs.rllib_env(env_id)
    if scalar:
        plan = {**plan, "num_envs_per_env_runner": 1}
    plan_obj = optimizers.make_plan(
        "sync", env=env_id, env_config=dict(env_config), num_env_runners=1, seed=0, **plan
    )
    with cluster.local_cluster(num_cpus=2):
        config = optimizers.to_rllib(plan_obj)
        if scalar:
            config = config.env_runners(gym_env_vectorize_mode="sync")
        algo = config.build_algo()
        try:
            group = algo.env_runner_group

            def sample(r):
                return sum(len(e) for e in r.sample(num_timesteps=steps, random_actions=False))

            group.foreach_env_runner(sample, local_env_runner=False)  # warm-up
            t = time.perf_counter()
            n = sum(group.foreach_env_runner(sample, local_env_runner=False))
            return n / (time.perf_counter() - t)
        finally:
            algo.stop()
