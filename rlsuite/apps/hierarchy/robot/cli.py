"""The robot subcommands of ``hier-train``: ``robot-demos``, ``robot`` and ``robot-reuse``.

``hier-train``'s parser (``rlsuite/apps/hierarchy/cli.py``) calls :func:`register` with
its subparsers; each subcommand sets ``func`` (``args -> exit code``). This module also
runs alone: ``python -m rlsuite.apps.hierarchy.robot.cli robot --demos 5``.
"""

from __future__ import annotations

import argparse
import os
import sys
import textwrap
from dataclasses import asdict
from typing import Any

from rlsuite.cli_common import (
    USER_ERRORS,
    add_cluster_flags,
    add_json_flag,
    nonneg_int,
    positive_int,
    positive_ints,
    ray_cluster,
    write_json,
)

DEFAULT_DEMOS_PATH = "runs/hierarchy/robot/demos.npz"


def _counts(text: str) -> list[int]:
    """``20`` or ``5,10,20,50``: the distinct counts, in increasing order."""
    return sorted(set(positive_ints(text)))


def _imperfection_flags(p: argparse.ArgumentParser) -> None:
    from rlsuite.apps.hierarchy.robot.expert import NOISE_RANGE

    g = p.add_argument_group("imperfect demonstrations")
    g.add_argument(
        "--noise",
        type=float,
        default=0.0,
        help=f"std of Gaussian noise on the expert's motion commands, in "
        f"[{NOISE_RANGE[0]}, {NOISE_RANGE[1]}] (default 0)",
    )
    g.add_argument(
        "--retry",
        type=float,
        default=0.0,
        help="probability that a PICK misses its first grasp and grasps again (default 0)",
    )
    g.add_argument(
        "--second-expert",
        type=float,
        default=0.0,
        help="share of episodes by a second expert (opens before it approaches; sort: blue "
        "first) (default 0)",
    )


def _imperfection(args):
    from rlsuite.apps.hierarchy.robot.expert import Imperfection

    return Imperfection(args.noise, args.retry, args.second_expert).validate()


def _common(p: argparse.ArgumentParser) -> None:
    add_cluster_flags(
        p,
        workers="parallel Ray workers for recording and evaluation (default: one per CPU; "
        "0: everything in this process, no Ray)",
    )


def register(subparsers: Any) -> None:
    """Add ``robot-demos``, ``robot`` and ``robot-reuse`` to ``hier-train``'s subparsers."""
    from rlsuite.apps.hierarchy.robot.tasks import TASKS, get  # no pybullet import for --help

    task_help = "; ".join(f"{t}: {get(t).description}" for t in TASKS)

    fmt = argparse.RawDescriptionHelpFormatter
    p = subparsers.add_parser(
        "robot-demos",
        formatter_class=fmt,
        help="record scripted-expert demonstrations of a pybullet Panda task",
        description=textwrap.dedent("""\
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
            """),
    )
    p.add_argument("--n", type=positive_int, required=True, help="demonstrations to record")
    p.add_argument(
        "--task",
        choices=TASKS,
        default="pick_place",
        help=task_help,
    )
    p.add_argument(
        "--out", default=DEFAULT_DEMOS_PATH, help=f"output .npz (default {DEFAULT_DEMOS_PATH})"
    )
    p.add_argument("--weak", action="store_true", help="drop the call stacks")
    _imperfection_flags(p)
    p.add_argument(
        "--seed",
        type=nonneg_int,
        default=None,
        help="first episode seed (default 100000; evaluation uses 0, 1, ...)",
    )
    _common(p)
    p.set_defaults(func=cmd_demos)

    q = subparsers.add_parser(
        "robot",
        formatter_class=fmt,
        help="learn a Panda task from demonstrations: hierarchical vs flat cloning",
        description=textwrap.dedent("""\
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
            """),
    )
    q.add_argument(
        "--demos",
        type=_counts,
        required=True,
        metavar="N[,N...]",
        help="number(s) of demonstrations",
    )
    q.add_argument(
        "--supervision",
        choices=("strong", "weak", "both"),
        default="strong",
        help="which hierarchical model(s) to train (default strong)",
    )
    q.add_argument("--no-flat", action="store_true", help="skip the flat cloning baseline")
    q.add_argument(
        "--task", choices=TASKS, default="pick_place", help=f"task to learn ({task_help})"
    )
    q.add_argument(
        "--episodes", type=positive_int, default=100, help="evaluation episodes (default 100)"
    )
    q.add_argument("--train-steps", type=positive_int, default=300, help="Adam steps per network")
    q.add_argument(
        "--seed", type=nonneg_int, default=0, help="seed of the networks' initial weights"
    )
    q.add_argument(
        "--demo-file",
        default=None,
        help="use demonstrations from hier-train robot-demos (recorded for the same --task)",
    )
    add_json_flag(q)
    q.add_argument("--png", default=None, metavar="PATH", help="plot of success vs demonstrations")
    q.add_argument("--save", default=None, metavar="DIR", help="save the trained models here")
    _imperfection_flags(q)
    _common(q)
    q.set_defaults(func=cmd_robot)

    r = subparsers.add_parser(
        "robot-reuse",
        formatter_class=fmt,
        help="skill reuse: learn a second task with the procedures learned on pick-and-place",
        description=textwrap.dedent("""\
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
            """),
    )
    r.add_argument(
        "--task",
        choices=[t for t in TASKS if t != "pick_place"],
        default="stack",
        help="the second task (default stack)",
    )
    r.add_argument(
        "--counts",
        type=_counts,
        default=[1, 2, 5, 10],
        metavar="N[,N...]",
        help="demonstrations of the second task to try (default 1,2,5,10)",
    )
    r.add_argument(
        "--first-demos",
        type=positive_int,
        default=20,
        help="pick-and-place demonstrations behind the reused procedures (default 20)",
    )
    r.add_argument("--episodes", type=positive_int, default=100, help="evaluation episodes")
    r.add_argument("--train-steps", type=positive_int, default=300, help="Adam steps per network")
    add_json_flag(r)
    r.add_argument("--png", default=None, metavar="PATH", help="plot of success vs demonstrations")
    _common(r)
    r.set_defaults(func=cmd_reuse)


def _cluster(args):
    from rlsuite.platform import cluster

    cluster.configure_driver_threads()
    return ray_cluster(args)


def cmd_demos(args) -> int:
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
        write_json(args.json, result)
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
    except USER_ERRORS as e:
        print(f"hier-train {args.command}: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
