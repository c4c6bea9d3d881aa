"""How fast the signals env samples, per core, against a raw libsumo loop on the same network:
the raw loop with the network's fixed programs, the env in this process, and one RLlib env
runner of the ``replay`` plan (multi-agent, or the lights as one vector env), each also set
against a raw loop replaying its own traffic (:func:`raw_replay`: controlled traffic congests
a map, and SUMO itself then needs more time per simulated second). Rates are simulated
seconds per CPU second of the sampling process. ``rlsuite bench run traffic_signals_speed``
reports them."""

from __future__ import annotations

import os
import tempfile
import time

import numpy as np

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
