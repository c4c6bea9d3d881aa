"""Ring baselines at 220, 230, 260 and 270 m: uncontrolled (all-human IDM), FollowerStopper, PI.

The seed's table: mean speed and share of Flow's optimum v_eq (3.24, 3.71, 5.14, 5.61 m/s)
under two protocols, both bunched by 20 m: ``flow-env`` (Flow's RL env: 750 human-driven
warm-up steps, then 3000 controlled steps, all measured) and ``from-start`` (Flow's baseline
runs: the controller drives from t = 0, 3750 steps, the last 3000 measured). Pass:
uncontrolled rings form a wave at 220 and 230 m (>= 25% of samples below 0.5 m/s) and PI
beats uncontrolled at 260 and 270 m under both. Writes ``traffic_baselines.json`` and ``.png``.
"""

from dataclasses import dataclass

from rlsuite.bench import Benchmark

LENGTHS = (220, 230, 260, 270)
CONTROLLERS = ("idm", "followerstopper", "pi")
PROTOCOLS = {  # the env's default since is Flow's even start (traffic_start_state)
    "flow-env": dict(warmup_steps=750, horizon=3000, bunching=20.0),
    "from-start": dict(warmup_steps=0, horizon=3750, measure_after=750, bunching=20.0),
}


@dataclass(frozen=True)
class Settings:
    episodes: int = 4
    """seeded episodes per cell"""
    workers: int = 2
    """parallel evaluation workers"""
    address: str = ""
    """a Ray cluster to run on (host:port) instead of an embedded one"""


def run(ctx) -> int:
    from rlsuite.apps.traffic import scenarios
    from rlsuite.apps.traffic.envs.ring import FLOW_V_EQ
    from rlsuite.platform import cluster, evaluation

    s = ctx.settings
    scen = scenarios.get("ring")
    rows = []
    with cluster.local_cluster(address=s.address or None,
                               num_cpus=None if s.address else s.workers):  # fmt: skip
        for proto, pcfg in PROTOCOLS.items():
            for length in LENGTHS:
                for name in CONTROLLERS:
                    res = evaluation.evaluate(
                        scenarios.controller_for(scen, name)[0],
                        evaluation.scenarios("rlsuite/Ring-v0", s.episodes, dict(ring_length=length, **pcfg)),
                        num_workers=s.workers, name=name,
                    ).summary  # fmt: skip
                    rows.append(dict(
                        protocol=proto, ring_length=length, controller=name,
                        mean_speed=res["mean_speed"]["mean"], mean_speed_std=res["mean_speed"]["std"],
                        speed_std=res["speed_std"]["mean"], frac_below_0_5=res["frac_below_0_5"]["mean"],
                        throughput_veh_h=res["throughput_veh_h"]["mean"], v_eq=FLOW_V_EQ[length],
                        frac_of_v_eq=res["mean_speed"]["mean"] / FLOW_V_EQ[length], episodes=s.episodes,
                    ))  # fmt: skip
    ctx.table(rows, f"ring baselines ({s.episodes} episodes each)")
    at = {(r["protocol"], r["ring_length"], r["controller"]): r for r in rows}
    checks = {
        "wave at 220/230 m (uncontrolled, >= 25% stopped)": all(
            at[pr, L, "idm"]["frac_below_0_5"] >= 0.25 for pr in PROTOCOLS for L in (220, 230)
        ),
        "PI beats uncontrolled at 260/270 m": all(
            at[pr, L, "pi"]["mean_speed"] > at[pr, L, "idm"]["mean_speed"]
            for pr in PROTOCOLS
            for L in (260, 270)
        ),
    }
    ctx.save(
        "traffic_baselines",
        dict(episodes=s.episodes, protocols=PROTOCOLS, rows=rows, checks=checks),
    )
    ctx.save_plot("traffic_baselines", _plot(at))
    return ctx.verdict(checks)


def _plot(at):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, axes = plt.subplots(1, len(PROTOCOLS), figsize=(12, 4.5), sharey=True, dpi=110)
    x = np.arange(len(LENGTHS))
    for ax, proto in zip(axes, PROTOCOLS, strict=True):
        for i, name in enumerate(CONTROLLERS):
            ax.bar(x + (i - 1) * 0.25, [at[proto, L, name]["mean_speed"] for L in LENGTHS], 0.25,
                   label=name)  # fmt: skip
        v_eq = [at[proto, L, "idm"]["v_eq"] for L in LENGTHS]
        ax.scatter(x, v_eq, color="black", marker="_", s=600, label="Flow v_eq", zorder=3)
        ax.set_xticks(x, [f"{L} m" for L in LENGTHS])
        ax.set_title(proto)
        ax.set_ylabel("mean speed (m/s)")
    axes[0].legend(fontsize=8)
    fig.suptitle("Ring: uncontrolled vs FollowerStopper vs PI with saturation")
    return fig


BENCHMARK = Benchmark(run=run, settings=Settings, quick=dict(episodes=1))
