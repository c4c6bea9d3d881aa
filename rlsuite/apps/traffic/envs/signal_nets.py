"""The signal networks both signals envs know, and the actuated copy of a network's programs.

sumo-rl's bundled networks (``single``, ``grid2x2``, ``grid4x4``) run in
:mod:`~rlsuite.apps.traffic.envs.signals`; RESCO's maps
(:data:`rlsuite.apps.traffic.resco.MAPS`) in :mod:`~rlsuite.apps.traffic.envs.signals_resco`.
Kept apart from both so that neither env module imports the other.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from rlsuite.apps.traffic import resco

NETWORKS = {
    "single": ("single-intersection/single-intersection.net.xml",
               "single-intersection/single-intersection.rou.xml"),
    "grid2x2": ("2x2grid/2x2.net.xml", "2x2grid/2x2.rou.xml"),
    "grid4x4": ("4x4-Lucas/4x4.net.xml", "4x4-Lucas/4x4c1c2c1c2.rou.xml"),
}  # fmt: skip
"""sumo-rl's bundled networks and demand, by name."""


def network_names() -> list[str]:
    """Every ``network`` the signals scenario knows: sumo-rl's, then RESCO's maps."""
    return [*NETWORKS, *resco.MAPS]


def actuated_programs(net_file: str, out: str, min_dur: int = 5, max_dur: int = 50) -> str:
    """An additional file with an ``actuated`` copy of every light's program (same phases)."""
    root = ET.parse(net_file).getroot()
    add = ET.Element("additional")
    for tl in root.iter("tlLogic"):
        new = ET.SubElement(add, "tlLogic", id=tl.get("id"), type="actuated",
                            programID="actuated", offset="0")  # fmt: skip
        for ph in tl.iter("phase"):
            state = ph.get("state")
            attrs = {"duration": ph.get("duration"), "state": state}
            if "y" not in state.lower() and set(state.lower()) != {"r"}:
                attrs.update(minDur=str(min_dur), maxDur=str(max_dur))
            ET.SubElement(new, "phase", **attrs)
    ET.ElementTree(add).write(out)
    return out
