"""The multi-AV ring and the sumo-rl signals env on real SUMO."""

from __future__ import annotations

import os
import subprocess

import pytest

from rlsuite.apps.traffic import cli, kernel
from rlsuite.apps.traffic.controllers import IDMController, PerAgent, PISaturation
from rlsuite.apps.traffic.envs.signals import SignalsEnv, actuated_programs
from rlsuite.platform import envs
from rlsuite.platform.evaluation import Scenario, evaluate
from tests._procs import live_children


def test_ring_multi_passes_parallel_api_test():
    envs.check("rlsuite/RingMulti-v0", dict(warmup_steps=10, horizon=60))


def test_ring_multi_pi_avs_beat_all_human():
    cfg = dict(num_avs=3, warmup_steps=0, horizon=2000, measure_after=750, bunching=20.0)
    rows = {}
    for name, factory in (("idm", IDMController), ("pi", PISaturation)):
        res = evaluate(PerAgent(factory), [Scenario("rlsuite/RingMulti-v0", cfg, 0)], num_workers=0)
        rows[name] = res.episodes[0]
    assert rows["pi"]["mean_speed"] > rows["idm"]["mean_speed"] + 0.3, rows


def test_ring_multi_rejects_no_avs():
    with pytest.raises(ValueError, match="num_avs >= 1"):
        envs.make("rlsuite/RingMulti-v0", {"num_avs": 0})


def _single_intersection():
    """sumo-rl's own single-intersection env, 50 s, through the kernel's adapter."""
    nets = kernel.sumo_rl_nets_dir()
    return kernel.sumo_rl_parallel_env(
        net_file=f"{nets}/single-intersection/single-intersection.net.xml",
        route_file=f"{nets}/single-intersection/single-intersection.rou.xml",
        num_seconds=50,
        sumo_warnings=False,
    )


def test_sumo_rl_pettingzoo_agent_selector_breakage_is_handled():
    """sumo-rl 1.4.5 + pettingzoo >= 1.25 fails with "'module' object is not callable"."""
    import pettingzoo.utils

    assert not isinstance(pettingzoo.utils.agent_selector, type)  # the breakage is real here
    env = _single_intersection()
    try:
        obs, _ = env.reset(seed=0)
        assert set(obs) == {"t"}
    finally:
        env.close()
    assert not isinstance(pettingzoo.utils.agent_selector, type)  # pettingzoo itself untouched


def test_sumo_starts_poll_for_the_port_and_a_sumo_that_exits_is_an_error(tmp_path):
    """traci's own start waits 1 s before each retry; the kernel's polls. sumo-rl's env goes
    through it, its connections still work, and a sumo that exits at start is reported."""
    from rlsuite.apps.traffic.kernel import programs

    env = _single_intersection()
    import sumo_rl.environment.env as sumo_rl_env  # SUMO_HOME is set once an env is built
    import traci

    try:
        assert sumo_rl_env.traci.start is not traci.start  # sumo-rl's start is the kernel's
        assert sumo_rl_env.traci.getConnection is traci.getConnection  # the rest is traci's
        obs, _ = env.reset(seed=0)
        assert set(obs) == {"t"}
        env.step({"t": 1})
    finally:
        env.close()
    bad = tmp_path / "bad.net.xml"
    bad.write_text("<net>")
    with pytest.raises((traci.TraCIException, traci.FatalTraCIError)):
        programs.start([kernel.binary("sumo"), "-n", str(bad)], label="rlsuite-bad-start")
    assert not traci.connection.has("rlsuite-bad-start")
    assert "sumo" not in live_children(os.getpid())  # the failed child was ended


@pytest.mark.timeout(120, method="thread")  # a blocked sumo would hang the run
def test_traci_sumo_that_writes_many_warnings_keeps_running(tmp_path):
    """Over TraCI, sumo's stderr is kept for the error message. Every vehicle below makes
    sumo warn (~70 bytes each, ~140 KiB in all): more than a pipe holds, so a stderr that
    nobody reads while the simulation runs would block sumo and this step loop."""
    from rlsuite.apps.traffic.kernel.simulation import Simulation

    net = tmp_path / "grid.net.xml"
    subprocess.run(
        [kernel.binary("netgenerate"), "--grid", "--grid.number", "2"]
        + ["--grid.length", "100", "-o", str(net)],
        check=True,
        capture_output=True,
    )
    routes = tmp_path / "warn.rou.xml"
    cars = "".join(
        f'<vehicle id="v{i}" depart="{i * 0.5:.1f}" arrivalPos="5000">'
        '<route edges="A0B0 B0B1"/></vehicle>\n'
        for i in range(2000)
    )
    routes.write_text(f"<routes>\n{cars}</routes>\n")
    sim = Simulation(backend="traci", name="warnings")
    try:
        sim.start(["-n", str(net), "-r", str(routes), "--end", "1100"])
        for _ in range(1000):
            sim.step()
        assert sim.call("simulation", "getTime") == 1000.0
        assert sim.call("vehicle", "getIDCount") > 0  # cars on the road: it really ran
    finally:
        sim.close()
    assert "sumo" not in live_children(os.getpid())


def test_signals_passes_parallel_api_test():
    envs.check("rlsuite/Signals-v0", dict(num_seconds=200))


def test_actuated_programs_copy_phases(tmp_path):
    net = f"{kernel.sumo_rl_nets_dir()}/single-intersection/single-intersection.net.xml"
    out = actuated_programs(net, str(tmp_path / "a.add.xml"))
    text = open(out).read()
    assert 'type="actuated"' in text and "minDur" in text


@pytest.mark.slow
def test_signal_baselines_beat_a_light_stuck_on_one_phase():
    """Fixed-time, actuated and max-pressure all keep waiting times far below 'never switch'."""
    metrics = {}
    for program in ("rl", "fixed", "actuated", "maxpressure"):
        # 450 s: the stuck light's wait is already ~30x the others' (160 s against <= 6 s)
        env = SignalsEnv(program=program, num_seconds=450)
        try:
            env.reset(seed=0)
            while env.agents:
                env.step({a: 0 for a in env.agents})  # 'rl' with action 0: never switches
            metrics[program] = env.episode_metrics()
        finally:
            env.close()
    stuck = metrics.pop("rl")["mean_waiting_time"]
    for program, m in metrics.items():
        assert m["mean_waiting_time"] < stuck / 5, (program, m, stuck)
    assert metrics["actuated"]["mean_queue"] < metrics["fixed"]["mean_queue"]


def test_signals_bad_options():
    with pytest.raises(ValueError, match="unknown network"):
        SignalsEnv(network="manhattan")
    with pytest.raises(ValueError, match="program must be one of"):
        SignalsEnv(program="random")


def test_cli_evaluates_a_signal_baseline(tmp_path, capsys):
    out = tmp_path / "mp.json"
    rc = cli.main(["evaluate", "--scenario", "signals", "--controller", "maxpressure",
                   "--horizon", "200", "--episodes", "1", "--workers", "0", "--json", str(out)])  # fmt: skip
    assert rc == 0
    assert "mean_waiting_time" in capsys.readouterr().out
    assert out.exists()


def test_cli_rejects_ring_controller_for_signals(capsys):
    assert cli.main(["evaluate", "--scenario", "signals", "--controller", "pi"]) == 2
    assert "does not apply to scenario 'signals'" in capsys.readouterr().err
