"""Sampling and iteration throughput of the platform against a plain loop and RLlib's defaults.

Pass criteria:
  1. the platform's default sampler >= 3x RLlib's default settings (env steps/s),
  2. the platform's default sampler >= 20% of a plain gymnasium loop per core,
  3. the ``sync`` plan's whole iterations (sampling + SGD) at least as fast as a
     hand-written single-process torch PPO loop on the same batch and epochs (the
     default plan, and with ``overlap=true``: the next batch sampled during the update),
  4. scale-out: >= 85% efficiency at 15 runners against 1 (on a machine with the CPUs),
  5. gpu-learner (on a machine with a GPU): at every size, ``num_gpus_per_learner="auto"``
     picks the device whose learner update is faster (``rule_agrees``).

Sections (``--sections``, default ``baseline,scaling``):
  baseline     the three criteria above;
  scaling      sampling only, ``--runners 1,2,4,8,15`` remote runners x 32 envs, 1 CPU
               each: steps/s, per runner and the efficiency against 1 runner. Sizes that
               need more CPUs than Ray has are skipped and listed as skipped (this
               2-core machine measures 1 and 2);
  ceiling      what the machine itself allows: ``--runners`` counts of plain processes
               (no Ray, no RLlib), each stepping 32 envs in a gymnasium vector env with a
               64x64 torch policy, all at once. Scale-out that falls short here is the
               hardware's (two threads per core, the all-core clock), not the platform's;
               both sections report CPU per step, CPU/wall, straggler and dispatch losses,
               so the two can be compared term by term;
  async-scaling
               the ``async`` plan (APPO) training with ``--runners`` runners: env steps
               sampled and trained per second (n runners need n + 1 CPUs: the learner);
  actions-connector
               one runner x 32 envs with the platform's module-to-env pipeline (the
               actions unsquashed for all envs at once) against RLlib's stock one, in
               interleaved rounds (``--rounds``); on a Box action space (Pendulum-v1);
  sync-iterations
               criterion 3 alone, in interleaved rounds (``--rounds``): each round runs
               the hand-written loop, the default sync plan, the sync plan with
               ``overlap=true``, with ``overlap=true, check_finite_gradients=false`` and
               with that and ``kl_coeff=0`` one after another; the ratios against the
               hand-written loop are per round (a busy machine slows a whole round, not
               one row), and the median is kept;
  overlap-priority
               what the overlapped plan's lower runner priority gives: one overlapped
               sync plan on CartPole-v1 (defaults), blocks of 6 iterations with the
               runners at the driver's priority and at the lowered one, in ABBA order
               (``--rounds`` x 4 blocks) so a trend over time cancels. Raising a
               priority back needs the right to (root or CAP_SYS_NICE); without it
               the section says so and is skipped;
  overlap-learning
               the learning cost of ``overlap=true``: CartPole-v1 to a smoothed return of
               150 with the default sync plan, overlap off and on, same seeds
               (``--seeds``): iterations, env steps and seconds to the threshold;
  gpu-learner  the sync plan's whole iteration and learner update with the learner on
               the CPU and on a GPU, at the default nets and at large ones (on the
               discrete-action envs of ``--envs``), beside what
               ``num_gpus_per_learner="auto"`` picks for each. Without a GPU the GPU
               rows are skipped (and say why) and the CPU rows still run.

Usage:
    .venv/bin/python benchmarks/platform_sampling.py [--quick] [--envs CartPole-v1,Pendulum-v1]
        [--sections baseline,scaling,ceiling,async-scaling,actions-connector,sync-iterations,
                    overlap-priority,overlap-learning,gpu-learner]
        [--runners 1,2,4,8,15] [--rounds 3] [--seeds 0,1,2] [--num-cpus N]

Writes benchmarks/results/platform_sampling.json (``--out``) and, with the baseline,
platform_sampling.png.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

import gymnasium as gym
import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


# --------------------------------------------------------------------------- plain loops


def plain_loop(env_id: str, steps: int) -> float:
    """Env steps/s of a bare gymnasium loop with random actions, one core."""
    env = gym.make(env_id)
    env.reset(seed=0)
    space = env.action_space
    space.seed(0)
    t = time.perf_counter()
    for _ in range(steps):
        _, _, term, trunc, _ = env.step(space.sample())
        if term or trunc:
            env.reset()
    return steps / (time.perf_counter() - t)


def plain_policy_loop(env_id: str, steps: int) -> float:
    """Env steps/s of a bare loop that also runs a 64x64 torch policy per step (batch 1)."""
    env = gym.make(env_id)
    obs, _ = env.reset(seed=0)
    n_out = env.action_space.n if isinstance(env.action_space, gym.spaces.Discrete) else 1
    net = _MLP(env.observation_space.shape[0], n_out)
    t = time.perf_counter()
    with torch.no_grad():
        for _ in range(steps):
            out = net.pi(torch.as_tensor(obs, dtype=torch.float32)[None])
            a = int(out.argmax()) if n_out > 1 else out[0].clamp(-2, 2).numpy()
            obs, _, term, trunc, _ = env.step(a)
            if term or trunc:
                obs, _ = env.reset()
    return steps / (time.perf_counter() - t)


class _MLP(nn.Module):
    def __init__(self, n_in: int, n_out: int, hidden=(64, 64)):
        super().__init__()
        layers, d = [], n_in
        for h in hidden:
            layers += [nn.Linear(d, h), nn.Tanh()]
            d = h
        self.pi = nn.Sequential(*layers, nn.Linear(d, n_out))
        layers, d = [], n_in
        for h in hidden:
            layers += [nn.Linear(d, h), nn.Tanh()]
            d = h
        self.vf = nn.Sequential(*layers, nn.Linear(d, 1))


def handwritten_ppo(
    env_id: str, num_envs: int, batch: int, minibatch: int, epochs: int, iterations: int
) -> dict[str, float]:
    """A single-process torch PPO (discrete actions): rollouts then epochs of SGD.

    Returns rollout steps/s and whole-iteration steps/s (the reference the sync plan
    is compared with)."""
    torch.manual_seed(0)
    envs = gym.make_vec(env_id, num_envs=num_envs, vectorization_mode="sync")
    obs, _ = envs.reset(seed=0)
    n_obs = envs.single_observation_space.shape[0]
    n_act = envs.single_action_space.n
    net = _MLP(n_obs, n_act)
    opt = torch.optim.Adam(net.parameters(), lr=3e-4)
    T = batch // num_envs
    roll_t = it_t = 0.0
    for _ in range(iterations):
        t0 = time.perf_counter()
        buf_o, buf_a, buf_lp, buf_r, buf_d, buf_v = [], [], [], [], [], []
        for _ in range(T):
            with torch.no_grad():
                o = torch.as_tensor(obs, dtype=torch.float32)
                logits = net.pi(o)
                dist = torch.distributions.Categorical(logits=logits)
                a = dist.sample()
                buf_lp.append(dist.log_prob(a))
                buf_v.append(net.vf(o).squeeze(-1))
            buf_o.append(o)
            buf_a.append(a)
            obs, r, term, trunc, _ = envs.step(a.numpy())
            buf_r.append(torch.as_tensor(r, dtype=torch.float32))
            buf_d.append(torch.as_tensor(term | trunc, dtype=torch.float32))
        t1 = time.perf_counter()
        with torch.no_grad():
            last_v = net.vf(torch.as_tensor(obs, dtype=torch.float32)).squeeze(-1)
        adv = torch.zeros(T, num_envs)
        gae = torch.zeros(num_envs)
        for t in reversed(range(T)):
            nv = last_v if t == T - 1 else buf_v[t + 1]
            delta = buf_r[t] + 0.99 * nv * (1 - buf_d[t]) - buf_v[t]
            gae = delta + 0.99 * 0.95 * (1 - buf_d[t]) * gae
            adv[t] = gae
        obs_b = torch.stack(buf_o).reshape(-1, n_obs)
        act_b = torch.stack(buf_a).reshape(-1)
        logp_b = torch.stack(buf_lp).reshape(-1)
        val_b = torch.stack(buf_v).reshape(-1)
        ADV = adv.reshape(-1)
        RET = ADV + val_b
        N = obs_b.shape[0]
        for _ in range(epochs):
            perm = torch.randperm(N)
            for s in range(0, N, minibatch):
                idx = perm[s : s + minibatch]
                logits = net.pi(obs_b[idx])
                dist = torch.distributions.Categorical(logits=logits)
                ratio = torch.exp(dist.log_prob(act_b[idx]) - logp_b[idx])
                adv_mb = (ADV[idx] - ADV[idx].mean()) / (ADV[idx].std() + 1e-8)
                pl = -torch.min(ratio * adv_mb, torch.clamp(ratio, 0.8, 1.2) * adv_mb).mean()
                vl = ((net.vf(obs_b[idx]).squeeze(-1) - RET[idx]) ** 2).mean()
                opt.zero_grad()
                (pl + 0.5 * vl).backward()
                nn.utils.clip_grad_norm_(net.parameters(), 0.5)
                opt.step()
        t2 = time.perf_counter()
        roll_t += t1 - t0
        it_t += t2 - t0
    envs.close()
    steps = T * num_envs * iterations
    return {"rollout_steps_per_s": steps / roll_t, "iteration_steps_per_s": steps / it_t}


# --------------------------------------------------------------------------- RLlib / platform


def sample_rate(config, steps_per_runner: int, repeats: int = 3) -> float:
    """Env steps/s of an algorithm's env runners, sampling in parallel (no learning)."""
    return sample_breakdown(config, steps_per_runner, repeats)["steps_per_s"]


def _timed_sample(runner, steps: int) -> dict:
    """One ``runner.sample`` inside the runner: its steps, own wall and CPU seconds."""
    t, c = time.perf_counter(), time.process_time()
    n = sum(len(e) for e in runner.sample(num_timesteps=steps, random_actions=False))
    return {"steps": n, "wall_s": time.perf_counter() - t, "cpu_s": time.process_time() - c}


def sample_breakdown(config, steps_per_runner: int, repeats: int = 3) -> dict:
    """Steps/s of the runners sampling in parallel, and where a shortfall goes.

    Each runner times its own ``sample`` (wall and CPU seconds) and returns only counts, so
    no episode crosses a process. Of the fastest of ``repeats`` rounds:

    * ``runner_cpu_us_per_step``: CPU per env step inside the runners. It rises with the
      runner count when the runners slow each other down on the hardware (two threads of
      one core, a lower all-core clock, shared caches);
    * ``runner_cpu_per_wall``: CPU / wall inside the runners. Below 1 when runners wait
      for a CPU (more busy processes than cores: Ray's own, the driver, other jobs);
    * ``straggler_loss``: 1 - mean / max runner wall (the round waits for the slowest);
    * ``dispatch_loss``: 1 - max runner wall / the driver's wall (Ray's round trip and
      scheduling).
    """
    algo = config.build_algo()
    try:
        group = algo.env_runner_group
        remote = config.num_env_runners > 0

        def sample(r):
            return _timed_sample(r, steps_per_runner)

        group.foreach_env_runner(sample, local_env_runner=not remote)  # warm-up
        best: dict = {"steps_per_s": 0.0}
        for _ in range(repeats):
            t = time.perf_counter()
            rows = group.foreach_env_runner(sample, local_env_runner=not remote)
            wall = time.perf_counter() - t
            rate = sum(r["steps"] for r in rows) / wall
            if rate > best["steps_per_s"]:
                best = {"steps_per_s": rate, **_breakdown(rows, wall)}
        return best
    finally:
        algo.stop()


def _breakdown(rows: list[dict], driver_wall: float) -> dict:
    """The :func:`sample_breakdown` fields of one round of per-process timings."""
    walls = [r["wall_s"] for r in rows]
    steps = sum(r["steps"] for r in rows)
    return {
        "runners_timed": len(rows),
        "runner_own_steps_per_s": [r["steps"] / r["wall_s"] for r in rows],
        "runner_cpu_us_per_step": 1e6 * sum(r["cpu_s"] for r in rows) / steps,
        "runner_cpu_per_wall": sum(r["cpu_s"] for r in rows) / sum(walls),
        "straggler_loss": 1 - (sum(walls) / len(walls)) / max(walls),
        "dispatch_loss": max(0.0, 1 - max(walls) / driver_wall),
    }


def iteration_rate(config, iterations: int) -> dict[str, float]:
    """Whole-iteration env steps/s of ``algo.train()`` and where the time goes."""
    algo = config.build_algo()
    try:
        algo.train()  # warm-up (module build, first weights sync)
        steps = 0
        t = time.perf_counter()
        timers: dict[str, float] = {}
        for _ in range(iterations):
            r = algo.train()
            steps += int(r["env_runners"]["num_env_steps_sampled"])
            for k, v in (r.get("timers") or {}).items():
                if isinstance(v, int | float):
                    timers[k] = timers.get(k, 0.0) + float(v)
        wall = time.perf_counter() - t
        return {
            "iteration_steps_per_s": steps / wall,
            "seconds_per_iteration": wall / iterations,
            "timers_mean_s": {k: v / iterations for k, v in timers.items()},
        }
    finally:
        algo.stop()


def profile_iteration(config, iterations: int = 3, top: int = 12) -> list[dict[str, float]]:
    """cProfile of the driver during ``algo.train()`` (the learner runs there; sampling runs
    in the runner processes, so the driver shows it as waiting)."""
    import cProfile
    import pstats

    algo = config.build_algo()
    try:
        algo.train()
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(iterations):
            algo.train()
        prof.disable()
    finally:
        algo.stop()
    st = pstats.Stats(prof)
    rows = []
    for (file, line, fn), (_, _, tt, ct, _) in st.stats.items():
        rows.append(
            {
                "function": f"{os.path.basename(file)}:{line}:{fn}",
                "self_s": tt / iterations,
                "cumulative_s": ct / iterations,
            }
        )
    rows.sort(key=lambda r: -r["self_s"])
    return rows[:top]


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
    net = _MLP(env.single_observation_space.shape[0], n_out)

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
        r = {"steps_per_s": sum(r["steps"] for r in got) / wall, **_breakdown(got, wall)}
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


STOCK_LEARNER = "stock_learner"
"""A :data:`SYNC_VARIANTS` key: build the plan with RLlib's own ``PPOTorchLearner`` and its
per-tensor finite-gradient test instead of :mod:`rlsuite.platform.learners` (the platform
as it was before that learner, measured in the same run)."""

SYNC_VARIANTS = {
    "sync plan (defaults)": {},
    "sync plan, RLlib's stock PPO learner": {STOCK_LEARNER: True},
    "sync plan, overlap=true": {"overlap": True},
    "sync plan, overlap=true, RLlib's stock PPO learner": {"overlap": True, STOCK_LEARNER: True},
    "sync plan, overlap=true, check_finite_gradients=false": {
        "overlap": True,
        "check_finite_gradients": False,
    },
}
"""The sync plans of the ``sync-iterations`` section (batch 4000, minibatch 500, 10
epochs, 64x64 nets, 2 runners x 32 envs: the plan's defaults), each with the platform's
learner and, for comparison, with RLlib's stock one."""


def sync_config(env_id: str, values: dict):
    """The RLlib config of one :data:`SYNC_VARIANTS` entry."""
    from ray.rllib.algorithms.ppo.torch.ppo_torch_learner import PPOTorchLearner

    from rlsuite.platform import optimizers

    values = dict(values)
    stock = values.pop(STOCK_LEARNER, False)
    plan = optimizers.make_plan("sync", env=env_id, **values)
    config = optimizers.to_rllib(plan)
    if stock:
        config = config.learners(learner_class=PPOTorchLearner, learner_config_dict={})
        config = config.framework(torch_skip_nan_gradients=not plan.check_finite_gradients)
    return config


HANDWRITTEN = "hand-written PPO (1 process, 8 envs, 1 torch thread)"


def actions_connector(env_id: str, rounds: int, steps: int, console) -> dict:
    """One remote runner x 32 envs sampling with the platform's module-to-env pipeline
    (:mod:`rlsuite.platform.connectors`) and with RLlib's stock one, in interleaved rounds
    (ABBA order); the ratio is per round and its median is kept."""
    import statistics

    from rlsuite.platform import optimizers

    plan = optimizers.make_plan("sync", env=env_id, num_env_runners=1, num_envs_per_env_runner=32)
    configs = {"platform": optimizers.to_rllib(plan)}
    configs["stock"] = (
        configs["platform"]
        .copy(copy_frozen=False)
        .env_runners(
            module_to_env_connector=None, add_default_connectors_to_module_to_env_pipeline=True
        )
    )
    rates: dict[str, list[float]] = {"platform": [], "stock": []}
    for i in range(rounds):
        for label in ("platform", "stock") if i % 2 == 0 else ("stock", "platform"):
            rates[label].append(sample_rate(configs[label], steps, repeats=2))
        console.print(
            f"round {i + 1}: platform pipeline {rates['platform'][-1]:.0f}, "
            f"RLlib's stock pipeline {rates['stock'][-1]:.0f} steps/s"
        )
    ratios = [a / b for a, b in zip(rates["platform"], rates["stock"])]
    return {"steps_per_s": rates, "ratios": ratios, "median_ratio": statistics.median(ratios)}


def sync_iterations(env_id: str, rounds: int, its: int, console) -> dict:
    """Whole-iteration steps/s of the hand-written loop and each of :data:`SYNC_VARIANTS`,
    in ``rounds`` interleaved rounds; per-round ratios against the hand-written loop."""
    from statistics import median

    rates: dict[str, list[float]] = {HANDWRITTEN: [], **{k: [] for k in SYNC_VARIANTS}}
    ratios: dict[str, list[float]] = {k: [] for k in SYNC_VARIANTS}
    timers: dict[str, list[dict[str, float]]] = {k: [] for k in SYNC_VARIANTS}
    for rnd in range(rounds):
        hw = handwritten_ppo(
            env_id, num_envs=8, batch=4000, minibatch=500, epochs=10, iterations=its
        )["iteration_steps_per_s"]
        rates[HANDWRITTEN].append(hw)
        line = [f"round {rnd + 1}: hand-written {hw:.0f}"]
        for label, values in SYNC_VARIANTS.items():
            r = iteration_rate(sync_config(env_id, values), its)
            rates[label].append(r["iteration_steps_per_s"])
            ratios[label].append(r["iteration_steps_per_s"] / hw)
            timers[label].append(r["timers_mean_s"])
            line.append(f"{label}: {r['iteration_steps_per_s']:.0f} ({ratios[label][-1]:.2f}x)")
        console.print("; ".join(line))
    return {
        "rounds": rounds,
        "iterations_per_measurement": its,
        "steps_per_s": rates,
        "median_steps_per_s": {k: median(v) for k, v in rates.items()},
        "ratio_vs_handwritten_per_round": ratios,
        "median_ratio_vs_handwritten": {k: median(v) for k, v in ratios.items()},
        "timers_mean_s": timers,
    }


def overlap_priority(rounds: int, block: int, console) -> dict:
    """Steps/s of one overlapped sync plan with its runners at the driver's priority
    (``same``) and at :data:`rlsuite.platform.overlap.RUNNER_NICENESS` lower
    (``lowered``), in ABBA-ordered blocks."""
    from statistics import mean

    from rlsuite.platform import optimizers
    from rlsuite.platform.overlap import RUNNER_NICENESS

    driver = os.getpriority(os.PRIO_PROCESS, 0)
    plan = optimizers.make_plan("sync", env="CartPole-v1", overlap=True)
    algo = optimizers.to_rllib(plan).build_algo()
    group = algo.env_runner_group

    def set_nice(value: int) -> list[int]:
        def f(runner, value=value):
            os.setpriority(os.PRIO_PROCESS, 0, value)
            return os.getpriority(os.PRIO_PROCESS, 0)

        return group.foreach_env_runner(f, local_env_runner=False)

    out: dict = {"driver_niceness": driver, "block_iterations": block}
    try:
        try:
            set_nice(driver)
        except Exception as e:  # no right to raise a priority back
            out["skipped"] = f"cannot reset the runners' priority: {e}"
            console.print(f"[yellow]overlap-priority skipped: {out['skipped']}[/]")
            return out
        algo.train()
        rates: dict[str, list[float]] = {"same": [], "lowered": []}
        for _ in range(rounds):
            for key in ("same", "lowered", "lowered", "same"):
                set_nice(driver + (RUNNER_NICENESS if key == "lowered" else 0))
                t, steps = time.perf_counter(), 0
                for _ in range(block):
                    steps += int(algo.train()["env_runners"]["num_env_steps_sampled"])
                rates[key].append(steps / (time.perf_counter() - t))
        out["steps_per_s"] = rates
        out["mean_steps_per_s"] = {k: mean(v) for k, v in rates.items()}
        out["lowered_vs_same"] = (
            out["mean_steps_per_s"]["lowered"] / out["mean_steps_per_s"]["same"]
        )
        console.print(
            f"runners at the driver's priority: {out['mean_steps_per_s']['same']:.0f} steps/s, "
            f"lowered: {out['mean_steps_per_s']['lowered']:.0f} ({out['lowered_vs_same']:.2f}x)"
        )
    finally:
        algo.stop()
    return out


def overlap_learning(seeds: list[int], max_iterations: int, console) -> dict:
    """CartPole-v1 to a smoothed return of 150, sync plan with overlap off and on, and on
    with PPO's clip on the behaviour policy (the ablation of the decoupled clip)."""
    import tempfile

    from rlsuite.platform import learners, optimizers, training

    target = 150.0
    runs: dict[str, list[dict]] = {}
    for overlap in (False, True):
        key = f"overlap={str(overlap).lower()}"
        runs[key] = []
        for seed in seeds:
            plan = optimizers.make_plan("sync", env="CartPole-v1", seed=seed, overlap=overlap)
            with tempfile.TemporaryDirectory() as d:
                res = training.train(plan, max_iterations, d, progress=False, stop_return=target)
            reached = res.final_return >= target
            row = {
                "seed": seed,
                "reached": reached,
                "iterations": res.iterations,
                "env_steps": res.env_steps,
                "wall_s": res.wall_time_s,
                "train_s": sum(m.get("time_this_iter_s", 0.0) for m in res.metrics),
                "final_return": res.final_return,
                "returns": [m.get("episode_return_mean") for m in res.metrics],
            }
            runs[key].append(row)
            console.print(
                f"{key} seed {seed}: {'reached' if reached else 'did NOT reach'} {target:g} "
                f"after {res.iterations} iterations, {res.env_steps} steps, "
                f"{row['train_s']:.1f} s in train() ({res.wall_time_s:.1f} s with the build; "
                f"return {res.final_return:.1f})"
            )
    # Ablation: overlap=true with PPO's clip on the behaviour policy (the learner's
    # decoupled clip off), through RLlib's loop since no plan field turns it off.
    runs[BEHAVIOUR_CLIP] = []
    for seed in seeds:
        plan = optimizers.make_plan("sync", env="CartPole-v1", seed=seed, overlap=True)
        config = optimizers.to_rllib(plan).learners(
            **learners.learner_settings(check_finite_gradients=True, decoupled_clip=False)
        )
        row = {"seed": seed, **_train_to_return(config, target, max_iterations)}
        runs[BEHAVIOUR_CLIP].append(row)
        console.print(
            f"{BEHAVIOUR_CLIP} seed {seed}: {'reached' if row['reached'] else 'did NOT reach'} "
            f"{target:g} after {row['iterations']} iterations, {row['env_steps']} steps, "
            f"{row['train_s']:.1f} s in train()"
        )
    return {
        "env": "CartPole-v1",
        "target_return": target,
        "max_iterations": max_iterations,
        "runs": runs,
    }


BEHAVIOUR_CLIP = "overlap=true, clip on the behaviour policy"
"""The ``overlap-learning`` ablation: the overlapped plan without the decoupled clip."""


def _train_to_return(config, target: float, max_iterations: int) -> dict:
    """``algo.train()`` until the smoothed return reaches ``target`` (the ablation's loop;
    the same fields as a ``training.train`` row)."""
    t0 = time.perf_counter()
    algo = config.build_algo()
    try:
        returns, steps, train_s = [], 0, 0.0
        for _ in range(max_iterations):
            r = algo.train()
            returns.append(r["env_runners"].get("episode_return_mean", float("nan")))
            steps += int(r["env_runners"]["num_env_steps_sampled"])
            train_s += float(r.get("time_this_iter_s", 0.0))
            if returns[-1] >= target:
                break
    finally:
        algo.stop()
    return {
        "reached": returns[-1] >= target,
        "iterations": len(returns),
        "env_steps": steps,
        "wall_s": time.perf_counter() - t0,
        "train_s": train_s,
        "final_return": returns[-1],
        "returns": returns,
    }


def _machine() -> str:
    from rlsuite.platform.machine import cpu_topology
    from rlsuite.platform.resources import local_gpus

    gpus = local_gpus()
    gpu = ", ".join(f"{g.name} ({g.memory_gib:g} GiB)" for g in gpus) if gpus else "no GPU"
    return f"{cpu_topology().describe()}, {platform.processor() or platform.machine()}, {gpu}"


def main(argv: list[str] | None = None) -> int:
    from rich.console import Console
    from rich.table import Table

    from rlsuite.platform import cluster, optimizers
    from rlsuite.platform.machine import cpu_topology, usable_cpus

    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--quick", action="store_true", help="smaller budgets (a smoke run)")
    ap.add_argument("--envs", default="CartPole-v1,Pendulum-v1")
    ap.add_argument(
        "--num-cpus",
        type=int,
        default=usable_cpus(),
        help="Ray's CPUs (default: all this process can use)",
    )
    ap.add_argument("--profile", action="store_true", help="cProfile the sync plan's driver")
    ap.add_argument(
        "--sections",
        default="baseline,scaling",
        help="comma-separated: baseline, scaling, ceiling, async-scaling, actions-connector, "
        "sync-iterations, overlap-priority, overlap-learning, gpu-learner "
        "(default baseline,scaling)",
    )
    ap.add_argument(
        "--runners",
        type=lambda t: [int(x) for x in t.split(",")],
        default=[1, 2],
        help="runner (process) counts of the scaling, ceiling and async-scaling sections, "
        "e.g. 1,2,4,8,15 (default 1,2)",
    )
    ap.add_argument(
        "--rounds", type=int, default=3, help="rounds of the sync-iterations section (default 3)"
    )
    ap.add_argument(
        "--seeds",
        type=lambda t: [int(x) for x in t.split(",")],
        default=[0, 1, 2],
        help="seeds of the overlap-learning section (default 0,1,2)",
    )
    ap.add_argument("--out", default=os.path.join(RESULTS, "platform_sampling.json"))
    args = ap.parse_args(argv)
    sections = args.sections.split(",")
    known = {
        "baseline",
        "scaling",
        "ceiling",
        "async-scaling",
        "actions-connector",
        "sync-iterations",
        "overlap-priority",
        "overlap-learning",
        "gpu-learner",
    }
    bad = set(sections) - known
    if bad:
        ap.error(f"unknown sections {sorted(bad)}; choose from {', '.join(sorted(known))}")
    console = Console(width=None if sys.stdout.isatty() else 132)
    steps = 4000 if args.quick else 20000
    cluster.init(num_cpus=args.num_cpus)
    cores = args.num_cpus
    out: dict = {
        "machine": _machine(),
        "sections": sections,
        "python": sys.version.split()[0],
        "ray": __import__("ray").__version__,
        "torch": torch.__version__,
        "cores_used": cores,
        "cpus": cpu_topology().to_dict(),
        "command": " ".join(
            [os.path.basename(sys.argv[0]), *(argv if argv is not None else sys.argv[1:])]
        ),
        "envs": {},
    }

    def save(done: bool) -> None:
        """Write what is measured so far; a run cut off by a time limit keeps it, and
        ``unfinished`` names the env and sections it had not finished."""
        out["unfinished"] = [] if done else [f"{e}: {s}" for e, s in pending.items()]
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w") as f:
            json.dump(out, f, indent=2, default=str)

    pending = {e: ",".join(sections) for e in args.envs.split(",")}
    try:
        for env_id in args.envs.split(","):
            console.rule(env_id)
            rec: dict = {}
            out["envs"][env_id] = rec
            if "scaling" in sections:
                rec["scaling"] = scaling(env_id, args.runners, cores, steps, console)
                save(False)
            if "ceiling" in sections:
                # a plain process steps ~5-10x faster than a runner: 20x the steps
                rec["ceiling"] = ceiling(env_id, args.runners, cores, 20 * steps, console)
                save(False)
            if "actions-connector" in sections:
                rec["actions_connector"] = actions_connector(
                    env_id, 2 if args.quick else args.rounds, steps, console
                )
            if "async-scaling" in sections:
                rec["async_scaling"] = async_scaling(
                    env_id, args.runners, cores, 2 if args.quick else 5, console
                )
                save(False)
            if "gpu-learner" in sections and isinstance(
                gym.make(env_id).action_space, gym.spaces.Discrete
            ):
                rec["gpu_learner"] = gpu_learner(env_id, 1 if args.quick else 3, console)
                save(False)
            discrete = isinstance(gym.make(env_id).action_space, gym.spaces.Discrete)
            if "sync-iterations" in sections and discrete:
                console.print("sync iterations against the hand-written loop, interleaved:")
                rec["sync_iterations"] = sync_iterations(
                    env_id, 2 if args.quick else args.rounds, 5 if args.quick else 10, console
                )
            if "baseline" not in sections:
                pending.pop(env_id)
                save(False)
                continue
            rec["plain_loop_steps_per_s"] = plain_loop(env_id, steps * 5)
            console.print(f"plain loop: {rec['plain_loop_steps_per_s']:.0f} steps/s (1 core)")
            rec["plain_policy_loop_steps_per_s"] = plain_policy_loop(env_id, steps)
            console.print(
                f"plain loop + torch policy: {rec['plain_policy_loop_steps_per_s']:.0f} steps/s"
            )

            from ray.rllib.algorithms.ppo import PPOConfig

            rllib_default = PPOConfig().environment(env_id).debugging(log_level="ERROR")
            rec["rllib_default_settings"] = {
                "num_env_runners": rllib_default.num_env_runners,
                "num_envs_per_env_runner": rllib_default.num_envs_per_env_runner,
            }
            rec["rllib_default_steps_per_s"] = sample_rate(rllib_default, steps // 2)
            console.print(
                f"RLlib defaults (local runner, 1 env): {rec['rllib_default_steps_per_s']:.0f}"
            )

            sweep = {}
            for n_envs in (1, 8, 16, 32):
                plan = optimizers.make_plan(
                    "sync", env=env_id, num_env_runners=cores, num_envs_per_env_runner=n_envs
                )
                rate = sample_rate(optimizers.to_rllib(plan), steps)
                sweep[n_envs] = rate
                console.print(f"platform, {cores} runners x {n_envs} envs: {rate:.0f} steps/s")
            rec["platform_sweep_steps_per_s"] = sweep
            default_plan = optimizers.make_plan("sync", env=env_id)
            rec["platform_default"] = {
                "num_env_runners": default_plan.num_env_runners,
                "num_envs_per_env_runner": default_plan.envs_per_runner,
            }
            rec["platform_default_steps_per_s"] = sweep[default_plan.envs_per_runner]
            rec["platform_per_core_fraction_of_plain"] = (
                rec["platform_default_steps_per_s"] / cores / rec["plain_loop_steps_per_s"]
            )
            rec["platform_per_core_fraction_of_plain_policy"] = (
                rec["platform_default_steps_per_s"] / cores / rec["plain_policy_loop_steps_per_s"]
            )
            rec["platform_vs_rllib_default"] = (
                rec["platform_default_steps_per_s"] / rec["rllib_default_steps_per_s"]
            )

            if isinstance(gym.make(env_id).action_space, gym.spaces.Discrete):
                its = 3 if args.quick else 6
                hw = handwritten_ppo(
                    env_id, num_envs=8, batch=4000, minibatch=500, epochs=10, iterations=its
                )
                rec["handwritten_ppo"] = hw
                console.print(
                    f"hand-written PPO (1 process, 8 envs): rollout "
                    f"{hw['rollout_steps_per_s']:.0f}, iteration {hw['iteration_steps_per_s']:.0f} steps/s"
                )
                sync = iteration_rate(optimizers.to_rllib(default_plan), its)
                rec["sync_plan"] = sync
                console.print(
                    f"sync plan (defaults: batch 4000, minibatch 500, 10 epochs): "
                    f"{sync['iteration_steps_per_s']:.0f} steps/s; timers {sync['timers_mean_s']}"
                )
                rec["sync_vs_handwritten"] = (
                    sync["iteration_steps_per_s"] / hw["iteration_steps_per_s"]
                )
                overlap = iteration_rate(
                    optimizers.to_rllib(default_plan.replace(overlap=True)), its
                )
                rec["sync_plan_overlap"] = overlap
                rec["overlap_vs_handwritten"] = (
                    overlap["iteration_steps_per_s"] / hw["iteration_steps_per_s"]
                )
                console.print(
                    f"sync plan, overlap=true: {overlap['iteration_steps_per_s']:.0f} steps/s "
                    f"({rec['overlap_vs_handwritten']:.2f}x the hand-written loop)"
                )
                if args.profile:
                    rec["sync_driver_profile"] = profile_iteration(
                        optimizers.to_rllib(default_plan)
                    )
                    for r in rec["sync_driver_profile"][:8]:
                        console.print(f"  {r['self_s'] * 1000:7.1f} ms self  {r['function']}")
                for n_envs in (8, 32):
                    if n_envs == default_plan.envs_per_runner:
                        continue
                    alt = iteration_rate(
                        optimizers.to_rllib(default_plan.replace(num_envs_per_env_runner=n_envs)),
                        its,
                    )
                    rec[f"sync_plan_{n_envs}_envs"] = alt
                    console.print(
                        f"sync plan with {n_envs} envs/runner: {alt['iteration_steps_per_s']:.0f} steps/s"
                    )
            pending.pop(env_id)
            save(False)
        if "overlap-priority" in sections:
            console.rule("overlap-priority")
            out["overlap_priority"] = overlap_priority(1 if args.quick else args.rounds, 6, console)
        if "overlap-learning" in sections:
            console.rule("overlap-learning")
            out["overlap_learning"] = overlap_learning(
                args.seeds[:1] if args.quick else args.seeds, 30, console
            )
    finally:
        cluster.shutdown()

    save(True)
    for env_id, rec in out["envs"].items():
        if "actions_connector" in rec:
            ac = rec["actions_connector"]
            console.print(
                f"{env_id}: the platform's module-to-env pipeline samples at "
                f"{ac['median_ratio']:.2f}x RLlib's stock one (median of "
                f"{len(ac['ratios'])} rounds: {', '.join(f'{r:.2f}' for r in ac['ratios'])})"
            )
    if {"scaling", "ceiling", "async-scaling"} & set(sections):
        console.print(_scaling_table(out))
        scaling_png = os.path.splitext(os.path.abspath(args.out))[0] + "_scaling.png"
        _plot_scaling(out, scaling_png)
        console.print(f"scale-out chart: {scaling_png}")
    if "sync-iterations" in sections:
        console.print(_sync_iterations_table(out))
    if "overlap-learning" in sections:
        console.print(_overlap_learning_table(out["overlap_learning"]))
    png = os.path.splitext(os.path.abspath(args.out))[0] + ".png"
    if "baseline" not in sections:
        if {"sync-iterations", "overlap-learning"} & set(sections):  # overlap-priority: JSON
            _plot_overlap(out, png)
        return 0
    t = Table(title="platform sampling (env steps/s)")
    for c in (
        "env",
        "plain loop",
        "plain+policy",
        "RLlib default",
        "platform default",
        "x RLlib",
        "% plain/core",
        "% plain+policy/core",
        "sync it",
        "overlap it",
        "hand PPO it",
        "sync/hand",
        "overlap/hand",
    ):
        t.add_column(c, justify="right")
    for env_id, r in out["envs"].items():
        t.add_row(
            env_id,
            f"{r['plain_loop_steps_per_s']:.0f}",
            f"{r['plain_policy_loop_steps_per_s']:.0f}",
            f"{r['rllib_default_steps_per_s']:.0f}",
            f"{r['platform_default_steps_per_s']:.0f}",
            f"{r['platform_vs_rllib_default']:.1f}x",
            f"{100 * r['platform_per_core_fraction_of_plain']:.0f}%",
            f"{100 * r['platform_per_core_fraction_of_plain_policy']:.0f}%",
            f"{r.get('sync_plan', {}).get('iteration_steps_per_s', float('nan')):.0f}",
            f"{r.get('sync_plan_overlap', {}).get('iteration_steps_per_s', float('nan')):.0f}",
            f"{r.get('handwritten_ppo', {}).get('iteration_steps_per_s', float('nan')):.0f}",
            f"{r.get('sync_vs_handwritten', float('nan')):.2f}",
            f"{r.get('overlap_vs_handwritten', float('nan')):.2f}",
        )
    console.print(t)
    _plot(out, png)
    return 0


def _sync_iterations_table(out: dict):
    from rich.table import Table

    t = Table(title="whole iterations (batch 4000, minibatch 500, 10 epochs, 64x64), env steps/s")
    for c in ("env", "variant", "per round", "median", "median ratio vs hand-written"):
        t.add_column(c, justify="right")
    for env_id, rec in out["envs"].items():
        si = rec.get("sync_iterations")
        if not si:
            continue
        for label, rates in si["steps_per_s"].items():
            ratio = si["median_ratio_vs_handwritten"].get(label)
            t.add_row(
                env_id,
                label,
                ", ".join(f"{x:.0f}" for x in rates),
                f"{si['median_steps_per_s'][label]:.0f}",
                "" if ratio is None else f"{ratio:.2f}x",
            )
    return t


def _overlap_learning_table(ol: dict):
    from rich.table import Table

    t = Table(title=f"{ol['env']} to return {ol['target_return']:g}, sync plan")
    for c in ("overlap", "seed", "reached", "iterations", "env steps", "s in train()", "s total"):
        t.add_column(c, justify="right")
    for key, runs in ol["runs"].items():
        for r in runs:
            t.add_row(
                key,
                str(r["seed"]),
                "yes" if r["reached"] else "no",
                str(r["iterations"]),
                str(r["env_steps"]),
                f"{r['train_s']:.1f}",
                f"{r['wall_s']:.1f}",
            )
    return t


def _scaling_table(out: dict):
    from rich.table import Table

    t = Table(
        title=f"sampling scale-out, 32 envs per process ({out['machine']})",
        caption="runners: the platform's env runners, sampling only; plain: processes "
        "without Ray (the machine's ceiling); async: the async plan's sampling while it "
        "trains",
    )
    for c in (
        "env",
        "what",
        "n",
        "steps/s",
        "per proc.",
        "eff. vs 1",
        "us CPU/step",
        "CPU/wall",
        "straggler",
        "dispatch",
    ):
        t.add_column(c, justify="right")
    for env_id, rec in out["envs"].items():
        for key, what, rows_key in (
            ("scaling", "runners", "runners"),
            ("ceiling", "plain", "processes"),
        ):
            sc = rec.get(key, {})
            for n, r in sc.get(rows_key, {}).items():
                eff = r.get("efficiency_vs_1")
                t.add_row(
                    env_id,
                    what,
                    str(n),
                    f"{r['steps_per_s']:.0f}",
                    f"{r['steps_per_s'] / int(n):.0f}",
                    "" if eff is None else f"{100 * eff:.0f}%",
                    f"{r['runner_cpu_us_per_step']:.1f}",
                    f"{r['runner_cpu_per_wall']:.2f}",
                    f"{100 * r['straggler_loss']:.1f}%",
                    f"{100 * r['dispatch_loss']:.1f}%",
                )
            for n, why in sc.get("skipped", {}).items():
                t.add_row(env_id, what, str(n), "skipped", why, "", "", "", "", "")
        for n, r in rec.get("async_scaling", {}).get("runners", {}).items():
            eff = r.get("efficiency_vs_1")
            t.add_row(
                env_id,
                "async",
                str(n),
                f"{r['sampled_steps_per_s']:.0f}",
                f"{r['per_runner']:.0f}",
                "" if eff is None else f"{100 * eff:.0f}%",
                "",
                "",
                "",
                "",
            )
    return t


def _plot_scaling(out: dict, path: str) -> None:
    """Efficiency against one process, per env: platform runners, plain processes and the
    async plan's sampling."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    envs = list(out["envs"])
    fig, axes = plt.subplots(1, len(envs), figsize=(5 * len(envs), 3.6), squeeze=False)
    for ax, env_id in zip(axes[0], envs):
        rec = out["envs"][env_id]
        for key, rows_key, label in (
            ("scaling", "runners", "platform runners (sampling)"),
            ("ceiling", "processes", "plain processes (no Ray)"),
            ("async_scaling", "runners", "async plan (sampled while training)"),
        ):
            rows = rec.get(key, {}).get(rows_key, {})
            pts = sorted(
                (int(n), r["efficiency_vs_1"]) for n, r in rows.items() if "efficiency_vs_1" in r
            )
            if pts:
                ax.plot([p[0] for p in pts], [100 * p[1] for p in pts], "o-", label=label)
        ax.axhline(85, color="grey", ls="--", lw=1, label="target 85%")
        ax.set_title(env_id)
        ax.set_xlabel("processes")
        ax.set_ylabel("efficiency vs 1 (%)")
        ax.set_ylim(0, 110)
        ax.legend(fontsize=7)
    fig.suptitle(out["machine"], fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _plot_overlap(out: dict, path: str) -> None:
    """Whole-iteration steps/s per variant (bars: median, dots: rounds) and the
    overlap-learning returns, overlap off and on."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [(e, r["sync_iterations"]) for e, r in out["envs"].items() if "sync_iterations" in r]
    ol = out.get("overlap_learning")
    n = len(panels) + (1 if ol else 0)
    fig, axes = plt.subplots(1, n, figsize=(6 * n, 4), dpi=110, squeeze=False)
    for ax, (env_id, si) in zip(axes[0], panels, strict=False):
        labels = list(si["steps_per_s"])
        short = [
            lb.replace("sync plan (defaults)", "sync\n(defaults)")
            .replace("sync plan, ", "sync\n")
            .replace(", RLlib's stock PPO learner", "\nstock learner")
            .replace("RLlib's stock PPO learner", "stock learner")
            .replace(", check_finite_gradients=false", "\nunchecked\ngrads")
            .replace(", kl_coeff=0", "\nno KL term")
            .replace("hand-written PPO (1 process, 8 envs, 1 torch thread)", "hand-\nwritten\nPPO")
            for lb in labels
        ]
        x = range(len(labels))
        ax.bar(x, [si["median_steps_per_s"][lb] for lb in labels], color="tab:blue", alpha=0.6)
        for i, lb in enumerate(labels):
            ax.plot([i] * len(si["steps_per_s"][lb]), si["steps_per_s"][lb], "k.")
        if HANDWRITTEN in si["median_steps_per_s"]:
            ax.axhline(si["median_steps_per_s"][HANDWRITTEN], color="k", ls=":", lw=1)
        ax.set_xticks(list(x), short, fontsize=7)
        ax.set_ylabel("env steps / s (whole iterations)")
        ax.set_title(f"{env_id}: batch 4000, minibatch 500, 10 epochs")
    if ol:
        ax = axes[0][-1]
        for key, color in (
            ("overlap=false", "tab:grey"),
            ("overlap=true", "tab:blue"),
            (BEHAVIOUR_CLIP, "tab:orange"),
        ):
            for i, r in enumerate(ol["runs"].get(key, [])):
                ax.plot(
                    range(1, len(r["returns"]) + 1),
                    r["returns"],
                    color=color,
                    label=key if i == 0 else None,
                )
        ax.axhline(ol["target_return"], color="k", ls=":", lw=1)
        ax.set_xlabel("iteration (4000 env steps)")
        ax.set_ylabel("smoothed episode return")
        ax.set_title(f"{ol['env']}, sync plan, seeds {[r['seed'] for r in _first_runs(ol)]}")
        ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _first_runs(ol: dict) -> list[dict]:
    """The overlap-learning runs of the first setting (its seeds)."""
    return next(iter(ol["runs"].values()), [])


def _plot(out: dict, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    envs = list(out["envs"])
    fig, axes = plt.subplots(1, len(envs), figsize=(5 * len(envs), 3.5), dpi=110, squeeze=False)
    for ax, env_id in zip(axes[0], envs, strict=True):
        r = out["envs"][env_id]
        labels = ["plain loop\n(1 core)", "RLlib\ndefault"] + [
            f"platform\n{out['cores_used']}x{k}" for k in r["platform_sweep_steps_per_s"]
        ]
        vals = [
            r["plain_loop_steps_per_s"],
            r["rllib_default_steps_per_s"],
            *r["platform_sweep_steps_per_s"].values(),
        ]
        ax.bar(labels, vals, color=["grey", "tab:red"] + ["tab:blue"] * (len(vals) - 2))
        ax.set_yscale("log")
        ax.set_title(env_id)
        ax.set_ylabel("env steps / s")
        ax.tick_params(axis="x", labelsize=7)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
