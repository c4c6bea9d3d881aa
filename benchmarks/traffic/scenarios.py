"""Hand-written baselines on the other traffic scenarios: the figure-eight with 1, 7 and 14
AVs (IDM, FollowerStopper, PI) and sumo-rl's signalised networks (fixed-time, SUMO-actuated,
max-pressure). Pass: max-pressure and actuated wait less than fixed-time on every network,
and the figure-eight is collision-free. Writes ``traffic_scenarios.json``."""

from dataclasses import dataclass

from rlsuite.bench import Benchmark


@dataclass(frozen=True)
class Settings:
    episodes: int = 2
    """seeded episodes per controller"""
    workers: int = 2
    """parallel evaluation workers (the embedded Ray's CPUs)"""
    networks: str = "single,grid2x2"
    """sumo-rl networks, comma-separated"""
    seconds: int = 3600
    """simulated seconds per signals episode"""


def _evaluate(scen, name, cfg, s, with_extra=True):
    """Mean of each metric, and the summary, of controller ``name`` on ``s.episodes`` seeds;
    ``with_extra``: with the env options the controller asks for (the signal programs)."""
    from rlsuite.apps.traffic import scenarios
    from rlsuite.platform import evaluation

    ctrl, extra = scenarios.controller_for(scen, name, cfg)
    cfg = {**cfg, **extra} if with_extra else cfg
    res = evaluation.evaluate(ctrl, evaluation.scenarios(scen.env_id, s.episodes, cfg),
                              num_workers=s.workers, name=name)  # fmt: skip
    return {k: v["mean"] for k, v in res.summary.items()}, res.summary


def run(ctx) -> int:
    from rlsuite.apps.traffic import scenarios
    from rlsuite.platform import cluster

    s = ctx.settings
    f8, sig = [], []
    with cluster.local_cluster(num_cpus=s.workers):
        scen = scenarios.get("figure_eight")
        for k in (1, 7, 14):
            for name in ("idm", "followerstopper", "pi"):
                mean, summary = _evaluate(scen, name, {"num_avs": k}, s, with_extra=False)
                f8.append(dict(num_avs=k, controller=name, mean_speed=mean["mean_speed"],
                               throughput_veh_h=mean["throughput_veh_h"],
                               desired_velocity_return=mean["return"],
                               collisions=summary["collisions"]["max"]))  # fmt: skip
        scen = scenarios.get("signals")
        for net in s.networks.split(","):
            for name in ("fixed", "actuated", "maxpressure"):
                mean, _ = _evaluate(scen, name, {"network": net, "num_seconds": s.seconds}, s)
                sig.append(dict(network=net, controller=name, mean_speed=mean["mean_speed"],
                                mean_waiting_time=mean["mean_waiting_time"],
                                mean_queue=mean["mean_queue"]))  # fmt: skip
    ctx.table(f8, f"figure-eight baselines ({s.episodes} episodes each)")
    ctx.table(sig, f"signal baselines ({s.seconds} s, {s.episodes} episodes each)")
    wait = {(r["network"], r["controller"]): r["mean_waiting_time"] for r in sig}
    checks = {
        "max-pressure and actuated wait less than fixed-time": all(
            wait[n, c] < wait[n, "fixed"]
            for n in s.networks.split(",")
            for c in ("actuated", "maxpressure")
        ),
        "figure-eight collision-free": all(r["collisions"] == 0 for r in f8),
    }
    ctx.save("traffic_scenarios", dict(figure_eight=f8, signals=sig, checks=checks))
    return ctx.verdict(checks)


BENCHMARK = Benchmark(
    run=run, settings=Settings, quick=dict(episodes=1, networks="single", seconds=300)
)
