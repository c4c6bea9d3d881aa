"""Sampling speed of the traffic envs against a raw libsumo loop, per core, and the seed's rollout
table (time to collect 144 ring trajectories with 1 and 2 workers).

For the ring, the two-lane ring and Flow's merge: a raw libsumo loop of one copy (every
vehicle's state read, no control), the env in this process (one copy, and ``--copies`` in
one simulation: its vector entry point), and ONE RLlib env runner of the platform's sync plan
(its PPO module acting, no learning) stepping ``--copies`` copies in one simulation; the
multi-agent merge (one agent per AV) in one runner beside them. No warm-up, so all count the
same simulation steps. Pass: the vector runner >= 50% of the raw loop per core on every
road (the multi-agent merge is reported), and 144 trajectories with 2 workers >= 1.5x
faster than with 1.
"""

from dataclasses import dataclass

from rlsuite.bench import Benchmark

ENVS = {
    "ring": ("rlsuite/Ring-v0", 3000),
    "ring_2lane": ("rlsuite/Ring2Lane-v0", 1500),
    "merge": ("rlsuite/Merge-v0", 750),
    "merge_multi": ("rlsuite/MergeMulti-v0", 750),
}
"""Name -> env id and its episode length in env steps (the rings: controlled steps)."""


@dataclass(frozen=True)
class Settings:
    envs: str = "ring,ring_2lane,merge,merge_multi"
    """which envs' rates to measure (comma-separated; empty: only the rollout table)"""
    steps: int = 6000
    """env steps per rate measurement (the vector runner: at least one episode of every copy)"""
    copies: int = 24
    """copies per env runner in one SUMO simulation"""
    horizon: int = 3000
    """controlled steps per ring trajectory (the ring's rates and the rollouts)"""
    trajectories: int = 144
    """ring trajectories in the rollout table (0: no table)"""
    workers: str = "1,2"
    """worker counts for the rollout table"""
    out: str = "traffic_sampling"
    """results name"""


def run(ctx) -> int:
    from rlsuite.apps.traffic.benchmarking import env_rate, raw_rate, rollout_time, sampler_rate
    from rlsuite.platform import cluster

    s = ctx.settings
    rates, checks = {}, {}
    for name in [n for n in s.envs.split(",") if n]:
        env_id, episode = ENVS[name]
        cfg = {"warmup_steps": 0} if "Ring" in env_id else {}
        cfg |= {"horizon": s.horizon} if name == "ring" else {}
        multi = name == "merge_multi"  # RLlib's multi-agent runners step one env each
        copies = 0 if multi else s.copies
        raw = raw_rate(env_id, s.steps)
        sampler = sampler_rate(env_id, cfg, max(s.steps, copies * min(episode, s.horizon)),
                               hidden=(32, 32), **({} if multi else {"num_envs_per_env_runner": copies}))  # fmt: skip
        r = dict(raw_steps_per_s=raw, env_steps_per_s=env_rate(env_id, cfg, s.steps),
                 vector_env_steps_per_s=env_rate(env_id, cfg, s.steps, copies) if copies else None,
                 sampler_steps_per_s=sampler, copies=copies, sampler_vs_raw_per_core=sampler / raw)  # fmt: skip
        rates[name] = r
        if not multi:
            checks[f"{name}: 1 runner x {copies} copies >= 50% of the raw loop per core"] = (
                sampler / raw >= 0.5
            )
    if rates:
        ctx.table([dict(env=k, **v) for k, v in rates.items()], "env steps/s, one core each")
    table = []
    if s.trajectories:
        workers = [int(w) for w in s.workers.split(",")]
        with cluster.local_cluster(num_cpus=max(workers)):
            table = [rollout_time("rlsuite/Ring-v0", {"horizon": s.horizon}, n, s.trajectories, s.copies)
                     for n in workers]  # fmt: skip
        for r in table:
            r["speedup"] = table[0]["wall_s"] / r["wall_s"]
        ctx.table(
            table,
            f"time to collect {s.trajectories} ring trajectories (seed: RLlib, 16 CPUs, 191 s)",
        )
        if len(table) > 1:
            checks[
                f"{table[1]['workers']} workers >= 1.5x faster on {s.trajectories} trajectories"
            ] = table[1]["speedup"] >= 1.5
    ctx.save(s.out, dict(rates=rates, rollouts=table, horizon=s.horizon, checks=checks))
    return ctx.verdict(checks)


BENCHMARK = Benchmark(
    run=run, settings=Settings,
    quick=dict(steps=600, copies=2, horizon=100, trajectories=4, workers="1"),
)  # fmt: skip
