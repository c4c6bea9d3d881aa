"""Flow's bottleneck0 without control: the inflow-outflow curve per SUMO version and road setting.

The all-human road (no AVs, nobody changes lanes) of Flow's bottleneck0 (Vinitsky et al.,
CoRL 2018; Flow commit bc44b21) on SUMO 1.8.0, 1.9.2, 1.14.1 and the project's 1.28, each
through its own ``sumo`` binary and netconvert, at inflows of 1000-2000 veh/h on the same
seeds; Flow's metric, the outflow over the last 500 s. Road settings (``--setting``):
``breakdown`` (the env's default, ``capacity_drop=true``), ``free`` (Flow's own drivers,
``capacity_drop=false``) and two neighbours of the breaking road's spread of desired speeds
(``speed_dev_0.15``, ``speed_dev_0.25``). Pass (``breakdown`` on SUMO 1.28): at 1900 veh/h
the outflow is within 15% of Flow's 1023 on at least 8 of 10 seeds, and the outflow at 2000
is at least 15% below the curve's peak. Each call merges its points into the JSON (points
already there are kept unless ``--redo``); ``--report`` only redraws. Another SUMO installs
with ``pip install --no-deps --target ~/.cache/rlsuite/sumo-X eclipse-sumo==X``.
"""

from dataclasses import dataclass

from rlsuite.bench import Benchmark, Row, Value, pub

FLOW_T1 = "Vinitsky et al. 2018, Table 1"
STEM = "traffic_bottleneck_capacity"
ROADS = {
    "breakdown": "the breaking road (`capacity_drop=true`, the default)",
    "free": "the free-flowing road (`capacity_drop=false`)",
}
"""The road settings with a RESULTS row, and their words there."""


@dataclass(frozen=True)
class Settings:
    versions: str = "1.8.0,1.9.2,1.14.1,1.28"
    """SUMO versions, comma-separated"""
    setting: str = "breakdown"
    """road setting: breakdown, free, speed_dev_0.15 or speed_dev_0.25"""
    inflows: str = "1000,1200,1400,1600,1700,1800,1900,2000"
    """inflows (veh/h), comma-separated"""
    episodes: int = 10
    """seeds per point"""
    seed: int = 0
    """first seed"""
    redo: bool = False
    """rerun points already in the JSON"""
    report: bool = False
    """only print the table and redraw"""


def run(ctx) -> int:
    import json
    import shlex
    import time

    from rlsuite.apps.traffic import bottleneck_study as study
    from rlsuite.bench import command

    s = ctx.settings
    if s.setting not in study.SETTINGS:
        raise ValueError(f"--setting is one of {', '.join(study.SETTINGS)}, not {s.setting!r}")
    path = ctx.path(STEM)
    out = json.loads(path.read_text()) if path.exists() else {
        "benchmark": STEM, "flow": study.FLOW_ALL_HUMAN, "points": {}, "commands": []}  # fmt: skip
    out["diagnosis"] = [dict(item=i, flow=f, ours=o, same=x) for i, f, o, x in study.DIAGNOSIS]
    if not s.report:
        cmd = command(ctx.bench.name, shlex.join(ctx.argv))
        out["commands"] = [c for c in out["commands"] if c != cmd] + [cmd]
        seeds = list(range(s.seed, s.seed + s.episodes))
        for version in s.versions.split(","):
            pts = out["points"].setdefault(s.setting, {}).setdefault(version, {})
            for inflow in (int(x) for x in s.inflows.split(",")):
                if str(inflow) in pts and not s.redo:
                    continue
                t0 = time.time()
                r = pts[str(inflow)] = study.run_point(version, s.setting, inflow, seeds)
                r["wall_s"] = time.time() - t0
                ctx.say(f"{s.setting} SUMO {version} inflow {inflow}: outflow "
                        f"{r['outflow_veh_h']:.0f} +- {r['outflow_std']:.0f}")  # fmt: skip
                ctx.save(STEM, out)  # after every point: an interrupted call resumes
    out["checks"] = study.capacity_checks(out)
    ctx.save(STEM, out)
    ctx.save_plot(STEM, study.capacity_figure(out))
    ctx.table(study.capacity_rows(out), "bottleneck0 all-human: outflow over the last 500 s "
              "(veh/h) [seeds below 1300 at 1900]")  # fmt: skip
    return ctx.verdict(out["checks"])


def all_human(setting: str) -> Row:
    """The all-human row of a road setting: the outflow at 1900 veh/h on SUMO 1.28."""
    return Row(
        "traffic", f"bottleneck 0, all-human, {ROADS[setting]}, SUMO 1.28",
        "outflow at 1900 veh/h inflow, veh/h (last 500 s, 10 seeds)", f"{STEM}.json",
        Value(("points", setting, "1.28", "1900", "outflow_veh_h")),
        pub(f"Flow's all-human road, {FLOW_T1}", 1023),
        f"rlsuite bench run traffic_bottleneck_capacity --versions 1.28 --setting {setting}",
        "- (baseline)", fmt="{:,.0f}",
    )  # fmt: skip


BENCHMARK = Benchmark(
    run=run,
    settings=Settings,
    quick=dict(versions="1.28", inflows="1900", episodes=1),
    rows=tuple(all_human(s) for s in ROADS),
)
