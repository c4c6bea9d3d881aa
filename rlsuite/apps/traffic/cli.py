"""traffic-train: evaluate, train and tune mixed-autonomy traffic controllers in SUMO."""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from typing import Any

from rlsuite.cli_common import (
    REQUIRED,
    USER_ERRORS,
    add_cluster_flags,
    add_flags,
    add_json_flag,
    add_search_flag,
    add_set_flag,
    parse_search,
    tune_options,
    write_json,
)

DESCRIPTION = """\
NAME
    traffic-train - mixed-autonomy traffic in SUMO (Sugiyama ring, figure-eight, signals)

SYNOPSIS
    traffic-train evaluate --scenario ring --controller {idm,pi,followerstopper,CHECKPOINT}
                           [--ring-length L] [--episodes E] [--json PATH] [--png PATH]
    traffic-train train    --scenario ring --plan sync [--workers N] [--iterations K]
                           [--demonstrations pi:32] [--address HOST:PORT] [--run-dir DIR]
    traffic-train tune     --scenario ring --plan sync [--samples N] [--scheduler asha|pbt]
                           [--search lr=loguniform:1e-5:1e-3 ...]

DESCRIPTION
    evaluate runs a controller (a hand-written baseline or a learned checkpoint) on
    E seeded episodes through the platform's parallel evaluation and prints a table
    of mean speed, speed spread across vehicles, fraction of samples below 0.5 m/s
    and throughput (signals: waiting time and queue length). Results go to --json;
    ring and figure-eight also draw a space-time diagram PNG.

    train learns an AV policy with one of the platform's execution plans (sync = PPO,
    async = APPO, replay = DQN-style on RLlib env runners; es = evolution strategies on
    worker actors); --plan-set recurrent=lstm gives sync and async an LSTM policy,
    --plan-set recurrent=gru gives es a GRU policy. tune
    runs that under Ray Tune with a search space and the ASHA or PBT scheduler.

    Ring training steps several rings per env runner in ONE SUMO simulation (libsumo
    allows one per process): --plan-set num_envs_per_env_runner=N (default 32) rings,
    all ending their episodes together, so an episode return is reported once the
    rings reach --horizon (N * horizon steps per runner). The ring clips its own
    actions, so ring plans default to normalize_actions=false.

    --demonstrations pi:32 records 32 episodes of a baseline on the training env and
    warm-starts PPO from them (policy cloned, critic fitted to their returns) before
    RL goes on; the clone is kept in RUN_DIR/clone to compare against.

    Ray: an embedded local Ray by default; --address joins a cluster started with
    `ray start --head`. SUMO comes from the eclipse-sumo/libsumo wheels: nothing to set.

SCENARIOS
    ring          Sugiyama ring, 22 vehicles, 1 AV (rlsuite/Ring-v0); --ring-length 230 or 220:270
    ring_multi    the ring with --avs k AVs, one agent each (rlsuite/RingMulti-v0)
    figure_eight  Flow's loopy intersection, 13 humans + 1 AV (rlsuite/FigureEight-v0);
                  --avs 7 or 14 for Flow's other two, still one centralised policy
    figure_eight_multi
                  the figure-eight with --avs k AVs (default 7), one agent each, one
                  shared policy (rlsuite/FigureEightMulti-v0); baseline snake leads a
                  platoon with one AV
    ring_2lane    two-lane ring, 41 humans with SUMO's lane changes + 1 AV that sets its
                  acceleration and asks for lane changes (rlsuite/Ring2Lane-v0); baseline
                  human lets SUMO drive the AV
    merge         Flow's merge: highway + on-ramp, AVs enter and leave as agents, one
                  shared policy (rlsuite/MergeMulti-v0); --env-set av_share=0.25 or
                  0.333 for merge 1 and 2
    bottleneck    Flow's bottleneck0: 4 -> 2 -> 1 lanes, 1900 veh/h, 10% AVs whose speed
                  limits one controller sets per lane-segment (rlsuite/Bottleneck-v0);
                  metric outflow_veh_h over the last 500 s; baselines all-human (no
                  AVs) and alinea (a feedback ramp meter); --env-set inflow=1500;
                  the breaking road by default, --env-set capacity_drop=false for
                  the free-flowing one (a policy runs on its own unless told)
    signals       signalised intersections, one agent per light (rlsuite/Signals-v0):
                  sumo-rl's --network single|grid2x2|grid4x4; RESCO's maps cologne1,
                  cologne3, cologne8, ingolstadt1, ingolstadt7, ingolstadt21 (sumo-rl's
                  edited copies; RESCO's own: ingolstadt7_resco, ingolstadt21_resco),
                  grid4x4_resco, arterial4x4 under RESCO's protocol (metric delay, s/veh;
                  --env-set sumo_version=1.9.2 for RESCO's SUMO); any network with
                  --env-set net_file=X.net.xml --env-set route_file=X.rou.xml; baselines
                  fixed, actuated, maxpressure, greedy (RESCO's maps and your own);
                  evaluate runs each episode of those in its own SUMO process (TraCI),
                  so a seed's score does not depend on what ran before it

OPTIONS FOR EVERY ENV
    --env-set KEY=VALUE sets any env option (the env classes' config fields), e.g.
    accel_noise, bunching, num_vehicles, accel_penalty, backend=traci, num_seconds.

KEY=VALUE AND SEARCH SPACES
    --env-set and --plan-set read VALUE as JSON when they can (hidden=[32,32],
    accel_noise=0.1) and as text otherwise. --search KEY=SPEC takes
    uniform:LO:HI, loguniform:LO:HI, choice:A,B,... or grid:A,B,... (brackets
    optional: choice:[0.0,0.01] = choice:0.0,0.01), as every rlsuite CLI does.

EXAMPLES
    traffic-train evaluate --scenario ring --controller pi --ring-length 230 --episodes 4
    traffic-train train --scenario ring --plan sync --workers 2 --iterations 50
    traffic-train evaluate --scenario ring --controller runs/traffic/ring/checkpoints/iter_000050
    traffic-train evaluate --scenario signals --network grid2x2 --controller maxpressure
    traffic-train evaluate --scenario signals --network cologne8 --controller greedy --workers 0
    traffic-train tune --scenario ring --samples 4 --scheduler asha --search lr=loguniform:1e-5:1e-3

EXIT STATUS
    0 on success, 2 on bad input (the message says what to change), 1 on a failure.
"""

DEFAULT_SEARCH = "lr=loguniform:1e-5:1e-3"
"""What tune searches when no --search is given."""


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="traffic-train",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = p.add_subparsers(dest="command", metavar="{evaluate,train,tune}")
    sub.required = True

    def env_args(sp: argparse.ArgumentParser) -> None:
        # fmt: off
        add_flags(
            sp,
            ("--scenario", None, "ring", "ring, ring_multi, figure_eight, figure_eight_multi, ring_2lane, merge, bottleneck or signals (default ring)"),
            ("--ring-length", None, None, "ring length in m (e.g. 230) or a range drawn per reset (220:270)"),
            ("--network", None, None, "signals network: sumo-rl's single, grid2x2, grid4x4, or a RESCO map (cologne1, cologne3, cologne8, ingolstadt1, ingolstadt7, ingolstadt21, ingolstadt7_resco, ingolstadt21_resco, grid4x4_resco, arterial4x4; default single)"),
            ("--avs", int, None, "AVs (ring_multi, figure_eight, figure_eight_multi)"),
            ("--horizon", int, None, "controlled steps per episode (signals: simulated seconds)"),
            ("--warmup", int, None, "human-driven steps at reset"),
        )
        # fmt: on
        add_set_flag(sp, "--env-set", what="any other env option", example="accel_noise=0.1")

    ev = sub.add_parser(
        "evaluate",
        help="evaluate a baseline or a checkpoint",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    env_args(ev)
    # fmt: off
    add_flags(
        ev,
        ("--controller", None, REQUIRED, "idm, followerstopper, pi (signals: fixed, actuated, maxpressure; bottleneck: all-human, alinea) or a checkpoint path"),
        ("--episodes", int, 4, "seeded episodes (default 4)"),
        ("--seed", int, 0, "first seed (default 0)"),
    )
    # fmt: on
    add_cluster_flags(
        ev,
        num_cpus=False,
        workers="parallel Ray workers (default one per CPU; 0 = in this process, no Ray)",
    )
    add_json_flag(ev, "the results")
    add_flags(
        ev,
        ("--png", None, None, "space-time diagram PNG (default next to --json)"),
        ("--no-png", bool, False, "skip the space-time diagram"),
        ("--gui", bool, False, "show the PNG episode in sumo-gui (needs a display)"),
    )

    tr = sub.add_parser(
        "train",
        help="train an AV policy with a platform plan",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    env_args(tr)
    add_flags(tr, ("--plan", None, "sync", "sync (PPO), async (APPO), replay (DQN), es (evolution strategies) (default sync)"))  # fmt: skip
    add_cluster_flags(
        tr, num_cpus=False, workers="env runners, or es workers (default 2)", workers_default=2
    )
    # fmt: off
    add_flags(
        tr,
        ("--iterations", int, 20, "training iterations (default 20)"),
        ("--run-dir", None, None, "checkpoints, metrics and curves (default runs/traffic/<scenario>)"),
        ("--resume", bool, False, "continue from the run dir's checkpoint"),
        ("--seed", int, 0, None),
        ("--stop-return", float, None, "stop once the mean return reaches this"),
    )
    # fmt: on
    add_set_flag(tr, "--plan-set", what="a plan field", example="hidden=[32,32]")
    # fmt: off
    add_flags(
        tr,
        ("--demonstrations", None, None, "warm-start the sync plan from a baseline's recorded episodes on the training env, e.g. pi:32 (default 16 episodes); the clone is kept in RUN_DIR/clone", "CONTROLLER[:EPISODES]"),
        ("--eval-episodes", int, 0, "evaluate the final checkpoint on this many episodes (default 0)"),
    )
    # fmt: on

    tu = sub.add_parser(
        "tune",
        help="tune a plan's hyper-parameters with Ray Tune",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    env_args(tu)
    tu.add_argument("--plan", default="sync")
    add_cluster_flags(
        tu, num_cpus=False, workers="env runners per trial (default 1)", workers_default=1
    )
    add_flags(
        tu,
        ("--iterations", int, 10, "iterations per trial (default 10)"),
        ("--samples", int, 4, "trials (default 4)"),
        ("--scheduler", ("asha", "pbt"), "asha", None),
    )
    add_search_flag(tu, default_text=DEFAULT_SEARCH)
    add_flags(tu, ("--run-dir", None, None, None), ("--seed", int, 0, None))
    add_set_flag(tu, "--plan-set", what="a plan field", example="hidden=[32,32]")
    add_json_flag(tu, "the trials", default_text="RUN_DIR/traffic_tune.json")
    return p


# --- helpers -----------------------------------------------------------------------


def env_config(args: argparse.Namespace, scen: Any) -> dict[str, Any]:
    from rlsuite.apps.traffic.scenarios import parse_ring_length

    cfg: dict[str, Any] = {}
    if args.ring_length is not None:
        if not scen.has_ring_length:
            raise ValueError(f"--ring-length applies to ring scenarios, not {scen.name!r}")
        rl = parse_ring_length(args.ring_length)
        cfg["ring_length"] = list(rl) if isinstance(rl, tuple) else rl
    if args.network is not None:
        if scen.name != "signals":
            raise ValueError(f"--network applies to --scenario signals, not {scen.name!r}")
        cfg["network"] = args.network
    if args.avs is not None:
        if not scen.has_avs:
            raise ValueError(
                "--avs applies to --scenario ring_multi, figure_eight or figure_eight_multi "
                f"(not {scen.name!r}; ring has exactly one AV)"
            )
        cfg["num_avs"] = args.avs
    if args.horizon is not None:
        cfg["num_seconds" if scen.name == "signals" else "horizon"] = args.horizon
    if args.warmup is not None:
        if scen.name == "signals":
            raise ValueError("--warmup applies to ring and figure-eight scenarios")
        cfg["warmup_steps"] = args.warmup
    cfg.update(dict(args.env_set))
    if scen.name == "signals" and cfg.get("networks"):
        # several maps: their common padding in the config, so a checkpoint records it and
        # `evaluate --env-set network=<one of them>` observes as it trained
        from rlsuite.apps.traffic.envs.signals_multimap import padding

        cfg.update(padding(cfg["networks"], **{k: v for k, v in cfg.items() if k != "networks"}))
    return cfg


def _validate_env(env_id: str, cfg: dict[str, Any]) -> None:
    """Build the config object (not the simulation) so bad options fail before Ray starts."""
    from rlsuite.apps.traffic import scenarios
    from rlsuite.platform import envs

    cfg_cls = scenarios.config_class(env_id)
    if cfg_cls is not None:
        cfg_cls.from_kwargs(**{**envs.spec(env_id).default_config, **cfg})


def _console():
    from rich.console import Console

    return Console(width=None if sys.stdout.isatty() else 150)


METRICS = (
    "mean_speed",
    "speed_std",
    "frac_below_0_5",
    "throughput_veh_h",
    "outflow_veh_h",
    "return",
)
SIGNAL_METRICS = (
    "delay", "trip_time", "waiting_time", "queue", "never_inserted",  # RESCO's maps
    "mean_waiting_time", "mean_queue", "mean_speed", "return",
)  # fmt: skip


# --- commands ----------------------------------------------------------------------


def cmd_evaluate(args: argparse.Namespace) -> int:
    from rlsuite.apps.traffic import scenarios
    from rlsuite.platform import evaluation

    scen = scenarios.get(args.scenario)
    if args.episodes < 1:
        raise ValueError(f"--episodes must be >= 1, got {args.episodes}")
    cfg = env_config(args, scen)
    controller, overrides = scenarios.controller_for(scen, args.controller, cfg)
    cfg.update(overrides)
    cfg = scenarios.with_policy_fields(scen.env_id, cfg, controller)
    if scen.name == "signals":  # scores that follow from their seeds: see scoring_config
        from rlsuite.apps.traffic.envs.signals import scoring_config

        cfg = scoring_config(cfg)
    _validate_env(scen.env_id, cfg)
    label = os.path.basename(os.path.normpath(args.controller))
    console = _console()
    scen_list = evaluation.scenarios(
        scen.env_id, range(args.seed, args.seed + args.episodes), cfg, name=_label(scen, cfg)
    )
    evaluation.check_controller(controller, scen_list)  # before Ray starts or joins a cluster
    if args.address:
        from rlsuite.platform import cluster

        cluster.init(address=args.address)
    res = evaluation.evaluate(
        controller, scen_list, num_workers=args.workers, progress=True, name=label
    )
    metrics = SIGNAL_METRICS if scen.name == "signals" else METRICS
    console.print(
        res.table(metrics=[m for m in metrics if m in res.summary], title=f"{scen.name}: {label}")
    )
    out: dict[str, Any] = {
        "scenario": scen.name,
        "env_id": scen.env_id,
        "env_config": cfg,
        "controller": label,
        **res.to_dict(),
    }
    png = None
    if scen.space_time and not args.no_png:
        png = args.png or (os.path.splitext(args.json)[0] + ".png" if args.json else None)
        if png:
            png = _space_time(scen, cfg, controller, args.seed, png, label, gui=args.gui)
            out["space_time_png"] = png
            console.print(f"space-time diagram: {png}")
    if args.json:
        write_json(args.json, out)
        console.print(f"results: {args.json}")
    return 0


def _label(scen: Any, cfg: dict[str, Any]) -> str:
    rl = cfg.get("ring_length")
    if rl is None:
        return scen.name
    return f"{scen.name}-{rl[0]:g}-{rl[1]:g}m" if isinstance(rl, list) else f"{scen.name}-{rl:g}m"


def _space_time(scen, cfg, controller, seed, png, label, gui=False) -> str:
    """Re-run the first (seeded, so identical) episode in this process with recording on."""
    from rlsuite.apps.traffic.plots import space_time_diagram
    from rlsuite.platform import envs, evaluation

    rec_cfg = {**cfg, "record": True, **({"gui": True, "backend": "traci"} if gui else {})}
    env = envs.make(scen.env_id, rec_cfg)
    try:
        ctrl = evaluation.build_controller(controller)
        evaluation.run_episode(env, ctrl, evaluation.Scenario(scen.env_id, rec_cfg, seed))
        traj = getattr(env, "unwrapped", env).trajectories()
    finally:
        env.close()
    return space_time_diagram(traj, png, title=f"{scen.name}, {label}, seed {seed}")


def _plan(args: argparse.Namespace, scen: Any, cfg: dict[str, Any]):
    from rlsuite.platform import envs, optimizers

    envs.rllib_env(scen.env_id)
    known = {f.name for f in dataclasses.fields(optimizers.plan_class(args.plan))}
    # RLlib plans sample on env runners, the es plan on its worker actors
    workers = "num_env_runners" if "num_env_runners" in known else "num_workers"
    fields = dict(env=scen.env_id, env_config=cfg, seed=args.seed, **{workers: args.workers})
    if scen.name == "ring" and "normalize_actions" in known:
        # The ring clips its own action to its bounds, so RLlib's per-env rescaling is
        # not needed (~15% of sampling time); --plan-set normalize_actions=true restores it.
        fields["normalize_actions"] = False
    long_returns = ("ring", "ring_multi", "figure_eight", "figure_eight_multi")
    if scen.name in long_returns and "vf_clip_param" in known:
        # Ring returns are ~800 per episode (figure-eight 250-500); RLlib's default clamps
        # the squared value error at 10, which leaves the critic without gradient
        # (benchmarks/RESULTS.md).
        fields["vf_clip_param"] = 1e6
    fields.update(dict(args.plan_set))
    return optimizers.make_plan(args.plan, **fields)


def _record_demonstrations(args, scen, cfg, run_dir, console) -> str:
    """Record ``--demonstrations CONTROLLER[:EPISODES]`` on the training env (not on a
    resume: the run's checkpoint is restored instead); returns the parquet path."""
    from rlsuite.apps.traffic import scenarios
    from rlsuite.platform import demonstrations

    name, _, n = args.demonstrations.partition(":")
    try:
        episodes = int(n) if n else 16
    except ValueError:
        raise ValueError(
            f"--demonstrations takes CONTROLLER[:EPISODES], e.g. pi:32; got {args.demonstrations!r}"
        ) from None
    if episodes < 1:
        raise ValueError(f"--demonstrations needs at least 1 episode, got {episodes}")
    if args.plan != "sync":
        raise ValueError("--demonstrations warm-starts the sync plan (PPO); use --plan sync")
    controller, overrides = scenarios.controller_for(scen, name, cfg)
    if overrides or scen.multi_agent:
        raise ValueError(
            f"--demonstrations needs a single-agent scenario and an AV controller; "
            f"{name!r} on {scen.name!r} is not one"
        )
    path = os.path.join(run_dir, "demonstrations.parquet")
    if args.resume and os.path.exists(path):
        return path
    if not args.resume and os.path.exists(os.path.join(run_dir, "metrics.jsonl")):
        # refuse before recording: the run's own demonstrations stay as they were
        raise FileExistsError(
            f"{run_dir} already holds a run; pass --resume to continue it, or choose "
            "another --run-dir"
        )
    t0 = time.perf_counter()
    stats = demonstrations.record_episodes(
        controller, scen.env_id, episodes, path, cfg,
        seed=args.seed + 10_000,
    )  # fmt: skip
    console.print(
        f"recorded {int(stats['transitions'])} transitions of {name} ({episodes} episodes, "
        f"return {stats['return_mean']:.4g}) in {time.perf_counter() - t0:.0f} s: {path}"
    )
    return path


def cmd_train(args: argparse.Namespace) -> int:
    from rlsuite.apps.traffic import scenarios
    from rlsuite.platform import cluster, training

    scen = scenarios.get(args.scenario)
    if args.iterations < 1:
        raise ValueError(f"--iterations must be >= 1, got {args.iterations}")
    cfg = env_config(args, scen)
    _validate_env(scen.env_id, cfg)
    run_dir = args.run_dir or os.path.join("runs", "traffic", scen.name)
    console = _console()
    if args.demonstrations:
        demos = _record_demonstrations(args, scen, cfg, run_dir, console)
        args.plan_set = [*args.plan_set, ("demonstrations", demos)]
    plan = _plan(args, scen, cfg)
    info = cluster.init(address=args.address) if args.address else cluster.init()
    try:
        res = training.train(
            plan,
            iterations=args.iterations,
            run_dir=run_dir,
            resume=args.resume,
            progress=True,
            stop_return=args.stop_return,
        )
        from rich.table import Table

        t = Table(title=f"traffic-train train: {scen.name}, plan {args.plan}")
        for col in ("iterations", "env steps", "final return", "wall (s)", "checkpoint"):
            t.add_column(col)
        t.add_row(
            str(res.iterations),
            str(res.env_steps),
            f"{res.final_return:.4g}",
            f"{res.wall_time_s:.0f}",
            res.checkpoint,
        )
        console.print(t)
        out = {
            "scenario": scen.name,
            "plan": args.plan,
            "env_config": cfg,
            "iterations": res.iterations,
            "env_steps": res.env_steps,
            "final_return": res.final_return,
            "wall_time_s": res.wall_time_s,
            "checkpoint": res.checkpoint,
        }
        if args.eval_episodes > 0:
            from rlsuite.platform import evaluation

            ev = evaluation.evaluate(
                res.checkpoint,
                evaluation.scenarios(scen.env_id, args.eval_episodes, cfg, name=_label(scen, cfg)),
                progress=True,
                name="learned",
            )
            metrics = SIGNAL_METRICS if scen.name == "signals" else METRICS
            console.print(ev.table(metrics=[m for m in metrics if m in ev.summary]))
            out["evaluation"] = ev.to_dict()
        write_json(os.path.join(run_dir, "traffic_train.json"), out)
        console.print(f"run directory: {run_dir} (metrics, learning curve, checkpoints)")
    finally:
        if info.started_here:
            cluster.shutdown()
    return 0


def cmd_tune(args: argparse.Namespace) -> int:
    from rlsuite.apps.traffic import scenarios
    from rlsuite.platform import cluster, tuning

    scen = scenarios.get(args.scenario)
    cfg = env_config(args, scen)
    _validate_env(scen.env_id, cfg)
    space = parse_search(args.search or [DEFAULT_SEARCH])
    plan = _plan(args, scen, cfg)
    run_dir = args.run_dir or os.path.join("runs", "traffic", f"tune-{scen.name}")
    console = _console()
    info = cluster.init(address=args.address) if args.address else cluster.init()
    try:
        t0 = time.time()
        res = tuning.tune(plan, space, run_dir=run_dir, **tune_options(args))
        from rich.table import Table

        t = Table(title=f"traffic-train tune: {scen.name} ({time.time() - t0:.0f} s)")
        keys = sorted(space)
        for col in ("trial", *keys, "metric"):
            t.add_column(col)
        for i, tr in enumerate(res.trials):
            t.add_row(
                str(i),
                *[f"{tr.get('config', tr).get(k, '')}" for k in keys],
                f"{tr.get('metric', tr.get('episode_return_mean', float('nan')))}",
            )
        console.print(t)
        console.print(
            f"best: {res.best_config}  metric {res.best_metric}  checkpoint {res.best_checkpoint}"
        )
        write_json(
            args.json or os.path.join(run_dir, "traffic_tune.json"),
            {
                "best_config": res.best_config,
                "best_metric": res.best_metric,
                "best_checkpoint": res.best_checkpoint,
                "trials": res.trials,
            },
        )
    finally:
        if info.started_here:  # a Ray the caller started (or a joined cluster) stays up
            cluster.shutdown()
    return 0


COMMANDS = {"evaluate": cmd_evaluate, "train": cmd_train, "tune": cmd_tune}


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except (*USER_ERRORS, TypeError) as e:
        print(f"traffic-train {args.command}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # noqa: BLE001 - a clear last line instead of a bare traceback
        from rlsuite.apps.traffic.kernel import SimulationError

        if isinstance(e, SimulationError):
            print(f"traffic-train {args.command}: SUMO error: {e}", file=sys.stderr)
            return 1
        raise


if __name__ == "__main__":
    raise SystemExit(main())
