"""What the open-road simulations (Flow's merge and bottleneck) share: one SUMO
simulation with a private folder for its episode files, closed together, and the
trouble counts every road reports (vehicles waiting to enter, collisions, teleports)."""

from __future__ import annotations

import shutil
import tempfile
from typing import Any, ClassVar


class RoadSimulation:
    """Base of :class:`~rlsuite.apps.traffic.envs.merge_road.MergeSimulation` and
    :class:`~rlsuite.apps.traffic.envs.bottleneck.BottleneckSimulation`: ``self.sim`` is
    the simulation, ``self._dir`` the episode files' folder (made on first use)."""

    workdir_prefix: ClassVar[str] = "rlsuite-road-"
    """Prefix of the temporary folder of the episode files."""
    sim: Any
    _dir: str | None = None
    waiting_sum: float
    collisions: int
    teleports: int

    def _workdir(self) -> str:
        if self._dir is None:
            self._dir = tempfile.mkdtemp(prefix=self.workdir_prefix)
        return self._dir

    def _trouble(self, steps: int) -> dict[str, float]:
        """The episode's vehicles waiting to enter (per step), collisions and teleports."""
        return {
            "waiting_to_enter": self.waiting_sum / steps,
            "collisions": float(self.collisions),
            "teleports": float(self.teleports),
        }

    def close(self) -> None:
        self.sim.close()
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None
