"""The measurements of ``platform_sampling.py``: plain loops, a hand-written PPO, the
runners' sample rate and its breakdown, whole-iteration rates, and the ``baseline`` section
built from them.

Functions here run inside Ray's env runners (:func:`sample_breakdown` sends a closure over
:func:`_timed_sample`); ``platform_sampling.py`` registers this module with Ray's
cloudpickle by value, since ``benchmarks/`` is not importable there.
"""

from __future__ import annotations

import os
import time

import gymnasium as gym
import torch
from torch import nn

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
    net = MLP(env.observation_space.shape[0], n_out)
    t = time.perf_counter()
    with torch.no_grad():
        for _ in range(steps):
            out = net.pi(torch.as_tensor(obs, dtype=torch.float32)[None])
            a = int(out.argmax()) if n_out > 1 else out[0].clamp(-2, 2).numpy()
            obs, _, term, trunc, _ = env.step(a)
            if term or trunc:
                obs, _ = env.reset()
    return steps / (time.perf_counter() - t)


class MLP(nn.Module):
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
    net = MLP(n_obs, n_act)
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
                best = {"steps_per_s": rate, **breakdown(rows, wall)}
        return best
    finally:
        algo.stop()


def breakdown(rows: list[dict], driver_wall: float) -> dict:
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


# --------------------------------------------------------------------------- the baseline section


def baseline(
    rec: dict, env_id: str, cores: int, steps: int, quick: bool, profile: bool, console
) -> None:
    """Criteria 1-3 for one env, into ``rec``: the plain loops, RLlib's default settings,
    the platform's runners x envs sweep and default, and (discrete actions) the sync plan's
    whole iterations against the hand-written PPO."""
    from ray.rllib.algorithms.ppo import PPOConfig

    from rlsuite.platform import optimizers

    rec["plain_loop_steps_per_s"] = plain_loop(env_id, steps * 5)
    console.print(f"plain loop: {rec['plain_loop_steps_per_s']:.0f} steps/s (1 core)")
    rec["plain_policy_loop_steps_per_s"] = plain_policy_loop(env_id, steps)
    console.print(f"plain loop + torch policy: {rec['plain_policy_loop_steps_per_s']:.0f} steps/s")

    rllib_default = PPOConfig().environment(env_id).debugging(log_level="ERROR")
    rec["rllib_default_settings"] = {
        "num_env_runners": rllib_default.num_env_runners,
        "num_envs_per_env_runner": rllib_default.num_envs_per_env_runner,
    }
    rec["rllib_default_steps_per_s"] = sample_rate(rllib_default, steps // 2)
    console.print(f"RLlib defaults (local runner, 1 env): {rec['rllib_default_steps_per_s']:.0f}")

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
        its = 3 if quick else 6
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
        rec["sync_vs_handwritten"] = sync["iteration_steps_per_s"] / hw["iteration_steps_per_s"]
        overlap = iteration_rate(optimizers.to_rllib(default_plan.replace(overlap=True)), its)
        rec["sync_plan_overlap"] = overlap
        rec["overlap_vs_handwritten"] = (
            overlap["iteration_steps_per_s"] / hw["iteration_steps_per_s"]
        )
        console.print(
            f"sync plan, overlap=true: {overlap['iteration_steps_per_s']:.0f} steps/s "
            f"({rec['overlap_vs_handwritten']:.2f}x the hand-written loop)"
        )
        if profile:
            rec["sync_driver_profile"] = profile_iteration(optimizers.to_rllib(default_plan))
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
