"""Sampling and iteration throughput of the platform against a plain loop and RLlib's defaults.

Pass criteria: the platform's default sampler >= 3x RLlib's default settings and >= 20% of
a plain gymnasium loop per core (``baseline``); the ``sync`` plan's whole iterations at least
as fast as a hand-written torch PPO on the same batch and epochs (``baseline``,
``sync-iterations``); >= 85% efficiency at 15 runners against 1 (``scaling``, on a machine
with the CPUs; ``ceiling`` is what plain processes reach there); on a GPU machine,
``num_gpus_per_learner="auto"`` picks the faster device at every size (``gpu-learner``).
``overlap-learning`` is the learning cost of ``overlap=true`` (CartPole-v1 to 150).
The sections: :mod:`rlsuite.platform.benchmarking.sampling_sections`.
"""

from __future__ import annotations

from dataclasses import dataclass

from rlsuite.bench import Benchmark, Row, Value, here

SECTIONS = ("baseline", "scaling", "ceiling", "sync-iterations", "overlap-learning", "gpu-learner")


@dataclass(frozen=True)
class Settings:
    envs: str = "CartPole-v1,Pendulum-v1"
    """envs, comma-separated"""
    sections: str = "baseline,scaling"
    """comma-separated: baseline, scaling, ceiling, sync-iterations, overlap-learning,
    gpu-learner"""
    runners: str = "1,2"
    """runner (process) counts of scaling and ceiling, e.g. 1,2,4,8,15 (counts above the
    CPUs this process can use are skipped)"""
    steps: int = 20_000
    """env steps per runner per sampling measurement"""
    iterations: int = 10
    """sync iterations per measurement (baseline: at most 6)"""
    rounds: int = 3
    """interleaved rounds of sync-iterations"""
    out: str = "platform_sampling"
    """results name (benchmarks/results/platform/OUT.json)"""


def run(ctx) -> int:
    import gymnasium as gym

    from rlsuite.platform import cluster
    from rlsuite.platform.benchmarking import sampling_sections as sec
    from rlsuite.platform.machine import cpu_topology, usable_cpus

    s = ctx.settings
    sections = s.sections.split(",")
    if bad := set(sections) - set(SECTIONS):
        raise ValueError(f"unknown sections {sorted(bad)}; choose from {', '.join(SECTIONS)}")
    runners, cores = [int(n) for n in s.runners.split(",")], usable_cpus()
    out: dict = {
        "sections": sections,
        "cores_used": cores,
        "cpus": cpu_topology().to_dict(),
        "envs": {},
    }
    cluster.init(num_cpus=cores)
    try:
        for env_id in s.envs.split(","):
            rec = out["envs"][env_id] = {}
            discrete = isinstance(gym.make(env_id).action_space, gym.spaces.Discrete)
            if "scaling" in sections:
                rec["scaling"] = sec.scaling(env_id, runners, cores, s.steps, ctx.say)
            if "ceiling" in sections:  # a plain process steps ~5-10x faster than a runner
                rec["ceiling"] = sec.ceiling(env_id, runners, cores, 20 * s.steps, ctx.say)
            if "gpu-learner" in sections and discrete:
                rec["gpu_learner"] = sec.gpu_learner(env_id, max(1, s.iterations // 3), ctx.say)
            if "sync-iterations" in sections and discrete:
                rec["sync_iterations"] = sec.sync_iterations(
                    env_id, s.rounds, s.iterations, ctx.say
                )
            if "baseline" in sections:
                rec.update(sec.baseline(env_id, cores, s.steps, min(6, s.iterations), ctx.say))
            ctx.save(s.out, out)  # a run cut off keeps the envs it finished
        if "overlap-learning" in sections:
            out["overlap_learning"] = sec.overlap_learning(
                list(ctx.seeds or (0, 1, 2)), 30, ctx.say
            )
    finally:
        cluster.shutdown()
    ctx.save(s.out, out)
    table = []
    for env_id, rec in out["envs"].items():
        for section, key in (("scaling", "runners"), ("ceiling", "processes")):
            for n, r in rec.get(section, {}).get(key, {}).items():
                vs_1 = r.get("efficiency_vs_1", "")
                table.append({"env": env_id, "section": section, "processes": n,
                              "steps/s": r["steps_per_s"], "vs 1": vs_1})  # fmt: skip
    ctx.table(table, "scale-out")
    return 0


SAMPLING = "rlsuite bench run platform_sampling"

# fmt: off
BENCHMARK = Benchmark(run=run, settings=Settings, seeds=True, quick=dict(envs="CartPole-v1", sections="scaling", runners="1", steps=2000, rounds=1), rows=(
    Row("platform", "sampling, CartPole-v1", "env steps/s, 2 runners x 32 envs", "platform_sampling.json",
        Value(("envs", "CartPole-v1", "platform_default_steps_per_s")),
        here("RLlib 2.60 defaults", "envs", "CartPole-v1", "rllib_default_steps_per_s"),
        SAMPLING, fmt="{:,.0f}"),
    Row("platform", "sampling, Pendulum-v1", "env steps/s, 2 runners x 32 envs", "platform_sampling.json",
        Value(("envs", "Pendulum-v1", "platform_default_steps_per_s")),
        here("RLlib 2.60 defaults", "envs", "Pendulum-v1", "rllib_default_steps_per_s"),
        SAMPLING, fmt="{:,.0f}"),
    Row("platform", "`sync` PPO iterations, CartPole-v1", "env steps/s, median of 5 rounds, `overlap=true`",
        "platform_sampling_learner.json",
        Value(("envs", "CartPole-v1", "sync_iterations", "median_steps_per_s", "sync plan, overlap=true")),
        here("hand-written torch PPO, same run", "envs", "CartPole-v1", "sync_iterations",
              "median_steps_per_s", "hand-written PPO (1 process, 8 envs, 1 torch thread)"),
        f"{SAMPLING} --envs CartPole-v1 --sections sync-iterations,overlap-learning --rounds 5 --seeds 0,1,2 "
        "--out platform_sampling_learner", fmt="{:,.0f}"),
))
# fmt: on
