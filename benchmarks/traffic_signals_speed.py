"""Signals sampling speed on RESCO's maps: the signals env and the platform's sampler against
a raw libsumo loop on the same network, per core.

Rates in simulated seconds per CPU second of the process that samples (a rate per core
that other jobs on a shared machine do not distort; the runners' wall-clock rates are
recorded beside):

1. raw: the map's network and routes in SUMO 1.28 through libsumo, RESCO's window, stepped
   1 s at a time with nothing read and the network's own fixed-time programs;
2. env: ``rlsuite/Signals-v0`` on the map (RESCO's protocol, state and reward, the tripinfo
   file RESCO's delay needs), in this process, random actions;
3. runner: the same env in one RLlib env runner of the ``replay`` plan, sampling with the
   plan's own (untrained, epsilon-greedy) policy, as training samples (RLlib's multi-agent
   runner, one agent per light);
4. vector runner: the same, on ``rlsuite/SignalsShared-v0``: the lights as one vector env
   (one sub-env per light, one simulation) in RLlib's single-agent runner, its
   ``num_envs_per_env_runner`` the map's number of lights (the policy is shared either way).

Controlled traffic is not the fixed programs' traffic: random or untrained phase choices
congest cologne8, and SUMO itself then needs more time per simulated second. So 2-4 are
also set against a raw loop on their own traffic (:func:`raw_replay`): every episode they
ran is run again through libsumo with the same arguments, the same programs and the same
phase settings at the same seconds, and nothing read. That share is what the env and RLlib
add to the simulation they drive.

Pass criterion (the target): the multi-agent runner, which training uses, runs at least at
50% of the raw loop on its own traffic (``multi_agent_runner_share_of_raw_replay``); the
share of the fixed-program raw loop (``multi_agent_runner_share_of_raw``) is reported
beside it.

Usage (under the heavy-job lock; ~1 minute for cologne8):
    flock /tmp/rlsuite-heavy.lock .venv/bin/python benchmarks/traffic_signals_speed.py [--map cologne8] [--seconds 0]

Writes benchmarks/results/traffic/traffic_signals_speed.json.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

import numpy as np

from rlsuite.bench import results_dir

RESULTS = results_dir("traffic")
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


def env_loop(network: str, seconds: int, seed: int = 0) -> tuple[float, dict]:
    """Simulated s/s of the env in this process with random actions (reset excluded), and
    the episode's control as :func:`raw_replay` needs it: SUMO's arguments, the lights'
    static programs, and every phase the env set with the simulated second it set it at."""
    from rlsuite.platform import envs

    env = envs.make(ENV_ID, _env_config(network, seconds))
    log = record_control()
    rng = np.random.default_rng(seed)
    try:
        env.reset(seed=seed)
        begin, end = env.begin, env.end
        t = time.process_time()
        while env.agents:
            env.step({a: int(rng.integers(env.action_space(a).n)) for a in env.agents})
        rate = (end - begin) / (time.process_time() - t)
        log[-1]["metrics"] = env.episode_metrics()  # RESCO's, for checking a replay
        return rate, log[-1]
    finally:
        env.close()
        record_control(stop=True)


def record_control(stop: bool = False) -> list[dict]:
    """From now on, every simulation this process starts logs its control for
    :func:`raw_replay` (one dict per start, in the returned list): SUMO's arguments, the
    static programs set, and each ``setPhase`` with the simulated second it came at. The
    kernel's class is patched, so the env a runner built earlier logs too; ``stop`` undoes
    it. Logging costs one time read per phase set, counted in the env's or runner's rate."""
    from rlsuite.apps.traffic.kernel.simulation import Simulation

    if stop:
        for name in ("start", "set_static_program", "call"):
            if hasattr(Simulation, f"_unlogged_{name}"):
                setattr(Simulation, name, getattr(Simulation, f"_unlogged_{name}"))
        return []
    record_control(stop=True)
    logs: list[dict] = []
    start, set_program, call = Simulation.start, Simulation.set_static_program, Simulation.call

    def log_start(self, args):
        logs.append({"args": list(args), "programs": {}, "phases": []})
        return start(self, args)

    def log_program(self, tls_id, phases):
        logs[-1]["programs"][tls_id] = [list(p) for p in phases]
        return set_program(self, tls_id, phases)

    def log_call(self, domain, method, *args):
        if (domain, method) == ("trafficlight", "setPhase"):
            logs[-1]["phases"].append((self.time(), args[0], int(args[1])))
        return call(self, domain, method, *args)

    for name, f in (("start", log_start), ("set_static_program", log_program), ("call", log_call)):
        setattr(Simulation, f"_unlogged_{name}", getattr(Simulation, name))
        setattr(Simulation, name, f)
    return logs


def raw_replay(control: dict, out_dir: str) -> float:
    """Simulated s/s of a raw libsumo loop that runs the env's episode again: the same SUMO
    arguments (tripinfo file included, written to ``out_dir``), static programs and phase
    settings at the same seconds, stepped 1 s at a time, nothing read. Same traffic as the
    env's, so the share of it measures what the env and RLlib add, not the congestion that
    random control makes (which slows SUMO itself). The setting-up is not timed; closing
    (where SUMO writes the unfinished trips) is, as in the env's rate."""
    from rlsuite.apps.traffic import kernel

    args = list(control["args"])
    if "--tripinfo-output" in args:
        i = args.index("--tripinfo-output") + 1
        args[i] = os.path.join(out_dir, "replay_tripinfo.xml")
    sim = kernel.Simulation(backend="libsumo", name="replay")
    sim.start(args)
    try:
        for tls_id, phases in control["programs"].items():
            sim.set_static_program(tls_id, [tuple(p) for p in phases])
        phases = list(control["phases"])
        k = 0
        while k < len(phases) and phases[k][0] <= sim.time():  # reset's phase 0
            sim.call("trafficlight", "setPhase", phases[k][1], phases[k][2])
            k += 1
        begin = sim.time()
        end = float(args[args.index("--end") + 1])
        conn = sim.conn
        t = time.process_time()
        while (now := conn.simulation.getTime()) < end:
            while k < len(phases) and phases[k][0] <= now:
                conn.trafficlight.setPhase(phases[k][1], phases[k][2])
                k += 1
            conn.simulationStep()
        sim.close()
        return (end - begin) / (time.process_time() - t)
    finally:
        sim.close()


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
            logs = record_control()
            t, c = time.perf_counter(), time.process_time()
            eps = r.sample(
                num_episodes=episodes * per_window, random_actions=False, force_reset=True
            )
            wall, cpu = time.perf_counter() - t, time.process_time() - c
            record_control(stop=True)
            return wall, cpu, sum(len(e) for e in eps), logs[:episodes]

        group.foreach_env_runner(lambda r: r.sample(num_timesteps=5), local_env_runner=False)
        (wall, cpu, steps, logs), *_ = group.foreach_env_runner(sample, local_env_runner=False)
    finally:
        algo.stop()
        cluster.shutdown()
    sim_s = episodes * window(network, seconds)
    with tempfile.TemporaryDirectory() as tmp:  # the runner's own traffic, without it
        replay_cpu = sum(window(network, seconds) / raw_replay(log, tmp) for log in logs)
    return {"env": env_id, "num_envs_per_env_runner": plan.envs_per_runner,
            "wall_s": wall, "cpu_s": cpu, "episodes": episodes, "agent_env_steps": steps,
            "sim_s_per_s": sim_s / cpu, "sim_s_per_wall_s": sim_s / wall,
            "raw_replay_sim_s_per_s": sim_s / replay_cpu,
            "share_of_raw_replay": replay_cpu / cpu}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--map", default="cologne8", help="a RESCO map (default cologne8)")
    p.add_argument(
        "--seconds", type=int, default=0, help="simulated s per episode (0: RESCO's window)"
    )
    p.add_argument("--episodes", type=int, default=5, help="episodes each runner samples")
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
    env, control = env_loop(a.map, a.seconds)
    with tempfile.TemporaryDirectory() as tmp:
        env_raw = raw_replay(control, tmp)
    print(f"  env in-process:   {env:8.0f} sim s/s ({env / raw:.0%} of raw; "
          f"{env / env_raw:.0%} of its own traffic replayed raw, {env_raw:.0f})", flush=True)  # fmt: skip
    run = runner_rate(a.map, a.seconds, a.episodes)
    vec = runner_rate(a.map, a.seconds, a.episodes, VECTOR_ID)
    for label, r in (("env runner:      ", run), ("vector runner:   ", vec)):
        print(f"  {label}{r['sim_s_per_s']:8.0f} sim s/s ({r['sim_s_per_s'] / raw:.0%} of raw; "
              f"{r['share_of_raw_replay']:.0%} of its own traffic replayed raw, "
              f"{r['raw_replay_sim_s_per_s']:.0f})", flush=True)  # fmt: skip
    share = run["share_of_raw_replay"]
    out = {
        "map": a.map,
        "seconds_per_episode": window(a.map, a.seconds),
        "sumo": "1.28 (libsumo)",
        "raw_sim_s_per_s": raw,
        "env_sim_s_per_s": env,
        "env_raw_replay_sim_s_per_s": env_raw,
        "env_share_of_raw": env / raw,
        "env_share_of_raw_replay": env / env_raw,
        "runner": run,
        "multi_agent_runner_share_of_raw": run["sim_s_per_s"] / raw,
        "multi_agent_runner_share_of_raw_replay": share,
        "vector_runner": vec,
        "vector_runner_share_of_raw": vec["sim_s_per_s"] / raw,
        "vector_runner_share_of_raw_replay": vec["share_of_raw_replay"],
        "target_share": 0.5,
        "passed": share >= 0.5,
        "command": "benchmarks/traffic_signals_speed.py " + " ".join(argv or sys.argv[1:]),
    }
    os.makedirs(RESULTS, exist_ok=True)
    path = os.path.join(RESULTS, f"{a.out}.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=2)
    print(f"target (the env runner >= 50% of the raw loop on its own traffic): "
          f"{'met' if out['passed'] else 'missed'}; wrote {path}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
