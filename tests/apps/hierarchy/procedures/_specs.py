"""A small two-level hierarchy for the procedure-model tests."""

from __future__ import annotations

from rlsuite.apps.hierarchy.procedures.spec import ActionSpec, ArgSpec, HierarchySpec, ProcedureSpec


def small_spec(**kw) -> HierarchySpec:
    """ROOT -> SUB -> A(x), observation of 3; ``kw`` replaces fields."""
    base = dict(
        obs_dim=3,
        actions=(ActionSpec("A", (ArgSpec("x", "discrete", 3),)),),
        procedures=(ProcedureSpec("ROOT", ("SUB",)), ProcedureSpec("SUB", ("A",))),
        root="ROOT",
    )
    base.update(kw)
    return HierarchySpec(**base)
