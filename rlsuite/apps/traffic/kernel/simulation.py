"""One SUMO simulation owned by one env (:class:`Simulation`): its lifecycle on the libsumo
or TraCI backend (libsumo runs one simulation per process; this module tracks who holds
it), stepping, vehicle state by subscription, the vehicle and signal commands the envs
send, and failures turned into :class:`~rlsuite.apps.traffic.kernel.errors.SimulationError`."""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import subprocess
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from rlsuite.apps.traffic.kernel.errors import SimulationError, import_libsumo, sumo_errors
from rlsuite.apps.traffic.kernel.programs import (
    binary,
    connect,
    free_port,
    gui_available,
    kill,
    sumo_home,
)

log = logging.getLogger(__name__)

BACKENDS = ("auto", "libsumo", "traci")

# Subscription variable ids (traci.constants; identical for libsumo).
VAR_SPEED = 0x40
VAR_ROAD_ID = 0x50
VAR_LANEPOSITION = 0x56
VAR_DISTANCE = 0x84
VAR_LANE_INDEX = 0x52

VEHICLE_GETTERS = {
    "speed": "getSpeed",
    "road": "getRoadID",
    "pos": "getLanePosition",
    "lane": "getLaneIndex",
    "odometer": "getDistance",
}
"""What :meth:`Simulation.vehicle_columns` reads: name -> TraCI's vehicle getter."""

_LIBSUMO_OWNER: int | None = None  # id() of the Simulation holding libsumo in this process
_LABELS = itertools.count()


class Simulation:
    """One SUMO simulation, owned by one env.

    Args:
        backend: ``"auto"`` (libsumo when this process has no libsumo simulation
            yet, else TraCI), ``"libsumo"`` or ``"traci"``.
        gui: run ``sumo-gui`` (TraCI only; needs a display).
        name: a label for error messages.
        home: another SUMO install (its directory holding ``bin/sumo``, e.g. an older
            release from ``pip install --target DIR eclipse-sumo==X``: ``DIR/sumo``),
            driven over TraCI; default the project's own SUMO.
    """

    def __init__(
        self, backend: str = "auto", gui: bool = False, name: str = "sumo", home: str | None = None
    ):
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
        if gui and backend == "libsumo":
            raise ValueError(
                "sumo-gui runs only over TraCI: use backend='traci' or 'auto' with gui"
            )
        if gui and not gui_available():
            raise ValueError("--gui needs a display (DISPLAY is not set); run without --gui")
        if home is not None and backend == "libsumo":
            raise ValueError("another SUMO install runs only over TraCI: use backend='traci'")
        self.requested = "traci" if home is not None else backend
        self.home = home
        self.gui = gui
        self.name = name
        self.backend: str | None = None  # the backend in use while running
        self.conn: Any = None  # libsumo module or a traci Connection
        self.pid: int | None = None
        self._proc: subprocess.Popen | None = None
        self._said: Any = None  # the TraCI sumo's stderr, a temporary file
        self._label: str | None = None
        self._subscribed: set[str] = set()
        self._lane_subscribed: set[str] = set()
        self._errs = sumo_errors()

    # --- lifecycle -------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self.conn is not None

    def start(self, args: Sequence[str]) -> None:
        """Start (or restart) SUMO with ``args`` (everything after the binary)."""
        self.close()
        backend = self._choose_backend()
        try:
            if backend == "libsumo":
                self._start_libsumo(list(args))
            else:
                self._start_traci(list(args))
        except self._errs as e:
            self.close()
            raise SimulationError(f"{self.name}: SUMO did not start ({backend}): {e}") from e
        self.backend = backend
        self._subscribed = set()
        self._lane_subscribed: set[str] = set()

    def _choose_backend(self) -> str:
        global _LIBSUMO_OWNER
        if self.gui:
            return "traci"
        if self.requested == "traci":
            return "traci"
        free = _LIBSUMO_OWNER is None or _LIBSUMO_OWNER == id(self)
        if self.requested == "libsumo" and not free:
            raise SimulationError(
                "libsumo runs one simulation per process and another env in this process holds "
                "it: close that env first, or use backend='traci' (or 'auto') for this one"
            )
        if not free:
            log.debug("%s: libsumo busy in this process, using TraCI", self.name)
            return "traci"
        try:
            import_libsumo()
        except ImportError:
            if self.requested == "libsumo":
                raise
            return "traci"
        return "libsumo"

    def _start_libsumo(self, args: list[str]) -> None:
        global _LIBSUMO_OWNER
        libsumo = import_libsumo()
        sumo_home()
        _LIBSUMO_OWNER = id(self)
        try:
            libsumo.start([binary("sumo"), *args])
        except BaseException:
            _LIBSUMO_OWNER = None
            raise
        self.conn = libsumo
        self.pid = os.getpid()

    def _start_traci(self, args: list[str]) -> None:
        import traci

        exe = binary("sumo-gui" if self.gui else "sumo", self.home)
        last: BaseException | None = None
        for _ in range(5):
            port = free_port()
            label = f"rlsuite-{os.getpid()}-{next(_LABELS)}"
            # stderr goes to a file, not a pipe: a pipe nobody reads while the simulation
            # runs fills after ~64 KiB of warnings and then blocks sumo (and this env).
            said = tempfile.TemporaryFile()
            proc = subprocess.Popen(
                [exe, *args, "--remote-port", str(port)],
                stdout=subprocess.DEVNULL,
                stderr=said,
            )
            try:
                connect(port, proc, label)
            except Exception as e:  # noqa: BLE001 - retried with another port
                last = e
                exited = proc.poll() is not None
                kill(proc)
                err = _tail(said).strip() if exited else ""
                said.close()
                if err:
                    raise SimulationError(f"{self.name}: sumo exited at start: {err}") from e
                continue
            self._proc, self._said, self._label, self.pid = proc, said, label, proc.pid
            self.conn = traci.getConnection(label)
            return
        raise SimulationError(f"{self.name}: could not connect to sumo over TraCI: {last}")

    def close(self) -> None:
        """Stop SUMO (idempotent); the libsumo slot is freed for other envs."""
        global _LIBSUMO_OWNER
        conn, self.conn = self.conn, None
        if conn is not None:
            try:
                conn.close()
            except Exception:  # noqa: BLE001 - closing a dead simulation
                pass
        if _LIBSUMO_OWNER == id(self):
            _LIBSUMO_OWNER = None
        if self._proc is not None:
            kill(self._proc)
            self._proc = None
        if self._said is not None:
            self._said.close()
            self._said = None
        self.backend = None
        self.pid = None
        self._label = None

    def __del__(self) -> None:  # a dropped env must not leave a sumo process behind
        try:
            self.close()
        except Exception:  # noqa: BLE001
            pass

    # --- stepping and vehicles ---------------------------------------------------

    def _fail(self, what: str, e: BaseException) -> SimulationError:
        detail = f"{self.name}: SUMO failed during {what} ({self.backend}"
        said = ""
        if self._proc is not None:
            try:  # a sumo that closed the connection is exiting: let it, to read why
                self._proc.wait(timeout=1)
            except subprocess.TimeoutExpired:
                pass
        if self._proc is not None and self._proc.poll() is not None:
            detail += f", sumo process {self._proc.pid} exited with {self._proc.returncode}"
            said = _errors_said(self._said)
        detail += f"): {str(said or e or type(e).__name__).rstrip('.')}. The episode is lost; call reset() to start a new simulation."
        self.close()
        return SimulationError(detail)

    def _need(self) -> Any:
        if self.conn is None:
            raise SimulationError(
                f"{self.name}: no SUMO simulation is running (it was closed or crashed); "
                "call reset() first"
            )
        return self.conn

    def step(self) -> None:
        """Advance one simulation step."""
        conn = self._need()
        try:
            conn.simulationStep()
        except self._errs as e:
            raise self._fail("simulationStep", e) from e

    def time(self) -> float:
        try:
            return float(self._need().simulation.getTime())
        except self._errs as e:
            raise self._fail("getTime", e) from e

    def vehicle_ids(self) -> tuple[str, ...]:
        try:
            return tuple(self._need().vehicle.getIDList())
        except self._errs as e:
            raise self._fail("vehicle.getIDList", e) from e

    def vehicle_states(self, ids: Iterable[str]) -> dict[str, tuple[float, str, float, float]]:
        """``{id: (speed, road id, position on lane, odometer)}`` through subscriptions."""
        conn = self._need()
        try:
            for vid in ids:
                if vid not in self._subscribed:
                    conn.vehicle.subscribe(
                        vid, (VAR_SPEED, VAR_ROAD_ID, VAR_LANEPOSITION, VAR_DISTANCE)
                    )
                    self._subscribed.add(vid)
                    # A new subscription answers from the next step; read this one directly.
            res = conn.vehicle.getAllSubscriptionResults()
            out = {}
            for vid in ids:
                r = res.get(vid)
                if r is None:
                    v = conn.vehicle
                    out[vid] = (
                        v.getSpeed(vid), v.getRoadID(vid), v.getLanePosition(vid), v.getDistance(vid)
                    )  # fmt: skip
                else:
                    out[vid] = (r[VAR_SPEED], r[VAR_ROAD_ID], r[VAR_LANEPOSITION], r[VAR_DISTANCE])
            return out
        except self._errs as e:
            raise self._fail("reading vehicle states", e) from e

    def vehicle_lane_states(self, ids: Iterable[str]) -> dict[str, tuple[float, str, float, int]]:
        """``{id: (speed, road id, position on lane, lane index)}`` through subscriptions, for
        multi-lane roads (lane 0 is the rightmost). A vehicle in a teleport has road ``""``."""
        conn = self._need()
        vars_ = (VAR_SPEED, VAR_ROAD_ID, VAR_LANEPOSITION, VAR_LANE_INDEX)
        try:
            for vid in ids:
                if vid not in self._lane_subscribed:
                    conn.vehicle.subscribe(vid, vars_)
                    self._lane_subscribed.add(vid)
            res = conn.vehicle.getAllSubscriptionResults()
            out = {}
            for vid in ids:
                r = res.get(vid)
                if r is None:  # subscribed this step: answers from the next one
                    v = conn.vehicle
                    r = dict(zip(vars_, (v.getSpeed(vid), v.getRoadID(vid),
                                         v.getLanePosition(vid), v.getLaneIndex(vid))))  # fmt: skip
                out[vid] = (r[VAR_SPEED], r[VAR_ROAD_ID], r[VAR_LANEPOSITION], r[VAR_LANE_INDEX])
            return out
        except self._errs as e:
            raise self._fail("reading vehicle lane states", e) from e

    def vehicle_columns(self, ids: Sequence[str], variables: Sequence[str]) -> list[list[Any]]:
        """One list per name in ``variables`` (keys of :data:`VEHICLE_GETTERS`: ``speed``,
        ``road``, ``pos``, ``lane``, ``odometer``) with the values of ``ids`` in their order.

        Reads one vehicle at a time through libsumo's compiled getters (TraCI's getters over
        the socket otherwise): for thousands of vehicles in one simulation (several copies
        of a network) that is cheaper than subscriptions, whose cost inside SUMO's step
        grows faster than the number of vehicles. A missing vehicle raises."""
        conn = self._need()
        lib = getattr(conn, "_libsumo", None) if self.backend == "libsumo" else None
        try:
            if lib is not None:
                fns = [getattr(lib, f"vehicle_{VEHICLE_GETTERS[v]}") for v in variables]
            else:
                fns = [getattr(conn.vehicle, VEHICLE_GETTERS[v]) for v in variables]
            return [[fn(vid) for vid in ids] for fn in fns]
        except self._errs as e:
            raise self._fail("reading vehicle states", e) from e

    def change_lane(self, vid: str, lane: int, duration: float) -> None:
        """Ask SUMO to move ``vid`` to ``lane`` within ``duration`` s; SUMO's lane-change model
        carries it out only when its lane-change mode's safety checks allow (else it lapses)."""
        self.call("vehicle", "changeLane", vid, int(lane), float(duration))

    def set_lane_change_mode(self, vid: str, mode: int) -> None:
        """SUMO's lane-change-mode bits (512: no lane changes of its own, TraCI requests
        only where the other drivers' speed and braking gaps allow; 1621: SUMO's default)."""
        self.call("vehicle", "setLaneChangeMode", vid, int(mode))

    def teleports_started(self) -> int:
        """Vehicles SUMO started teleporting in the last step (jammed past ``--time-to-teleport``)."""
        return int(self.call("simulation", "getStartingTeleportNumber"))

    def set_speed(self, vid: str, speed: float) -> None:
        """Command a speed for the next step (SUMO still keeps it collision-free)."""
        self.call("vehicle", "setSpeed", vid, float(speed))

    def set_speed_mode(self, vid: str, mode: int) -> None:
        """SUMO's speed-mode bits for commanded speeds (25: safe speed and right of way, but
        brake harder than ``decel`` when safety needs it, as Flow's ``right_of_way``)."""
        self.call("vehicle", "setSpeedMode", vid, int(mode))

    def release(self, vid: str) -> None:
        """Hand a vehicle back to its car-following model."""
        self.set_speed(vid, -1.0)

    def perturb_speeds(self, speeds: dict[str, float]) -> None:
        """Overwrite current speeds (acceleration noise applied after a step)."""
        conn = self._need()
        try:
            for vid, v in speeds.items():
                conn.vehicle.setPreviousSpeed(vid, max(0.0, float(v)))
        except self._errs as e:
            raise self._fail("vehicle.setPreviousSpeed", e) from e

    def set_previous_speeds(self, ids: Sequence[str], speeds: Sequence[float]) -> None:
        """:meth:`perturb_speeds` for many vehicles at once (``speeds`` >= 0, same order),
        through libsumo's compiled call directly when libsumo is the backend."""
        self._set_each("setPreviousSpeed", ids, speeds)

    def set_speeds(self, ids: Sequence[str], speeds: Sequence[float]) -> None:
        """:meth:`set_speed` for many vehicles at once (same order), through libsumo's
        compiled call directly when libsumo is the backend."""
        self._set_each("setSpeed", ids, map(float, speeds))

    def _set_each(self, method: str, ids: Iterable[str], values: Iterable[float]) -> None:
        """``vehicle.<method>(id, value)`` for each vehicle and its value (same order), through
        libsumo's compiled call directly when libsumo is the backend."""
        conn = self._need()
        fn = getattr(conn.vehicle, method)
        if self.backend == "libsumo":
            fn = getattr(getattr(conn, "_libsumo", None), f"vehicle_{method}", fn)
        try:
            for vid, v in zip(ids, values, strict=True):
                fn(vid, v)
        except self._errs as e:
            raise self._fail(f"vehicle.{method}", e) from e

    def set_speed_modes(self, ids: Iterable[str], mode: int) -> None:
        """:meth:`set_speed_mode` with the same ``mode`` for many vehicles."""
        conn = self._need()
        try:
            for vid in ids:
                conn.vehicle.setSpeedMode(vid, int(mode))
        except self._errs as e:
            raise self._fail("vehicle.setSpeedMode", e) from e

    def loop_offsets(self, edges: Sequence[str]) -> tuple[list[float], float]:
        """Start of each edge along a closed loop of ``edges`` (lane 0) and the loop's length,
        counting the junctions' internal lanes between consecutive edges."""
        conn = self._need()
        try:
            offsets, total = [], 0.0
            for i, e in enumerate(edges):
                offsets.append(total)
                lane = f"{e}_0"
                total += conn.lane.getLength(lane)
                nxt = f"{edges[(i + 1) % len(edges)]}_0"
                via = next((lk[4] for lk in conn.lane.getLinks(lane) if lk[0] == nxt), "")
                while via and via.startswith(":"):
                    total += conn.lane.getLength(via)
                    links = conn.lane.getLinks(via)
                    via = links[0][0] if links else ""
            return offsets, total
        except self._errs as e:
            raise self._fail("measuring the loop", e) from e

    def collisions(self) -> int:
        return int(self.call("simulation", "getCollidingVehiclesNumber"))

    def set_static_program(self, tls_id: str, phases: Sequence[tuple[float, str]]) -> None:
        """Replace the running program of light ``tls_id`` by a static one of ``phases``
        ``(duration s, state)`` (as RESCO does: its green phases plus generated yellows)."""
        conn = self._need()
        try:
            logic = conn.trafficlight.getAllProgramLogics(tls_id)[0]
            phase_cls = type(logic.phases[0])
            logic.type = 0
            logic.phases = tuple(phase_cls(float(d), s) for d, s in phases)
            conn.trafficlight.setProgramLogic(tls_id, logic)
        except self._errs as e:
            raise self._fail("trafficlight.setProgramLogic", e) from e

    @contextlib.contextmanager
    def reading(self, what: str) -> Iterator[Any]:
        """The TraCI / libsumo connection itself, for a hot loop of many reads (each
        :meth:`call` looks its method up again, which costs as much as a read); a SUMO
        failure inside the block is the same :class:`SimulationError` as :meth:`call`'s,
        naming ``what``."""
        conn = self._need()
        try:
            yield conn
        except self._errs as e:
            raise self._fail(what, e) from e

    def call(self, domain: str, method: str, *args: Any) -> Any:
        """Any other TraCI call, e.g. ``call("trafficlight", "getPhase", tls_id)``."""
        conn = self._need()
        try:
            return getattr(getattr(conn, domain), method)(*args)
        except self._errs as e:
            raise self._fail(f"{domain}.{method}", e) from e


def _tail(said: Any, limit: int = 65536) -> str:
    """The last ``limit`` bytes a sumo process wrote to its stderr file ``said``."""
    if said is None:
        return ""
    try:
        said.seek(0, os.SEEK_END)
        said.seek(max(0, said.tell() - limit))
        return said.read().decode(errors="replace")
    except (OSError, ValueError):  # already closed
        return ""


def _errors_said(said: Any) -> str:
    """The ``Error:`` lines an exited sumo process wrote to its stderr file ``said`` (a bad
    route file is only read once the simulation runs, so over TraCI its complaint would
    otherwise be lost)."""
    lines = [ln.strip() for ln in _tail(said).splitlines() if "error" in ln.lower()]
    return " ".join(lines[-3:])
