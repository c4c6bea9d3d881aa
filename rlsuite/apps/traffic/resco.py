"""RESCO's benchmark (Ault & Sharon, NeurIPS 2021 Datasets and Benchmarks): its maps, its
protocol, its delay metric and its published numbers.

The networks and routes are the ones sumo-rl ships (``sumo_rl/nets/RESCO/``); the
protocol (windows, 10 s decisions with the yellow inside, ``--time-to-teleport -1``)
follows RESCO v1.0's ``config/map_config.py`` and ``multi_signal.py``; the delay is
``utils/readXML.py``'s. Nothing here starts SUMO.
"""

from __future__ import annotations

import hashlib
import os
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class RescoMap:
    """One RESCO map and its protocol (RESCO's ``map_config.py``)."""

    name: str
    begin: int
    """Start of the simulated window (s)."""
    end: int
    """End of the window (s)."""
    step_length: int = 10
    """Seconds per decision, the yellow included."""
    yellow_length: int = 3
    """Yellow seconds at the start of a step that switches phase."""
    route: str = ""
    """Route file name in the map's folder (default ``<name>.rou.xml``)."""
    edited: bool = False
    """sumo-rl's copy of the network differs from RESCO's (phases removed)."""
    folder: str = ""
    """RESCO's name of the map (its folder), where the signals network name differs."""
    restored: str = ""
    """The SHA-256 of RESCO's own network file, for a map whose network is sumo-rl's edited
    copy with the phases sumo-rl commented out put back (:func:`restored_network`)."""

    def files(self) -> tuple[str, str]:
        """The network and route files sumo-rl ships for this map (the network restored to
        RESCO's where :attr:`restored` is set)."""
        from rlsuite.apps.traffic import kernel

        folder = self.folder or self.name
        d = os.path.join(kernel.sumo_rl_nets_dir(), "RESCO", folder)
        net = os.path.join(d, f"{folder}.net.xml")
        if self.restored:
            net = restored_network(net, self.restored)
        return net, os.path.join(d, self.route or f"{folder}.rou.xml")


_COMMENTED_PHASE = re.compile(rb"<!-- (<phase [^>]*/>) -->")


def restored_network(edited: str, sha256: str) -> str:
    """RESCO's network file, rebuilt from sumo-rl's edited copy ``edited``: sumo-rl's only
    edits to ingolstadt7 and ingolstadt21 are phases it wrapped in XML comments, so removing
    those comment marks gives RESCO's file byte for byte (checked against RESCO's SHA-256,
    ``sha256``). Written once under ``$RLSUITE_CACHE/resco/`` (default ``~/.cache/rlsuite``);
    a sumo-rl copy that no longer gives RESCO's file raises."""
    from rlsuite.apps.traffic.sumo_versions import cache_dir

    out = os.path.join(cache_dir(), "resco", os.path.basename(edited))
    if os.path.exists(out) and _sha256_of(out) == sha256:
        return out
    with open(edited, "rb") as f:
        data = _COMMENTED_PHASE.sub(rb"\1", f.read())
    if hashlib.sha256(data).hexdigest() != sha256:
        raise ValueError(
            f"{edited} does not give RESCO's network once its commented-out phases are "
            "put back (this sumo-rl release edits it otherwise): use sumo-rl 1.4.5, or the "
            "edited map (network=" + os.path.basename(edited).split(".")[0] + ")"
        )
    os.makedirs(os.path.dirname(out), exist_ok=True)
    tmp = f"{out}.{os.getpid()}.tmp"  # parallel workers: each writes its own, then renames
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, out)
    return out


def _sha256_of(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


RESCO_SHA256 = {
    "ingolstadt7": "c303455a52a4405624907421892331ccffe119bfa36511ec530226e0447bae47",
    "ingolstadt21": "67b4cb8a6a346ef26b9db92253d913c6846fed4b15785694677c54b1b9b00284",
}
"""SHA-256 of RESCO v1.0's own network files (``resco_benchmark/environments/<map>/``)."""

MAPS: dict[str, RescoMap] = {
    m.name: m
    for m in (
        RescoMap("cologne1", 25200, 28800),
        RescoMap("cologne3", 25200, 28800),
        RescoMap("cologne8", 25200, 28800),
        RescoMap("ingolstadt1", 57600, 61200),
        RescoMap("ingolstadt7", 57600, 61200, edited=True),
        RescoMap("ingolstadt21", 57600, 61200, edited=True),
        RescoMap(
            "ingolstadt7_resco",
            57600,
            61200,
            folder="ingolstadt7",
            restored=RESCO_SHA256["ingolstadt7"],
        ),
        RescoMap(
            "ingolstadt21_resco",
            57600,
            61200,
            folder="ingolstadt21",
            restored=RESCO_SHA256["ingolstadt21"],
        ),
        RescoMap("grid4x4_resco", 0, 3600, route="grid4x4_1.rou.xml", folder="grid4x4"),
        RescoMap("arterial4x4", 0, 3600, 5, 2, route="arterial4x4_1.rou.xml"),
    )
}
"""RESCO's eight maps by signals network name, and two of them again on RESCO's own network
files (ten entries; RESCO's grid4x4 is ``grid4x4_resco``: the
signals env's ``grid4x4`` is sumo-rl's own 4x4 grid). sumo-rl ships only the first of RESCO's route files for the
two grids (RESCO draws a new one per episode); ingolstadt7 and ingolstadt21 are sumo-rl's
edited copies (phases removed), ``ingolstadt7_resco`` and ``ingolstadt21_resco`` RESCO's own
networks (:func:`restored_network`) with the same routes."""

UNEDITED = (
    "cologne1", "cologne3", "cologne8", "ingolstadt1", "ingolstadt21",
    "ingolstadt7_resco", "ingolstadt21_resco",
)  # fmt: skip
"""The maps on which fixed-time is checked against RESCO's Fixed row: RESCO's own networks,
and ingolstadt21, whose net sumo-rl edited too but whose fixed-time delay still reproduces
RESCO's."""

PUBLISHED: dict[str, dict[str, float | None]] = {
    "cologne1": dict(Fixed=56.61, Greedy=27.81, MaxPressure=65.85, IDQN=26.05, IPPO=43.24, MPLight=28.74, FMA2C=30.79),
    "cologne3": dict(Fixed=46.35, Greedy=90.67, MaxPressure=162.28, IDQN=23.99, IPPO=24.03, MPLight=83.65, FMA2C=26.86),
    "cologne8": dict(Fixed=63.77, Greedy=21.87, MaxPressure=47.73, IDQN=22.06, IPPO=21.62, MPLight=60.42, FMA2C=33.88),
    "ingolstadt1": dict(Fixed=39.40, Greedy=28.32, MaxPressure=23.62, IDQN=21.48, IPPO=20.90, MPLight=None, FMA2C=27.00),
    "ingolstadt7": dict(Fixed=91.31, Greedy=80.56, MaxPressure=46.82, IDQN=31.19, IPPO=31.68, MPLight=48.21, FMA2C=51.39),
    "ingolstadt21": dict(Fixed=133.10, Greedy=76.32, MaxPressure=136.72, IDQN=59.64, IPPO=93.11, MPLight=78.16, FMA2C=90.29),
    "grid4x4_resco": dict(Fixed=None, Greedy=34.32, MaxPressure=52.55, IDQN=32.95, IPPO=44.00, MPLight=46.91, FMA2C=99.77),
    "arterial4x4": dict(Fixed=None, Greedy=820.81, MaxPressure=952.75, IDQN=1168.32, IPPO=686.62, MPLight=837.75, FMA2C=654.13),
}  # fmt: skip
"""RESCO v1.0's average delay (s/veh), recomputed from its ``avg_timeLoss.py`` by the rule
of its ``graph.py``: static controllers the mean over episodes, learners the best episode of
the trial-mean training curve. ``graph.py`` labels agent MAXWAVE "Greedy" and MAXPRESSURE
"Max Pressure"."""
PUBLISHED["ingolstadt7_resco"] = PUBLISHED["ingolstadt7"]  # RESCO's own networks: its numbers
PUBLISHED["ingolstadt21_resco"] = PUBLISHED["ingolstadt21"]

PUBLISHED_FIXED_EPISODES: dict[str, tuple[float, ...]] = {
    "cologne1": (55.37, 57.43, 56.88, 56.88, 54.56, 55.88, 56.36, 57.18, 58.43, 57.51, 55.96, 57.36, 55.26, 57.59, 58.13, 57.31, 55.62, 55.06, 57.66, 56.64, 56.82, 56.93, 56.07, 58.56, 55.12, 54.81, 56.79, 55.48, 57.71, 57.03),
    "cologne3": (39.97, 37.59, 38.57, 38.50, 38.17, 38.97, 38.09, 39.46, 141.02, 39.10, 39.24, 40.78, 142.50, 38.14, 38.76, 42.28, 38.16, 41.77, 39.78, 42.03, 40.01, 38.21, 38.97, 39.76, 46.77, 38.16, 38.68, 38.82, 38.49, 39.82),
    "cologne8": (63.08, 63.76, 62.59, 63.82, 64.75, 64.46, 58.03, 62.07, 64.41, 60.01, 65.01, 64.22, 63.78, 64.43, 64.15, 62.32, 62.90, 64.20, 59.06, 65.30, 65.12, 64.05, 65.20, 66.46, 64.67, 62.59, 65.37, 65.11, 66.15, 66.03),
    "ingolstadt1": (39.51, 38.24, 39.09, 39.64, 40.75, 39.22, 39.27, 39.52, 39.43, 38.69, 40.60, 38.55, 39.71, 38.86, 39.53, 38.76, 39.26, 39.58, 39.10, 39.17, 38.15, 39.87, 39.78, 39.73, 40.22, 40.42, 40.25, 38.11, 40.67, 38.25),
    "ingolstadt7": (87.90, 87.05, 95.92, 92.00, 87.27, 90.84, 93.41, 93.27, 91.39, 91.51, 94.10, 89.43, 93.11, 88.91, 92.01, 91.65, 90.66, 90.27, 93.13, 90.24, 91.72, 89.05, 93.31, 93.99, 92.91, 89.27, 87.83, 89.43, 99.23, 88.57),
    "ingolstadt21": (130.50, 125.60, 130.25, 139.26, 141.98, 123.32, 124.95, 118.42, 127.26, 126.57, 126.35, 130.94, 141.89, 135.12, 126.64, 133.93, 135.58, 125.44, 138.38, 134.32, 138.43, 143.05, 124.62, 133.04, 192.63, 128.99, 128.47, 128.70, 132.58, 125.94),
}  # fmt: skip
"""RESCO v1.0's 30 fixed-time episodes per city map (average delay, s/veh, rounded to 0.01),
from its ``avg_timeLoss.py``; their mean is :data:`PUBLISHED`'s Fixed. Their median is the
robust side of the protocol check: a rare gridlocked episode (cologne3's two near 141 s,
ingolstadt21's 192.6) moves a mean of few seeds far more than RESCO's mean of 30."""
PUBLISHED_FIXED_EPISODES["ingolstadt7_resco"] = PUBLISHED_FIXED_EPISODES["ingolstadt7"]
PUBLISHED_FIXED_EPISODES["ingolstadt21_resco"] = PUBLISHED_FIXED_EPISODES["ingolstadt21"]


def get_map(name: str) -> RescoMap:
    """The RESCO map ``name``; an unknown name raises with the valid ones."""
    try:
        return MAPS[name]
    except KeyError:
        raise ValueError(f"unknown RESCO map {name!r}: use one of {', '.join(MAPS)}") from None


# --- RESCO's metrics -------------------------------------------------------------------


def scheduled_departures(route_file: str) -> dict[str, float]:
    """``{vehicle id: scheduled depart (s)}`` of the ``<vehicle>`` and ``<trip>`` elements of
    a route file (flows are not expanded)."""
    out: dict[str, float] = {}
    for _, el in ET.iterparse(route_file):
        if el.tag in ("vehicle", "trip"):
            try:
                out[el.get("id", "")] = float(el.get("depart", "nan"))
            except ValueError:  # "triggered", "now"...: not a time
                pass
            el.clear()
    return out


def generate_routes(
    net_file: str, out: str, vehicles: int, seed: int, begin: int = 0, end: int = 3600
) -> str:
    """A route file of about ``vehicles`` trips (randomTrips' period ``(end - begin) /
    vehicles``, whose rounding can add one) from fringe edges to fringe edges of
    ``net_file`` (SUMO's ``randomTrips.py`` with ``--fringe-factor max``, departures drawn
    uniformly in ``[begin, end)``, routed by duarouter), all drawn from ``seed``: the same
    arguments give the same file. Vehicle ids are ``gen<seed>_<k>``. Returns ``out``."""
    import subprocess
    import sys

    from rlsuite.apps.traffic import kernel

    if vehicles < 1 or end <= begin:
        raise ValueError(f"need vehicles >= 1 and end > begin, got {vehicles}, [{begin}, {end}]")
    home = kernel.sumo_home()
    out, net_file = os.path.abspath(out), os.path.abspath(net_file)
    stem = os.path.splitext(out)[0]
    cmd = [sys.executable, os.path.join(home, "tools", "randomTrips.py"), "-n", net_file,
           "-o", stem + ".trips.xml", "-r", out, "-b", str(begin), "-e", str(end),
           "-p", repr((end - begin) / vehicles), "--random-depart", "--fringe-factor", "max",
           "--seed", str(seed), "--prefix", f"gen{seed}_"]  # fmt: skip
    r = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "SUMO_HOME": home},
                       cwd=os.path.dirname(out) or ".")  # fmt: skip
    if r.returncode != 0 or not os.path.exists(out):
        raise RuntimeError(f"randomTrips.py failed ({r.returncode}): {r.stderr[-2000:]}")
    for f in (stem + ".trips.xml", stem + ".rou.alt.xml"):
        if os.path.exists(f):
            os.remove(f)
    return out


def trip_metrics(
    tripinfo_file: str, route_file: str, begin: float, end: float, pending: list[str] | None = None
) -> dict[str, float]:
    """RESCO's trip metrics of one episode from SUMO's tripinfo (written with unfinished
    trips) and the route file.

    * ``delay``: RESCO's average delay (s/veh): the sum of ``timeLoss + departDelay`` over
      every trip, finished or not, plus ``end - scheduled depart`` for every vehicle of the
      route file scheduled inside ``[begin, end)`` that was never inserted (each counted as
      a trip), divided by the number of trips.
    * ``trip_time``, ``waiting_time``: the mean ``duration`` and ``waitingTime`` of the
      inserted vehicles' trips.
    * ``never_inserted``, ``trips`` (inserted ones), ``arrived`` (finished trips).

    RESCO's ``readXML.py`` counts as never inserted the vehicles scheduled after the
    last-inserted one; here they are found by id, which gives the same set when SUMO
    inserts in schedule order and the right one when it does not.

    ``pending``: the ids SUMO still held uninserted at the end (TraCI's
    ``simulation.getPendingVehicles``), which are then the never-inserted ones instead of
    the route file's missing ids. Under a demand scale (SUMO's ``--scale``) the route file
    is not the demand: below 1 SUMO drops vehicles, above 1 it adds copies ``<id>.<k>``
    with their original's depart.
    """
    total_delay, durations, waits, seen, arrived = 0.0, [], [], set(), 0
    for _, el in ET.iterparse(tripinfo_file):
        if el.tag != "tripinfo":
            continue
        depart = float(el.get("depart", "-1"))
        if depart < 0:  # written but never inserted: counted below from the route file
            el.clear()
            continue
        seen.add(el.get("id"))
        total_delay += float(el.get("timeLoss", 0)) + float(el.get("departDelay", 0))
        durations.append(float(el.get("duration", 0)))
        waits.append(float(el.get("waitingTime", 0)))
        arrived += float(el.get("arrival", "-1")) >= 0
        el.clear()
    sched = scheduled_departures(route_file)
    if pending is None:
        missing = [d for vid, d in sched.items() if begin <= d < end and vid not in seen]
    else:
        departs = (sched.get(v, sched.get(v.rsplit(".", 1)[0], float("nan"))) for v in pending)
        missing = [d for d in departs if begin <= d < end]
    total_delay += float(np.sum(end - np.asarray(missing))) if missing else 0.0
    n = len(seen) + len(missing)
    return {
        "delay": total_delay / n if n else 0.0,
        "trip_time": float(np.mean(durations)) if durations else 0.0,
        "waiting_time": float(np.mean(waits)) if waits else 0.0,
        "never_inserted": float(len(missing)),
        "trips": float(len(seen)),
        "arrived": float(arrived),
    }
