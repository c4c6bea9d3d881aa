"""A shipped policy asked to drive a scenario it cannot act on is refused in the driver,
before Ray or any simulation starts, with one sentence (no Ray actor dump)."""

from __future__ import annotations

import os

import pytest

from rlsuite.apps.traffic import cli

POLICIES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "benchmarks", "policies")


@pytest.fixture
def no_ray(monkeypatch):
    """Fails the test if evaluation reaches Ray (a worker would start)."""
    import ray

    from rlsuite.platform import cluster

    calls = []

    def refuse(*a, **k):
        calls.append((a, k))
        raise AssertionError("Ray was started for a controller that cannot act on the env")

    monkeypatch.setattr(cluster, "init", refuse)
    monkeypatch.setattr(ray, "init", refuse)
    yield calls
    assert not calls


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--scenario", "figure_eight", "--controller", "ring_es_gru_scratch_p025"],
         "observations of shape (31,) (31 values) from 'rlsuite/FigureEight-v0' cannot go to "
         "policy ring_es_gru_scratch_p025, which was trained on observations of shape (3,)"),
        (["--scenario", "ring", "--controller", "merge_es", "--address", "127.0.0.1:9"],
         "policy merge_es acts for the agents of the multi-agent env 'rlsuite/MergeMulti-v0'"),
        (["--scenario", "figure_eight", "--avs", "7", "--controller", "figure_eight_0_es"],
         "observations of shape (49,) (49 values)"),
        (["--scenario", "figure_eight_multi", "--avs", "7", "--controller", "figure_eight_0_es"],
         "from agent 'av_0' of 'rlsuite/FigureEightMulti-v0'"),
    ],
)  # fmt: skip
def test_policy_on_a_scenario_it_cannot_act_on_is_refused_before_ray(argv, message, no_ray, capsys):
    i = argv.index("--controller") + 1
    argv[i] = os.path.join(POLICIES, argv[i])
    assert cli.main(["evaluate", *argv, "--episodes", "1", "--no-png"]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert "evaluate it on an env that observes the same" in err
    assert "ray::" not in err and "actor_id" not in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
