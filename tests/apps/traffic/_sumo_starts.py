"""Record every SUMO simulation a test starts: its backend and its process id."""

from __future__ import annotations

from typing import Any


def record_sumo_starts(monkeypatch: Any) -> list[tuple[str | None, int | None]]:
    """Patch ``kernel.Simulation.start`` to append ``(backend, pid)`` to the returned list
    after each start (``pid`` is the SUMO process's over TraCI, None for libsumo)."""
    from rlsuite.apps.traffic import kernel

    started: list[tuple[str | None, int | None]] = []
    start = kernel.Simulation.start

    def spy(self, args) -> None:
        start(self, args)
        started.append((self.backend, self.pid))

    monkeypatch.setattr(kernel.Simulation, "start", spy)
    return started
