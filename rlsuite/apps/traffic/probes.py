"""What the traffic app needs from this machine, for ``rlsuite info``.

Announced in the ``rlsuite.probes`` entry-point group; each :class:`Probe` says
which component, whether it was found, and how to get it.
"""

from __future__ import annotations

from rlsuite.cli_common import Probe, dist_version

HOW = "pip install -e '.[traffic]'"


def probes() -> list[Probe]:
    """The SUMO binary, libsumo and sumo-rl: found or not, and how to get them."""
    from rlsuite.apps.traffic import kernel

    try:
        sumo = kernel.binary("sumo")
    except kernel.SimulationError:
        sumo = None
    version = dist_version("eclipse-sumo")
    return [
        Probe(
            "SUMO binary (eclipse-sumo)",
            sumo and (f"{version} {sumo}" if version else sumo),
            HOW,
        ),
        Probe("libsumo", dist_version("libsumo"), HOW),
        Probe("sumo-rl", dist_version("sumo-rl"), HOW),
    ]
