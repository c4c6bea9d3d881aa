"""Signals sampling speed on RESCO's maps: the signals env and the platform's sampler against
a raw libsumo loop on the same network, per core.

Four rates, each in simulated seconds per CPU second of the process that samples (a rate
per core that other jobs on a shared machine do not distort; the runner's wall-clock rate
is recorded beside):

1. raw: the map's network and routes in SUMO 1.28 through libsumo, RESCO's window, stepped
   1 s at a time with nothing read and nothing controlled (the ceiling of any sampler);
2. env: ``rlsuite/Signals-v0`` on the map (RESCO's protocol, state and reward, the tripinfo
   file RESCO's delay needs), in this process, random actions;
3. runner: the same env in one RLlib env runner of the ``replay`` plan, sampling with the
   plan's own (untrained, epsilon-greedy) policy, as training samples (RLlib's multi-agent
   runner, one agent per light);
4. vector runner: the same, on ``rlsuite/SignalsShared-v0``: the lights as one vector env
   (one sub-env per light, one simulation) in RLlib's single-agent runner, its
   ``num_envs_per_env_runner`` the map's number of lights (the policy is shared either way).

Pass criterion (the target): the vector runner's rate is at least 50% of the raw loop's
(``runner_share_of_raw``; the multi-agent runner's is ``multi_agent_runner_share_of_raw``).

Usage (under the heavy-job lock; ~2 minutes for cologne8):
    flock /tmp/rlsuite-heavy.lock .venv/bin/python benchmarks/traffic_signals_speed.py [--map cologne8] [--seconds 0]

Writes benchmarks/results/traffic_signals_speed.json.
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
ENV_ID = "rlsuite/Signals-v0"
VECTOR_ID = "rlsuite/SignalsShared-v0"


def _env_config(network: str, seconds: int) -> dict:
    return {"network": network, "num_seconds": seconds}


def window(network: str, seconds: int) -> int:
    """Simulated seconds per episode (0: the map's RESCO window)."""
    from rlsuite.apps.traffic.envs.signals_resco import RescoSignalsConfig

    begin, end, _step, _yellow = RescoSignalsConfig.from_kwargs(
        **_env_config(network, seconds)
    ).protocol()
    return end - begin


def raw_libsumo(network: str, seconds: int, seed: int = 0) -> float:
    """Simulated s/s of the map stepped directly through the kernel's libsumo backend."""
    from rlsuite.apps.traffic import kernel
    from rlsuite.apps.traffic.envs.signals_resco import RescoSignalsConfig

    cfg = RescoSignalsConfig.from_kwargs(**_env_config(network, seconds))
    net, rou = cfg.files()
    begin, end, _step, _yellow = cfg.protocol()
    sim = kernel.Simulation(backend="libsumo", name="raw")
    args = ["-n", net, "-r", rou, "--begin", str(begin), "--end", str(end), "--seed", str(seed),
            "--time-to-teleport", "-1", "--no-step-log", "true", "--no-warnings", "true"]  # fmt: skip
    sim.start(args)
    try:
        t = time.process_time()
        while sim.time() < end:
            sim.step()
        return (end - begin) / (time.process_time() - t)
    finally:
        sim.close()


def env_loop(network: str, seconds: int, seed: int = 0) -> float:
    """Simulated s/s of the env in this process with random actions (reset excluded)."""
    from rlsuite.platform import envs

    env = envs.make(ENV_ID, _env_config(network, seconds))
    rng = np.random.default_rng(seed)
    try:
        env.reset(seed=seed)
        begin, end = env.begin, env.end
        t = time.process_time()
        while env.agents:
            env.step({a: int(rng.integers(env.action_space(a).n)) for a in env.agents})
        return (end - begin) / (time.process_time() - t)
    finally:
        env.close()


def runner_rate(network: str, seconds: int, episodes: int, env_id: str = ENV_ID) -> dict:
    """Simulated s/s of one remote RLlib env runner of the replay plan sampling whole
    episodes with its own policy (the map's step length per env step; resets included).
    On the vector env every light's episode is one of RLlib's: ``episodes`` windows are
    ``episodes`` x lights of them."""
    from rlsuite.platform import cluster, optimizers

    cluster.init(num_cpus=2)
    plan = optimizers.make_plan(
        "replay", env=env_id, env_config=_env_config(network, seconds), num_env_runners=1
    )
    per_window = plan.envs_per_runner if env_id == VECTOR_ID else 1
    algo = optimizers.to_rllib(plan).build_algo()
    try:
        group = algo.env_runner_group

        def sample(r):
            t, c = time.perf_counter(), time.process_time()
            eps = r.sample(
                num_episodes=episodes * per_window, random_actions=False, force_reset=True
            )
            return time.perf_counter() - t, time.process_time() - c, sum(len(e) for e in eps)

        group.foreach_env_runner(lambda r: r.sample(num_timesteps=5), local_env_runner=False)
        (wall, cpu, steps), *_ = group.foreach_env_runner(sample, local_env_runner=False)
    finally:
        algo.stop()
        cluster.shutdown()
    sim_s = episodes * window(network, seconds)
    return {"env": env_id, "num_envs_per_env_runner": plan.envs_per_runner,
            "wall_s": wall, "cpu_s": cpu, "episodes": episodes, "agent_env_steps": steps,
            "sim_s_per_s": sim_s / cpu, "sim_s_per_wall_s": sim_s / wall}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--map", default="cologne8", help="a RESCO map (default cologne8)")
    p.add_argument(
        "--seconds", type=int, default=0, help="simulated s per episode (0: RESCO's window)"
    )
    p.add_argument("--episodes", type=int, default=2, help="episodes the runner samples")
    p.add_argument("--out", default="traffic_signals_speed")
    a = p.parse_args(argv)

    from rlsuite.apps.traffic import resco

    if a.map not in resco.MAPS:
        p.error(f"unknown map {a.map!r}; choose from {', '.join(sorted(resco.MAPS))}")
    import torch

    torch.set_num_threads(1)
    print(f"{a.map}, {window(a.map, a.seconds)} s episodes", flush=True)
    raw = raw_libsumo(a.map, a.seconds)
    print(f"  raw libsumo loop: {raw:8.0f} sim s/s", flush=True)
    env = env_loop(a.map, a.seconds)
    print(f"  env in-process:   {env:8.0f} sim s/s ({env / raw:.0%} of raw)", flush=True)
    run = runner_rate(a.map, a.seconds, a.episodes)
    ma_share = run["sim_s_per_s"] / raw
    print(
        f"  env runner:       {run['sim_s_per_s']:8.0f} sim s/s ({ma_share:.0%} of raw)", flush=True
    )
    vec = runner_rate(a.map, a.seconds, a.episodes, VECTOR_ID)
    share = vec["sim_s_per_s"] / raw
    print(f"  vector runner:    {vec['sim_s_per_s']:8.0f} sim s/s ({share:.0%} of raw)")
    out = {
        "map": a.map,
        "seconds_per_episode": window(a.map, a.seconds),
        "sumo": "1.28 (libsumo)",
        "raw_sim_s_per_s": raw,
        "env_sim_s_per_s": env,
        "runner": run,
        "multi_agent_runner_share_of_raw": ma_share,
        "vector_runner": vec,
        "runner_share_of_raw": share,
        "env_share_of_raw": env / raw,
        "target_share": 0.5,
        "passed": share >= 0.5,
        "command": "benchmarks/traffic_signals_speed.py " + " ".join(argv or sys.argv[1:]),
    }
    os.makedirs(RESULTS, exist_ok=True)
    path = os.path.join(RESULTS, f"{a.out}.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=2)
    print(f"target >= 50% of raw: {'met' if out['passed'] else 'missed'}; wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
