"""Ring sampling speed: a raw libsumo loop, the env in-process, and RLlib env runners through the
platform; and the seed's rollout table: time to collect 144 ring trajectories with 1 and 2 workers.

Pass criteria:
  1. the platform's sampler (RLlib env runners with the sync plan's PPO policy) reaches
     >= 50% of the raw libsumo loop's steps/s per core (the issue's target);
  2. 144 trajectories with 2 workers are collected >= 1.5x faster than with 1.

The raw loop steps the same ring (22 vehicles, 0.1 s) and reads every vehicle's state,
with no control and no policy. Trajectories are Flow's: 750 warm-up + 3000 controlled
steps; ``--horizon`` shortens them for a quick run.

Usage:
    flock /tmp/rlsuite-heavy.lock .venv/bin/python benchmarks/traffic_sampling.py [--horizon 3000] [--address HOST:PORT]

Writes benchmarks/results/traffic_sampling.json and traffic_sampling.png.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
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


def _algo(num_runners: int, horizon: int):
    from rlsuite.platform import envs, optimizers

    envs.rllib_env(ENV_ID)
    plan = optimizers.make_plan("sync", env=ENV_ID, env_config={"horizon": horizon},
                                num_env_runners=num_runners, seed=0)  # fmt: skip
    return optimizers.to_rllib(plan).build_algo()


def runner_rate(num_runners: int, steps_per_runner: int, horizon: int) -> float:
    """Env steps/s of the platform's env runners sampling in parallel (PPO policy, no learning)."""
    algo = _algo(num_runners, horizon)
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


def rollouts(num_runners: int, trajectories: int, horizon: int) -> dict:
    """Wall time to collect ``trajectories`` complete ring episodes on ``num_runners`` runners."""
    algo = _algo(num_runners, horizon)
    try:
        group = algo.env_runner_group
        per = int(np.ceil(trajectories / num_runners))

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
    p.add_argument("--address", default=None, help="also run on this Ray cluster")
    p.add_argument("--workers", default="1,2", help="worker counts for the rollout table")
    args = p.parse_args(argv)
    console = Console(width=140)
    out: dict = {"benchmark": "traffic_sampling", "machine": "2-core CPU, no GPU",
                 "horizon": args.horizon, "warmup_steps": 750}  # fmt: skip
    console.print("raw libsumo loop ...")
    out["raw_libsumo_steps_per_s"] = raw_libsumo(args.raw_steps)
    console.print(f"  {out['raw_libsumo_steps_per_s']:.0f} sim steps/s")
    console.print("env in-process ...")
    out["env_steps_per_s"] = env_loop(args.raw_steps, args.horizon)
    console.print(f"  {out['env_steps_per_s']:.0f} env steps/s")
    workers = [int(w) for w in args.workers.split(",")]
    with cluster.local_cluster(
        address=args.address, num_cpus=None if args.address else max(workers)
    ):
        out["runner_steps_per_s"] = {}
        for n in workers:
            console.print(f"platform sampler, {n} env runner(s) ...")
            r = runner_rate(n, 4000, args.horizon)
            out["runner_steps_per_s"][n] = r
            console.print(f"  {r:.0f} env steps/s ({r / n:.0f} per runner)")
        out["rollouts"] = []
        for n in workers:
            console.print(f"{args.trajectories} trajectories on {n} worker(s) ...")
            r = rollouts(n, args.trajectories, args.horizon)
            out["rollouts"].append(r)
            console.print(f"  {r['wall_s']:.1f} s")
    base = out["rollouts"][0]["wall_s"]
    for r in out["rollouts"]:
        r["speedup"] = base / r["wall_s"]
    per_core = out["runner_steps_per_s"][workers[0]] / workers[0]
    out["sampler_vs_raw_per_core"] = per_core / out["raw_libsumo_steps_per_s"]
    checks = {
        "platform sampler >= 50% of raw libsumo per core": out["sampler_vs_raw_per_core"] >= 0.5
    }
    if len(out["rollouts"]) > 1:
        checks["2 workers >= 1.5x faster on 144 trajectories"] = (
            out["rollouts"][1]["speedup"] >= 1.5
        )
    out["checks"] = checks
    out["command"] = "flock /tmp/rlsuite-heavy.lock .venv/bin/python benchmarks/traffic_sampling.py"

    t = Table(title="ring sampling (steps/s)")
    for c in ("what", "steps/s", "per core", "vs raw"):
        t.add_column(c, justify="right")
    raw = out["raw_libsumo_steps_per_s"]
    t.add_row("raw libsumo loop", f"{raw:.0f}", f"{raw:.0f}", "100%")
    t.add_row("RingEnv in-process", f"{out['env_steps_per_s']:.0f}", f"{out['env_steps_per_s']:.0f}",
              f"{out['env_steps_per_s'] / raw:.0%}")  # fmt: skip
    for n, r in out["runner_steps_per_s"].items():
        t.add_row(
            f"platform sampler, {n} runner(s)", f"{r:.0f}", f"{r / n:.0f}", f"{r / n / raw:.0%}"
        )
    console.print(t)
    t2 = Table(
        title=f"time to collect {args.trajectories} ring trajectories ({750 + args.horizon} sim steps each)"
    )
    for c in ("workers", "wall (s)", "speed-up", "seed: RLlib 1 node/16 CPUs"):
        t2.add_column(c, justify="right")
    for r in out["rollouts"]:
        t2.add_row(str(r["workers"]), f"{r['wall_s']:.1f}", f"{r['speedup']:.2f}x", "191 s")
    console.print(t2)
    for k, ok in checks.items():
        console.print(f"{'PASS' if ok else 'FAIL'}  {k}")
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, "traffic_sampling.json"), "w") as f:
        json.dump(out, f, indent=2, default=str)
    _plot(out, os.path.join(RESULTS, "traffic_sampling.png"))
    return 0 if all(checks.values()) else 1


def _plot(out, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4), dpi=110)
    names = ["raw libsumo", "env in-process"] + [f"sampler x{n}" for n in out["runner_steps_per_s"]]
    vals = [
        out["raw_libsumo_steps_per_s"],
        out["env_steps_per_s"],
        *out["runner_steps_per_s"].values(),
    ]
    a.bar(names, vals, color=["grey", "tab:blue"] + ["tab:green"] * len(out["runner_steps_per_s"]))
    a.set_ylabel("steps/s")
    a.set_title("ring sampling throughput")
    w = [r["workers"] for r in out["rollouts"]]
    b.bar([str(x) for x in w], [r["wall_s"] for r in out["rollouts"]], color="tab:orange")
    b.set_xlabel("workers")
    b.set_ylabel("seconds")
    b.set_title(f"{out['rollouts'][0]['trajectories']} trajectories")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


if __name__ == "__main__":
    raise SystemExit(main())
