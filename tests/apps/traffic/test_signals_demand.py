"""Demand beyond RESCO's route files on real SUMO: ``demand_scale`` (SUMO's ``--scale``) on the
project's SUMO and on SUMO 1.9.2 over TraCI, its bad values, and the unseen grid route files
(``resco.generate_routes``) and the resume rule of ``resco_demand``."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlsuite.apps.traffic import cli, resco, sumo_versions
from rlsuite.apps.traffic import resco_demand as bench
from rlsuite.apps.traffic.envs.signals_resco import RescoSignalsEnv


def _vehicles(scale: float, version: str = "") -> dict[str, float]:
    """cologne1's first 300 s under fixed time: RESCO's metrics of one episode."""
    env = RescoSignalsEnv(network="cologne1", num_seconds=300, program="fixed",
                          demand_scale=scale, sumo_version=version)  # fmt: skip
    try:
        env.reset(seed=3)
        while env.agents:
            env.step({})
        return env.episode_metrics()
    finally:
        env.close()


def _demand(m: dict[str, float]) -> float:
    return m["trips"] + m["never_inserted"]


@pytest.mark.parametrize("version", ["", "1.9.2"])
def test_demand_scale_scales_the_inserted_vehicles(version):
    """The vehicles of the window (inserted plus never inserted) scale with the demand: 0.5
    keeps every second one, 2 doubles each (SUMO adds a copy ``<id>.1``), 0.8 and 1.2 are
    within one vehicle of their share. Below 1 the vehicles SUMO dropped are not counted as
    never inserted (the route file alone would count every dropped one, with its delay up
    to the window's end)."""
    if version:
        try:
            sumo_versions.sumo_home_for(version)
        except ValueError as e:  # an optional second SUMO; its error gives the install line
            pytest.skip(f"SUMO {version} is not installed here, so only 1.28 is checked: {e}")
    base = _vehicles(1.0, version)
    n = _demand(base)
    assert n > 150  # cologne1 schedules ~190 vehicles in its first 300 s
    runs = {s: _vehicles(s, version) for s in (0.5, 0.8, 1.2, 2.0)}
    assert _demand(runs[2.0]) == 2 * n
    assert abs(_demand(runs[0.5]) - n / 2) <= 1
    assert abs(_demand(runs[0.8]) - 0.8 * n) <= 1 and abs(_demand(runs[1.2]) - 1.2 * n) <= 1
    assert runs[0.5]["never_inserted"] <= base["never_inserted"]
    assert runs[0.5]["delay"] < base["delay"] < runs[2.0]["delay"]
    assert runs[2.0]["never_inserted"] > base["never_inserted"]  # the copies queue to enter


@pytest.mark.parametrize("bad", [0, -0.5, float("nan")])
def test_bad_demand_scale_is_refused(bad):
    with pytest.raises(ValueError, match=r"demand_scale must be > 0, got"):
        RescoSignalsEnv(network="cologne1", demand_scale=bad)


def test_bad_demand_scale_on_the_cli(capsys):
    argv = ["evaluate", "--scenario", "signals", "--controller", "fixed", "--workers", "0",
            "--episodes", "1", "--network", "cologne1", "--env-set", "demand_scale=0"]  # fmt: skip
    assert cli.main(argv) != 0
    err = capsys.readouterr().err
    assert "demand_scale must be > 0" in err and "Traceback" not in err


def test_generated_grid_routes(tmp_path):
    """randomTrips' route files for the grid: the asked vehicle count inside the window, only
    fringe edges as origins (as RESCO's), the same file from the same seed and another from
    another seed, and the env runs on it with no vehicle left out."""
    net, _ = resco.MAPS["grid4x4_resco"].files()
    a = resco.generate_routes(net, str(tmp_path / "a.rou.xml"), 60, seed=5, begin=0, end=120)
    b = resco.generate_routes(net, str(tmp_path / "b.rou.xml"), 60, seed=5, begin=0, end=120)
    c = resco.generate_routes(net, str(tmp_path / "c.rou.xml"), 60, seed=6, begin=0, end=120)
    dep = resco.scheduled_departures(a)
    assert len(dep) == 60 and all(0 <= d < 120 for d in dep.values())
    assert all(v.startswith("gen5_") for v in dep)
    body = lambda f: Path(f).read_text().split("<routes", 1)[1]  # noqa: E731 (no dated header)
    assert body(a) == body(b)
    assert resco.scheduled_departures(c) != dep
    text = Path(a).read_text()
    fringe = ("top", "bottom", "left", "right")
    starts = [ln.split('edges="', 1)[1].split()[0] for ln in text.splitlines() if "edges=" in ln]
    assert len(starts) == 60 and all(s.startswith(fringe) for s in starts)
    assert not list(tmp_path.glob("*.trips.xml"))
    env = RescoSignalsEnv(network="grid4x4_resco", route_file=a, num_seconds=300, program="greedy")
    try:
        env.reset(seed=1)
        while env.agents:
            env.step({})
        m = env.episode_metrics()
    finally:
        env.close()
    assert m["trips"] == 60 and m["never_inserted"] == 0
    with pytest.raises(ValueError, match="vehicles >= 1"):
        resco.generate_routes(net, str(tmp_path / "d.rou.xml"), 0, seed=1)


def test_resume_rescores_a_policy_shipped_again_in_its_place(tmp_path):
    """``--resume`` keeps a learned cell only while the policy at its path is the one it
    scored: a policy exported again to the same directory is scored again."""
    pol = tmp_path / "policy"
    pol.mkdir()
    (pol / "rlsuite.json").write_text('{"env_config": {"network": "cologne1"}, "note": "a"}')
    cell = dict(part="scales", map="cologne1", routes="resco", scale=1.0, controller="learned",
                sumo="1.9.2", policy=str(pol))  # fmt: skip
    baseline = {**cell, "controller": "fixed", "policy": ""}
    rows = {bench.key(cell): {"policy_sha": bench.sha(str(pol / "rlsuite.json"))},
            bench.key(baseline): {}}  # fmt: skip
    assert not bench.stale(cell, rows) and not bench.stale(baseline, rows)
    (pol / "rlsuite.json").write_text('{"env_config": {"network": "cologne1"}, "note": "b"}')
    assert bench.stale(cell, rows)
    assert bench.stale(cell, {bench.key(cell): {}})  # scored before the fingerprint was kept


def test_checks_report_each_controllers_jam_rate_and_seeds():
    """A learned cell with one gridlocked seed (70 vehicles never inserted) and one at 3x
    fixed-time's median delay: both jammed, each named; the baselines' rates beside."""

    def row(ctrl, delay, never):
        return dict(part="scales", map="cologne8", routes="resco", scale=1.2, sumo="1.28",
                    controller=ctrl, delay=delay, delay_mean=sum(delay) / len(delay),
                    never_inserted=never, seeds_done=[1000, 1001, 1002, 1003])  # fmt: skip

    rows = {"a": row("learned", [20, 22, 70, 21], [0, 70, 0, 0]),
            "b": row("fixed", [23, 23, 24, 23], [0, 0, 0, 0]),
            "c": row("greedy", [21, 21, 22, 21], [0, 0, 0, 1])}  # fmt: skip
    c = bench.checks(rows)["scales cologne8 resco x1.2 SUMO 1.28"]
    assert c["order"] == ["greedy", "fixed"] and c["best"] == "greedy" and not c["pass"]
    assert c["jam_rate"] == {"learned": 0.5, "fixed": 0.0, "greedy": 0.0}
    assert c["jammed_seeds"]["learned"] == [1001, 1002]
    assert "3x fixed-time" in bench.JAM_RULE["text"]
