"""RESCO's eight maps under RESCO's protocol: the signal baselines on SUMO 1.28 (ours) and on SUMO
1.9.2 (RESCO's), each episode in its own SUMO process (TraCI), beside RESCO's published average
delay.

Fixed-time, greedy (RESCO's max-wave), max-pressure and SUMO's actuated control each run
``--seeds`` held-out SUMO seeds (from ``--seed``) of each map's RESCO window; the metric is
RESCO's average delay. Pass (the protocol check, on the maps whose networks are RESCO's):
fixed-time on SUMO 1.9.2 over ``--check-seeds`` seeds has a median delay within 10% of the
median of RESCO's 30 Fixed episodes and as many jammed episodes as RESCO's share allows
(Fisher's exact test, p >= 0.05). ``--install-sumo`` installs a missing SUMO release.
"""

from dataclasses import dataclass

from rlsuite.bench import Benchmark, Row, Value, pub

CONTROLLERS = "fixed,greedy,maxpressure,actuated"
LABEL = {"fixed": "Fixed", "greedy": "Greedy", "maxpressure": "MaxPressure"}


@dataclass(frozen=True)
class Settings:
    maps: str = ""
    """RESCO maps, comma-separated (default: every map)"""
    controllers: str = CONTROLLERS
    """signal programs, comma-separated"""
    sumo: str = "1.28,1.9.2"
    """SUMO releases (1.28 = the project's)"""
    seeds: int = 2
    """episodes per controller and map"""
    seed: int = 1000
    """first held-out SUMO seed"""
    check_seeds: int = 10
    """episodes of fixed-time on SUMO 1.9.2 for the protocol check"""
    install_sumo: bool = False
    """install a missing SUMO release first"""
    merge: bool = False
    """keep the results file's rows for other cells"""


def run(ctx) -> int:
    import subprocess
    import sys

    from rlsuite.apps.traffic import resco, sumo_versions
    from rlsuite.apps.traffic.resco_scoring import program_cell, protocol_check

    s = ctx.settings
    for v in s.sumo.split(",") if s.install_sumo else ():
        try:
            sumo_versions.sumo_home_for(v)
        except ValueError:
            subprocess.run(
                [sys.executable, "-m", *sumo_versions.install_command(v).split()], check=True
            )
    rows = ctx.load("traffic_resco").get("rows", []) if s.merge else []
    order = {m: i for i, m in enumerate(resco.MAPS)}
    for sumo in s.sumo.split(","):
        for m in (s.maps or ",".join(resco.MAPS)).split(","):
            resco.get_map(m)
            for c in s.controllers.split(","):
                n = s.check_seeds if c == "fixed" and sumo == "1.9.2" and m in resco.UNEDITED else 0
                r = program_cell(m, c, sumo, list(range(s.seed, s.seed + max(s.seeds, n))))
                rows = [
                    x for x in rows if (x["map"], x["controller"], x["sumo"]) != (m, c, sumo)
                ] + [r]
                ctx.say(f"{m} {c} SUMO {sumo}: delay {r['delay_mean']:.2f} ± {r['delay_std']:.2f}")
    rows.sort(key=lambda r: (order[r["map"]], r["sumo"], r["controller"]))
    check = protocol_check(rows)
    ctx.save("traffic_resco", dict(
        protocol="RESCO v1.0: map windows, 10 s steps with 3 s yellow (arterial4x4 5/2), "
        "--time-to-teleport -1, new SUMO seed per episode, tripinfo with unfinished trips",
        protocol_check=check, published=resco.PUBLISHED, rows=rows))  # fmt: skip
    ctx.table([dict(map=r["map"], controller=r["controller"], sumo=r["sumo"], delay=r["delay_mean"],
                    resco=resco.PUBLISHED[r["map"]].get(LABEL.get(r["controller"], ""), "-")) for r in rows])  # fmt: skip
    return ctx.verdict({f"protocol check {m}: median {c['ours_median']:.2f} vs RESCO's "
                        f"{c['resco_median']:.2f}, jammed {c['jammed']}/{c['seeds']} (p {c['p_jammed']:.2f})":
                        c["pass"] for m, c in check.items()})  # fmt: skip


# fmt: off
BENCHMARK = Benchmark(run=run, settings=Settings, quick=dict(maps="cologne1", sumo="1.28", seeds=1, check_seeds=1), rows=(
    Row("traffic", "signals, RESCO cologne8 (8 lights), fixed-time on SUMO 1.9.2",
        "average delay, s/veh (RESCO's metric and protocol, 10 held-out seeds)", "traffic_resco.json",
        Value(("protocol_check", "cologne8", "ours")),
        pub("RESCO v1.0 Fixed, Ault & Sharon 2021", 63.77),
        "rlsuite bench run traffic_resco --install-sumo --sumo 1.9.2,1.28 --seeds 2", "- (baseline)",
        lower_is_better=True),
))
# fmt: on
