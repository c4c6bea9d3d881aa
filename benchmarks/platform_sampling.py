"""Sampling and iteration throughput of the platform against a plain loop and RLlib's defaults.

Pass criteria:
  1. the platform's default sampler >= 3x RLlib's default settings (env steps/s),
  2. the platform's default sampler >= 20% of a plain gymnasium loop per core,
  3. the ``sync`` plan's whole iterations (sampling + SGD) at least as fast as a
     hand-written single-process torch PPO loop on the same batch and epochs (the
     default plan, and with ``overlap=true``: the next batch sampled during the update),
  4. scale-out: >= 85% efficiency at 15 runners against 1 (on a machine with the CPUs),
  5. gpu-learner (on a machine with a GPU): at every size, ``num_gpus_per_learner="auto"``
     picks the device whose learner update is faster (``rule_agrees``).

Sections (``--sections``, default ``baseline,scaling``):
  baseline     the three criteria above;
  scaling      sampling only, ``--runners 1,2,4,8,15`` remote runners x 32 envs, 1 CPU
               each: steps/s, per runner and the efficiency against 1 runner. Sizes that
               need more CPUs than Ray has are skipped and listed as skipped (this
               2-core machine measures 1 and 2);
  ceiling      what the machine itself allows: ``--runners`` counts of plain processes
               (no Ray, no RLlib), each stepping 32 envs in a gymnasium vector env with a
               64x64 torch policy, all at once. Scale-out that falls short here is the
               hardware's (two threads per core, the all-core clock), not the platform's;
               both sections report CPU per step, CPU/wall, straggler and dispatch losses,
               so the two can be compared term by term;
  async-scaling
               the ``async`` plan (APPO) training with ``--runners`` runners: env steps
               sampled and trained per second (n runners need n + 1 CPUs: the learner);
  actions-connector
               one runner x 32 envs with the platform's module-to-env pipeline (the
               actions unsquashed for all envs at once) against RLlib's stock one, in
               interleaved rounds (``--rounds``); on a Box action space (Pendulum-v1);
  sync-iterations
               criterion 3 alone, in interleaved rounds (``--rounds``): each round runs
               the hand-written loop, the default sync plan, the sync plan with
               ``overlap=true``, with ``overlap=true, check_finite_gradients=false`` and
               with that and ``kl_coeff=0`` one after another; the ratios against the
               hand-written loop are per round (a busy machine slows a whole round, not
               one row), and the median is kept;
  overlap-priority
               what the overlapped plan's lower runner priority gives: one overlapped
               sync plan on CartPole-v1 (defaults), blocks of 6 iterations with the
               runners at the driver's priority and at the lowered one, in ABBA order
               (``--rounds`` x 4 blocks) so a trend over time cancels. Raising a
               priority back needs the right to (root or CAP_SYS_NICE); without it
               the section says so and is skipped;
  overlap-learning
               the learning cost of ``overlap=true``: CartPole-v1 to a smoothed return of
               150 with the default sync plan, overlap off and on, same seeds
               (``--seeds``): iterations, env steps and seconds to the threshold;
  gpu-learner  the sync plan's whole iteration and learner update with the learner on
               the CPU and on a GPU, at the default nets and at large ones (on the
               discrete-action envs of ``--envs``), beside what
               ``num_gpus_per_learner="auto"`` picks for each. Without a GPU the GPU
               rows are skipped (and say why) and the CPU rows still run.

Usage:
    .venv/bin/python benchmarks/platform_sampling.py [--quick] [--envs CartPole-v1,Pendulum-v1]
        [--sections baseline,scaling,ceiling,async-scaling,actions-connector,sync-iterations,
                    overlap-priority,overlap-learning,gpu-learner]
        [--runners 1,2,4,8,15] [--rounds 3] [--seeds 0,1,2] [--num-cpus N]

Writes benchmarks/results/platform/platform_sampling.json (``--out``) and, with the baseline,
platform_sampling.png.

This file parses the flags and runs the sections; they live beside it:
``platform_sampling_rates.py`` (the plain loops, the hand-written PPO, sample and iteration
rates, the baseline section), ``platform_sampling_scaling.py`` (scaling, ceiling,
async-scaling, gpu-learner), ``platform_sampling_sync.py`` (actions-connector,
sync-iterations, overlap-priority, overlap-learning) and ``platform_sampling_report.py``
(tables and charts).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys

import gymnasium as gym
import torch

from rlsuite.bench import results_dir

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

import platform_sampling_rates  # noqa: E402
import platform_sampling_sync  # noqa: E402
from platform_sampling_rates import baseline  # noqa: E402
from platform_sampling_report import (  # noqa: E402
    baseline_table,
    overlap_learning_table,
    plot_baseline,
    plot_overlap,
    plot_scaling,
    scaling_table,
    sync_iterations_table,
)
from platform_sampling_scaling import async_scaling, ceiling, gpu_learner, scaling  # noqa: E402
from platform_sampling_sync import (  # noqa: E402
    actions_connector,
    overlap_learning,
    overlap_priority,
    sync_iterations,
)

RESULTS = results_dir("platform")


def _machine() -> str:
    from rlsuite.platform.machine import cpu_topology
    from rlsuite.platform.resources import local_gpus

    gpus = local_gpus()
    gpu = ", ".join(f"{g.name} ({g.memory_gib:g} GiB)" for g in gpus) if gpus else "no GPU"
    return f"{cpu_topology().describe()}, {platform.processor() or platform.machine()}, {gpu}"


def main(argv: list[str] | None = None) -> int:
    import ray
    from rich.console import Console

    from rlsuite.platform import cluster
    from rlsuite.platform.machine import cpu_topology, usable_cpus

    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--quick", action="store_true", help="smaller budgets (a smoke run)")
    ap.add_argument("--envs", default="CartPole-v1,Pendulum-v1")
    ap.add_argument(
        "--num-cpus",
        type=int,
        default=usable_cpus(),
        help="Ray's CPUs (default: all this process can use)",
    )
    ap.add_argument("--profile", action="store_true", help="cProfile the sync plan's driver")
    ap.add_argument(
        "--sections",
        default="baseline,scaling",
        help="comma-separated: baseline, scaling, ceiling, async-scaling, actions-connector, "
        "sync-iterations, overlap-priority, overlap-learning, gpu-learner "
        "(default baseline,scaling)",
    )
    ap.add_argument(
        "--runners",
        type=lambda t: [int(x) for x in t.split(",")],
        default=[1, 2],
        help="runner (process) counts of the scaling, ceiling and async-scaling sections, "
        "e.g. 1,2,4,8,15 (default 1,2)",
    )
    ap.add_argument(
        "--rounds", type=int, default=3, help="rounds of the sync-iterations section (default 3)"
    )
    ap.add_argument(
        "--seeds",
        type=lambda t: [int(x) for x in t.split(",")],
        default=[0, 1, 2],
        help="seeds of the overlap-learning section (default 0,1,2)",
    )
    ap.add_argument("--out", default=os.path.join(RESULTS, "platform_sampling.json"))
    args = ap.parse_args(argv)
    sections = args.sections.split(",")
    known = {
        "baseline",
        "scaling",
        "ceiling",
        "async-scaling",
        "actions-connector",
        "sync-iterations",
        "overlap-priority",
        "overlap-learning",
        "gpu-learner",
    }
    bad = set(sections) - known
    if bad:
        ap.error(f"unknown sections {sorted(bad)}; choose from {', '.join(sorted(known))}")
    console = Console(width=None if sys.stdout.isatty() else 132)
    steps = 4000 if args.quick else 20000
    # remote env runners get these modules' functions by value (they are not importable
    # there: benchmarks/ is not a package on their path)
    for part in (platform_sampling_rates, platform_sampling_sync):
        ray.cloudpickle.register_pickle_by_value(part)
    cluster.init(num_cpus=args.num_cpus)
    cores = args.num_cpus
    out: dict = {
        "machine": _machine(),
        "sections": sections,
        "python": sys.version.split()[0],
        "ray": ray.__version__,
        "torch": torch.__version__,
        "cores_used": cores,
        "cpus": cpu_topology().to_dict(),
        "command": " ".join(
            [os.path.basename(sys.argv[0]), *(argv if argv is not None else sys.argv[1:])]
        ),
        "envs": {},
    }

    def save(done: bool) -> None:
        """Write what is measured so far; a run cut off by a time limit keeps it, and
        ``unfinished`` names the env and sections it had not finished."""
        out["unfinished"] = [] if done else [f"{e}: {s}" for e, s in pending.items()]
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w") as f:
            json.dump(out, f, indent=2, default=str)

    pending = {e: ",".join(sections) for e in args.envs.split(",")}
    try:
        for env_id in args.envs.split(","):
            console.rule(env_id)
            rec: dict = {}
            out["envs"][env_id] = rec
            if "scaling" in sections:
                rec["scaling"] = scaling(env_id, args.runners, cores, steps, console)
                save(False)
            if "ceiling" in sections:
                # a plain process steps ~5-10x faster than a runner: 20x the steps
                rec["ceiling"] = ceiling(env_id, args.runners, cores, 20 * steps, console)
                save(False)
            if "actions-connector" in sections:
                rec["actions_connector"] = actions_connector(
                    env_id, 2 if args.quick else args.rounds, steps, console
                )
            if "async-scaling" in sections:
                rec["async_scaling"] = async_scaling(
                    env_id, args.runners, cores, 2 if args.quick else 5, console
                )
                save(False)
            if "gpu-learner" in sections and isinstance(
                gym.make(env_id).action_space, gym.spaces.Discrete
            ):
                rec["gpu_learner"] = gpu_learner(env_id, 1 if args.quick else 3, console)
                save(False)
            discrete = isinstance(gym.make(env_id).action_space, gym.spaces.Discrete)
            if "sync-iterations" in sections and discrete:
                console.print("sync iterations against the hand-written loop, interleaved:")
                rec["sync_iterations"] = sync_iterations(
                    env_id, 2 if args.quick else args.rounds, 5 if args.quick else 10, console
                )
            if "baseline" not in sections:
                pending.pop(env_id)
                save(False)
                continue
            baseline(rec, env_id, cores, steps, args.quick, args.profile, console)
            pending.pop(env_id)
            save(False)
        if "overlap-priority" in sections:
            console.rule("overlap-priority")
            out["overlap_priority"] = overlap_priority(1 if args.quick else args.rounds, 6, console)
        if "overlap-learning" in sections:
            console.rule("overlap-learning")
            out["overlap_learning"] = overlap_learning(
                args.seeds[:1] if args.quick else args.seeds, 30, console
            )
    finally:
        cluster.shutdown()

    save(True)
    for env_id, rec in out["envs"].items():
        if "actions_connector" in rec:
            ac = rec["actions_connector"]
            console.print(
                f"{env_id}: the platform's module-to-env pipeline samples at "
                f"{ac['median_ratio']:.2f}x RLlib's stock one (median of "
                f"{len(ac['ratios'])} rounds: {', '.join(f'{r:.2f}' for r in ac['ratios'])})"
            )
    if {"scaling", "ceiling", "async-scaling"} & set(sections):
        console.print(scaling_table(out))
        scaling_png = os.path.splitext(os.path.abspath(args.out))[0] + "_scaling.png"
        plot_scaling(out, scaling_png)
        console.print(f"scale-out chart: {scaling_png}")
    if "sync-iterations" in sections:
        console.print(sync_iterations_table(out))
    if "overlap-learning" in sections:
        console.print(overlap_learning_table(out["overlap_learning"]))
    png = os.path.splitext(os.path.abspath(args.out))[0] + ".png"
    if "baseline" not in sections:
        if {"sync-iterations", "overlap-learning"} & set(sections):  # overlap-priority: JSON
            plot_overlap(out, png)
        return 0
    console.print(baseline_table(out))
    plot_baseline(out, png)
    return 0


if __name__ == "__main__":
    sys.exit(main())
