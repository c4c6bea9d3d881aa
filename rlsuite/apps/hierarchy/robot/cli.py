"""The robot subcommands of ``hier-train``: ``robot-demos``, ``robot`` and ``robot-reuse``.

``hier-train``'s parser (``rlsuite/apps/hierarchy/cli.py``) calls :func:`register` with
its subparsers; each subcommand sets ``func`` (``args -> exit code``). This module also
runs alone: ``python -m rlsuite.apps.hierarchy.robot.cli robot --demos 5``.
"""

from __future__ import annotations

import argparse
import inspect
import os
import sys
from dataclasses import asdict
from typing import Any

from rlsuite import cli_common as cli

DEFAULT_DEMOS_PATH = "runs/hierarchy/robot/demos.npz"


def _counts(text: str) -> list[int]:
    """``20`` or ``5,10,20,50``: the distinct counts, in increasing order."""
    return sorted(set(cli.positive_ints(text)))


def _imperfection_flags(p: argparse.ArgumentParser) -> None:
    from rlsuite.apps.hierarchy.robot.expert import NOISE_RANGE

    g = p.add_argument_group("imperfect demonstrations")
    # fmt: off
    cli.add_flags(
        g,
        ("--noise", float, 0.0, f"std of Gaussian noise on the expert's motion commands, in [{NOISE_RANGE[0]}, {NOISE_RANGE[1]}] (default 0)"),
        ("--retry", float, 0.0, "probability that a PICK misses its first grasp and grasps again (default 0)"),
        ("--second-expert", float, 0.0, "share of episodes by a second expert (opens before it approaches; sort: blue first) (default 0)"),
    )
    # fmt: on


def _imperfection(args):
    from rlsuite.apps.hierarchy.robot.expert import Imperfection

    return Imperfection(args.noise, args.retry, args.second_expert).validate()


def _common(p: argparse.ArgumentParser) -> None:
    cli.add_cluster_flags(
        p,
        workers="parallel Ray workers for recording and evaluation (default: one per CPU; "
        "0: everything in this process, no Ray)",
    )


def register(subparsers: Any) -> None:
    """Add ``robot-demos``, ``robot`` and ``robot-reuse`` to ``hier-train``'s subparsers."""
    from rlsuite.apps.hierarchy.robot.tasks import TASKS, get  # no pybullet import for --help

    task_help = "; ".join(f"{t}: {get(t).description}" for t in TASKS)

    p = _command(subparsers, "robot-demos", cmd_demos)
    cli.add_flags(
        p,
        ("--n", cli.positive_int, cli.REQUIRED, "demonstrations to record"),
        ("--task", TASKS, "pick_place", task_help),
        ("--out", None, DEFAULT_DEMOS_PATH, f"output .npz (default {DEFAULT_DEMOS_PATH})"),
        ("--weak", bool, False, "drop the call stacks"),
    )
    _imperfection_flags(p)
    cli.add_flags(p, ("--seed", cli.nonneg_int, None, "first episode seed (default 100000; evaluation uses 0, 1, ...)"))  # fmt: skip
    _common(p)

    q = _command(subparsers, "robot", cmd_robot)
    # fmt: off
    cli.add_flags(
        q,
        ("--demos", _counts, cli.REQUIRED, "number(s) of demonstrations", "N[,N...]"),
        ("--supervision", ("strong", "weak", "both"), "strong", "which hierarchical model(s) to train (default strong)"),
        ("--no-flat", bool, False, "skip the flat cloning baseline"),
        ("--task", TASKS, "pick_place", f"task to learn ({task_help})"),
        ("--episodes", cli.positive_int, 100, "evaluation episodes (default 100)"),
        ("--train-steps", cli.positive_int, 300, "Adam steps per network"),
        ("--seed", cli.nonneg_int, 0, "seed of the networks' initial weights"),
        ("--demo-file", None, None, "use demonstrations from hier-train robot-demos (recorded for the same --task)"),
    )
    cli.add_json_flag(q)
    cli.add_flags(
        q,
        ("--png", None, None, "plot of success vs demonstrations", "PATH"),
        ("--save", None, None, "save the trained models here", "DIR"),
    )
    # fmt: on
    _imperfection_flags(q)
    _common(q)

    r = _command(subparsers, "robot-reuse", cmd_reuse)
    # fmt: off
    cli.add_flags(
        r,
        ("--task", tuple(t for t in TASKS if t != "pick_place"), "stack", "the second task (default stack)"),
        ("--counts", _counts, [1, 2, 5, 10], "demonstrations of the second task to try (default 1,2,5,10)", "N[,N...]"),
        ("--first-demos", cli.positive_int, 20, "pick-and-place demonstrations behind the reused procedures (default 20)"),
        ("--episodes", cli.positive_int, 100, "evaluation episodes"),
        ("--train-steps", cli.positive_int, 300, "Adam steps per network"),
    )
    cli.add_json_flag(r)
    cli.add_flags(r, ("--png", None, None, "plot of success vs demonstrations", "PATH"))
    # fmt: on
    _common(r)


def _command(subparsers: Any, name: str, func: Any) -> argparse.ArgumentParser:
    """Subcommand ``name`` running ``func``: its docstring's first line is the one-line
    help (``Record demonstrations.`` -> ``record demonstrations``), the rest ``--help``."""
    summary, _, body = inspect.cleandoc(func.__doc__).partition("\n\n")
    return cli.add_command(subparsers, name, func, summary[0].lower() + summary[1:-1], body + "\n")


def _cluster(args):
    from rlsuite.platform import cluster

    cluster.configure_driver_threads()
    return cli.ray_cluster(args)


def cmd_demos(args) -> int:
    """Record scripted-expert demonstrations of a pybullet Panda task.

    Record N successful demonstrations of the scripted hierarchical expert
    (PICK_AND_PLACE -> PICK(cube) -> [MOVE_TO, OPEN, MOVE_TO, CLOSE, MOVE_TO],
    PLACE(target) -> [MOVE_TO, MOVE_TO, OPEN, MOVE_TO]; the long tasks' roots
    SORT, TOWER and CLEAR_THEN_PLACE make 6 or 4 such PICK / PLACE calls) on a
    Franka Panda in pybullet, in parallel Ray tasks. Each demonstration keeps observations,
    actions and the call stack with arguments (strong supervision); --weak
    drops the stacks (observations and actions only).

    EXAMPLES
      hier-train robot-demos --n 50
      hier-train robot-demos --n 20 --task stack --out runs/stack.npz --weak
      hier-train robot-demos --n 100 --task sort --out runs/sort.npz
      hier-train robot-demos --n 50 --task sort --noise 0.2 --retry 0.3 --second-expert 0.5
    """
    from rich.console import Console

    from rlsuite.apps.hierarchy.robot import recording as D

    imperfection = _imperfection(args)
    with _cluster(args):
        data = D.collect(
            args.n,
            args.task,
            seed=D.DEMO_SEED_BASE if args.seed is None else args.seed,
            strong=not args.weak,
            num_workers=args.workers,
            progress=True,
            imperfection=imperfection,
        )
    D.save(args.out, data)
    steps = sum(len(d.actions) for d in data)
    Console().print(
        f"recorded {len(data)} {args.task} demonstrations ({steps} steps, "
        f"{'weak' if args.weak else 'strong'}) in {data[0].info['collect_wall_s']:.1f} s -> {args.out}"
    )
    return 0


def cmd_robot(args) -> int:
    """Learn a Panda task from demonstrations: hierarchical vs flat cloning.

    Train hierarchical procedures (strong: from recorded call stacks; weak:
    stacks filled in by EM) and the flat behaviour-cloning baseline on the
    same demonstrations, then evaluate each on seeded episodes through the
    platform's parallel evaluation. With several counts (--demos 5,10,20,50)
    it sweeps them and draws success against number of demonstrations.

    OUTPUT
      a results table; --json PATH writes the numbers; --png PATH the plot
      (default: next to the JSON); --save DIR keeps the trained models.

    EXAMPLES
      hier-train robot --demos 20 --supervision strong --json runs/robot.json
      hier-train robot --demos 5,10,20,50 --supervision both --episodes 100
      hier-train robot --task sort --demos 5,20,100 --supervision both
      hier-train robot --task sort --demos 50 --supervision both --noise 0.2
    """
    from rlsuite.apps.hierarchy.robot import experiment as X

    sup = ("strong", "weak") if args.supervision == "both" else (args.supervision,)
    base = X.RobotRunConfig(
        demos=max(args.demos),
        supervision=sup,
        flat=not args.no_flat,
        task=args.task,
        episodes=args.episodes,
        num_workers=args.workers,
        train_steps=args.train_steps,
        seed=args.seed,
        demo_path=args.demo_file,
        imperfection=_imperfection(args),
    )
    base.validate()
    with _cluster(args):
        rows = X.sweep(args.demos, base, progress=True, save_dir=args.save)
    result = {"config": asdict(base), "counts": args.demos, "rows": rows}
    X.print_sweep(rows, title=f"{args.task}: success over {args.episodes} seeded episodes")
    _write(
        args, result, lambda path: X.plot_sweep(rows, path, title=f"{args.task} (pybullet Panda)")
    )
    return 0


def cmd_reuse(args) -> int:
    """Skill reuse: learn a second task with the procedures learned on pick-and-place.

    Learn a second task (--task: stack, or a long one: sort, tower,
    clear_then_place) with the PICK/PLACE procedures learned on pick-and-place:
    REUSE them as they are (a task with a root of its own learns only that
    root), RETRAIN them (stack: on both tasks' demonstrations; the others: on
    the new task's, from pick-and-place's weights), RECREATE a separate PLACE
    for the new task, or learn from SCRATCH; success against the new task's
    demonstrations, and the demonstrations each mode needs to reach 90%.

    EXAMPLES
      hier-train robot-reuse --counts 1,2,5,10 --json runs/reuse.json
      hier-train robot-reuse --task sort --counts 1,2,5 --json runs/reuse-sort.json
    """
    from rlsuite.apps.hierarchy.robot import experiment as X

    cfg = X.ReuseConfig(
        task=args.task,
        first_demos=args.first_demos,
        counts=tuple(args.counts),
        episodes=args.episodes,
        num_workers=args.workers,
        train_steps=args.train_steps,
    ).validate()
    with _cluster(args):
        res = X.reuse_experiment(cfg)
    X.print_reuse(res)
    _write(args, res, lambda path: X.plot_reuse(res, path))
    return 0


def _write(args, result: dict, plot) -> None:
    from rich.console import Console

    png = args.png or (os.path.splitext(args.json)[0] + ".png" if args.json else None)
    if args.json:
        cli.write_json(args.json, result)
        Console().print(f"results -> {args.json}")
    if png:
        plot(png)
        Console().print(f"plot -> {png}")


def build_parser() -> argparse.ArgumentParser:
    """A parser with only the robot subcommands (what ``hier-train`` adds them to)."""
    parser = argparse.ArgumentParser(
        prog="hier-train", description="robot subcommands of hier-train"
    )
    register(parser.add_subparsers(dest="command", required=True, metavar="COMMAND"))
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except cli.USER_ERRORS as e:
        print(f"hier-train {args.command}: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
