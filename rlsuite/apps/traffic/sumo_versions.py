"""Other SUMO releases beside the project's own: where ``eclipse-sumo==X`` is installed
apart (``pip install --target``), the line that installs it, and its home for the kernel
(which runs such a release over TraCI with its own netconvert). Used by RESCO's protocol
(SUMO 1.9.2) and the bottleneck's version comparison."""

from __future__ import annotations

import os

DEFAULT_SUMO = "1.28"
"""The project's own SUMO (the eclipse-sumo and libsumo wheels)."""


def cache_dir() -> str:
    """The project's cache: ``$RLSUITE_CACHE``, default ``~/.cache/rlsuite``."""
    return os.environ.get("RLSUITE_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "rlsuite"
    )


def sumo_install_dir(version: str) -> str:
    """Where ``eclipse-sumo==version`` is installed apart from the project's SUMO:
    ``$RLSUITE_CACHE/sumo-<version>`` (default ``~/.cache/rlsuite``)."""
    return os.path.join(cache_dir(), f"sumo-{version}")


def install_command(version: str) -> str:
    """The shell line that installs SUMO ``version`` where :func:`sumo_home_for` looks."""
    return f"pip install --no-deps --target {sumo_install_dir(version)} eclipse-sumo=={version}"


def sumo_home_for(version: str) -> str | None:
    """SUMO's home for ``version``: None for the project's own SUMO, else the install's
    ``sumo/`` directory; a version not installed raises with the line that installs it."""
    if version in ("", DEFAULT_SUMO):
        return None
    home = os.path.join(sumo_install_dir(version), "sumo")
    if not os.path.exists(os.path.join(home, "bin", "sumo")):
        raise ValueError(
            f"SUMO {version} is not installed; install it with: {install_command(version)}"
        )
    return home
