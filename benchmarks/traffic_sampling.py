"""Ring sampling speed: a raw libsumo loop, the env in-process, and RLlib env runners through the
platform; and the seed's rollout table: time to collect 144 ring trajectories with 1 and 2 workers.

Pass criteria:
  1. the platform's sampler (RLlib env runners with the sync plan's PPO policy) reaches
     >= 50% of the raw libsumo loop's steps/s per core (the seed's target);
  2. 144 trajectories with 2 workers are collected >= 1.5x faster than with 1.

The raw loop steps the same ring (22 vehicles, 0.1 s) and reads every vehicle's state,
with no control and no policy. Trajectories are Flow's: 750 warm-up + 3000 controlled
steps; ``--horizon`` shortens them for a quick run.

The vector path (default): ``--rings`` rings per runner in ONE SUMO simulation
(``RingVectorEnv``, the env's vector entry point); ``--scalar`` also measures the old path,
one ``RingEnv`` per runner.

Usage:
    flock /tmp/rlsuite-heavy.lock .venv/bin/python benchmarks/traffic_sampling.py [--rings 24] [--scalar] [--address HOST:PORT] [--out NAME]

Writes benchmarks/results/traffic/<NAME>.json and <NAME>.png (default traffic_sampling).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

from rlsuite.bench import results_dir

RESULTS = results_dir("traffic")
ENV_ID = "rlsuite/Ring-v0"


def raw_libsumo(steps: int) -> float:
    """Sim steps/s of the ring stepped directly through the adapter (libsumo), reading states."""
    from rlsuite.apps.traffic.envs.ring import RingConfig, RingSimulation

    core = RingSimulation(RingConfig(warmup_steps=0, horizon=steps + 10, accel_noise=0.0))
    try:
        core.start(np.random.default_rng(0))
        assert core.sim.backend == "libsumo", core.sim.backend
        sim, ids = core.sim, core.ids
        t = time.perf_counter()
        for _ in range(steps):
            sim.step()
            sim.vehicle_states(ids)
        return steps / (time.perf_counter() - t)
    finally:
        core.close()


def raw_libsumo_rings(rings: int, steps: int) -> float:
    """Ring-steps/s of ``rings`` rings in one libsumo simulation stepped directly, reading
    every vehicle's state (speed and odometer), no noise, control or policy."""
    import tempfile

    from rlsuite.apps.traffic import kernel, networks
    from rlsuite.apps.traffic.envs.ring import RingConfig, av_type, sumo_args, vehicle_ids

    cfg = RingConfig(warmup_steps=0, horizon=steps + 10, accel_noise=0.0)
    d = tempfile.mkdtemp(prefix="rlsuite-bench-")
    lengths = [230.0] * rings
    net = networks.rings_network(lengths, d)
    routes = os.path.join(d, "r.rou.xml")
    names = vehicle_ids(22, 1)
    networks.rings_routes(routes, lengths, [(v, "av" if v.startswith("av") else "human") for v in names],
                          [cfg.human_type, av_type(cfg.human_type)], 60, cfg.bunching)  # fmt: skip
    sim = kernel.Simulation("libsumo", name="raw rings")
    try:
        sim.start(sumo_args(net, routes, cfg, 0))
        sim.step()
        ids = sim.vehicle_ids()
        sim.vehicle_states(ids)
        t = time.perf_counter()
        for _ in range(steps):
            sim.step()
            sim.vehicle_states(ids)
        return steps * rings / (time.perf_counter() - t)
    finally:
        sim.close()


def vector_loop(rings: int, steps: int, horizon: int) -> float:
    """Ring-steps/s of RingVectorEnv.step in this process (``rings`` rings, one simulation)."""
    from rlsuite.apps.traffic.envs.ring_vector import RingVectorEnv

    env = RingVectorEnv(num_envs=rings, horizon=horizon)
    try:
        env.reset(seed=0)
        a = np.zeros((rings, 1), dtype=np.float32)
        n, t = 0, time.perf_counter()
        while n < steps:
            env.step(a)
            n += rings
        return n / (time.perf_counter() - t)
    finally:
        env.close()


def env_loop(steps: int, horizon: int) -> float:
    """Env steps/s of RingEnv.step in this process (noise, control, observation, reward)."""
    from rlsuite.apps.traffic.envs.ring import RingEnv

    env = RingEnv(horizon=horizon)
    try:
        env.reset(seed=0)
        n, t = 0, time.perf_counter()
        while n < steps:
            _, _, term, trunc, _ = env.step(np.zeros(1, dtype=np.float32))
            n += 1
            if term or trunc:
                env.reset()
        return steps / (time.perf_counter() - t)
    finally:
        env.close()


def _algo(num_runners: int, horizon: int, rings: int = 1):
    """The sync plan's PPO on the ring; ``rings`` > 1 steps that many rings per runner in one
    SUMO simulation (the env's vector entry point), 1 is one scalar RingEnv per runner."""
    from rlsuite.platform import envs, optimizers

    envs.rllib_env(ENV_ID)
    plan = optimizers.make_plan("sync", env=ENV_ID, env_config={"horizon": horizon},
                                num_env_runners=num_runners, seed=0,
                                num_envs_per_env_runner=rings,
                                normalize_actions=False)  # the ring clips its own actions  # fmt: skip
    config = optimizers.to_rllib(plan)
    if rings == 1:  # the scalar path, as measured before the vector env existed
        config = config.env_runners(gym_env_vectorize_mode="sync")
    return config.build_algo()


def runner_rate(num_runners: int, steps_per_runner: int, horizon: int, rings: int = 1) -> float:
    """Env steps/s of the platform's env runners sampling in parallel (PPO policy, no learning)."""
    algo = _algo(num_runners, horizon, rings)
    try:
        group = algo.env_runner_group

        def sample(r):
            return sum(
                len(e) for e in r.sample(num_timesteps=steps_per_runner, random_actions=False)
            )

        group.foreach_env_runner(sample, local_env_runner=False)  # warm-up
        t = time.perf_counter()
        n = sum(group.foreach_env_runner(sample, local_env_runner=False))
        return n / (time.perf_counter() - t)
    finally:
        algo.stop()


def rollouts(num_runners: int, trajectories: int, horizon: int, rings: int = 1) -> dict:
    """Wall time to collect ``trajectories`` complete ring episodes on ``num_runners`` runners
    (``rings`` per runner in one simulation; the warm-ups are part of the time)."""
    algo = _algo(num_runners, horizon, rings)
    try:
        group = algo.env_runner_group
        per = int(np.ceil(trajectories / num_runners))
        if per % rings:
            raise ValueError(
                f"{trajectories} trajectories on {num_runners} runner(s) is {per} each, not a "
                f"multiple of --rings {rings} (all rings of a runner end their episodes together)"
            )

        def collect(r):
            eps = r.sample(num_episodes=per, random_actions=False, force_reset=True)
            return [len(e) for e in eps]

        t = time.perf_counter()
        lens = [
            n for part in group.foreach_env_runner(collect, local_env_runner=False) for n in part
        ]
        wall = time.perf_counter() - t
        return {
            "workers": num_runners,
            "rings_per_worker": rings,
            "trajectories": len(lens),
            "steps": int(sum(lens)),
            "wall_s": wall,
        }
    finally:
        algo.stop()


def main(argv: list[str] | None = None) -> int:
    from rich.console import Console
    from rich.table import Table

    from rlsuite.platform import cluster

    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--horizon", type=int, default=3000, help="controlled steps per trajectory")
    p.add_argument("--trajectories", type=int, default=144)
    p.add_argument("--raw-steps", type=int, default=30000)
    p.add_argument(
        "--rings",
        type=int,
        default=24,
        help="rings per runner in one SUMO simulation (the vector env); default 24",
    )
    p.add_argument(
        "--scalar",
        action="store_true",
        help="also measure the scalar path (one RingEnv per runner; slow rollouts)",
    )
    p.add_argument("--no-rates", action="store_true", help="only the rollout table")
    p.add_argument("--no-rollouts", action="store_true", help="only the steps/s rates")
    p.add_argument("--address", default=None, help="run on this Ray cluster (ray start --head)")
    p.add_argument("--workers", default="1,2", help="worker counts for the rollout table")
    p.add_argument("--out", default="traffic_sampling", help="name of the JSON/PNG in results/")
    args = p.parse_args(argv)
    console = Console(width=140)
    out: dict = {"benchmark": "traffic_sampling", "machine": "2-core CPU, no GPU, shared",
                 "horizon": args.horizon, "warmup_steps": 750, "rings_per_runner": args.rings,
                 "address": args.address, "command": "flock /tmp/rlsuite-heavy.lock "
                 ".venv/bin/python benchmarks/traffic_sampling.py " + " ".join(argv or sys.argv[1:])}  # fmt: skip
    workers = [int(w) for w in args.workers.split(",")]
    rates: dict[str, float] = {}
    if not args.no_rates:
        console.print("raw libsumo loop, one ring ...")
        rates["raw libsumo loop, 1 ring"] = raw_libsumo(args.raw_steps)
        console.print(f"raw libsumo loop, {args.rings} rings in one simulation ...")
        rates[f"raw libsumo loop, {args.rings} rings"] = raw_libsumo_rings(
            args.rings, max(args.raw_steps // args.rings, 200)
        )
        console.print("RingEnv in-process ...")
        rates["RingEnv in-process"] = env_loop(args.raw_steps // 3, args.horizon)
        console.print(f"RingVectorEnv ({args.rings} rings) in-process ...")
        rates[f"RingVectorEnv in-process, {args.rings} rings"] = vector_loop(
            args.rings, args.raw_steps, args.horizon
        )
    sampler: dict[str, dict] = {}
    with cluster.local_cluster(
        address=args.address, num_cpus=None if args.address else max(workers)
    ):
        if not args.no_rates:
            paths = ([1] if args.scalar else []) + [args.rings]
            for rings in paths:
                for n in workers:
                    what = f"platform sampler, {n} runner(s) x {rings} ring(s)"
                    console.print(what + " ...")
                    r = runner_rate(n, 4000 if rings == 1 else 600 * rings, args.horizon, rings)
                    sampler[what] = {"runners": n, "rings": rings, "steps_per_s": r}
                    console.print(f"  {r:.0f} env steps/s ({r / n:.0f} per runner)")
        out["rollouts"] = []
        if not args.no_rollouts:
            for rings in ([1] if args.scalar else []) + [args.rings]:
                for n in workers:
                    console.print(
                        f"{args.trajectories} trajectories, {n} worker(s) x {rings} ring(s) ..."
                    )
                    r = rollouts(n, args.trajectories, args.horizon, rings)
                    out["rollouts"].append(r)
                    console.print(f"  {r['wall_s']:.1f} s")
    for rings in {r["rings_per_worker"] for r in out["rollouts"]}:
        rows = [r for r in out["rollouts"] if r["rings_per_worker"] == rings]
        for r in rows:
            r["speedup"] = rows[0]["wall_s"] / r["wall_s"]
    out["rates_steps_per_s"] = rates
    out["sampler"] = sampler
    checks = {}
    raw = rates.get("raw libsumo loop, 1 ring")
    if raw:
        for r in sampler.values():
            r["per_core"] = r["steps_per_s"] / r["runners"]
            r["vs_raw_1_ring_per_core"] = r["per_core"] / raw
        vec1 = [
            r for r in sampler.values() if r["rings"] == args.rings and r["runners"] == min(workers)
        ]
        if vec1:
            out["sampler_vs_raw_per_core"] = vec1[0]["vs_raw_1_ring_per_core"]
            checks["platform sampler >= 50% of raw libsumo per core"] = (
                out["sampler_vs_raw_per_core"] >= 0.5
            )
    vec_rolls = [r for r in out["rollouts"] if r["rings_per_worker"] == args.rings]
    if len(vec_rolls) > 1:
        checks["2 workers >= 1.5x faster on 144 trajectories"] = vec_rolls[1]["speedup"] >= 1.5
    out["checks"] = checks

    if rates or sampler:
        t = Table(title="ring sampling (env steps/s = ring-steps/s)")
        for c in ("what", "steps/s", "per core", "vs raw libsumo (1 ring)"):
            t.add_column(c, justify="right")
        for what, r in rates.items():
            t.add_row(what, f"{r:.0f}", f"{r:.0f}", f"{r / raw:.0%}" if raw else "")
        for what, r in sampler.items():
            pc = r["steps_per_s"] / r["runners"]
            t.add_row(
                what, f"{r['steps_per_s']:.0f}", f"{pc:.0f}", f"{pc / raw:.0%}" if raw else ""
            )
        console.print(t)
    if out["rollouts"]:
        t2 = Table(title=f"time to collect {args.trajectories} ring trajectories "
                         f"({750 + args.horizon} sim steps each){' on ' + args.address if args.address else ''}")  # fmt: skip
        for c in (
            "workers",
            "rings per worker",
            "wall (s)",
            "speed-up",
            "seed: RLlib 1 node/16 CPUs",
        ):
            t2.add_column(c, justify="right")
        for r in out["rollouts"]:
            t2.add_row(str(r["workers"]), str(r["rings_per_worker"]), f"{r['wall_s']:.1f}",
                       f"{r['speedup']:.2f}x", "191 s (rllab 205 s)" if r["workers"] == 2 else "")  # fmt: skip
        console.print(t2)
    for k, ok in checks.items():
        console.print(f"{'PASS' if ok else 'FAIL'}  {k}")
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, f"{args.out}.json"), "w") as f:
        json.dump(out, f, indent=2, default=str)
    _plot(out, os.path.join(RESULTS, f"{args.out}.png"))
    return 0 if all(checks.values()) else 1


def _plot(out, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(13, 4.5), dpi=110)
    names = list(out["rates_steps_per_s"]) + list(out["sampler"])
    vals = list(out["rates_steps_per_s"].values()) + [
        r["steps_per_s"] / r["runners"] for r in out["sampler"].values()
    ]
    colors = ["grey"] * 2 + ["tab:blue"] * 2 + ["tab:green"] * len(out["sampler"])
    if names:
        a.barh(names, vals, color=colors[: len(names)])
        raw = out["rates_steps_per_s"].get("raw libsumo loop, 1 ring")
        if raw:
            a.axvline(raw / 2, color="red", ls="--", label="target: 50% of raw libsumo")
            a.legend(loc="lower right")
        a.set_xlabel("env steps/s per core")
        a.set_title("ring sampling throughput per core")
        a.invert_yaxis()
    if out["rollouts"]:
        labels = [f"{r['workers']}w x {r['rings_per_worker']}r" for r in out["rollouts"]]
        b.bar(labels, [r["wall_s"] for r in out["rollouts"]], color="tab:orange")
        b.axhline(191, color="k", ls=":", label="seed: RLlib, 16 CPUs (191 s)")
        b.legend()
        b.set_ylabel("seconds")
        b.set_title(f"{out['rollouts'][0]['trajectories']} trajectories")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


if __name__ == "__main__":
    raise SystemExit(main())
