"""What the traffic envs' config dataclasses share: construction from keyword arguments.

Each env's config (``RingConfig``, ``FigureEightConfig``, ``SignalsConfig``) is a
frozen dataclass deriving from :class:`EnvConfig`; its ``from_kwargs`` rejects
unknown keys, naming the valid ones, and :func:`vehicle_type` turns a
``human_type`` given as a dict (from the CLI or a JSON config) into a vType. The
ring-road envs' configs (ring, two-lane ring, figure-eight) also derive from
:class:`RingSumoOptions`, the SUMO options they share.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, TypeVar

from rlsuite.apps.traffic import kernel, networks

C = TypeVar("C", bound="EnvConfig")


class EnvConfig:
    """Base of the traffic envs' frozen config dataclasses."""

    KIND: ClassVar[str] = ""
    """The env's name in error messages (``unknown ring option(s) ...``)."""
    POLICY_FIELDS: ClassVar[tuple[str, ...]] = ()
    """Options that shape what a policy observes or how its actions act: a trained policy
    is evaluated with its training values of these (``traffic-train evaluate``), while
    the episode's own options (length, horizon, warm-up, start) may differ."""

    @classmethod
    def from_kwargs(cls: type[C], **kwargs: Any) -> C:
        """The config of these keyword arguments; unknown keys raise with the valid ones."""
        known = {f.name for f in fields(cls)}  # type: ignore[arg-type]
        unknown = sorted(set(kwargs) - known)
        if unknown:
            raise ValueError(
                f"unknown {cls.KIND} option(s) {unknown}; valid options: {sorted(known)}"
            )
        return cls(**kwargs)

    def check_sumo_options(self) -> None:
        """Refuse bad ``teleport_time``, ``max_teleports`` and ``backend`` (the options of
        the envs whose SUMO may teleport jammed vehicles)."""
        teleport_time, max_teleports, backend = (
            getattr(self, k) for k in ("teleport_time", "max_teleports", "backend")
        )
        if teleport_time != -1 and teleport_time <= 0:
            raise ValueError(f"teleport_time must be > 0 s or -1 (never), got {teleport_time}")
        if max_teleports < 0:
            raise ValueError(f"max_teleports must be >= 0, got {max_teleports}")
        if backend not in kernel.BACKENDS:
            raise ValueError(f"backend must be one of {kernel.BACKENDS}, got {backend!r}")


def vehicle_type(value: networks.VehicleType | dict) -> networks.VehicleType:
    """``value`` as a :class:`~rlsuite.apps.traffic.networks.VehicleType` (a dict's ``id``
    defaults to ``human``)."""
    if isinstance(value, dict):
        return networks.VehicleType(**{"id": "human", **value})
    return value


@dataclass(frozen=True)
class RingSumoOptions:
    """The SUMO options of the ring-road envs (ring, two-lane ring, figure-eight): how SUMO
    runs, what it keeps and how its humans drive. Converts a dict ``human_type`` and calls
    the config's ``validate()`` after construction."""

    backend: str = "auto"
    """``auto`` (libsumo if free in this process, else TraCI), ``libsumo`` or ``traci``."""
    gui: bool = False
    """Show the simulation in sumo-gui (TraCI; needs a display)."""
    record: bool = False
    """Keep every vehicle's position and speed (and lane, on several lanes) per step, for
    the space-time diagram."""
    human_type: networks.VehicleType = field(
        default_factory=lambda: networks.VehicleType("human", color="1,1,1")
    )
    """Human drivers' IDM parameters (Flow's: a=1, b=1.5, T=1, s0=2, delta=4, v0=30)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "human_type", vehicle_type(self.human_type))
        self.validate()

    def validate(self) -> None:
        """Raise ``ValueError`` on a bad option (each config checks its own)."""
