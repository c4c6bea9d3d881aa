"""The SUMO adapter: the only module of rlsuite that imports libsumo, traci or sumo.

Envs own one :class:`Simulation` each and talk to SUMO only through it (as Flow's
``core/kernel`` hides TraCI). Two backends share one surface:

* ``libsumo``: SUMO in this process, ~15x faster than TraCI, but only ONE
  simulation per process. One SUMO env per RLlib env-runner process uses it.
* ``traci``: a ``sumo`` child process and a labelled TraCI connection; any number
  per process. Used when libsumo is already taken in this process (``auto``), when
  asked for, and for ``sumo-gui``.

Nothing happens at import time: ``SUMO_HOME`` is set lazily from the
``eclipse-sumo`` wheel the first time a binary is needed.

Every SUMO failure (a crashed or killed ``sumo`` process, a closed libsumo
simulation, a bad network file) surfaces as :class:`SimulationError` with what
happened and what to do; the owning env recovers on its next ``reset()``.
"""

from __future__ import annotations

import itertools
import logging
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterable, Sequence
from typing import Any

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


def sumo_home() -> str:
    """SUMO's home inside the ``eclipse-sumo`` wheel; sets ``SUMO_HOME`` if unset."""
    home = os.environ.get("SUMO_HOME")
    if home and os.path.isdir(os.path.join(home, "bin")):
        return home
    try:
        import sumo
    except ImportError as e:
        raise SimulationError(
            "SUMO is not installed: the traffic app needs the eclipse-sumo and libsumo wheels. "
            "Install them with: pip install -e '.[traffic]'"
        ) from e
    os.environ["SUMO_HOME"] = sumo.SUMO_HOME
    return sumo.SUMO_HOME


def binary(name: str, home: str | None = None) -> str:
    """Path of a SUMO tool (``sumo``, ``sumo-gui``, ``netconvert``...) from the wheel, or from
    the SUMO install at ``home`` (its ``bin/``) when given."""
    if home is not None:
        path = os.path.join(home, "bin", name)
        if not os.path.exists(path):
            raise SimulationError(f"SUMO binary {name!r} not found under {home}/bin")
        return path
    path = os.path.join(sumo_home(), "bin", name)
    if not os.path.exists(path):
        found = shutil.which(name)
        if found is None:
            raise SimulationError(f"SUMO binary {name!r} not found under {sumo_home()}/bin")
        return found
    return path


def run_tool(
    name: str, args: Sequence[str], timeout: float = 60.0, home: str | None = None
) -> None:
    """Run a SUMO command-line tool (of the install at ``home`` when given); a failure raises
    with its stderr."""
    cmd = [binary(name, home), *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise SimulationError(
            f"{name} failed (exit {proc.returncode}): {proc.stderr.strip() or proc.stdout.strip()}"
        )


def gui_available() -> bool:
    """True where ``sumo-gui`` could open a window (a display is set)."""
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def _import_libsumo() -> Any:
    """``import libsumo`` without its pyarrow version notice (we write no Parquet output)."""
    import contextlib
    import io

    with contextlib.redirect_stdout(io.StringIO()):
        import libsumo
    return libsumo


def _errors() -> tuple[type[BaseException], ...]:
    errs: list[type[BaseException]] = [OSError, EOFError]
    try:
        import traci.exceptions as te

        errs += [te.FatalTraCIError, te.TraCIException]
    except ImportError:
        pass
    try:
        libsumo = _import_libsumo()
        errs += [
            getattr(libsumo, n)
            for n in ("TraCIException", "FatalTraCIError")
            if hasattr(libsumo, n)
        ]
    except ImportError:
        pass
    return tuple(errs)


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
        self._label: str | None = None
        self._subscribed: set[str] = set()
        self._lane_subscribed: set[str] = set()
        self._errs = _errors()

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
            _import_libsumo()
        except ImportError:
            if self.requested == "libsumo":
                raise
            return "traci"
        return "libsumo"

    def _start_libsumo(self, args: list[str]) -> None:
        global _LIBSUMO_OWNER
        libsumo = _import_libsumo()
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
        import contextlib
        import io

        import traci

        exe = binary("sumo-gui" if self.gui else "sumo", self.home)
        last: BaseException | None = None
        for _ in range(5):
            port = _free_port()
            label = f"rlsuite-{os.getpid()}-{next(_LABELS)}"
            proc = subprocess.Popen(
                [exe, *args, "--remote-port", str(port)],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
            try:
                with contextlib.redirect_stdout(io.StringIO()):  # traci's "Retrying" notices
                    traci.init(port=port, numRetries=100, label=label, proc=proc, doSwitch=False)
            except Exception as e:  # noqa: BLE001 - retried with another port
                last = e
                err = ""
                if proc.poll() is not None and proc.stderr is not None:
                    err = proc.stderr.read().decode(errors="replace").strip()
                _kill(proc)
                if err:
                    raise SimulationError(f"{self.name}: sumo exited at start: {err}") from e
                continue
            self._proc, self._label, self.pid = proc, label, proc.pid
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
            _kill(self._proc)
            self._proc = None
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
        if self._proc is not None and self._proc.poll() is not None:
            detail += f", sumo process {self._proc.pid} exited with {self._proc.returncode}"
        detail += f"): {e or type(e).__name__}. The episode is lost; call reset() to start a new simulation."
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
        try:
            self._need().vehicle.changeLane(vid, int(lane), float(duration))
        except self._errs as e:
            raise self._fail("vehicle.changeLane", e) from e

    def set_lane_change_mode(self, vid: str, mode: int) -> None:
        """SUMO's lane-change-mode bits (512: no lane changes of its own, TraCI requests
        only where the other drivers' speed and braking gaps allow; 1621: SUMO's default)."""
        try:
            self._need().vehicle.setLaneChangeMode(vid, int(mode))
        except self._errs as e:
            raise self._fail("vehicle.setLaneChangeMode", e) from e

    def teleports_started(self) -> int:
        """Vehicles SUMO started teleporting in the last step (jammed past ``--time-to-teleport``)."""
        try:
            return int(self._need().simulation.getStartingTeleportNumber())
        except self._errs as e:
            raise self._fail("simulation.getStartingTeleportNumber", e) from e

    def set_speed(self, vid: str, speed: float) -> None:
        """Command a speed for the next step (SUMO still keeps it collision-free)."""
        try:
            self._need().vehicle.setSpeed(vid, float(speed))
        except self._errs as e:
            raise self._fail("vehicle.setSpeed", e) from e

    def set_speed_mode(self, vid: str, mode: int) -> None:
        """SUMO's speed-mode bits for commanded speeds (25: safe speed and right of way, but
        brake harder than ``decel`` when safety needs it, as Flow's ``right_of_way``)."""
        try:
            self._need().vehicle.setSpeedMode(vid, int(mode))
        except self._errs as e:
            raise self._fail("vehicle.setSpeedMode", e) from e

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
        conn = self._need()
        fn = conn.vehicle.setPreviousSpeed
        if self.backend == "libsumo":
            fn = getattr(getattr(conn, "_libsumo", None), "vehicle_setPreviousSpeed", fn)
        try:
            for vid, v in zip(ids, speeds, strict=True):
                fn(vid, v)
        except self._errs as e:
            raise self._fail("vehicle.setPreviousSpeed", e) from e

    def set_speeds(self, ids: Sequence[str], speeds: Sequence[float]) -> None:
        """:meth:`set_speed` for many vehicles at once (same order), through libsumo's
        compiled call directly when libsumo is the backend."""
        conn = self._need()
        fn = conn.vehicle.setSpeed
        if self.backend == "libsumo":
            fn = getattr(getattr(conn, "_libsumo", None), "vehicle_setSpeed", fn)
        try:
            for vid, v in zip(ids, speeds, strict=True):
                fn(vid, float(v))
        except self._errs as e:
            raise self._fail("vehicle.setSpeed", e) from e

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
        try:
            return int(self._need().simulation.getCollidingVehiclesNumber())
        except self._errs as e:
            raise self._fail("simulation.getCollidingVehiclesNumber", e) from e

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

    def call(self, domain: str, method: str, *args: Any) -> Any:
        """Any other TraCI call, e.g. ``call("trafficlight", "getPhase", tls_id)``."""
        conn = self._need()
        try:
            return getattr(getattr(conn, domain), method)(*args)
        except self._errs as e:
            raise self._fail(f"{domain}.{method}", e) from e


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _kill(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()


def wait_for_exit(pid: int, timeout: float = 5.0) -> bool:
    """True once process ``pid`` has exited (a zombie waiting to be reaped counts as exited)."""
    t0 = time.time()
    while time.time() - t0 < timeout:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X"):
                    return True
        except (FileNotFoundError, ProcessLookupError):
            return True
        except OSError:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return True
        time.sleep(0.05)
    return False


# --- sumo-rl (signals) ---------------------------------------------------------------


def sumo_errors() -> tuple[type[BaseException], ...]:
    """The exceptions a failing SUMO raises (TraCI, libsumo, a dead socket)."""
    return _errors()


def sumo_rl_nets_dir() -> str:
    """The directory of sumo-rl's bundled networks."""
    sumo_home()
    import sumo_rl

    return os.path.join(os.path.dirname(sumo_rl.__file__), "nets")


def max_pressure_phase(sumo_env: Any, ts_id: str) -> int:
    """The green phase of light ``ts_id`` with the largest pressure (Varaiya's max-pressure).

    A phase's pressure is the sum over the movements it serves of (vehicles on the
    incoming lane - vehicles on the outgoing lane). ``sumo_env`` is sumo-rl's
    ``SumoEnvironment`` (its own TraCI connection).
    """
    ts = sumo_env.traffic_signals[ts_id]
    conn = sumo_env.sumo
    links = conn.trafficlight.getControlledLinks(ts_id)
    count: dict[str, int] = {}

    def n(lane: str) -> int:
        if lane not in count:
            count[lane] = conn.lane.getLastStepVehicleNumber(lane)
        return count[lane]

    best, best_p = 0, -float("inf")
    for i, phase in enumerate(ts.green_phases):
        p = 0.0
        for idx, ch in enumerate(phase.state):
            if ch in "Gg" and idx < len(links):
                for inc, out, _via in links[idx]:
                    p += n(inc) - n(out)
        if p > best_p:
            best, best_p = i, p
    return best


def sumo_rl_parallel_env(**kwargs: Any) -> Any:
    """sumo-rl's PettingZoo parallel env, working with pettingzoo >= 1.25.

    sumo-rl 1.4.5 imports ``pettingzoo.utils.agent_selector`` as a class; pettingzoo
    1.25 renamed the class ``AgentSelector`` and ``agent_selector`` is now its module
    (sumo-rl issue #228), so sumo-rl's env fails with "'module' object is not
    callable". The class is bound to that name inside sumo-rl's module only, at call
    time (site-packages are not edited, pettingzoo is left as it is).
    """
    sumo_home()
    import pettingzoo.utils as pzu
    import sumo_rl.environment.env as sumo_rl_env

    selector = getattr(pzu, "AgentSelector", None)
    if selector is not None and not isinstance(sumo_rl_env.agent_selector, type):
        sumo_rl_env.agent_selector = selector  # the name sumo-rl calls, in sumo-rl's module only
    return sumo_rl_env.parallel_env(**kwargs)
