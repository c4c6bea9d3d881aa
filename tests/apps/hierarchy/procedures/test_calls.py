"""Call trees and trace files: a teacher trace round-trips through both."""

from __future__ import annotations

import pytest

from rlsuite.apps.hierarchy.procedures.calls import call_tree, trace_from_calls
from rlsuite.apps.hierarchy.procedures.traces import load_traces, save_traces
from rlsuite.apps.hierarchy.synthesis.program import SPEC, make_traces


def test_call_tree_and_trace_from_calls_round_trip_a_teacher_trace(tmp_path):
    traces = make_traces(3, seed=1, lengths=(2, 3))
    for tr in traces:
        root = call_tree(tr)
        assert root.proc == SPEC.root and root.terminated  # the teacher finishes (STOP)
        again = trace_from_calls(SPEC, root, tr.observations, tr.actions)
        assert again.events == tr.events
    path = str(tmp_path / "t.npz")
    save_traces(path, [*traces, traces[0].weak()])
    back = load_traces(path)
    assert [b.events for b in back[:3]] == [t.events for t in traces] and back[3].events is None
    assert [b.actions for b in back] == [t.actions for t in [*traces, traces[0]]]
    with pytest.raises(ValueError, match="cover the trace's actions"):
        trace_from_calls(SPEC, type(root)(SPEC.root, (), [0]), tr.observations, tr.actions)
