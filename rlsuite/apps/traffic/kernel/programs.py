"""SUMO's install and programs: ``SUMO_HOME`` (set lazily from the ``eclipse-sumo`` wheel),
the path of a binary of the wheel or of another install, running a command-line tool, the
display check for ``sumo-gui``, and the child ``sumo`` processes the TraCI backend starts
and ends."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Sequence

from rlsuite.apps.traffic.kernel.errors import SimulationError


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


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# How often to try SUMO's TraCI port while the child starts, and for how long.
CONNECT_POLL_S = 0.02
CONNECT_TIMEOUT_S = 100.0  # a large network can take long to load


def connect(port: int, proc: subprocess.Popen, label: str) -> object:
    """A labelled TraCI connection to the ``sumo`` child ``proc`` listening on ``port``.

    ``traci.init`` and ``traci.start`` try the port once, right after the child starts, and
    then wait a fixed 1 s before each retry. A child ``sumo`` needs ~50-150 ms to open its
    port, so every start waited ~1 s for nothing (sumo-rl starts two per env: one to read
    the network, one per reset). This polls every ``CONNECT_POLL_S`` instead, through
    traci's own ``connect`` (the connection is registered under ``label`` as ``init`` does,
    without switching to it); a child that exits raises traci's ``TraCIException``."""
    import contextlib
    import io

    import traci

    with contextlib.redirect_stdout(io.StringIO()):  # traci's "Retrying" notices
        return traci.connect(
            port,
            numRetries=int(CONNECT_TIMEOUT_S / CONNECT_POLL_S),
            host="localhost",
            proc=proc,
            waitBetweenRetries=CONNECT_POLL_S,
            label=label,
        )


def start(
    cmd: Sequence[str],
    port: int | None = None,
    label: str = "default",
    stdout=None,
    doSwitch: bool = True,  # noqa: N803 - traci.start's keyword
    **_ignored,
) -> tuple[int, str]:
    """``traci.start`` with :func:`connect`'s polling (the same arguments that matter, the
    same result: the connection registered under ``label``, switched to by default). Like
    ``traci.start``, a child that exits before connecting is retried on another port."""
    import traci

    last: BaseException | None = None
    for _ in range(5):
        p = free_port() if port is None else port
        proc = subprocess.Popen([*cmd, "--remote-port", str(p)], stdout=stdout)
        try:
            con = connect(p, proc, label)
        except traci.TraCIException as e:  # the child exited before it listened
            last = e
            kill(proc)
            if port is not None:
                break
            continue
        try:
            version = con.getVersion()
        except traci.FatalTraCIError:  # it listened, then exited (a bad network, say)
            con.close(wait=False)  # the label is free again
            kill(proc)
            raise
        if doSwitch:
            traci.switch(label)
        return version
    raise traci.FatalTraCIError(f"could not connect to sumo: {last}")


def kill(proc: subprocess.Popen) -> None:
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
