"""rlsuite: the platform's own command line.

    rlsuite info                         versions, Ray, and which real components this machine has
    rlsuite train --plan sync --env CartPole-v1 --iterations 20 --run-dir runs/cp [--resume]
    rlsuite evaluate --controller runs/cp --env CartPole-v1 --episodes 10 [--json out.json]
    rlsuite tune --plan sync --env CartPole-v1 --search lr=loguniform:1e-4:1e-2 --samples 4
    rlsuite export --controller runs/cp --out policies/cartpole   a small policy-only copy to ship
    rlsuite bench list | run NAME [--quick] [--resume] [--seeds 0,1,2] | report [--check]

Plan fields are set with repeated ``--set key=value`` (values are parsed as JSON
when they can be: ``--set hidden=[128,128] --set lr=1e-3``). A search space is
given with repeated ``--search key=spec``, spec one of uniform:LO:HI,
loguniform:LO:HI, choice:A,B,... or grid:A,B,... (``choice:[5,10]`` is
``choice:5,10``). The apps' own CLIs (traffic-train, qopt-bench, hier-train) are
built on the same library calls and read these flags the same way
(rlsuite/cli_common.py). ``rlsuite info`` asks each installed app what it needs
through the ``rlsuite.probes`` entry points.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import subprocess
import sys

from rlsuite.bench import cli as bench_cli
from rlsuite.cli_common import (
    PROBES_GROUP,
    USER_ERRORS,
    Probe,
    add_cluster_flags,
    add_json_flag,
    add_search_flag,
    add_set_flag,
    dist_version,
    parse_search,
    parse_sets,
    ray_cluster,
    tune_options,
    write_json,
)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="rlsuite",
        description="The rlsuite platform: distributed RL on Ray RLlib and Tune, shared by the "
        "traffic, query-optimizer and hierarchy apps.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__,
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    sub.add_parser("info", help="versions, Ray status and the real components this machine has")

    t = sub.add_parser("train", help="train a plan on an env, with checkpoints and metrics")
    t.add_argument(
        "--plan",
        required=True,
        help="sync | async | replay | imitation | es | async_grad | apex | qt_opt | r2d2",
    )
    t.add_argument("--env", required=True, help="registered env id or gymnasium id")
    t.add_argument("--iterations", type=int, default=20, help="training iterations (default 20)")
    t.add_argument("--run-dir", required=True, help="folder for metrics, plots and checkpoints")
    t.add_argument(
        "--resume", action="store_true", help="continue the run in --run-dir from its checkpoint"
    )
    t.add_argument("--checkpoint-every", type=int, default=5, help="iterations between checkpoints")
    t.add_argument("--stop-return", type=float, help="stop once the mean return reaches this")
    add_set_flag(t)
    t.add_argument("--env-config", type=json.loads, default={}, help="env kwargs as JSON")
    t.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_cluster_flags(t)

    e = sub.add_parser("evaluate", help="evaluate a checkpoint on seeded episodes in parallel")
    e.add_argument("--controller", required=True, help="checkpoint or run directory")
    e.add_argument("--env", help="env id (default: the checkpoint's)")
    e.add_argument("--env-config", type=json.loads, default=None, help="env kwargs as JSON")
    e.add_argument("--episodes", type=int, default=10)
    e.add_argument("--seed", type=int, default=1000, help="first scenario seed")
    add_json_flag(e, "per-episode rows and the summary")
    add_cluster_flags(e, workers="parallel workers (default: CPUs; 0: in this process, no Ray)")

    u = sub.add_parser("tune", help="search plan fields under Tune with ASHA or PBT")
    u.add_argument("--plan", required=True)
    u.add_argument("--env", required=True)
    add_search_flag(u, required=True)
    u.add_argument("--scheduler", default="asha", choices=["asha", "pbt", "fifo"])
    u.add_argument("--samples", type=int, default=4)
    u.add_argument("--iterations", type=int, default=10)
    u.add_argument("--run-dir", default="runs/tune")
    add_set_flag(u)
    u.add_argument("--env-config", type=json.loads, default={})
    add_cluster_flags(u)

    x = sub.add_parser(
        "export", help="copy a checkpoint's policy (no optimiser or runner state) to ship it"
    )
    x.add_argument("--controller", required=True, help="checkpoint or run directory")
    x.add_argument("--out", required=True, help="new directory for the policy")
    x.add_argument("--note", default="", help="kept in its rlsuite.json (e.g. how it was trained)")

    bench_cli.add_parser(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        commands = dict(info=cmd_info, train=cmd_train, evaluate=cmd_evaluate, tune=cmd_tune)
        commands.update(export=cmd_export, bench=bench_cli.main)
        return commands[args.command](args)
    except USER_ERRORS as e:
        print(f"rlsuite {args.command}: error: {e}", file=sys.stderr)
        return 2


def cmd_train(args: argparse.Namespace) -> int:
    from rich.console import Console

    from rlsuite.platform import checkpoints, optimizers, training

    plan = optimizers.make_plan(
        args.plan, env=args.env, env_config=args.env_config, **parse_sets(args.set)
    )
    with ray_cluster(args):
        res = training.train(
            plan,
            args.iterations,
            args.run_dir,
            resume=args.resume,
            progress=not args.no_progress,
            checkpoint_every=args.checkpoint_every,
            stop_return=args.stop_return,
        )
    learner = checkpoints.metadata(res.checkpoint).get("resources", {}).get("learner")
    ran = f"\nlearner: {learner['device']} ({learner['reason']})" if learner else ""
    Console().print(
        f"trained {plan.name} on {plan.env}: {res.iterations} iterations, {res.env_steps} env steps, "
        f"{res.wall_time_s:.1f} s, return {res.final_return:.2f}\ncheckpoint: {res.checkpoint}"
        + ran,
        highlight=False,
    )
    return 0


def cmd_evaluate(args: argparse.Namespace) -> int:
    from rich.console import Console

    from rlsuite.platform import checkpoints, evaluation

    meta = checkpoints.metadata(args.controller)
    env_id = args.env or meta["env"]
    if args.env_config is not None:
        env_config = args.env_config
    else:  # the training env's options, for that env only
        env_config = meta.get("env_config", {}) if env_id == meta["env"] else {}
    scen = evaluation.scenarios(env_id, range(args.seed, args.seed + args.episodes), env_config)
    evaluation.check_controller(args.controller, scen)  # before Ray starts
    with ray_cluster(args):
        res = evaluation.evaluate(args.controller, scen, num_workers=args.workers, progress=True)
    Console().print(res.table())
    if args.json:
        write_json(args.json, res.to_dict())
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from rlsuite.platform import checkpoints
    from rlsuite.platform.checkpoints.export import size_bytes

    out = checkpoints.export_policy(args.controller, args.out, note=args.note)
    meta = checkpoints.metadata(out)
    print(
        f"exported {meta['plan']}@{meta['iteration']} on {meta['env']} to {out} "
        f"({size_bytes(out) / 1e6:.2f} MB); load it with checkpoints.load_controller"
    )
    return 0


def cmd_tune(args: argparse.Namespace) -> int:
    from rich.console import Console

    from rlsuite.platform import optimizers, tuning

    plan = optimizers.make_plan(
        args.plan, env=args.env, env_config=args.env_config, **parse_sets(args.set)
    )
    space = parse_search(args.search)
    with ray_cluster(args):
        res = tuning.tune(plan, space, run_dir=args.run_dir, **tune_options(args))
    c = Console()
    c.print(res.table())
    c.print(
        f"best: {json.dumps({k: res.best_config[k] for k in space})} -> "
        f"{res.best_metric:.2f}\ncheckpoint: {res.best_checkpoint}"
    )
    return 0


# --------------------------------------------------------------------------- info


def components() -> list[dict[str, str]]:
    """The real components the installed apps need: found or not, and how to get them.

    Each app announces a ``probes()`` function (returning :class:`~rlsuite.cli_common.Probe`
    rows) in the ``rlsuite.probes`` entry-point group; an app whose probes cannot be
    loaded is reported as one missing row.
    """
    rows = []
    for ep in importlib.metadata.entry_points(group=PROBES_GROUP):
        try:
            probes = list(ep.load()())
        except Exception as e:  # noqa: BLE001 - one broken app must not hide the others
            probes = [Probe(f"{ep.name} probes", None, f"{type(e).__name__}: {e}")]
        for p in probes:
            rows.append(
                {
                    "app": ep.name,
                    "component": p.component,
                    "status": p.found or "missing",
                    "how": "" if p.found else p.how,
                }
            )
    return rows


def cmd_info(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    c = Console()
    v = Table(title="rlsuite " + (dist_version("rlsuite") or "(not installed)"))
    v.add_column("package")
    v.add_column("version")
    for d in ("ray", "torch", "gymnasium", "pettingzoo", "numpy"):
        v.add_row(d, dist_version(d) or "missing")
    v.add_row("python", sys.version.split()[0])
    c.print(v)

    import ray

    if ray.is_initialized():
        ray_state = "connected"
    else:
        ray_state = "no cluster joined (an embedded local Ray starts on demand)"
        try:
            r = subprocess.run(
                [sys.executable, "-m", "ray.scripts.scripts", "status"],
                capture_output=True,
                text=True,
                timeout=20,
            )
            if r.returncode == 0 and "Resources" in r.stdout:
                ray_state = "a local Ray cluster is running (ray status)"
        except (OSError, subprocess.SubprocessError):
            pass
    from rlsuite.platform.machine import cpu_topology

    c.print(f"Ray: {ray_state}")
    c.print(f"CPUs: {cpu_topology().describe()}", highlight=False, soft_wrap=True)
    c.print(gpu_lines(), highlight=False, soft_wrap=True)

    t = Table(title="real components")
    for col in ("app", "component"):
        t.add_column(col)
    t.add_column("status", overflow="fold")
    t.add_column("how to get it")
    app = None
    for row in components():
        if app is not None and row["app"] != app:
            t.add_section()
        style = "green" if row["status"] != "missing" else "red"
        shown = row["app"] if row["app"] != app else ""
        t.add_row(shown, row["component"], f"[{style}]{row['status']}[/]", row["how"])
        app = row["app"]
    c.print(t)

    apps = Table(title="apps")
    apps.add_column("app")
    apps.add_column("envs")
    from rlsuite.platform import envs

    reg = envs.registered()
    for ep in importlib.metadata.entry_points(group=envs.ENTRY_POINT_GROUP):
        package = ep.module.rpartition(".")[0] + "."
        ids = [k for k, s in reg.items() if s.entry_point.startswith(package)]
        apps.add_row(ep.name, ", ".join(ids) or "(not built yet)")
    c.print(apps)
    return 0


def gpu_lines() -> str:
    """What ``rlsuite info`` says about GPUs: each CUDA device torch sees, or that there
    is none and what the learner does then."""
    import torch

    from rlsuite.platform.resources import local_gpus

    gpus = local_gpus()
    if not gpus:
        build = (
            "a CPU-only build"
            if torch.version.cuda is None
            else f"built for CUDA {torch.version.cuda}"
        )
        return (
            f"GPUs: none (torch {torch.__version__}, {build}, sees no CUDA device)\n"
            "  learners run on the CPU; num_gpus_per_learner > 0 is refused"
        )
    rows = [f"GPUs: {len(gpus)} (torch {torch.__version__}, CUDA {torch.version.cuda})"]
    rows += [f"  cuda:{g.index}  {g.name}  {g.memory_gib:g} GiB" for g in gpus]
    rows.append("  num_gpus_per_learner='auto' puts a learner on one when its update is large")
    return "\n".join(rows)


if __name__ == "__main__":
    sys.exit(main())
