"""Learning table: the platform's plans against RLlib's own tuned examples.

For each task row, on the same machine and the same seeds:

``rllib``
    RLlib's tuned example, its ``AlgorithmConfig`` built as the example file builds it and
    trained through RLlib alone (``config.build_algo()`` then ``algo.train()``, as the
    example's ``--no-tune``). Unchanged except: ``.debugging(seed=...)`` (the examples
    set no seed) and ``num_gpus_per_learner=0``, which the examples' launcher sets on a
    machine without GPUs. Each example's default runner count fits 2 CPUs, so none was
    changed.
``ours``
    The platform's plan (:mod:`rlsuite.platform.optimizers`) with the example's
    hyperparameters mapped onto the plan's fields; where the plan cannot say what the
    example says, the row's ``differences`` list it. Built by the platform
    (``to_rllib``, its learner, connectors and runner callbacks, one torch thread in the
    driver: ``cluster.init``).
``ours_overlap``
    (sync rows) the same plan with ``overlap=true``.
``ours_32envs``
    the same plan with the platform's default 32 envs per runner instead of the
    example's (the learning settings unchanged). On the DQN row also the default 2
    remote runners and fragments of 4, with ``training_intensity`` keeping the example's
    updates per env step (the row's comment in ``platform_learning_tasks.py``).
``ours_frag5``
    (DQN row) the example's layout with fragments of 5 env steps instead of the plan's
    ``n_step`` (3) under ``"auto"``: RLlib's DQN learns one batch per fragment, so this
    is the example's update count per env step (its ``n_step=(2, 5)`` samples 5 per call).

``ours_e8_overlap``
    (HalfCheetah row) cleanrl's learning settings sampled 8 envs x 256 steps at a time,
    with ``overlap=true`` (the next batch sampled during the update).
``ours_local``
    (Pendulum row) the example's 40 envs and learning settings, sampled in the driver
    instead of 2 remote runners x 20 envs.

``imitation-cartpole`` (BC) is offline: both sides learn from the same recorded
demonstrations (RLlib's dataset is not in the wheel; ``platform_learning_tasks.py`` records
a PD expert's 200,000 transitions in its place), steps are learner updates of 1024
transitions (5 per iteration, both sides) and the stop metric is the evaluation return
(``evaluation/env_runners/episode_return_mean``, 5 episodes), >= 350 within 350
iterations, as ``cartpole_bc.py`` stops. Its example needs 4 logical CPUs in Ray (see the
row), so that row gives Ray 4 on the same 2 cores, both sides.
``async-cartpole`` (APPO) gives Ray 3: RLlib 2.60's APPO runs its learner in a 1-CPU
actor even with ``num_learners=0``, and with 2 logical CPUs held by the example's 2
runners it is never scheduled (see the row).

``ppo-halfcheetah`` is held to a published number instead of RLlib's wall time: cleanrl's
``ppo_continuous_action.py`` on HalfCheetah-v4, 1442.64 +- 46.03 after 1M steps (the mean
return of the training episodes). Ours is the sync plan with cleanrl's hyperparameters
(the row's ``differences`` say what the plan cannot match, and that the env is v5), run
to the full 1M steps (``run_to_budget``), scored as the mean return of the last 100
training episodes and by a deterministic evaluation of the final policy, loaded from its
platform checkpoint, on 10 held-out env seeds. RLlib's own row for it,
``mujoco_ppo.py``, asks for 4 runners x 16 envs and a remote learner: it runs with
``--num-cpus 5`` (5 logical CPUs on the 2 cores, or on a larger machine with
``benchmarks/platform_device.sh halfcheetah``: three seeds side by side on 16 cores, each
cut by ``--max-wall-s``) into its own JSON, whose cells ``--merge`` adds to this row's.
Cells cut short of the budget are compared with the others at the fewest steps any cell
reached (the JSON's ``at_common_steps``)::

    .venv/bin/python benchmarks/platform_learning.py --tasks ppo-halfcheetah --impls ours \
        --seeds 0,1,2 --lock /tmp/rlsuite-heavy.lock --max-wall-s 2400 --resume \
        --out benchmarks/results/platform/platform_learning_halfcheetah.json

The online rows are stopped as RLlib's example launcher stops them: at the threshold on
``env_runners/episode_return_mean``, at the budget of env steps sampled, or after 200
iterations. In RLlib 2.60 that return is the mean of the stochastic training episodes
that *ended during the iteration* (at most ``metrics_num_episodes_for_smoothing`` of
them: each iteration's reduce empties the window), not a moving mean over 100 episodes:
with DQN's 1000 steps per iteration near 450 that is the mean of 2 or 3 episodes. The
platform sets the window to 20; here both sides use RLlib's 100, so the threshold means
the same thing on both sides.

Pass criterion of a row (the learning-tests targets): every seed of ``ours`` reaches
RLlib's threshold within RLlib's budget, and ours' wall time to the threshold is at
most 0.6x RLlib's (median over seeds, same machine). A threshold not reached is
reported as not reached with the best return.

Each (task, impl, seed) cell runs in its own process and is saved to the JSON when it
ends, so ``--resume`` skips finished cells. On the shared 2-core machine each cell holds
the heavy-job lock only while it computes, in segments of at most ``--segment-s``
(waits for the lock are not timed)::

    .venv/bin/python benchmarks/platform_learning.py --tasks sync-cartpole,replay-cartpole \\
        --seeds 0,1,2 --lock /tmp/rlsuite-heavy.lock --resume

Results: ``benchmarks/results/platform/platform_learning.json`` and
``platform_learning.png`` (learning curves, ours against RLlib's, per task), summarised
and drawn by ``platform_learning_report.py``. The rows
(RLlib's example configs and our plans' values) are in ``platform_learning_tasks.py``;
the ``es`` plan's rows, against Salimans et al. 2017 on MuJoCo, in
``platform_learning_es.py``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from rlsuite.bench import results_dir

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

import platform_learning_tasks  # noqa: E402
from platform_learning_report import (  # noqa: E402, F401  (_median, WALL_TARGET: re-exported)
    WALL_TARGET,
    _median,
    at_common_steps,
    impls_of,
    last_episodes_mean,
    overlap_vs_default,
    plot,
    reached_steps,
    summarise,
    table,
)
from platform_learning_tasks import SKIPPED, TASKS, Task  # noqa: E402

RESULTS = results_dir("platform")
JSON_PATH = os.path.join(RESULTS, "platform_learning.json")
PNG_PATH = os.path.join(RESULTS, "platform_learning.png")
NUM_CPUS = 2
"""Cores of the machine the table was measured on (Ray's logical CPUs: each row's
``num_cpus``)."""
SMOOTHING = 100


# -- one cell ---------------------------------------------------------------------------


def _our_plan(task: Task, impl: str, seed: int) -> Any:
    from rlsuite.platform.optimizers import make_plan

    return make_plan(task.plan, **{**task.ours, **task.variants.get(impl, {}), "seed": seed})


class _HeavyLock:
    """The machine's heavy-job lock (``flock``), held in segments: after ``segment_s`` of
    work it is released between two iterations and taken again, so one long cell does
    not hold the machine for longer than a short job would. Time spent waiting for it
    is not counted in the cell's wall time. No path: no lock."""

    def __init__(self, path: str | None, segment_s: float):
        self.path, self.segment_s, self.waited_s, self.segments = path, segment_s, 0.0, 0
        self._fd: int | None = None
        self._since = 0.0

    def take(self) -> None:
        import fcntl

        if self.path is None:
            return
        t = time.perf_counter()
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        self._since = time.perf_counter()
        self.waited_s += self._since - t
        self.segments += 1

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the only descriptor drops the flock
            self._fd = None

    def between_iterations(self) -> None:
        if self._fd is not None and time.perf_counter() - self._since > self.segment_s:
            self.release()
            time.sleep(1.0)  # let a waiting job take it
            self.take()


def run_cell(
    key: str,
    impl: str,
    seed: int,
    lock: str | None = None,
    segment_s: float = 420.0,
    max_wall_s: float | None = None,
    num_cpus: int | None = None,
) -> dict[str, Any]:
    """Train one (task, impl, seed) to the threshold (rows with ``run_to_budget``: past
    it), the budget, the row's iteration limit or ``max_wall_s`` of computing. Ray gets
    ``num_cpus`` logical CPUs (default: the row's)."""
    import ray

    task = TASKS[key]
    num_cpus = num_cpus or task.num_cpus
    heavy = _HeavyLock(lock, segment_s)
    heavy.take()
    heavy.waited_s = 0.0  # the cell's clock starts once it holds the lock
    t0 = time.perf_counter()
    if impl == "rllib":
        # remote env runners get this module's functions by value (it is not importable
        # there: benchmarks/ is not a package on their path)
        ray.cloudpickle.register_pickle_by_value(platform_learning_tasks)
        ray.init(num_cpus=num_cpus, include_dashboard=False, logging_level="ERROR")
        config = task.rllib_config().learners(num_gpus_per_learner=0).debugging(seed=seed)
        described = {"example": task.source}
    else:
        from rlsuite.platform import cluster, resources
        from rlsuite.platform.optimizers import to_rllib

        cluster.init(num_cpus=num_cpus)
        plan = _our_plan(task, impl, seed)
        config = to_rllib(plan, resources.resolve(plan, log=False))
        config = config.reporting(metrics_num_episodes_for_smoothing=SMOOTHING)
        described = {"plan": plan.to_dict()}
    extra: dict[str, Any] = {}
    algo = config.build_algo()
    build_s = time.perf_counter() - t0
    curve: list[list[float]] = []
    reached = None
    best = -math.inf
    stop = "iterations"
    try:
        for it in range(1, task.max_iterations + 1):
            heavy.between_iterations()
            r = algo.train()
            steps = _steps_of(task, r, it)
            ret = float(_get(r, task.metric, math.nan))
            wall = time.perf_counter() - t0 - heavy.waited_s
            episodes = int(_get(r, ("env_runners", "num_episodes"), 0))
            curve.append([steps, round(wall, 2), ret, episodes])
            if not math.isnan(ret):
                best = max(best, ret)
            if ret >= task.threshold and reached is None:
                reached = {"steps": steps, "iterations": it, "wall_s": round(wall, 2)}
                if not task.run_to_budget:
                    stop = "threshold"
                    break
            if steps >= task.budget_steps:
                stop = "budget"
                break
            if max_wall_s is not None and wall >= max_wall_s:
                stop = "max_wall_s"
                break
        if task.final_episodes:
            extra[f"final_return_last_{task.final_episodes}"] = last_episodes_mean(
                curve, task.final_episodes
            )
        if task.eval_episodes and impl != "rllib":
            extra.update(_evaluate_held_out(task, plan, algo, len(curve), int(curve[-1][0])))
    finally:
        algo.stop()
        ray.shutdown()
        heavy.release()
    return {
        "task": key,
        "impl": impl,
        "seed": seed,
        "reached": reached,
        "best_return": best if best > -math.inf else None,
        "stopped_by": stop,
        "max_wall_s": max_wall_s,  # the cap on computing seconds (None: none)
        "steps": curve[-1][0] if curve else 0,
        "step_unit": task.step_unit,
        "wall_s": round(time.perf_counter() - t0 - heavy.waited_s, 2),
        "lock_segments": heavy.segments,
        "ray_num_cpus": num_cpus,
        "machine_cpus": os.cpu_count(),
        # the 1-min load average at the end: > 2 means other processes shared the 2 cores
        "loadavg_1min_at_end": round(os.getloadavg()[0], 2),
        "build_s": round(build_s, 2),
        "iterations": len(curve),
        "curve_columns": ["steps", "wall_s", "return", "episodes_ended"],
        "curve": curve,
        **extra,
        **described,
    }


HELD_OUT_SEEDS = 1_000_000_000
"""First env seed of the held-out evaluation episodes (training seeds its envs from the
run's seed, far below)."""


def _evaluate_held_out(
    task: Task, plan: Any, algo: Any, iteration: int, steps: int
) -> dict[str, Any]:
    """The final policy, saved as a platform checkpoint and loaded as its controller
    (observation filter included), acting deterministically on ``task.eval_episodes``
    held-out env seeds."""
    import tempfile

    from rlsuite.platform import evaluation
    from rlsuite.platform.backends.rllib import RLlibBackend
    from rlsuite.platform.checkpoints import load_controller
    from rlsuite.platform.checkpoints.layout import write_meta

    t = time.perf_counter()
    with tempfile.TemporaryDirectory() as d:
        backend = RLlibBackend(plan, algo=algo)
        backend.save(d)
        write_meta(d, plan, iteration, steps, backend)
        controller = load_controller(d)
        seeds = range(HELD_OUT_SEEDS, HELD_OUT_SEEDS + task.eval_episodes)
        ev = evaluation.evaluate(
            controller, evaluation.scenarios(task.env, seeds), num_workers=0, name="final"
        )
    returns = [round(r["return"], 2) for r in ev.episodes]
    return {
        "eval_deterministic": {
            "mean": round(ev.summary["return"]["mean"], 2),
            "std": round(ev.summary["return"]["std"], 2),
            "returns": returns,
            "env_seeds": f"{seeds.start}..{seeds.stop - 1}",
            "wall_s": round(time.perf_counter() - t, 2),
        }
    }


def _get(result: dict[str, Any], path: tuple[str, ...], default: Any) -> Any:
    for k in path:
        if not isinstance(result, dict) or k not in result:
            return default
        result = result[k]
    return result


def _steps_of(task: Task, result: dict[str, Any], iteration: int) -> int:
    """The row's steps after ``iteration``: env steps sampled, or (offline rows) learner
    updates, ``updates_per_iteration`` per iteration on both sides."""
    if task.updates_per_iteration is not None:
        return iteration * task.updates_per_iteration
    return int(_get(result, ("env_runners", "num_env_steps_sampled_lifetime"), 0))


# -- driver -----------------------------------------------------------------------------


def _cell_id(key: str, impl: str, seed: int) -> str:
    return f"{key}|{impl}|{seed}"


def _load(path: str) -> dict[str, Any]:
    if os.path.exists(path):
        with open(path) as f:
            return json.load(f)
    return {}


def _save(results: dict[str, Any], path: str) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(results, f, indent=1)
    os.replace(tmp, path)


def _csv(kind: Callable[[str], Any]) -> Callable[[str], list[Any]]:
    return lambda text: [kind(x) for x in text.split(",") if x]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        prog="platform_learning.py",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument(
        "--tasks",
        type=_csv(str),
        default=list(TASKS),
        help=f"rows to run, comma-separated (default all: {','.join(TASKS)})",
    )
    ap.add_argument(
        "--impls",
        type=_csv(str),
        default=None,
        help="rllib, ours, ours_overlap, ours_32envs, ours_frag5, ours_e8_overlap, ours_local (default: each row's all; "
        "a row without the impl skips it)",
    )
    ap.add_argument(
        "--seeds", type=_csv(int), default=[0, 1, 2], help="seeds, e.g. 0,1,2 (default)"
    )
    ap.add_argument("--resume", action="store_true", help="skip cells already in the JSON")
    ap.add_argument("--out", default=JSON_PATH, help="the JSON (default %(default)s)")
    ap.add_argument(
        "--lock",
        default=None,
        help="a flock file each cell holds while it computes (e.g. /tmp/rlsuite-heavy.lock), "
        "released and taken again every --segment-s; waits for it are not timed",
    )
    ap.add_argument(
        "--segment-s", type=float, default=420.0, help="seconds per lock hold (default 420)"
    )
    ap.add_argument(
        "--max-wall-s",
        type=float,
        default=None,
        help="stop a cell after this many seconds of computing (waits for the lock not "
        "counted); it is saved as stopped_by=max_wall_s at the steps it reached",
    )
    ap.add_argument(
        "--num-cpus",
        type=int,
        default=None,
        help="Ray's logical CPUs for every cell (default: each row's, sized for 2 cores; "
        "RLlib's mujoco_ppo.py needs 5)",
    )
    ap.add_argument(
        "--merge",
        nargs="+",
        metavar="JSON",
        help="add the cells of these JSONs (other runs of this script) to --out, redo its "
        "summary and plot, and run nothing",
    )
    ap.add_argument("--cell", nargs=3, metavar=("TASK", "IMPL", "SEED"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    bad = [t for t in args.tasks if t not in TASKS]
    if bad:
        ap.error(f"unknown task {bad[0]!r}; choose from {', '.join(TASKS)}")
    known = {i for t in TASKS.values() for i in impls_of(t)}
    bad = [i for i in args.impls or [] if i not in known]
    if bad:
        ap.error(f"unknown impl {bad[0]!r}; choose from {', '.join(sorted(known))}")
    if any(s < 0 for s in args.seeds):
        ap.error("seeds must be >= 0")
    if args.num_cpus is not None and args.num_cpus < 1:
        ap.error("--num-cpus must be >= 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.cell:  # child process: one cell, printed as JSON on the last line
        key, impl, seed = args.cell
        cell = run_cell(
            key, impl, int(seed), args.lock, args.segment_s, args.max_wall_s, args.num_cpus
        )
        print("CELL " + json.dumps(cell), flush=True)
        return 0
    from rich.console import Console

    console = Console()
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    results = _load(args.out)
    cells = results.setdefault("cells", {})
    if args.merge and not _merge(results, args.merge, console):
        return 2
    given = argv if argv is not None else sys.argv[1:]
    failed = 0
    prepared: set[str] = set()
    for key in [] if args.merge else args.tasks:  # --merge runs nothing
        task = TASKS[key]
        for seed in args.seeds:
            for impl in impls_of(task):
                if args.impls and impl not in args.impls:
                    continue
                cid = _cell_id(key, impl, seed)
                if args.resume and cid in cells:
                    console.print(f"[dim]{cid}: done, skipped (--resume)[/dim]")
                    continue
                if task.prepare is not None and key not in prepared:
                    results.setdefault("data", {})[key] = task.prepare()  # records if missing
                    prepared.add(key)
                console.print(f"{cid}: running")
                proc = subprocess.run(
                    [sys.executable, os.path.abspath(__file__), "--cell", key, impl, str(seed)]
                    + (
                        ["--lock", args.lock, "--segment-s", str(args.segment_s)]
                        if args.lock
                        else []
                    )
                    + (["--max-wall-s", str(args.max_wall_s)] if args.max_wall_s else [])
                    + (["--num-cpus", str(args.num_cpus)] if args.num_cpus else []),
                    capture_output=True,
                    text=True,
                    cwd=ROOT,
                )
                line = next(
                    (x for x in reversed(proc.stdout.splitlines()) if x.startswith("CELL ")), None
                )
                if proc.returncode != 0 or line is None:
                    console.print(f"[red]{cid} failed[/red]\n{proc.stderr[-3000:]}")
                    results.setdefault("failed", {})[cid] = proc.stderr[-2000:]
                    failed += 1
                    continue
                results.get("failed", {}).pop(cid, None)
                cell = json.loads(line[5:])
                cell["command"] = " ".join(["python", "benchmarks/platform_learning.py", *given])
                cells[cid] = cell
                hit = cell["reached"]
                console.print(
                    f"{cid}: "
                    + (
                        f"{task.threshold:g} at {reached_steps(hit):,} {task.step_unit}, "
                        f"{hit['wall_s']:.0f} s"
                        if hit
                        else f"not reached (best {cell['best_return']}, {cell['stopped_by']})"
                    )
                )
                _finish(results, args.out)
    _finish(results, args.out)
    console.print(table(results))
    console.print(f"JSON: {args.out}")
    return 1 if failed else 0


def _merge(results: dict[str, Any], paths: list[str], console: Any) -> bool:
    """Add the cells of other runs' JSONs (e.g. a row run on a larger machine) to
    ``results`` (a cell already there is replaced); False if a file is missing."""
    for path in paths:
        if not os.path.isfile(path):
            console.print(f"[red]--merge: no such file {path!r}[/red]")
            return False
        theirs = _load(path).get("cells", {})
        results["cells"].update(theirs)
        console.print(f"{path}: {len(theirs)} cell(s) merged")
    return True


def _finish(results: dict[str, Any], path: str) -> None:
    import ray

    results["benchmark"] = "platform_learning"
    results["ray"] = ray.__version__
    results["machine"] = (
        f"{NUM_CPUS} cores; Ray's logical CPUs per row in tasks/*/ray_num_cpus; "
        f"{platform.processor() or platform.machine()}"
    )
    results["metric"] = (
        "env_runners/episode_return_mean as RLlib 2.60 reports it: the mean of the "
        "stochastic training episodes that ended during the iteration (at most "
        f"metrics_num_episodes_for_smoothing={SMOOTHING}, both sides; the window is emptied "
        "at each iteration), RLlib's examples' stop metric; steps are "
        "env_runners/num_env_steps_sampled_lifetime. Offline rows (BC): the evaluation "
        "return (evaluation/env_runners/episode_return_mean, 5 episodes) and learner "
        "updates (tasks/*/metric, step_unit)"
    )
    results["tasks"] = {
        k: {
            "plan": t.plan,
            "env": t.env,
            "threshold": t.threshold,
            "budget_steps": t.budget_steps,
            "step_unit": t.step_unit,
            "max_iterations": t.max_iterations,
            "metric": "/".join(t.metric),
            "ray_num_cpus": t.num_cpus,
            "rllib_example": t.source,
            "ours": {k2: list(v) if isinstance(v, tuple) else v for k2, v in t.ours.items()},
            "differences": list(t.differences),
            "variants": t.variants,
            **({"anchor": t.anchor, "run_to_budget": t.run_to_budget} if t.anchor else {}),
        }
        for k, t in TASKS.items()
    }
    results["skipped"] = SKIPPED
    results["summary"] = summarise(results)
    results["overlap_vs_default"] = overlap_vs_default(results["summary"], results["cells"])
    results["at_common_steps"] = at_common_steps(results)
    results["criterion"] = (
        "every seed of ours reaches RLlib's threshold within RLlib's budget, and ours' "
        f"median wall time to it is <= {WALL_TARGET}x RLlib's"
    )
    _save(results, path)
    plot(results, PNG_PATH if path == JSON_PATH else os.path.splitext(path)[0] + ".png")


if __name__ == "__main__":
    sys.exit(main())
