"""What the hierarchy app needs from this machine, for ``rlsuite info``.

Announced in the ``rlsuite.probes`` entry-point group; each :class:`Probe` says
which component, whether it was found, and how to get it.
"""

from __future__ import annotations

from rlsuite.cli_common import Probe, dist_version


def probes() -> list[Probe]:
    """pybullet (the robot half); its version is read without importing it."""
    return [Probe("pybullet", dist_version("pybullet"), "pip install -e '.[hierarchy]'")]
