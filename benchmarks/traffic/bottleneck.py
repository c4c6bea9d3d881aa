"""Flow's bottleneck0: a learned AV speed-limit policy against all-human and a ramp meter,
on the breaking road (the env's default) and, beside it, the free-flowing road.

Flow's bottleneck (Vinitsky et al., CoRL 2018; Flow commit bc44b21): four lanes narrow to two
and then to one at zipper merges, 1900 veh/h enter (10% AVs), nobody changes lanes; 1000 env
steps of 0.5 s after 40 warm-up steps; one central controller shifts the AVs' speed limits per
lane-segment. Flow's metric, the outflow over the last 500 s: all-human 1023 +- 263, ES 1360
+- 200 (+33%). Rows on the same seeded episodes: ``all-human``, ``alinea`` (a feedback ramp
meter) and ``learned`` (``--controller``, default the road's shipped policy). ``--road``:
``breaking`` (``capacity_drop=true``, the default; ``bottleneck_drop_es``; results in
``traffic_bottleneck_capacity_drop.json``) or ``free`` (``capacity_drop=false``, Flow's own
drivers; ``bottleneck_es``; ``traffic_bottleneck.json``), given to every env explicitly. Pass:
learned >= 1.25 x all-human, and >= ALINEA. Also the inflow-outflow curve (1000-2000 veh/h;
``--no-curve`` skips it); ``--speed`` the sampling rates against a raw libsumo loop;
``--minutes M`` first trains the es plan from scratch (``--export DIR`` ships it);
``--env-set`` adds env options to every row, ``--plan-set`` plan fields, ``--out`` names the
results.
"""

from dataclasses import dataclass

from rlsuite.apps.traffic.benchmarking import TrainingSettings
from rlsuite.bench import Benchmark, Row, Value, pub

FLOW_T1 = "Vinitsky et al. 2018, Table 1"


@dataclass(frozen=True)
class Settings(TrainingSettings):
    minutes: float = 0.0
    """train the es plan from scratch for this many minutes first (0: evaluate a policy)"""
    road: str = "breaking"
    """breaking (capacity_drop=true, the env's default) or free (capacity_drop=false)"""
    controller: str = ""
    """learned policy (checkpoint or export; default the road's shipped one)"""
    episodes: int = 10
    """seeded episodes per controller"""
    seed: int = 0
    """first seed"""
    curve_episodes: int = 4
    """episodes per inflow point"""
    curve: bool = True
    """also run the inflow-outflow curve (--no-curve skips it)"""
    speed: bool = False
    """also measure sampling speed"""
    export: str = ""
    """write the trained policy's export here"""
    train_only: bool = False
    """stop after training"""


def train(ctx, road: dict) -> str:
    """Train the es plan for ``--train-minutes``; returns the checkpoint."""
    import json
    import os

    from rich.console import Console

    from rlsuite.apps.traffic import bottleneck_study as study
    from rlsuite.apps.traffic.benchmarking import train_for_minutes
    from rlsuite.cli_common import parse_sets
    from rlsuite.platform import envs, optimizers

    s = ctx.settings
    envs.rllib_env(study.ENV_ID)
    plan = optimizers.make_plan("es", env=study.ENV_ID, env_config={**study.TRAIN_ENV, **road},
                                seed=s.seed, num_workers=s.workers,
                                **{**study.PLAN, **parse_sets(s.plan_set)})  # fmt: skip
    run_dir = ctx.run_dir("runs/benchmarks/traffic_bottleneck")
    res, curve, secs = train_for_minutes(plan, run_dir, s.minutes, s.chunk, s.workers, Console())
    with open(os.path.join(run_dir, "bottleneck_curve.json"), "w") as f:
        json.dump(dict(curve=curve, train_s=secs, plan=plan.to_dict()), f, indent=2, default=str)
    if s.export:
        import shlex

        from rlsuite.bench import command
        from rlsuite.platform.checkpoints import export_policy

        export_policy(res.checkpoint, s.export, note=command(ctx.bench.name, shlex.join(ctx.argv)))
        ctx.say(f"policy exported to {s.export}")
    return res.checkpoint


def run(ctx) -> int:
    from rlsuite.apps.traffic import bottleneck_study as study
    from rlsuite.bench import repo_root
    from rlsuite.cli_common import parse_sets

    s = ctx.settings
    if s.road not in study.ROADS:
        raise ValueError(f"--road is one of {', '.join(study.ROADS)}, not {s.road!r}")
    road, policy, stem = study.ROADS[s.road]
    road, stem = {**road, **parse_sets(s.env_set)}, s.out or stem
    learned = s.controller or str(repo_root() / "benchmarks" / "policies" / policy)
    if s.minutes > 0:
        learned = train(ctx, road)
        if s.train_only:
            return 0
    seeds = list(range(s.seed, s.seed + s.episodes))
    names = ("all-human", "alinea", "learned")
    out: dict = {"benchmark": "traffic_bottleneck", "controller": learned, "seeds": seeds,
                 "flow": study.FLOW_OUTFLOW, "road": dict(road)}  # fmt: skip
    out["rows"] = rows = study.run_rows(names, learned, road, seeds)
    human = rows["all-human"]["outflow_veh_h"]
    ctx.table([dict(controller=n, outflow=r["outflow_veh_h"], std=r["outflow_std"],
                    min=r["outflow_min"], max=r["outflow_max"],
                    vs_all_human=r["outflow_veh_h"] / human, mean_speed=r["mean_speed"])
               for n, r in rows.items()], f"bottleneck0, {s.road} road: outflow over the last 500 s (veh/h)")  # fmt: skip
    if s.curve:
        curve_seeds = list(range(s.seed, s.seed + s.curve_episodes))
        out["inflow_curve"] = study.inflow_curve(names, learned, road, curve_seeds, ctx.say)
    flow = rows["learned"]["outflow_veh_h"]
    checks = {f"learned >= {study.GAIN} x all-human": flow >= study.GAIN * human,
              "learned >= the ALINEA ramp meter": flow >= rows["alinea"]["outflow_veh_h"]}  # fmt: skip
    if s.speed:
        from rlsuite.apps.traffic.benchmarking import env_rate, sampler_rate

        raw, local = study.raw_rate(2000, road), env_rate(study.ENV_ID, road, 2000)
        sampler = sampler_rate(study.ENV_ID, road, 2000)
        out["sampling"] = {"raw_libsumo_steps_per_s": raw, "env_in_process_steps_per_s": local,
                           "rllib_runner_env_steps_per_s": sampler, "runner_vs_raw_per_core": sampler / raw}  # fmt: skip
        checks["platform sampler >= 50% of the raw libsumo loop per core"] = sampler / raw >= 0.5
    out["checks"] = checks
    ctx.save(stem, out)
    ctx.save_plot(stem, study.rows_figure(out))
    if out.get("inflow_curve"):
        ctx.save_plot(f"{stem}_inflow", study.inflow_figure(out))
    return ctx.verdict(checks)


def learned_row(road: str, task: str, unit: str, args: str, policy: str) -> Row:
    """The learned row of a road: its results file's learned outflow against Flow's ES."""
    from rlsuite.apps.traffic.bottleneck_study import ROADS

    return Row(
        "traffic", task, unit, f"{ROADS[road][2]}.json", Value(("rows", "learned", "outflow_veh_h")),
        pub(f"Flow ES, {FLOW_T1}", 1360), f"rlsuite bench run traffic_bottleneck --road {road} {args}",
        f"`{policy}`", fmt="{:,.0f}",
    )  # fmt: skip


# fmt: off
BENCHMARK = Benchmark(run=run, settings=Settings, quick=dict(episodes=1, curve=False), rows=(
    learned_row("breaking", "bottleneck 0, the breaking road (`capacity_drop=true`, the default), ES from scratch",
                "outflow, veh/h (last 500 s, seeds 0-9)", "--episodes 10", "bottleneck_drop_es"),
    learned_row("free", "bottleneck 0, the free-flowing road (`capacity_drop=false`, Flow's drivers)",
                "outflow, veh/h (last 500 s, 10 seeds)", "--episodes 10 --speed", "bottleneck_es"),
))
# fmt: on
