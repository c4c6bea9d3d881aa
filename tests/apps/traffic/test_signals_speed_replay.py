"""The signals speed benchmark's raw loop on the sampler's own traffic: the env's
episode, logged while it ran, played again through a bare libsumo loop gives the same
traffic (real SUMO, 10 minutes of cologne8 under random control)."""

from __future__ import annotations

import os

import pytest

from rlsuite.apps.traffic import signals_speed as speed


def _metrics(out_dir, args: list[str]) -> dict:
    """RESCO's metrics of the replay's episode (its tripinfo in ``out_dir``)."""
    from rlsuite.apps.traffic import resco

    return resco.trip_metrics(
        os.path.join(out_dir, "replay_tripinfo.xml"),
        args[args.index("-r") + 1],
        float(args[args.index("--begin") + 1]),
        float(args[args.index("--end") + 1]),
    )


def test_the_replay_runs_the_envs_episode_again(tmp_path):
    from rlsuite.apps.traffic.kernel.simulation import Simulation

    rate, control = speed.env_loop("cologne8", 600, seed=3)
    assert Simulation.start.__name__ == "start"  # the logging was taken off again
    assert rate > 0 and len(control["programs"]) == 8  # every light's static program
    assert len({t for t, _, _ in control["phases"]}) > 30  # random control changed phases
    assert speed.raw_replay(control, str(tmp_path)) > 0
    got, want = _metrics(tmp_path, control["args"]), control["metrics"]
    assert want["trips"] > 50
    assert got["trips"] == want["trips"]
    assert got["delay"] == pytest.approx(want["delay"], rel=0.02)

    # without the phase settings after the start it is other traffic: the check can fail
    begin = float(control["args"][control["args"].index("--begin") + 1])
    control["phases"] = [p for p in control["phases"] if p[0] <= begin]
    speed.raw_replay(control, str(tmp_path))
    other = _metrics(tmp_path, control["args"])
    assert other["delay"] != pytest.approx(want["delay"], rel=0.02)
