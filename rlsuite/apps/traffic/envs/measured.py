"""What the scalar traffic envs share: an env over one simulation object ``self.core``,
which measures the episode and owns SUMO, so the env's ``episode_metrics()`` and
``close()`` are the core's (its ``trajectories()`` or ``series()`` too, per env)."""

from __future__ import annotations

from typing import Any


class Measured:
    """Mixin of an env whose simulation object is ``self.core`` (``metrics()``, ``close()``)."""

    core: Any
    _end_reason: str = ""
    """Why the last step ended the episode ("" if it did not): a collision, a teleport storm
    or a SUMO failure (the envs that say it in ``info["reason"]``)."""

    def episode_metrics(self) -> dict[str, float]:
        """The current episode's metrics (call it before the next ``reset()``)."""
        return self.core.metrics()

    def _info(self) -> dict[str, Any]:
        return {"reason": self._end_reason} if self._end_reason else {}

    def close(self) -> None:
        self.core.close()
