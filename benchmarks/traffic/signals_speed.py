"""Signals sampling speed on RESCO's maps: the signals env and the platform's sampler against a raw
libsumo loop on the same network, per core (:mod:`rlsuite.apps.traffic.signals_speed`). Pass:
the multi-agent env runner, which training uses, runs at >= 50% of the raw loop replaying its
own traffic; the share of the fixed-program raw loop is reported beside it."""

from dataclasses import dataclass

from rlsuite.bench import Benchmark, Row, Value, pub


@dataclass(frozen=True)
class Settings:
    map: str = "cologne8"
    """a RESCO map"""
    seconds: int = 0
    """simulated s per episode (0: RESCO's window)"""
    episodes: int = 5
    """episodes each runner samples"""
    out: str = "traffic_signals_speed"
    """results name"""


def run(ctx) -> int:
    import tempfile

    import torch

    from rlsuite.apps.traffic import resco
    from rlsuite.apps.traffic import signals_speed as sp

    s = ctx.settings
    resco.get_map(s.map)
    torch.set_num_threads(1)
    raw = sp.raw_libsumo(s.map, s.seconds)
    env, control = sp.env_loop(s.map, s.seconds)
    with tempfile.TemporaryDirectory() as tmp:
        env_raw = sp.raw_replay(control, tmp)
    run = sp.runner_rate(s.map, s.seconds, s.episodes)
    vec = sp.runner_rate(s.map, s.seconds, s.episodes, sp.VECTOR_ID)
    ctx.table([dict(path=k, sim_s_per_cpu_s=r, share_of_raw=r / raw, share_of_own_traffic=o)
               for k, r, o in (("raw libsumo loop", raw, 1.0), ("env in-process", env, env / env_raw),
                               ("env runner", run["sim_s_per_s"], run["share_of_raw_replay"]),
                               ("vector runner", vec["sim_s_per_s"], vec["share_of_raw_replay"]))])  # fmt: skip
    share = run["share_of_raw_replay"]
    ctx.save(s.out, dict(
        map=s.map, seconds_per_episode=sp.window(s.map, s.seconds), sumo="1.28 (libsumo)",
        raw_sim_s_per_s=raw, env_sim_s_per_s=env, env_raw_replay_sim_s_per_s=env_raw,
        env_share_of_raw=env / raw, env_share_of_raw_replay=env / env_raw, runner=run,
        multi_agent_runner_share_of_raw=run["sim_s_per_s"] / raw,
        multi_agent_runner_share_of_raw_replay=share, vector_runner=vec,
        vector_runner_share_of_raw=vec["sim_s_per_s"] / raw,
        vector_runner_share_of_raw_replay=vec["share_of_raw_replay"], target_share=0.5,
        passed=share >= 0.5))  # fmt: skip
    ctx.verdict({"the env runner >= 50% of the raw loop on its own traffic": share >= 0.5})
    return 0  # a measurement: a missed target is reported, not an error


# fmt: off
BENCHMARK = Benchmark(run=run, settings=Settings, quick=dict(map="cologne1", episodes=1), rows=(
    Row("traffic", "signals sampler, RESCO cologne8 (8 lights), SUMO 1.28",
        "one env runner's simulated s per CPU s (the multi-agent runner training uses), share of a raw libsumo loop's on the same traffic (the runner's episodes replayed)",
        "traffic_signals_speed.json",
        Value(("multi_agent_runner_share_of_raw_replay",)), pub("target: 50% of the raw loop", 0.5),
        "rlsuite bench run traffic_signals_speed", fmt="{:.0%}"),
))
# fmt: on
