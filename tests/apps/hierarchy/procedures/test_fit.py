"""Training entry point: bad arguments are clear errors."""

from __future__ import annotations

import pytest

from rlsuite.apps.hierarchy.procedures.fit import fit
from rlsuite.apps.hierarchy.procedures.model import ProcedureModel
from rlsuite.apps.hierarchy.synthesis.program import SPEC, make_traces


def test_fit_rejects_empty_data_and_negative_epochs():
    model = ProcedureModel(SPEC, hidden=(8,))
    with pytest.raises(ValueError, match="at least one"):
        fit(model)
    with pytest.raises(ValueError, match="epochs"):
        fit(model, strong=make_traces(1, seed=0, lengths=(1,)), epochs=-1)
