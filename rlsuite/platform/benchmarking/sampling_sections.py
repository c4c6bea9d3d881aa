"""The sections of ``benchmarks/platform/sampling.py``, each returning its JSON record.

``baseline``: plain loops, RLlib's default settings, the platform's runners x envs sweep and
default, and (discrete actions) the sync plan's whole iterations against a hand-written
PPO. ``scaling``: n remote runners x 32 envs sampling. ``ceiling``: n plain processes doing a
runner's work without Ray, what the machine itself allows. ``sync_iterations``: the sync
plan against the hand-written PPO in interleaved rounds. ``overlap_learning``: CartPole-v1
to 150 with ``overlap`` off and on. ``gpu_learner``: the learner on the CPU and on a GPU,
beside what ``num_gpus_per_learner="auto"`` picks.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from statistics import median
from typing import Any

import gymnasium as gym
import torch

from rlsuite.platform.benchmarking.rates import (
    MLP,
    breakdown,
    handwritten_ppo,
    iteration_rate,
    plain_loop,
    plain_policy_loop,
    sample_breakdown,
)

Say = Callable[[str], None]
HANDWRITTEN = "hand-written PPO (1 process, 8 envs, 1 torch thread)"
SYNC_VARIANTS = {"sync plan (defaults)": {}, "sync plan, overlap=true": {"overlap": True}}
"""The sync plans of ``sync_iterations`` (the plan's defaults: batch 4000, minibatch 500, 10
epochs, 64x64 nets, 2 runners x 32 envs)."""


def _sync(env_id: str, **values: Any) -> Any:
    from rlsuite.platform import optimizers

    return optimizers.to_rllib(optimizers.make_plan("sync", env=env_id, **values))


def baseline(env_id: str, cores: int, steps: int, iterations: int, say: Say = print) -> dict:
    """Sampling against RLlib's default layout and plain loops; whole sync iterations
    against the hand-written PPO (discrete actions)."""
    from ray.rllib.algorithms.ppo import PPOConfig

    from rlsuite.platform import optimizers

    rec: dict[str, Any] = {
        "plain_loop_steps_per_s": plain_loop(env_id, steps * 5),
        "plain_policy_loop_steps_per_s": plain_policy_loop(env_id, steps),
    }
    rllib = PPOConfig().environment(env_id).debugging(log_level="ERROR")
    rec["rllib_default_settings"] = {
        "num_env_runners": rllib.num_env_runners,
        "num_envs_per_env_runner": rllib.num_envs_per_env_runner,
    }
    rec["rllib_default_steps_per_s"] = sample_breakdown(rllib, steps // 2)["steps_per_s"]
    sweep = {
        n: sample_breakdown(_sync(env_id, num_env_runners=cores, num_envs_per_env_runner=n), steps)[
            "steps_per_s"
        ]
        for n in (1, 8, 16, 32)
    }
    rec["platform_sweep_steps_per_s"] = sweep
    default = optimizers.make_plan("sync", env=env_id)
    rate = rec["platform_default_steps_per_s"] = sweep[default.envs_per_runner]
    rec["platform_default"] = {
        "num_env_runners": default.num_env_runners,
        "num_envs_per_env_runner": default.envs_per_runner,
    }
    rec["platform_per_core_fraction_of_plain"] = rate / cores / rec["plain_loop_steps_per_s"]
    rec["platform_per_core_fraction_of_plain_policy"] = (
        rate / cores / rec["plain_policy_loop_steps_per_s"]
    )
    rec["platform_vs_rllib_default"] = rate / rec["rllib_default_steps_per_s"]
    say(
        f"{env_id}: platform {rate:,.0f} env steps/s, RLlib's defaults "
        f"{rec['rllib_default_steps_per_s']:,.0f}, "
        f"a plain loop {rec['plain_loop_steps_per_s']:,.0f} per core"
    )
    if isinstance(gym.make(env_id).action_space, gym.spaces.Discrete):
        hw = rec["handwritten_ppo"] = handwritten_ppo(env_id, iterations=iterations)
        for key, config in (
            ("sync_plan", optimizers.to_rllib(default)),
            ("sync_plan_overlap", optimizers.to_rllib(default.replace(overlap=True))),
        ):
            rec[key] = iteration_rate(config, iterations)
        rec["sync_vs_handwritten"] = (
            rec["sync_plan"]["iteration_steps_per_s"] / hw["iteration_steps_per_s"]
        )
        rec["overlap_vs_handwritten"] = (
            rec["sync_plan_overlap"]["iteration_steps_per_s"] / hw["iteration_steps_per_s"]
        )
        say(
            f"{env_id}: sync iterations at {rec['sync_vs_handwritten']:.2f}x the hand-written PPO, "
            f"{rec['overlap_vs_handwritten']:.2f}x with overlap=true"
        )
    return rec


def _efficiency(rows: dict, key: str = "steps_per_s") -> None:
    """Add ``efficiency_vs_1`` (``key`` over n x one process's) to each row."""
    for n, r in rows.items():
        if 1 in rows:
            r["efficiency_vs_1"] = r[key] / (n * rows[1][key])


def scaling(env_id: str, runners: list[int], cpus: float, steps: int, say: Say = print) -> dict:
    """Sampling steps/s with n remote runners x 32 envs (1 CPU each) for each n Ray's CPUs
    allow, with :func:`breakdown`'s account of the shortfall; the others skipped."""
    rows, skipped = {}, {}
    for n in runners:
        if n > cpus:
            skipped[n] = f"needs {n} CPUs (1 per runner), Ray has {cpus:g}"
            continue
        r = rows[n] = sample_breakdown(
            _sync(env_id, num_env_runners=n, num_envs_per_env_runner=32), steps
        )
        r["per_runner"] = r["steps_per_s"] / n
        say(
            f"{n} runners x 32 envs: {r['steps_per_s']:,.0f} steps/s "
            f"({r['per_runner']:,.0f} per runner), "
            f"{r['runner_cpu_us_per_step']:.1f} us CPU/step, straggler {r['straggler_loss']:.1%}"
        )
    _efficiency(rows)
    return {"runners": rows, "skipped": skipped}


def _ceiling_worker(env_id: str, n_envs: int, steps: int, start: Any, out: Any) -> None:
    """One plain process: ``n_envs`` copies in a gymnasium vector env and a 64x64 torch
    policy on their batch, the work of one env runner without Ray or RLlib."""
    torch.set_num_threads(1)
    env = gym.make_vec(env_id, num_envs=n_envs, vectorization_mode="sync")
    obs, _ = env.reset(seed=0)
    space = env.single_action_space
    n_out = space.n if isinstance(space, gym.spaces.Discrete) else 1
    net = MLP(env.single_observation_space.shape[0], n_out)

    def act(o: Any) -> Any:
        with torch.no_grad():
            y = net.pi(torch.as_tensor(o, dtype=torch.float32))
        return y.argmax(-1).numpy() if n_out > 1 else y.clamp(-2, 2).numpy()

    for _ in range(50):
        obs, *_ = env.step(act(obs))
    start.wait()
    t, c, t0 = time.perf_counter(), time.process_time(), time.time()
    for _ in range(max(1, steps // n_envs)):
        obs, *_ = env.step(act(obs))
    out.put(
        {
            "steps": max(1, steps // n_envs) * n_envs,
            "wall_s": time.perf_counter() - t,
            "cpu_s": time.process_time() - c,
            "t0": t0,
            "t1": time.time(),
        }
    )


def ceiling(env_id: str, counts: list[int], cpus: int, steps: int, say: Say = print) -> dict:
    """n plain processes doing a runner's work at once, no Ray: steps/s and efficiency
    against one, with the runners' CPU and straggler account. The platform's scale-out is
    judged against this rather than against n x one."""
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    rows, skipped = {}, {}
    for n in counts:
        if n > cpus:
            skipped[n] = f"needs {n} CPUs, this process can use {cpus}"
            continue
        start, out = ctx.Event(), ctx.Queue()
        procs = [
            ctx.Process(target=_ceiling_worker, args=(env_id, 32, steps, start, out))
            for _ in range(n)
        ]
        for p in procs:
            p.start()
        time.sleep(0.5)
        start.set()
        got = [out.get(timeout=600) for _ in procs]
        for p in procs:
            p.join()
        wall = max(r["t1"] for r in got) - min(r["t0"] for r in got)
        r = rows[n] = {"steps_per_s": sum(r["steps"] for r in got) / wall, **breakdown(got, wall)}
        r["per_process"] = r["steps_per_s"] / n
        say(f"{n} plain processes x 32 envs: {r['steps_per_s']:,.0f} steps/s")
    _efficiency(rows)
    return {"processes": rows, "skipped": skipped}


def sync_iterations(env_id: str, rounds: int, its: int, say: Say = print) -> dict:
    """Whole-iteration steps/s of the hand-written loop and each of :data:`SYNC_VARIANTS` in
    ``rounds`` interleaved rounds; ratios per round (a busy machine slows a whole round)."""
    rates: dict[str, list[float]] = {HANDWRITTEN: [], **{k: [] for k in SYNC_VARIANTS}}
    ratios: dict[str, list[float]] = {k: [] for k in SYNC_VARIANTS}
    timers: dict[str, list[dict[str, float]]] = {k: [] for k in SYNC_VARIANTS}
    for rnd in range(rounds):
        hw = handwritten_ppo(env_id, iterations=its)["iteration_steps_per_s"]
        rates[HANDWRITTEN].append(hw)
        for label, values in SYNC_VARIANTS.items():
            r = iteration_rate(_sync(env_id, **values), its)
            rates[label].append(r["iteration_steps_per_s"])
            ratios[label].append(r["iteration_steps_per_s"] / hw)
            timers[label].append(r["timers_mean_s"])
        say(f"round {rnd + 1}: " + ", ".join(f"{k} {v[-1]:.2f}x" for k, v in ratios.items()))
    return {
        "rounds": rounds,
        "iterations_per_measurement": its,
        "steps_per_s": rates,
        "median_steps_per_s": {k: median(v) for k, v in rates.items()},
        "ratio_vs_handwritten_per_round": ratios,
        "median_ratio_vs_handwritten": {k: median(v) for k, v in ratios.items()},
        "timers_mean_s": timers,
    }


def overlap_learning(seeds: list[int], max_iterations: int, say: Say = print) -> dict:
    """CartPole-v1 to a smoothed return of 150 with the default sync plan, ``overlap`` off
    and on, same seeds: iterations, env steps and seconds to it."""
    from rlsuite.platform import optimizers, training

    target, runs = 150.0, {}
    for overlap in (False, True):
        key = f"overlap={str(overlap).lower()}"
        runs[key] = []
        for seed in seeds:
            plan = optimizers.make_plan("sync", env="CartPole-v1", seed=seed, overlap=overlap)
            with tempfile.TemporaryDirectory() as d:
                res = training.train(plan, max_iterations, d, progress=False, stop_return=target)
            runs[key].append(
                {
                    "seed": seed,
                    "reached": res.final_return >= target,
                    "iterations": res.iterations,
                    "env_steps": res.env_steps,
                    "wall_s": res.wall_time_s,
                    "train_s": sum(m.get("time_this_iter_s", 0.0) for m in res.metrics),
                    "final_return": res.final_return,
                    "returns": [m.get("episode_return_mean") for m in res.metrics],
                }
            )
            say(f"{key} seed {seed}: {res.iterations} iterations, {res.env_steps} env steps")
    return {
        "env": "CartPole-v1",
        "target_return": target,
        "max_iterations": max_iterations,
        "runs": runs,
    }


GPU_LEARNER_SIZES = {
    "64x64, batch 4000, minibatch 500 (the default)": {},
    "128x128, batch 8000, minibatch 2000": dict(
        hidden=[128, 128], train_batch_size=8000, minibatch_size=2000
    ),
    "256x256, batch 16000, minibatch 4000": dict(
        hidden=[256, 256], train_batch_size=16000, minibatch_size=4000
    ),
}
"""The learner sizes of the GPU-vs-CPU rows: the two the rule of
:mod:`rlsuite.platform.resources` was set from and one between."""


def gpu_learner(env_id: str, its: int, say: Say = print) -> dict:
    """The sync plan's iteration and learner-update time with the learner on the CPU and
    on one GPU, per size, beside what ``num_gpus_per_learner="auto"`` picks."""
    from rlsuite.platform import optimizers, resources

    no_gpu = (
        "" if resources.gpus_for_learners(0) >= 1 else "no GPU visible (torch and Ray see none)"
    )
    out: dict = {
        "gpus_visible": resources.gpus_for_learners(0),
        "threshold_work": resources.GPU_MIN_WORK,
        "sizes": {},
    }
    for label, values in GPU_LEARNER_SIZES.items():
        plan = optimizers.make_plan("sync", env=env_id, **values)
        work = resources.learner_work(plan)
        pick = resources.choose_learner(
            "auto", num_learners=0, gpus_visible=1, work=lambda w=work: w
        )
        row: dict = {
            "work": work,
            "auto_with_a_gpu": pick.device,
            "auto_here": resources.resolve(plan, log=False).learner.device,
            "cuda": {"skipped": no_gpu},
        }
        for device, n_gpus in (("cpu", 0), ("cuda", 1))[: 1 if no_gpu else 2]:
            r = iteration_rate(optimizers.to_rllib(plan.replace(num_gpus_per_learner=n_gpus)), its)
            row[device] = {
                "iteration_steps_per_s": r["iteration_steps_per_s"],
                "seconds_per_iteration": r["seconds_per_iteration"],
                "learner_update_s": r["timers_mean_s"].get("learner_update_timer", float("nan")),
            }
        if not no_gpu:
            row["gpu_speedup_learner"] = (
                row["cpu"]["learner_update_s"] / row["cuda"]["learner_update_s"]
            )
            row["gpu_speedup_iteration"] = (
                row["cuda"]["iteration_steps_per_s"] / row["cpu"]["iteration_steps_per_s"]
            )
            row["rule_agrees"] = (row["gpu_speedup_learner"] > 1) == (pick.device == "cuda")
        say(
            f"{label}: auto picks {pick.device} with a GPU; learner update on the CPU "
            f"{row['cpu']['learner_update_s']:.2f} s, "
            f"on the GPU {row['cuda'].get('learner_update_s', no_gpu)}"
        )
        out["sizes"][label] = row
    if no_gpu:
        out["skipped"] = no_gpu
    return out
