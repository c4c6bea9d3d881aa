"""What a failing SUMO raises: :class:`SimulationError` (the kernel's one error), the
backends' own exceptions it is raised from, and the teleport-storm verdict envs end an
episode on."""

from __future__ import annotations

from typing import Any


class SimulationError(RuntimeError):
    """SUMO failed (crashed, was killed, or rejected its input)."""


def teleport_storm(teleports: int, max_teleports: int, teleport_time: float) -> str:
    """Why an episode ends when more than ``max_teleports`` vehicles were teleported (stuck
    over ``teleport_time`` s), or ``""`` while it may go on."""
    if teleports <= max_teleports:
        return ""
    return (
        f"teleport storm: {teleports} vehicles teleported (stuck over "
        f"{teleport_time:g} s), more than max_teleports={max_teleports}"
    )


def import_libsumo() -> Any:
    """``import libsumo`` without its pyarrow version notice (we write no Parquet output)."""
    import contextlib
    import io

    with contextlib.redirect_stdout(io.StringIO()):
        import libsumo
    return libsumo


def sumo_errors() -> tuple[type[BaseException], ...]:
    """The exceptions a failing SUMO raises (TraCI, libsumo, a dead socket)."""
    errs: list[type[BaseException]] = [OSError, EOFError]
    try:
        import traci.exceptions as te

        errs += [te.FatalTraCIError, te.TraCIException]
    except ImportError:
        pass
    try:
        libsumo = import_libsumo()
        errs += [
            getattr(libsumo, n)
            for n in ("TraCIException", "FatalTraCIError")
            if hasattr(libsumo, n)
        ]
    except ImportError:
        pass
    return tuple(errs)
