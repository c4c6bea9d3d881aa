"""hier-train: hierarchical imitation (program synthesis: long-hand addition and bubble sort;
robot control)."""

from __future__ import annotations

import argparse
import sys
import textwrap

from rlsuite.cli_common import (
    REQUIRED,
    USER_ERRORS,
    add_cluster_flags,
    add_command,
    add_flags,
    add_json_flag,
    nonneg_int,
    positive_int,
    positive_ints,
    ray_cluster,
    write_json,
)

DESCRIPTION = textwrap.dedent("""\
    NAME
        hier-train - learn control hierarchies by imitation

    SYNOPSIS
        hier-train synthesis [--program addition|sort] --strong N --weak M [--json PATH] [options]
        hier-train evaluate --model PATH [--lengths L,...] [--problems N] [--json PATH]
        hier-train trace [--program addition|sort] [--length L] [--seed S] [--weak]
        hier-train robot-demos | robot | robot-reuse ...   (pybullet Panda tasks: pick_place,
                                                            stack, sort, tower, clear_then_place;
                                                            see their --help)

    DESCRIPTION
        Program synthesis as in PHP (Fox et al., ICLR 2018): long-hand addition on four
        tapes (two numbers, carries, output) with four pointers. A scripted teacher runs the
        procedures ADD -> ADD1 per column -> WRITE, CARRY (column sum >= 10), LSHIFT and
        records demonstrations: strong ones show the call stack, the procedures' arguments
        and program counters; weak ones only the observations and elementary actions.

        `--program sort` is NPI's bubble sort (Reed & de Freitas, 2016) instead: an array of
        digits between two blank cells, three pointers (ptr1, ptr2 and a pass counter) and a
        swap. BUBBLESORT repeats BUBBLE (one left-to-right pass: COMPSWAP where the pair
        under ptr1, ptr2 is out of order, else RSHIFT) and RESET (the counter one step
        right, LSHIFT back to the left boundary), until the counter has passed the array.

        `synthesis` trains parametrized hierarchical procedures (PHP: per procedure an
        operation network and a termination predicate on the observation and the program
        counter; strong traces by cross-entropy, weak ones by expectation-gradient over the
        hidden call stack) and the baselines (a flat LSTM; an NPI-style LSTM core with
        program embeddings, strong traces only), then measures the exact-match accuracy of
        whole sums (or sorted arrays) at several lengths on fixed seeds, in parallel Ray
        workers. It prints a table, writes the models, a JSON and a PNG of accuracy against
        length.

    EXAMPLES
        hier-train synthesis --strong 3 --weak 300 --json results.json
        hier-train synthesis --strong 0 --weak 300 --models php      # weak supervision only
        hier-train synthesis --program sort --strong 3 --weak 100    # bubble sort, 10..100 elements
        hier-train evaluate --model runs/hierarchy/synthesis/php.pt --lengths 10,1000
        hier-train trace --length 3 --seed 1
        hier-train trace --program sort --length 4

    EXIT STATUS
        0 on success, 2 on bad arguments.
    """)


def _models(text: str) -> tuple[str, ...]:
    from rlsuite.apps.hierarchy.synthesis.experiment import MODELS

    names = tuple(p for p in text.replace(" ", "").split(",") if p)
    bad = [n for n in names if n not in MODELS]
    if bad or not names:
        raise argparse.ArgumentTypeError(
            f"unknown model {', '.join(bad) or text!r}; choose from {', '.join(MODELS)}"
        )
    return names


def _program(text: str) -> str:
    from rlsuite.apps.hierarchy.synthesis.programs import get_program

    try:
        get_program(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


def _program_flag(p: argparse.ArgumentParser) -> None:
    from rlsuite.apps.hierarchy.synthesis.programs import program_names

    p.add_argument(
        "--program",
        type=_program,
        default="addition",
        metavar="NAME",
        help=f"the program family, one of {', '.join(program_names())} (default addition)",
    )


def _cluster_args(p: argparse.ArgumentParser) -> None:
    add_cluster_flags(
        p,
        workers="parallel Ray evaluation workers (default: one per CPU; 0: in this process, "
        "no Ray)",
    )


def build_parser() -> argparse.ArgumentParser:
    from rlsuite.apps.hierarchy.synthesis.experiment import SynthesisConfig

    d = SynthesisConfig()
    parser = argparse.ArgumentParser(
        prog="hier-train",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=DESCRIPTION,
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    s = add_command(
        sub,
        "synthesis",
        cmd_synthesis,
        help="train PHP and baselines on addition or sort demonstrations",
        description=textwrap.dedent("""\
        Record teacher demonstrations (addition: 1-10 digits; sort: 2-10 elements), train the
        chosen models, and evaluate exact-match accuracy of whole results per length (fixed
        seeds). Training of each model stops at --epochs, at the loss target, or after
        --time-limit seconds. Outputs in --out-dir: <model>.pt, synthesis.json,
        accuracy_vs_length.png."""),
    )
    _program_flag(s)
    # fmt: off
    add_flags(
        s,
        ("--strong", nonneg_int, d.strong, f"strongly supervised demonstrations in total (default {d.strong})", "N"),
        ("--weak", nonneg_int, d.weak, f"weakly supervised demonstrations (default {d.weak})", "M"),
        ("--models", _models, d.models, f"comma-separated, from {','.join(d.models)} (default all)"),
        ("--lengths", positive_ints, None, "evaluation lengths (default: addition 10,100,500,1000 digits; sort 10,20,50,100 elements)"),
        ("--problems", positive_int, d.eval_problems, f"problems per evaluation length (default {d.eval_problems})"),
        ("--train-lengths", positive_ints, None, "lengths of the demonstrations (default: addition 1..10; sort 2..10)"),
        ("--epochs", positive_int, d.epochs, f"epoch cap per model (default {d.epochs})"),
        ("--time-limit", float, d.time_limit_s, f"training seconds per model at most (default {d.time_limit_s:.0f})"),
        ("--seed", int, d.seed, "seed of demonstrations and initialisation"),
        ("--out-dir", None, d.out_dir, f"where models, JSON and PNG go (default {d.out_dir})"),
    )
    # fmt: on
    add_json_flag(s, "the results too")
    _cluster_args(s)

    e = add_command(
        sub,
        "evaluate",
        cmd_evaluate,
        help="accuracy of a saved model per length",
        description="Evaluate a model saved by `synthesis` (PHP, flat-lstm or npi) on fixed-seed problems.",
    )
    # fmt: off
    add_flags(
        e,
        ("--model", None, REQUIRED, "a .pt written by `hier-train synthesis`", "PATH"),
        ("--lengths", positive_ints, None, "evaluation lengths (default: the model's program's, e.g. 10,100,500,1000 digits)"),
        ("--problems", positive_int, d.eval_problems, "problems per length"),
    )
    # fmt: on
    add_json_flag(e, "the accuracies")
    _cluster_args(e)

    t = add_command(
        sub,
        "trace",
        cmd_trace,
        help="print one teacher demonstration",
        description="Show the teacher's decisions (strong trace) or actions (weak) on one problem.",
    )
    _program_flag(t)
    add_flags(
        t,
        ("--length", positive_int, 3, "digits per number or elements (default 3)"),
        ("--seed", int, 0, "problem seed"),
        ("--weak", bool, False, "show only observations' symbols and actions"),
    )

    try:
        from rlsuite.apps.hierarchy.robot import cli as robot_cli
    except ImportError:  # the robot half is optional (pybullet extra)
        robot_cli = None
    if robot_cli is not None and hasattr(robot_cli, "register"):
        robot_cli.register(sub)
    return parser


def cmd_synthesis(args) -> int:
    from rlsuite.apps.hierarchy.synthesis.experiment import SynthesisConfig, run_synthesis

    given = {"eval_lengths": args.lengths, "train_lengths": args.train_lengths}
    cfg = SynthesisConfig.for_program(
        args.program,
        strong=args.strong,
        weak=args.weak,
        models=args.models,
        eval_problems=args.problems,
        epochs=args.epochs,
        **{k: v for k, v in given.items() if v is not None},
        time_limit_s=args.time_limit,
        seed=args.seed,
        out_dir=args.out_dir,
        num_workers=args.workers,
    ).validate()
    with ray_cluster(args):
        result = run_synthesis(cfg)
    if args.json:
        write_json(args.json, result)
    return 0


def cmd_evaluate(args) -> int:
    from rich.console import Console

    from rlsuite.apps.hierarchy.synthesis.experiment import (
        evaluate_saved,
        load_model,
        program_of,
        results_table,
    )

    model = load_model(args.model)  # fails early, with a clear message
    name = getattr(model, "kind", "php")
    lengths = args.lengths or program_of(model).eval_lengths
    with ray_cluster(args):
        ev = evaluate_saved(args.model, name, lengths, args.problems, args.workers, progress=True)
    row = {
        "model": name,
        "strong": "-",
        "weak": "-",
        "train_cpu_s": float("nan"),
        **ev,
        "path": args.model,
    }
    Console().print(results_table([row], lengths, title=f"exact-match accuracy: {args.model}"))
    if args.json:
        write_json(args.json, row)
    return 0


def cmd_trace(args) -> int:
    from rich.console import Console

    from rlsuite.apps.hierarchy.synthesis.programs import get_program

    fam = get_program(args.program)
    env = fam.make_env(args.length)
    tr = fam.teacher_trace(env, seed=args.seed)
    con = Console()
    con.print(
        f"{fam.headline(tr.info)}  ({len(tr)} actions, {len(tr.events)} decisions)", markup=False
    )
    if args.weak:
        for t, d in enumerate(tr.actions):
            sym = "".join("_" if v == 10 else str(v) for v in fam.symbols(tr.observations[t]))
            con.print(f"{t:4d}  [{sym}]  {fam.describe_action(fam.to_env_action(d))}", markup=False)
    else:
        for ev in tr.events:
            d = ev.decision
            what = (
                "terminate"
                if d.kind == "terminate"
                else (
                    f"call {d.op}"
                    if d.kind == "call"
                    else fam.describe_action(fam.to_env_action(d))
                )
            )
            con.print(f"{'  ' * (ev.depth - 1)}{ev.proc}[pc={ev.pc}] {what}", markup=False)
    con.print(env.render(), markup=False)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except USER_ERRORS as e:
        print(f"hier-train {args.command}: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
