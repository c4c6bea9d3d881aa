"""Flow's bottleneck0: a learned AV speed-limit policy against all-human and a ramp meter.

Flow's bottleneck (Vinitsky et al., CoRL 2018; Flow commit bc44b21): four lanes narrow to
two and then to one at zipper merges, 1900 veh/h enter (10% AVs), nobody changes lanes;
1000 env steps of 0.5 s after 40 warm-up steps. One central controller shifts the AVs'
speed limits per lane and road segment (20 actions; Flow's ``DesiredVelocityEnv``). The
metric is Flow's: the outflow (veh/h) over the last 500 s. Flow: all-human 1023 +- 263,
ES 1360 +- 200 (+33%).

Rows, on the same seeded episodes: ``all-human`` (no AVs), ``alinea`` (a feedback ramp
meter at the four-lane junction 140 m before the first merge, holding the occupancy of the
two-lane section), and ``learned`` (``--controller``, default the shipped policy of the
road). The inflow-outflow curve runs all-human and the
learned policy at inflows 1000-2000 veh/h.

Pass criteria: learned outflow >= 1.25 x all-human, and >= the ramp meter's.

``--train-minutes M`` first trains the policy from scratch with the platform's ``es`` plan
for M minutes of wall-clock (embedded Ray with ``--workers`` CPUs) into ``--run-dir``, and
evaluates that instead; ``--export DIR`` then writes its policy-only copy there.

``--road`` picks the road of every row (and of training), always given to the env
explicitly: ``breaking`` (the default; the env's ``capacity_drop=True``, drivers' speedDev
0.2), where the all-human road breaks down as Flow's did (989 veh/h at 1900 veh/h inflow on
SUMO 1.28, against Flow's 1023; ``rlsuite bench run traffic_bottleneck_capacity``), with
``benchmarks/policies/bottleneck_drop_es`` as the learned row and results in
``traffic_bottleneck_capacity_drop.{json,png}`` (and ``_inflow.png``); or ``free``
(``capacity_drop=False``, Flow's own drivers, which keep today's SUMO flowing), with
``benchmarks/policies/bottleneck_es`` and results in ``traffic_bottleneck.{json,png}``.

``--speed`` also measures sampling: env steps/s of the platform's RLlib env runner (the
sync plan's module acting, no learning) and of the env in this process, against a raw
libsumo loop of the same network and demand (every vehicle's lane state read, no control).

Usage:
    rlsuite bench run traffic_bottleneck --episodes 10
    rlsuite bench run traffic_bottleneck --road free --episodes 10 --speed
    rlsuite bench run traffic_bottleneck --road free --train-minutes 20 --export benchmarks/policies/bottleneck_es

Writes the JSON, a PNG (outflow over time per controller; the outflow per controller) and
``_inflow.png`` (the inflow-outflow curve) under benchmarks/results/traffic/.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

from rlsuite.apps.traffic.benchmarking import MACHINE, RESULTS  # noqa: E402

ENV_ID = "rlsuite/Bottleneck-v0"
POLICY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "policies", "bottleneck_es")
POLICY_DROP = os.path.join(os.path.dirname(POLICY), "bottleneck_drop_es")
"""The policy trained from scratch on the breaking road."""
ROADS = {
    "breaking": ({"capacity_drop": True}, POLICY_DROP, "traffic_bottleneck_capacity_drop"),
    "free": ({"capacity_drop": False}, POLICY, "traffic_bottleneck"),
}
"""``--road``: its env options (for every row and for training), its shipped policy and its
results' stem (the free road's is the name from before the breaking road was the default)."""
FLOW = {"all-human": (1023, 263), "learned": (1360, 200)}
"""Flow's bottleneck0 outflow (veh/h, mean and std over 40 rollouts; ES is the learned one)."""
GAIN = 1.25
PLAN = dict(hidden=[32, 32], population_size=16, episodes_per_eval=1, eval_episodes=2,
            sigma=0.02, lr=0.02)  # fmt: skip
"""The es plan the shipped policy was trained with (from scratch)."""
TRAIN_ENV = {"max_shift_up": 1.5}
"""Flow's env but for the largest raise of a speed limit per step, 1.5 m/s instead of 1: the
action box is then symmetric, so the policy's zero output (tanh(0), the middle of the box)
keeps the AVs' limits. With Flow's [-1.5, 1] it cuts every limit by 0.25 m/s per step and
the AVs stop and block their lanes from the first generation on (two runs of Flow's box
stayed below all-human; RESULTS.md)."""


def train(args, console) -> str:
    """Train the es plan for ``--train-minutes``; returns the checkpoint."""
    from rlsuite.apps.traffic.benchmarking import train_for_minutes
    from rlsuite.platform import envs, optimizers

    envs.rllib_env(ENV_ID)
    env_config = {**TRAIN_ENV, **ROADS[args.road][0]}
    plan = optimizers.make_plan("es", env=ENV_ID, env_config=env_config, seed=args.seed,
                                num_workers=args.workers, **PLAN)  # fmt: skip
    res, curve, secs = train_for_minutes(plan, args.run_dir, args.train_minutes, args.chunk,
                                         args.workers, console)  # fmt: skip
    with open(os.path.join(args.run_dir, "bottleneck_curve.json"), "w") as f:
        json.dump(dict(curve=curve, train_s=secs, plan=plan.to_dict()), f, indent=2, default=str)
    if args.export:
        from rlsuite.platform.checkpoints import export_policy

        export_policy(res.checkpoint, args.export,
                      note="flock /tmp/rlsuite-heavy.lock .venv/bin/python benchmarks/traffic_bottleneck.py "
                      + " ".join(sys.argv[1:]))  # fmt: skip
        console.print(f"policy exported to {args.export}")
    return res.checkpoint


def controller(name: str, learned: str, cfg: dict) -> tuple[object, dict]:
    """The controller of a row name and its episodes' env options: ``cfg`` (the road always
    among them), the baseline's own and, for a checkpoint, those its policy was trained with."""
    from rlsuite.apps.traffic import scenarios

    spec, extra = scenarios.controller_for(
        scenarios.get("bottleneck"), learned if name == "learned" else name, cfg
    )
    return spec, scenarios.with_policy_fields(ENV_ID, {**cfg, **extra}, spec)


def run_rows(names, learned: str, cfg: dict, seeds: list[int]) -> dict[str, dict]:
    """Per controller: every seeded episode's metrics and per-step outflow (in this process)."""
    from rlsuite.platform import envs, evaluation

    out = {}
    for name in names:
        spec, ecfg = controller(name, learned, cfg)
        ctrl = evaluation.build_controller(spec)
        env = envs.make(ENV_ID, ecfg)
        try:
            eps = []
            for s in seeds:
                row = evaluation.run_episode(env, ctrl, evaluation.Scenario(ENV_ID, ecfg, s))
                ser = env.unwrapped.series()
                eps.append({**row, "outflow_series": ser["outflow"].tolist(),
                            "t": ser["t"].tolist()})  # fmt: skip
        finally:
            env.close()
        flows = np.array([e["outflow_veh_h"] for e in eps])
        out[name] = {"outflow_veh_h": float(flows.mean()), "outflow_std": float(flows.std()),
                     "outflow_min": float(flows.min()), "outflow_max": float(flows.max()),
                     "mean_speed": float(np.mean([e["mean_speed"] for e in eps])),
                     "teleports": float(np.sum([e["teleports"] for e in eps])),
                     "collisions": float(np.sum([e["collisions"] for e in eps])),
                     "env_config": ecfg, "episodes": eps}  # fmt: skip
    return out


def raw_rate(steps: int, road: dict) -> float:
    """Steps/s of a raw libsumo loop of the same network and demand: one SUMO step, the
    drivers' modes set as they enter (no lane changes, speed mode 9, as the scenario has
    them) and every vehicle's lane state read per step, no control, from the end of the
    warm-up on."""
    from rlsuite.apps.traffic.envs.bottleneck import (
        LANE_CHANGE_MODE,
        SPEED_MODE,
        BottleneckConfig,
        BottleneckSimulation,
    )

    core = BottleneckSimulation(BottleneckConfig(horizon=10_000, **road))
    try:
        core.start(np.random.default_rng(0))
        sim = core.sim
        assert sim.backend == "libsumo", sim.backend
        t = time.perf_counter()
        for _ in range(steps):
            sim.step()
            departed = sim.call("simulation", "getDepartedIDList")
            for vid in departed:  # the scenario's drivers: no lane changes, speed mode 9
                sim.call("vehicle", "setLaneChangeMode", vid, LANE_CHANGE_MODE)
            sim.set_speed_modes(departed, SPEED_MODE)
            sim.vehicle_lane_states(sim.vehicle_ids())
        return steps / (time.perf_counter() - t)
    finally:
        core.close()


def env_rate(steps: int, road: dict) -> float:
    """Env steps/s of the env stepped in this process (zero actions; episodes restart)."""
    from rlsuite.apps.traffic.envs.bottleneck import BottleneckEnv

    env = BottleneckEnv(horizon=steps, **road)
    try:
        env.reset(seed=0)
        a = np.zeros(env.action_space.shape, np.float32)
        t = time.perf_counter()
        for _ in range(steps):
            env.step(a)
        return steps / (time.perf_counter() - t)
    finally:
        env.close()


def plot(out: dict, path: str, curve_path: str | None) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(12, 4), dpi=110)
    for name, r in out["rows"].items():
        ep = r["episodes"]
        window = 120  # 60 s moving sum -> veh/h
        series = np.mean(
            [np.convolve(e["outflow_series"], np.ones(window), "valid") for e in ep], 0
        )
        t = np.array(ep[0]["t"])[window - 1 :]
        a.plot(t, series / (window * 0.5) * 3600, label=f"{name} ({r['outflow_veh_h']:.0f})")
    a.set_xlabel("time (s)")
    a.set_ylabel("outflow, last 60 s (veh/h)")
    road = ", breaking road" if out.get("road", {}).get("capacity_drop") else ", free road"
    a.set_title(f"bottleneck0{road}, mean over {len(out['seeds'])} seeds")
    a.legend()
    names = list(out["rows"])
    b.bar(names, [out["rows"][n]["outflow_veh_h"] for n in names],
          yerr=[out["rows"][n]["outflow_std"] for n in names], color="grey")  # fmt: skip
    b.axhline(FLOW["all-human"][0], color="tab:red", ls="--", label="Flow all-human 1023")
    b.axhline(FLOW["learned"][0], color="tab:green", ls="--", label="Flow ES 1360")
    b.set_ylabel("outflow over the last 500 s (veh/h)")
    b.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    if curve_path and out.get("inflow_curve"):
        fig, ax = plt.subplots(figsize=(6, 4), dpi=110)
        for name, pts in out["inflow_curve"].items():
            x = [p["inflow"] for p in pts]
            ax.errorbar(x, [p["outflow_veh_h"] for p in pts], yerr=[p["outflow_std"] for p in pts],
                        marker="o", capsize=3, label=name)  # fmt: skip
        lim = [min(x), max(x)]
        ax.plot(
            lim, [v * 460 / 500 for v in lim], color="grey", ls=":", label="free flow (fill time)"
        )
        ax.set_xlabel("inflow (veh/h)")
        ax.set_ylabel("outflow over the last 500 s (veh/h)")
        ax.set_title(f"bottleneck0{road}: inflow-outflow")
        ax.legend()
        fig.tight_layout()
        fig.savefig(curve_path)
        plt.close(fig)


def evaluate(args, console, argv) -> int:
    from rich.table import Table

    seeds = list(range(args.seed, args.seed + args.episodes))
    names = ("all-human", "alinea", "learned")
    t0 = time.time()
    out: dict = {"benchmark": "traffic_bottleneck", "machine": MACHINE, "controller": args.controller,
                 "seeds": seeds, "flow": FLOW,
                 "command": "flock /tmp/rlsuite-heavy.lock .venv/bin/python benchmarks/traffic_bottleneck.py "
                 + " ".join(argv if argv is not None else sys.argv[1:])}  # fmt: skip
    road = dict(ROADS[args.road][0])
    out["road"] = road
    out["rows"] = run_rows(names, args.controller, road, seeds)
    hv = out["rows"]["all-human"]["outflow_veh_h"]
    t = Table(title=f"bottleneck0, {args.road} road: outflow over the last 500 s (veh/h)")
    for c in ("controller", "outflow", "std", "min-max", "vs all-human", "mean speed", "Flow"):
        t.add_column(c)
    for name, r in out["rows"].items():
        f = FLOW.get(name)
        t.add_row(name, f"{r['outflow_veh_h']:.0f}", f"{r['outflow_std']:.0f}",
                  f"{r['outflow_min']:.0f}-{r['outflow_max']:.0f}", f"{r['outflow_veh_h'] / hv:.2f}",
                  f"{r['mean_speed']:.1f}", "" if f is None else f"{f[0]} +- {f[1]}")  # fmt: skip
    console.print(t)
    if not args.no_curve:
        curve_seeds = list(range(args.seed, args.seed + args.curve_episodes))
        out["inflow_curve"] = {}
        for inflow in range(1000, 2001, 200):
            rows = run_rows(names, args.controller, {**road, "inflow": float(inflow)}, curve_seeds)
            for name, r in rows.items():
                out["inflow_curve"].setdefault(name, []).append(
                    {
                        "inflow": inflow,
                        "outflow_veh_h": r["outflow_veh_h"],
                        "outflow_std": r["outflow_std"],
                    }
                )
            console.print(
                f"inflow {inflow}: "
                + ", ".join(f"{n} {r['outflow_veh_h']:.0f}" for n, r in rows.items())
            )
    learned = out["rows"]["learned"]["outflow_veh_h"]
    checks = {f"learned >= {GAIN} x all-human": learned >= GAIN * hv,
              "learned >= the ALINEA ramp meter": learned >= out["rows"]["alinea"]["outflow_veh_h"]}  # fmt: skip
    if args.speed:
        from rlsuite.apps.traffic.benchmarking import sampler_rate

        raw, local = raw_rate(2000, road), env_rate(2000, road)
        sampler = sampler_rate(ENV_ID, road, 2000)
        out["sampling"] = {"raw_libsumo_steps_per_s": raw, "env_in_process_steps_per_s": local,
                           "rllib_runner_env_steps_per_s": sampler, "runner_vs_raw_per_core": sampler / raw}  # fmt: skip
        console.print(f"sampling (steps/s, 1 core each): raw libsumo loop {raw:.0f}, env in process "
                      f"{local:.0f} ({local / raw:.0%}), RLlib env runner {sampler:.0f} ({sampler / raw:.0%})")  # fmt: skip
        checks["platform sampler >= 50% of the raw libsumo loop per core"] = sampler / raw >= 0.5
    out["checks"] = checks
    out["wall_s"] = time.time() - t0
    for k, ok in checks.items():
        console.print(f"{'PASS' if ok else 'FAIL'}  {k}")
    os.makedirs(RESULTS, exist_ok=True)
    stem = os.path.join(RESULTS, ROADS[args.road][2])
    path = stem + ".json"
    with open(path, "w") as f:
        json.dump(out, f, indent=1, default=str)
    plot(out, stem + ".png", None if args.no_curve else stem + "_inflow.png")
    console.print(f"results: {path}")
    return 0 if all(checks.values()) else 1


def main(argv: list[str] | None = None) -> int:
    from rich.console import Console

    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--controller", default=None,
                   help="learned policy (checkpoint or export; default the road's shipped one: "
                   "bottleneck_drop_es, or bottleneck_es with --road free)")  # fmt: skip
    p.add_argument("--road", choices=sorted(ROADS), default="breaking",
                   help="breaking (capacity_drop=true, the env's default) or free (capacity_drop=false)")  # fmt: skip
    p.add_argument("--episodes", type=int, default=10, help="seeded episodes per controller")
    p.add_argument("--seed", type=int, default=0, help="first seed")
    p.add_argument("--curve-episodes", type=int, default=4, help="episodes per inflow point")
    p.add_argument("--no-curve", action="store_true", help="skip the inflow-outflow curve")
    p.add_argument("--speed", action="store_true", help="also measure sampling speed")
    p.add_argument("--train-minutes", type=float, default=0.0, help="train from scratch first")
    p.add_argument("--workers", type=int, default=2, help="es workers (CPUs) when training")
    p.add_argument("--chunk", type=int, default=5, help="iterations between progress reports")
    p.add_argument("--run-dir", default=os.path.join("runs", "benchmarks", "traffic_bottleneck"))
    p.add_argument("--export", default=None, help="write the trained policy's export here")
    p.add_argument("--train-only", action="store_true", help="stop after training")
    args = p.parse_args(argv)
    if args.controller is None:
        args.controller = ROADS[args.road][1]
    console = Console()
    if args.train_minutes > 0:
        args.controller = train(args, console)
        if args.train_only:
            return 0
    return evaluate(args, console, argv)


if __name__ == "__main__":
    sys.exit(main())
