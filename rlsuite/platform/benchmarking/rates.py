"""Sampling and iteration rates: plain gymnasium loops, a hand-written torch PPO, the env
runners' sample rate with an account of where a shortfall goes, and whole ``algo.train()``
iterations. The measures of ``benchmarks/platform/sampling.py`` (:mod:`.sampling_sections`)."""

from __future__ import annotations

import time
from typing import Any

import gymnasium as gym
import torch
from torch import nn


def plain_loop(env_id: str, steps: int) -> float:
    """Env steps/s of a bare gymnasium loop with random actions, one core."""
    env = gym.make(env_id)
    env.reset(seed=0)
    env.action_space.seed(0)
    t = time.perf_counter()
    for _ in range(steps):
        _, _, term, trunc, _ = env.step(env.action_space.sample())
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
            obs, _, term, trunc, _ = env.step(
                int(out.argmax()) if n_out > 1 else out[0].clamp(-2, 2).numpy()
            )
            if term or trunc:
                obs, _ = env.reset()
    return steps / (time.perf_counter() - t)


class MLP(nn.Module):
    """A policy head ``pi`` and a value head ``vf``, each two tanh layers."""

    def __init__(self, n_in: int, n_out: int, hidden: tuple[int, ...] = (64, 64)):
        super().__init__()
        self.pi, self.vf = self._net(n_in, n_out, hidden), self._net(n_in, 1, hidden)

    @staticmethod
    def _net(n_in: int, n_out: int, hidden: tuple[int, ...]) -> nn.Sequential:
        layers: list[nn.Module] = []
        for h in hidden:
            layers += [nn.Linear(n_in, h), nn.Tanh()]
            n_in = h
        return nn.Sequential(*layers, nn.Linear(n_in, n_out))


def handwritten_ppo(
    env_id: str,
    num_envs: int = 8,
    batch: int = 4000,
    minibatch: int = 500,
    epochs: int = 10,
    iterations: int = 6,
) -> dict[str, float]:
    """A single-process torch PPO (discrete actions): rollouts then epochs of SGD; its
    rollout and whole-iteration steps/s (what the sync plan is compared with)."""
    torch.manual_seed(0)
    envs = gym.make_vec(env_id, num_envs=num_envs, vectorization_mode="sync")
    obs, _ = envs.reset(seed=0)
    n_obs = envs.single_observation_space.shape[0]
    net = MLP(n_obs, envs.single_action_space.n)
    opt = torch.optim.Adam(net.parameters(), lr=3e-4)
    T = batch // num_envs
    roll_t = it_t = 0.0
    for _ in range(iterations):
        t0 = time.perf_counter()
        buf_o, buf_a, buf_lp, buf_r, buf_d, buf_v = [], [], [], [], [], []
        for _ in range(T):
            with torch.no_grad():
                o = torch.as_tensor(obs, dtype=torch.float32)
                dist = torch.distributions.Categorical(logits=net.pi(o))
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
        adv, gae = torch.zeros(T, num_envs), torch.zeros(num_envs)
        for t in reversed(range(T)):
            nv = last_v if t == T - 1 else buf_v[t + 1]
            delta = buf_r[t] + 0.99 * nv * (1 - buf_d[t]) - buf_v[t]
            adv[t] = gae = delta + 0.99 * 0.95 * (1 - buf_d[t]) * gae
        obs_b, act_b = torch.stack(buf_o).reshape(-1, n_obs), torch.stack(buf_a).reshape(-1)
        logp_b, ADV = torch.stack(buf_lp).reshape(-1), adv.reshape(-1)
        RET = ADV + torch.stack(buf_v).reshape(-1)
        for _ in range(epochs):
            perm = torch.randperm(obs_b.shape[0])
            for s in range(0, obs_b.shape[0], minibatch):
                idx = perm[s : s + minibatch]
                dist = torch.distributions.Categorical(logits=net.pi(obs_b[idx]))
                ratio = torch.exp(dist.log_prob(act_b[idx]) - logp_b[idx])
                adv_mb = (ADV[idx] - ADV[idx].mean()) / (ADV[idx].std() + 1e-8)
                pl = -torch.min(ratio * adv_mb, torch.clamp(ratio, 0.8, 1.2) * adv_mb).mean()
                vl = ((net.vf(obs_b[idx]).squeeze(-1) - RET[idx]) ** 2).mean()
                opt.zero_grad()
                (pl + 0.5 * vl).backward()
                nn.utils.clip_grad_norm_(net.parameters(), 0.5)
                opt.step()
        roll_t += t1 - t0
        it_t += time.perf_counter() - t0
    envs.close()
    steps = T * num_envs * iterations
    return {"rollout_steps_per_s": steps / roll_t, "iteration_steps_per_s": steps / it_t}


def _timed_sample(runner: Any, steps: int) -> dict[str, float]:
    """One ``runner.sample`` inside the runner: its steps, own wall and CPU seconds."""
    t, c = time.perf_counter(), time.process_time()
    n = sum(len(e) for e in runner.sample(num_timesteps=steps, random_actions=False))
    return {"steps": n, "wall_s": time.perf_counter() - t, "cpu_s": time.process_time() - c}


def sample_breakdown(config: Any, steps_per_runner: int, repeats: int = 3) -> dict[str, Any]:
    """Steps/s of the runners sampling in parallel (no learning), the fastest of
    ``repeats`` rounds after a warm-up, and where a shortfall goes (:func:`breakdown`).
    Each runner times its own ``sample`` and returns only counts."""
    algo = config.build_algo()
    try:
        group, remote = algo.env_runner_group, config.num_env_runners > 0

        def sample(r: Any) -> dict[str, float]:
            return _timed_sample(r, steps_per_runner)

        group.foreach_env_runner(sample, local_env_runner=not remote)  # warm-up
        best: dict[str, Any] = {"steps_per_s": 0.0}
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


def breakdown(rows: list[dict], driver_wall: float) -> dict[str, Any]:
    """Of one round of per-process timings: ``runner_cpu_us_per_step`` (CPU per env step in
    the runners: it rises when they slow each other down on the hardware),
    ``runner_cpu_per_wall`` (below 1 when runners wait for a CPU), ``straggler_loss`` (1 -
    mean / max runner wall) and ``dispatch_loss`` (1 - max runner wall / the driver's)."""
    walls = [r["wall_s"] for r in rows]
    steps, cpu = sum(r["steps"] for r in rows), sum(r["cpu_s"] for r in rows)
    return {
        "runners_timed": len(rows),
        "runner_own_steps_per_s": [r["steps"] / r["wall_s"] for r in rows],
        "runner_cpu_us_per_step": 1e6 * cpu / steps,
        "runner_cpu_per_wall": cpu / sum(walls),
        "straggler_loss": 1 - (sum(walls) / len(walls)) / max(walls),
        "dispatch_loss": max(0.0, 1 - max(walls) / driver_wall),
    }


def iteration_rate(config: Any, iterations: int) -> dict[str, Any]:
    """Whole-iteration env steps/s of ``algo.train()`` after a warm-up, and its timers."""
    algo = config.build_algo()
    try:
        algo.train()  # warm-up (module build, first weights sync)
        steps, timers, t = 0, {}, time.perf_counter()
        for _ in range(iterations):
            r = algo.train()
            steps += int(r["env_runners"]["num_env_steps_sampled"])
            for k, v in (r.get("timers") or {}).items():
                if isinstance(v, int | float):
                    timers[k] = timers.get(k, 0.0) + float(v)
        wall = time.perf_counter() - t
    finally:
        algo.stop()
    return {
        "iteration_steps_per_s": steps / wall,
        "seconds_per_iteration": wall / iterations,
        "timers_mean_s": {k: v / iterations for k, v in timers.items()},
    }
