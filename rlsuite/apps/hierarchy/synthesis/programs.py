"""The program families by name: what ``hier-train synthesis --program`` chooses from.

>>> program_names()
('addition', 'sort')
>>> get_program("sort").spec.root
'BUBBLESORT'
"""

from __future__ import annotations

from importlib import import_module

from rlsuite.apps.hierarchy.synthesis.family import ProgramFamily

_MODULES = {
    "addition": "rlsuite.apps.hierarchy.synthesis.program",
    "sort": "rlsuite.apps.hierarchy.synthesis.sort",
}
"""Name -> the module whose ``FAMILY`` it is (imported on first use)."""


def program_names() -> tuple[str, ...]:
    return tuple(_MODULES)


def get_program(name: str) -> ProgramFamily:
    """The family called ``name``; an unknown name is refused with the valid ones."""
    if name not in _MODULES:
        raise ValueError(f"unknown program {name!r}; choose from {', '.join(_MODULES)}")
    return import_module(_MODULES[name]).FAMILY


def program_of_spec(root: str) -> ProgramFamily:
    """The family whose hierarchy has this root procedure (for models saved without a name)."""
    for n in _MODULES:
        fam = get_program(n)
        if fam.spec.root == root:
            return fam
    raise ValueError(f"no program family has the root procedure {root!r}")
