"""Hierarchy specs: validation errors say what is wrong."""

from __future__ import annotations

import pytest

from rlsuite.apps.hierarchy.procedures.spec import ActionSpec, ArgSpec, ProcedureSpec
from tests.apps.hierarchy.procedures._specs import small_spec


@pytest.mark.parametrize(
    "kw,match",
    [
        (dict(root="NOPE"), "root"),
        (dict(procedures=(ProcedureSpec("ROOT", ("B",)),)), "unknown operation"),
        (
            dict(procedures=(ProcedureSpec("ROOT", ("SUB",)), ProcedureSpec("SUB", ("ROOT",)))),
            "cycle",
        ),
        (
            dict(procedures=(ProcedureSpec("ROOT", ("A",), (ArgSpec("k"),)),)),
            "cannot take arguments",
        ),
        (dict(procedures=(ProcedureSpec("ROOT", ("A",), max_pc=9),)), "max_pc"),
        (dict(actions=(ActionSpec("A", (ArgSpec("x", "ordinal", 3),)),)), "kind"),
    ],
)
def test_bad_specs_are_clear_errors(kw, match):
    with pytest.raises(ValueError, match=match):
        small_spec(**kw).validate()
