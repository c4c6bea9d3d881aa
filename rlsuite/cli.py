"""rlsuite: the platform's own command line.

    rlsuite info                         versions, Ray, and which real components this machine has
    rlsuite train --plan sync --env CartPole-v1 --iterations 20 --run-dir runs/cp [--resume]
    rlsuite evaluate --controller runs/cp --env CartPole-v1 --episodes 10 [--json out.json]
    rlsuite tune --plan sync --env CartPole-v1 --search lr=loguniform:1e-4:1e-2 --samples 4

Plan fields are set with repeated ``--set key=value`` (values are parsed as JSON
when they can be: ``--set hidden=[128,128] --set lr=1e-3``). The apps' own CLIs
(traffic-train, qopt-bench, hier-train) are built on the same library calls.
"""

from __future__ import annotations

import argparse
import glob
import importlib
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
from typing import Any


def _parse_value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def parse_sets(items: list[str] | None) -> dict[str, Any]:
    """``["lr=1e-3", "hidden=[64,64]"]`` -> ``{"lr": 0.001, "hidden": [64, 64]}``."""
    out: dict[str, Any] = {}
    for item in items or []:
        if "=" not in item:
            raise ValueError(f"--set expects key=value, got {item!r}")
        k, v = item.split("=", 1)
        out[k.strip()] = _parse_value(v)
    return out


def parse_search(items: list[str]) -> dict[str, Any]:
    """``lr=loguniform:1e-4:1e-2``, ``num_epochs=choice:5,10,20``, ``lr=grid:1e-3,1e-4``."""
    from ray import tune as rt

    space: dict[str, Any] = {}
    for item in items:
        if "=" not in item or ":" not in item:
            raise ValueError(
                f"--search expects key=kind:args (e.g. lr=loguniform:1e-4:1e-2), got {item!r}"
            )
        k, spec = item.split("=", 1)
        kind, _, args = spec.partition(":")
        if kind in ("uniform", "loguniform"):
            lo, hi = (float(x) for x in args.split(":"))
            space[k] = getattr(rt, kind)(lo, hi)
        elif kind in ("choice", "grid"):
            vals = [_parse_value(x) for x in args.split(",")]
            space[k] = rt.choice(vals) if kind == "choice" else rt.grid_search(vals)
        else:
            raise ValueError(
                f"unknown search kind {kind!r} in {item!r}: use uniform, loguniform, choice or grid"
            )
    return space


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

    def ray_args(sp: argparse.ArgumentParser) -> None:
        g = sp.add_argument_group("cluster")
        g.add_argument(
            "--address", help="join a Ray cluster (ray start --head) instead of an embedded one"
        )
        g.add_argument("--num-cpus", type=int, help="CPUs of the embedded Ray (default: all)")

    t = sub.add_parser("train", help="train a plan on an env, with checkpoints and metrics")
    t.add_argument("--plan", required=True, help="sync | async | replay | imitation | es")
    t.add_argument("--env", required=True, help="registered env id or gymnasium id")
    t.add_argument("--iterations", type=int, default=20, help="training iterations (default 20)")
    t.add_argument("--run-dir", required=True, help="folder for metrics, plots and checkpoints")
    t.add_argument(
        "--resume", action="store_true", help="continue the run in --run-dir from its checkpoint"
    )
    t.add_argument("--checkpoint-every", type=int, default=5, help="iterations between checkpoints")
    t.add_argument("--stop-return", type=float, help="stop once the mean return reaches this")
    t.add_argument("--set", action="append", metavar="KEY=VALUE", help="a plan field (repeatable)")
    t.add_argument("--env-config", type=json.loads, default={}, help="env kwargs as JSON")
    t.add_argument("--no-progress", action="store_true", help="no progress bar")
    ray_args(t)

    e = sub.add_parser("evaluate", help="evaluate a checkpoint on seeded episodes in parallel")
    e.add_argument("--controller", required=True, help="checkpoint or run directory")
    e.add_argument("--env", help="env id (default: the checkpoint's)")
    e.add_argument("--env-config", type=json.loads, default=None, help="env kwargs as JSON")
    e.add_argument("--episodes", type=int, default=10)
    e.add_argument("--seed", type=int, default=1000, help="first scenario seed")
    e.add_argument("--workers", type=int, default=None, help="parallel workers (default: CPUs)")
    e.add_argument("--json", help="write per-episode rows and the summary here")
    ray_args(e)

    u = sub.add_parser("tune", help="search plan fields under Tune with ASHA or PBT")
    u.add_argument("--plan", required=True)
    u.add_argument("--env", required=True)
    u.add_argument(
        "--search",
        action="append",
        required=True,
        metavar="KEY=KIND:ARGS",
        help="e.g. lr=loguniform:1e-4:1e-2, num_epochs=choice:5,10 (repeatable)",
    )
    u.add_argument("--scheduler", default="asha", choices=["asha", "pbt", "fifo"])
    u.add_argument("--samples", type=int, default=4)
    u.add_argument("--iterations", type=int, default=10)
    u.add_argument("--run-dir", default="runs/tune")
    u.add_argument("--set", action="append", metavar="KEY=VALUE")
    u.add_argument("--env-config", type=json.loads, default={})
    ray_args(u)
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return {"info": cmd_info, "train": cmd_train, "evaluate": cmd_evaluate, "tune": cmd_tune}[
            args.command
        ](args)
    except (ValueError, FileNotFoundError, FileExistsError, ConnectionError) as e:
        print(f"rlsuite {args.command}: error: {e}", file=sys.stderr)
        return 2


def cmd_train(args: argparse.Namespace) -> int:
    from rich.console import Console

    from rlsuite.platform import cluster, optimizers, training

    plan = optimizers.make_plan(
        args.plan, env=args.env, env_config=args.env_config, **parse_sets(args.set)
    )
    with cluster.local_cluster(num_cpus=args.num_cpus, address=args.address):
        res = training.train(
            plan,
            args.iterations,
            args.run_dir,
            resume=args.resume,
            progress=not args.no_progress,
            checkpoint_every=args.checkpoint_every,
            stop_return=args.stop_return,
        )
    Console().print(
        f"trained {plan.name} on {plan.env}: {res.iterations} iterations, {res.env_steps} env steps, "
        f"{res.wall_time_s:.1f} s, return {res.final_return:.2f}\ncheckpoint: {res.checkpoint}"
    )
    return 0


def cmd_evaluate(args: argparse.Namespace) -> int:
    from rich.console import Console

    from rlsuite.platform import checkpoints, cluster, evaluation

    meta = checkpoints.metadata(args.controller)
    env_id = args.env or meta["env"]
    env_config = meta.get("env_config", {}) if args.env_config is None else args.env_config
    scen = evaluation.scenarios(env_id, range(args.seed, args.seed + args.episodes), env_config)
    with cluster.local_cluster(num_cpus=args.num_cpus, address=args.address):
        res = evaluation.evaluate(args.controller, scen, num_workers=args.workers, progress=True)
    Console().print(res.table())
    if args.json:
        res.to_json(args.json)
    return 0


def cmd_tune(args: argparse.Namespace) -> int:
    from rich.console import Console

    from rlsuite.platform import cluster, optimizers, tuning

    plan = optimizers.make_plan(
        args.plan, env=args.env, env_config=args.env_config, **parse_sets(args.set)
    )
    space = parse_search(args.search)
    with cluster.local_cluster(num_cpus=args.num_cpus, address=args.address):
        res = tuning.tune(
            plan,
            space,
            scheduler=args.scheduler,
            num_samples=args.samples,
            iterations=args.iterations,
            run_dir=args.run_dir,
        )
    c = Console()
    c.print(res.table())
    c.print(
        f"best: {json.dumps({k: res.best_config[k] for k in space})} -> "
        f"{res.best_metric:.2f}\ncheckpoint: {res.best_checkpoint}"
    )
    return 0


# --------------------------------------------------------------------------- info


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def components() -> list[dict[str, str]]:
    """The real components the apps use: found or not, and how to get them."""
    rows = []

    def add(name: str, found: str | None, how: str) -> None:
        rows.append({"component": name, "status": found or "missing", "how": "" if found else how})

    sumo_bin = None
    try:
        import sumo  # the eclipse-sumo wheel

        cand = os.path.join(sumo.SUMO_HOME, "bin", "sumo")
        sumo_bin = cand if os.path.exists(cand) else None
    except ImportError:
        pass
    add(
        "SUMO binary (eclipse-sumo)",
        sumo_bin and f"{_version('eclipse-sumo')} {sumo_bin}",
        "pip install -e '.[traffic]'",
    )
    add("libsumo", _version("libsumo"), "pip install -e '.[traffic]'")
    add("sumo-rl", _version("sumo-rl"), "pip install -e '.[traffic]'")

    pg_bindir = None
    if shutil.which("pg_config"):
        try:
            pg_bindir = subprocess.run(
                ["pg_config", "--bindir"], capture_output=True, text=True, timeout=10
            ).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            pg_bindir = None
    initdb = None
    for d in [pg_bindir] + sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if d and os.path.exists(os.path.join(d, "initdb")):
            initdb = os.path.join(d, "initdb")
            break
    add(
        "PostgreSQL server (initdb, pg_ctl)",
        initdb,
        "as root: apt-get install -y postgresql (make test/demo do this when run as root)",
    )
    pgxs = None
    if shutil.which("pg_config"):
        try:
            inc = subprocess.run(
                ["pg_config", "--includedir-server"], capture_output=True, text=True, timeout=10
            ).stdout.strip()
            pgxs = inc if os.path.exists(os.path.join(inc, "postgres.h")) else None
        except (OSError, subprocess.SubprocessError):
            pgxs = None
    add(
        "PostgreSQL server headers (PGXS)",
        pgxs,
        "as root: apt-get install -y postgresql-server-dev-15 (make test does this as root)",
    )
    add(
        "psycopg2",
        _version("psycopg2-binary") or _version("psycopg2"),
        "pip install -e '.[queryopt]'",
    )
    add("sqlglot", _version("sqlglot"), "pip install -e '.[queryopt]'")
    add("pybullet", _version("pybullet"), "pip install -e '.[hierarchy]'")
    return rows


def cmd_info(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    c = Console()
    v = Table(title="rlsuite " + (_version("rlsuite") or "(not installed)"))
    v.add_column("package")
    v.add_column("version")
    for d in ("ray", "torch", "gymnasium", "pettingzoo", "numpy"):
        v.add_row(d, _version(d) or "missing")
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
    c.print(
        f"Ray: {ray_state}; this machine: {os.cpu_count()} CPUs, "
        f"GPU: {'yes' if _has_gpu() else 'none'}"
    )

    t = Table(title="real components")
    for col in ("component", "status", "how to get it"):
        t.add_column(col)
    for row in components():
        style = "green" if row["status"] != "missing" else "red"
        t.add_row(row["component"], f"[{style}]{row['status']}[/]", row["how"])
    c.print(t)

    apps = Table(title="apps")
    apps.add_column("app")
    apps.add_column("envs")
    from rlsuite.platform import envs

    reg = envs.registered()
    for app in ("traffic", "queryopt", "hierarchy"):
        ids = [k for k, s in reg.items() if s.entry_point.startswith(f"rlsuite.apps.{app}.")]
        apps.add_row(app, ", ".join(ids) or "(not built yet)")
    c.print(apps)
    return 0


def _has_gpu() -> bool:
    try:
        import torch

        return bool(torch.cuda.is_available())
    except ImportError:  # pragma: no cover
        return False


if __name__ == "__main__":
    sys.exit(main())
