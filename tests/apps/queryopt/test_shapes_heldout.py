"""The generated-shapes split's per-shape totals and its shape names."""

import pytest

from rlsuite.apps.queryopt.shapes_heldout import by_shape, names


def test_held_out_results_are_summed_per_shape():
    held = [
        dict(query=0, orig_s=2.0, dqn=dict(s=1.0), oracle=dict(s=0.5)),
        dict(query=1, orig_s=1.0, dqn=dict(s=1.0), oracle=dict(s=0.25)),
        dict(query=2, orig_s=3.0, dqn=dict(s=0.1), oracle=dict(s=0.1)),
    ]
    qs = {0: ("not_in", "q0"), 1: ("not_in", "q1"), 2: ("exists", "q2")}
    assert by_shape(held, qs) == {
        "not_in": dict(queries=2, postgres_s=3.0, dqn_s=2.0, oracle_s=0.75),
        "exists": dict(queries=1, postgres_s=3.0, dqn_s=0.1, oracle_s=0.1),
    }


def test_shape_names_are_checked():
    assert names(" exists, in ,") == ["exists", "in"]
    with pytest.raises(ValueError):
        names("exist")
