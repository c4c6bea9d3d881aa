"""The scale-out sections of ``platform_sampling.py``: ``scaling`` (the platform's runners
sampling), ``ceiling`` (plain processes, no Ray: what the machine allows),
``async-scaling`` (the async plan training) and ``gpu-learner`` (the sync plan's learner on
the CPU and on a GPU, beside what ``num_gpus_per_learner="auto"`` picks).
"""

from __future__ import annotations

import time

import gymnasium as gym
import torch
from platform_sampling_rates import MLP, breakdown, iteration_rate, sample_breakdown

# --------------------------------------------------------------------------- the runners


def scaling(env_id: str, runners: list[int], cpus: float, steps: int, console) -> dict:
    """Sampling steps/s with n remote runners x 32 envs (1 CPU each), for each n that
    Ray's CPUs allow, with :func:`sample_breakdown`'s account of the shortfall; the
    others are listed as skipped."""
    from rlsuite.platform import optimizers

    rows: dict = {}
    skipped: dict = {}
    for n in runners:
        if n > cpus:
            skipped[n] = f"needs {n} CPUs (1 per runner), Ray has {cpus:g}"
            console.print(f"{n} runners: skipped ({skipped[n]})")
            continue
        plan = optimizers.make_plan(
            "sync", env=env_id, num_env_runners=n, num_envs_per_env_runner=32
        )
        r = sample_breakdown(optimizers.to_rllib(plan), steps)
        r["per_runner"] = r["steps_per_s"] / n
        rows[n] = r
        console.print(
            f"{n} runners x 32 envs: {r['steps_per_s']:.0f} steps/s ({r['per_runner']:.0f} per "
            f"runner); in the runners {r['runner_cpu_us_per_step']:.1f} us CPU/step, "
            f"CPU/wall {r['runner_cpu_per_wall']:.2f}; straggler {r['straggler_loss']:.1%}, "
            f"dispatch {r['dispatch_loss']:.1%}"
        )
    _efficiency(rows)
    return {"runners": rows, "skipped": skipped}


def _efficiency(rows: dict, key: str = "steps_per_s") -> None:
    """Add ``efficiency_vs_1`` (``key`` over n x one process's) to each row."""
    if 1 in rows:
        for n, r in rows.items():
            r["efficiency_vs_1"] = r[key] / (n * rows[1][key])


# --------------------------------------------------------------------------- the machine's ceiling


def _ceiling_worker(env_id: str, n_envs: int, steps: int, start, out) -> None:
    """One plain process: ``n_envs`` copies in a gymnasium vector env and a 64x64 torch
    policy on their batch, the work of one env runner without Ray or RLlib."""
    torch.set_num_threads(1)
    env = gym.make_vec(env_id, num_envs=n_envs, vectorization_mode="sync")
    obs, _ = env.reset(seed=0)
    space = env.single_action_space
    n_out = space.n if isinstance(space, gym.spaces.Discrete) else 1
    net = MLP(env.single_observation_space.shape[0], n_out)

    def act(o):
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


def ceiling(env_id: str, counts: list[int], cpus: int, steps: int, console) -> dict:
    """What the machine itself allows: n plain processes doing a runner's work at once
    (:func:`_ceiling_worker`, no Ray), steps/s and efficiency against one, with the same
    CPU and straggler account as the runners'. The platform's scale-out can be judged
    against this rather than against n x one."""
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    rows: dict = {}
    skipped: dict = {}
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
        r = {"steps_per_s": sum(r["steps"] for r in got) / wall, **breakdown(got, wall)}
        r["per_process"] = r["steps_per_s"] / n
        rows[n] = r
        console.print(
            f"{n} plain processes x 32 envs: {r['steps_per_s']:.0f} steps/s "
            f"({r['per_process']:.0f} each), {r['runner_cpu_us_per_step']:.1f} us CPU/step, "
            f"CPU/wall {r['runner_cpu_per_wall']:.2f}"
        )
    _efficiency(rows)
    return {"processes": rows, "skipped": skipped}


# --------------------------------------------------------------------------- async (APPO)


def async_scaling(env_id: str, runners: list[int], cpus: float, its: int, console) -> dict:
    """The ``async`` plan (APPO) training: env steps sampled and trained per second with n
    runners (the plan's defaults otherwise), over ``its`` iterations after one warm-up.
    The learner takes a CPU of its own next to the runners, so n + 1 CPUs are needed."""
    from rlsuite.platform import optimizers
    from rlsuite.platform.backends.rllib import flatten_result

    rows: dict = {}
    skipped: dict = {}
    for n in runners:
        if n + 1 > cpus:
            skipped[n] = f"needs {n + 1} CPUs (1 per runner and the learner's), Ray has {cpus:g}"
            console.print(f"async, {n} runners: skipped ({skipped[n]})")
            continue
        plan = optimizers.make_plan("async", env=env_id, num_env_runners=n)
        algo = optimizers.to_rllib(plan).build_algo()
        try:
            algo.train()
            sampled = trained = 0
            t = time.perf_counter()
            for _ in range(its):
                r = algo.train()
                # counted as training counts it: 0 in an iteration in which no runner reported
                sampled += flatten_result(r)["env_steps_this_iter"]
                trained += int(
                    r.get("learners", {}).get("__all_modules__", {}).get("num_env_steps_trained", 0)
                )
            wall = time.perf_counter() - t
        finally:
            algo.stop()
        rows[n] = {
            "sampled_steps_per_s": sampled / wall,
            "trained_steps_per_s": trained / wall,
            "per_runner": sampled / wall / n,
            "envs_per_runner": plan.envs_per_runner,
        }
        console.print(
            f"async, {n} runners x {plan.envs_per_runner} envs: sampled "
            f"{sampled / wall:.0f} steps/s ({sampled / wall / n:.0f} per runner), "
            f"trained {trained / wall:.0f}"
        )
    _efficiency(rows, "sampled_steps_per_s")
    return {"runners": rows, "skipped": skipped}


GPU_LEARNER_SIZES = {
    "64x64, batch 4000, minibatch 500 (the default)": dict(),
    "128x128, batch 8000, minibatch 2000": dict(
        hidden=[128, 128], train_batch_size=8000, minibatch_size=2000
    ),
    "256x256, batch 16000, minibatch 4000": dict(
        hidden=[256, 256], train_batch_size=16000, minibatch_size=4000
    ),
}
"""The learner sizes of the GPU-vs-CPU rows: the two the rule of
:mod:`rlsuite.platform.resources` was set from (GPU 0.6x and 4x the CPU) and one between,
above the rule's threshold, where the crossover has not been measured."""


def gpu_learner(env_id: str, its: int, console) -> dict:
    """The sync plan's iteration and learner-update time with the learner on the CPU
    and on one GPU, per size, beside what ``num_gpus_per_learner="auto"`` picks."""
    from rlsuite.platform import optimizers, resources

    gpus = resources.gpus_for_learners(0)
    no_gpu = (
        ""
        if gpus >= 1
        else "no GPU visible (torch.cuda sees none in this process / Ray offers none)"
    )
    out: dict = {"gpus_visible": gpus, "threshold_work": resources.GPU_MIN_WORK, "sizes": {}}
    for label, values in GPU_LEARNER_SIZES.items():
        plan = optimizers.make_plan("sync", env=env_id, **values)
        work = resources.learner_work(plan)
        pick = resources.choose_learner(
            "auto", num_learners=0, gpus_visible=1, work=lambda w=work: w
        )
        here = resources.resolve(plan, log=False).learner
        row: dict = {"work": work, "auto_with_a_gpu": pick.device, "auto_here": here.device}
        for device, n_gpus in (("cpu", 0), ("cuda", 1)):
            if device == "cuda" and no_gpu:
                row["cuda"] = {"skipped": no_gpu}
                continue
            r = iteration_rate(optimizers.to_rllib(plan.replace(num_gpus_per_learner=n_gpus)), its)
            row[device] = {
                "iteration_steps_per_s": r["iteration_steps_per_s"],
                "seconds_per_iteration": r["seconds_per_iteration"],
                "learner_update_s": r["timers_mean_s"].get("learner_update_timer", float("nan")),
            }
        if "learner_update_s" in row["cuda"]:
            row["gpu_speedup_learner"] = (
                row["cpu"]["learner_update_s"] / row["cuda"]["learner_update_s"]
            )
            row["gpu_speedup_iteration"] = (
                row["cuda"]["iteration_steps_per_s"] / row["cpu"]["iteration_steps_per_s"]
            )
            row["rule_agrees"] = (row["gpu_speedup_learner"] > 1) == (pick.device == "cuda")
        cuda = row["cuda"].get("skipped") or f"{row['cuda']['learner_update_s']:.2f} s"
        console.print(
            f"{label}: work {work:.2g}, auto picks {pick.device} with a GPU; learner update "
            f"cpu {row['cpu']['learner_update_s']:.2f} s, gpu {cuda}"
        )
        out["sizes"][label] = row
    if no_gpu:
        console.print(f"[yellow]GPU learner rows skipped: {no_gpu}[/]")
        out["skipped"] = no_gpu
    return out
