"""SUMO networks and demand written as plain XML and compiled with netconvert.

Networks are cached on disk by their parameters (``$RLSUITE_CACHE`` or
``~/.cache/rlsuite``), written atomically so that parallel env runners can share
them.
"""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from rlsuite.apps.traffic import kernel

RING_EDGES = ("bottom", "right", "top", "left")


@dataclass(frozen=True)
class VehicleType:
    """A SUMO vType with the intelligent driver model (Flow's human-driver parameters)."""

    id: str
    accel: float = 1.0
    """Maximum acceleration (m/s^2); IDM's ``a``."""
    decel: float = 1.5
    """Comfortable deceleration (m/s^2); IDM's ``b``."""
    tau: float = 1.0
    """Desired time headway (s); IDM's ``T``."""
    min_gap: float = 2.0
    """Standstill gap (m); IDM's ``s0``."""
    delta: float = 4.0
    """IDM's acceleration exponent."""
    max_speed: float = 30.0
    """Desired speed (m/s); IDM's ``v0``."""
    length: float = 5.0
    """Vehicle length (m)."""
    color: str = "1,1,1"
    """RGB for sumo-gui."""
    speed_dev: float = 0.0
    """Spread of the drivers' speed factors around 1 (SUMO ``speedDev``; Flow's default 0.1)."""
    impatience: float = 0.0
    """SUMO ``impatience``: willingness to force a way at a minor link after waiting (Flow: 0.5)."""

    def xml(self) -> str:
        extra = f'impatience="{self.impatience}" ' if self.impatience else ""
        return (
            f'  <vType id="{self.id}" carFollowModel="IDM" accel="{self.accel}" '
            f'decel="{self.decel}" emergencyDecel="9" tau="{self.tau}" minGap="{self.min_gap}" '
            f'delta="{self.delta}" maxSpeed="{self.max_speed}" length="{self.length}" '
            f'speedFactor="1" speedDev="{self.speed_dev:g}" sigma="0" {extra}color="{self.color}"/>'
        )


def flow_sumo_human() -> VehicleType:
    """Flow's human drivers on its bottleneck and merge roads: SUMO's IDM with Flow's
    ``SumoCarFollowingParams`` defaults (a 1, b 1.5, T 1, minGap 2.5, v0 30, speedDev 0.1,
    impatience 0.5)."""
    return VehicleType("human", min_gap=2.5, speed_dev=0.1, impatience=0.5)


def cache_dir() -> str:
    root = os.environ.get("RLSUITE_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "rlsuite"
    )
    path = os.path.join(root, "traffic")
    os.makedirs(path, exist_ok=True)
    return path


def _atomic_write(path: str, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def compile_network(
    name: str,
    nodes: str,
    edges: str,
    extra: Sequence[str] = (),
    out_dir: str | None = None,
    home: str | None = None,
) -> str:
    """netconvert nodes+edges into ``<out_dir or cache>/<name>.net.xml`` unless already there;
    with ``home``, the netconvert of that SUMO install (``name`` must then say which)."""
    out = os.path.join(out_dir or cache_dir(), f"{name}.net.xml")
    if os.path.exists(out):
        return out
    with tempfile.TemporaryDirectory(dir=os.path.dirname(out)) as d:
        nod, edg, net = (os.path.join(d, f) for f in ("n.nod.xml", "e.edg.xml", "net.xml"))
        _atomic_write(nod, nodes)
        _atomic_write(edg, edges)
        kernel.run_tool(
            "netconvert",
            [
                "--node-files", nod, "--edge-files", edg, "--output-file", net,
                "--no-turnarounds", "true", "--offset.disable-normalization", "true",
                "--no-warnings", "true", *extra,
            ],
            home=home,
        )  # fmt: skip
        os.replace(net, out)
    return out


def _ring_xml(
    length: float,
    lanes: int,
    cx: float,
    node_id: Callable[[str], str],
    edge_id: Callable[[str], str],
) -> tuple[list[str], list[str]]:
    """Node and edge lines of one ring of ``length`` m centred at ``(cx, 0)``: four quarter-arc
    edges, each exactly ``length / 4`` long, named by ``node_id`` / ``edge_id``."""
    r = length / (2 * math.pi)
    nodes, edges = [], []
    for i, name in enumerate(RING_EDGES):
        a = -math.pi / 2 + i * math.pi / 2
        nodes.append(
            f'  <node id="{node_id(name)}" x="{cx + r * math.cos(a):.4f}" '
            f'y="{r * math.sin(a):.4f}" type="priority"/>'
        )
        pts = " ".join(
            f"{cx + r * math.cos(a + k * math.pi / 40):.4f},{r * math.sin(a + k * math.pi / 40):.4f}"
            for k in range(21)
        )
        nxt = RING_EDGES[(i + 1) % 4]
        edges.append(
            f'  <edge id="{edge_id(name)}" from="{node_id(name)}" to="{node_id(nxt)}" '
            f'numLanes="{lanes}" speed="30" length="{length / 4:.4f}" shape="{pts}"/>'
        )
    return nodes, edges


def ring_network(length: float, lanes: int = 1) -> str:
    """A circular road of ``length`` metres as four quarter-arc edges; returns the .net.xml path.

    No internal junction lanes, so the driving distance around the ring is exactly
    ``length``.
    """
    if not 20 <= length <= 10_000:
        raise ValueError(f"ring length must be within [20, 10000] m, got {length}")
    ring_nodes, ring_edges = _ring_xml(length, lanes, 0.0, lambda n: f"n_{n}", lambda n: n)
    nodes = ["<nodes>", *ring_nodes, "</nodes>"]
    edges = ["<edges>", *ring_edges, "</edges>"]
    key = f"ring_{length:.2f}m_{lanes}l"
    return compile_network(key, "\n".join(nodes), "\n".join(edges), ["--no-internal-links", "true"])


def ring_routes(
    path: str,
    length: float,
    vehicles: Sequence[tuple[str, str]],
    types: Sequence[VehicleType],
    laps: int,
    bunching: float = 0.0,
    lanes: int = 1,
) -> list[float]:
    """Write the ring's demand: ``vehicles`` ``(id, type)`` spaced evenly, each on a looping route.

    ``bunching`` metres of the ring are left empty (Flow's ``InitialConfig.bunching``),
    a perturbation from which the stop-and-go wave grows quickly. On a ring of several
    ``lanes`` vehicle ``j`` starts on lane ``j % lanes``: each lane's vehicles are evenly
    spaced and the lanes are staggered. Returns each vehicle's start position along the
    ring (m from the start of ``bottom``).
    """
    quarter = length / 4
    lines = ["<routes>", *[t.xml() for t in types]]
    for i, name in enumerate(RING_EDGES):
        loop = [RING_EDGES[(i + k) % 4] for k in range(4 * laps)]
        lines.append(f'  <route id="r_{name}" edges="{" ".join(loop)}"/>')
    spacing = (length - bunching) / len(vehicles)
    starts = []
    for j, (vid, vtype) in enumerate(vehicles):
        x = j * spacing
        edge = min(int(x // quarter), 3)
        pos = x - edge * quarter
        starts.append(x)
        lines.append(
            f'  <vehicle id="{vid}" type="{vtype}" route="r_{RING_EDGES[edge]}" depart="0" '
            f'departPos="{pos:.4f}" departSpeed="0" departLane="{j % lanes}"/>'
        )
    lines.append("</routes>")
    _atomic_write(path, "\n".join(lines) + "\n")
    return starts


def ring_edge(ring: int, name: str) -> str:
    """Edge id of quarter ``name`` of ring ``ring`` in a :func:`rings_network`."""
    return f"r{ring}_{name}"


def rings_network(lengths: Sequence[float], out_dir: str | None = None, lanes: int = 1) -> str:
    """Several disjoint rings of ``lanes`` lanes in ONE network (ring ``i`` of ``lengths[i]``
    metres), so that one SUMO simulation (libsumo allows one per process) steps them all.

    Ring ``i`` has the quarter edges ``r{i}_bottom``... (:func:`ring_edge`), each exactly
    ``lengths[i] / 4`` long, and no internal junction lanes, as :func:`ring_network`.
    Written to ``out_dir`` when given (networks for per-reset random lengths are not
    worth caching), else cached by the lengths. Returns the .net.xml path.
    """
    if not lengths:
        raise ValueError("rings_network needs at least one ring length")
    for length in lengths:
        if not 20 <= length <= 10_000:
            raise ValueError(f"ring length must be within [20, 10000] m, got {length}")
    nodes, edges = ["<nodes>"], ["<edges>"]
    x0 = 0.0
    for i, length in enumerate(lengths):  # side by side, 20 m apart
        r = length / (2 * math.pi)
        ring_nodes, ring_edges = _ring_xml(
            length, lanes, x0 + r, lambda n, i=i: f"r{i}_n_{n}", lambda n, i=i: ring_edge(i, n)
        )
        nodes += ring_nodes
        edges += ring_edges
        x0 += 2 * r + 20.0
    nodes.append("</nodes>")
    edges.append("</edges>")
    key = "rings_" + "_".join(f"{length:.2f}" for length in lengths)
    if len(key) > 120:
        import hashlib

        key = f"rings_{len(lengths)}x_" + hashlib.sha1(key.encode()).hexdigest()[:16]
    if lanes != 1:
        key += f"_{lanes}l"
    return compile_network(
        key, "\n".join(nodes), "\n".join(edges), ["--no-internal-links", "true"], out_dir
    )


def rings_routes(
    path: str,
    lengths: Sequence[float],
    vehicles: Sequence[tuple[str, str]],
    types: Sequence[VehicleType],
    laps: int,
    bunching: float = 0.0,
    lanes: int = 1,
) -> None:
    """The demand of :func:`rings_network`: on every ring ``i`` the same ``vehicles``
    ``(id, type)`` placed as :func:`ring_routes` places them, with ids ``r{i}.{id}``
    (vehicle ``j`` on lane ``j % lanes``)."""
    lines = ["<routes>", *[t.xml() for t in types]]
    for i, length in enumerate(lengths):
        quarter = length / 4
        for k, name in enumerate(RING_EDGES):
            loop = [ring_edge(i, RING_EDGES[(k + j) % 4]) for j in range(4 * laps)]
            lines.append(f'  <route id="r{i}_r_{name}" edges="{" ".join(loop)}"/>')
        spacing = (length - bunching) / len(vehicles)
        for j, (vid, vtype) in enumerate(vehicles):
            x = j * spacing
            edge = min(int(x // quarter), 3)
            lines.append(
                f'  <vehicle id="r{i}.{vid}" type="{vtype}" route="r{i}_r_{RING_EDGES[edge]}" '
                f'depart="0" departPos="{x - edge * quarter:.4f}" departSpeed="0" '
                f'departLane="{j % lanes}"/>'
            )
    lines.append("</routes>")
    _atomic_write(path, "\n".join(lines) + "\n")


FIGURE_EIGHT_EDGES = ("bottom", "top", "upper_ring", "right", "left", "lower_ring")
"""The loop through Flow's figure-eight, in driving order (crossing the centre twice)."""


def _arc(cx: float, cy: float, r: float, a0: float, a1: float, n: int = 40) -> str:
    return " ".join(
        f"{cx + r * math.cos(a0 + (a1 - a0) * k / n):.4f},{cy + r * math.sin(a0 + (a1 - a0) * k / n):.4f}"
        for k in range(n + 1)
    )


def figure_eight_network(radius: float = 30.0) -> str:
    """Flow's figure-eight: two 3/4 rings joined by straight roads crossing at a priority
    junction in the centre (vertical road has priority). Returns the .net.xml path."""
    if not 5 <= radius <= 1000:
        raise ValueError(f"figure-eight radius must be within [5, 1000] m, got {radius}")
    r = radius
    nodes = "\n".join(
        [
            "<nodes>",
            '  <node id="center" x="0" y="0" type="priority"/>',
            f'  <node id="top" x="0" y="{r}" type="priority"/>',
            f'  <node id="bottom" x="0" y="{-r}" type="priority"/>',
            f'  <node id="left" x="{-r}" y="0" type="priority"/>',
            f'  <node id="right" x="{r}" y="0" type="priority"/>',
            "</nodes>",
        ]
    )
    ring = 1.5 * math.pi * r
    edges = "\n".join(
        [
            "<edges>",
            f'  <edge id="bottom" from="bottom" to="center" numLanes="1" speed="30" priority="2" length="{r:.4f}"/>',
            f'  <edge id="top" from="center" to="top" numLanes="1" speed="30" priority="2" length="{r:.4f}"/>',
            f'  <edge id="upper_ring" from="top" to="right" numLanes="1" speed="30" priority="1" '
            f'length="{ring:.4f}" shape="{_arc(r, r, r, math.pi, -math.pi / 2)}"/>',
            f'  <edge id="right" from="right" to="center" numLanes="1" speed="30" priority="1" length="{r:.4f}"/>',
            f'  <edge id="left" from="center" to="left" numLanes="1" speed="30" priority="1" length="{r:.4f}"/>',
            f'  <edge id="lower_ring" from="left" to="bottom" numLanes="1" speed="30" priority="1" '
            f'length="{ring:.4f}" shape="{_arc(-r, -r, r, math.pi / 2, 2 * math.pi)}"/>',
            "</edges>",
        ]
    )
    return compile_network(f"figure_eight_{r:.2f}m", nodes, edges)


def loop_routes(
    path: str,
    edges: Sequence[str],
    edge_lengths: Sequence[float],
    vehicles: Sequence[tuple[str, str]],
    types: Sequence[VehicleType],
    laps: int,
) -> None:
    """Vehicles spaced evenly (by edge length) along a closed loop of ``edges``, each looping."""
    total = float(sum(edge_lengths))
    lines = ["<routes>", *[t.xml() for t in types]]
    k = len(edges)
    for i, name in enumerate(edges):
        loop = [edges[(i + j) % k] for j in range(k * laps)]
        lines.append(f'  <route id="r_{name}" edges="{" ".join(loop)}"/>')
    starts = np.cumsum([0.0, *edge_lengths[:-1]])
    spacing = total / len(vehicles)
    for j, (vid, vtype) in enumerate(vehicles):
        x = j * spacing
        e = int(np.searchsorted(starts, x, side="right") - 1)
        pos = min(x - starts[e], edge_lengths[e] - 0.1)
        lines.append(
            f'  <vehicle id="{vid}" type="{vtype}" route="r_{edges[e]}" depart="0" '
            f'departPos="{pos:.4f}" departSpeed="0" departLane="0"/>'
        )
    lines.append("</routes>")
    _atomic_write(path, "\n".join(lines) + "\n")


MERGE_INFLOW_LENGTH = 100.0
"""Length of the merge network's two inflow edges (m), as Flow's ``INFLOW_EDGE_LEN``."""
MERGE_HIGHWAY_ROUTE = ("inflow_highway", "left", "center")
MERGE_RAMP_ROUTE = ("inflow_merge", "bottom", "center")


def merge_network(
    pre_merge: float = 500.0,
    post_merge: float = 100.0,
    merge: float = 100.0,
    speed: float = 30.0,
    copies: Sequence[str] = ("",),
    spacing: float = 1000.0,
) -> str:
    """Flow's merge: a one-lane highway (a 100 m inflow edge, ``pre_merge`` m to the merge,
    ``post_merge`` m after it) joined at 45 degrees by a one-lane on-ramp (a 100 m inflow
    edge, then ``merge`` m), at a priority junction of 10 m radius, as netconvert builds it
    by default (internal lanes kept). Returns the .net.xml path.

    ``copies``: one name per disjoint merge in the network, ``spacing`` m apart along y; a
    copy named ``m3`` has nodes and edges ``m3_left``...; the default is the one merge with
    plain names."""
    for name, v in (("pre_merge", pre_merge), ("post_merge", post_merge), ("merge", merge)):
        if not 20 <= v <= 10_000:
            raise ValueError(f"merge network {name} length must be within [20, 10000] m, got {v}")
    c, s, inflow = math.cos(math.pi / 4), math.sin(math.pi / 4), MERGE_INFLOW_LENGTH
    edge = '  <edge id="{0}" from="{1}" to="{2}" numLanes="1" speed="{3}" length="{4}"/>'
    nodes, edges = ["<nodes>"], ["<edges>"]
    for i, name in enumerate(copies):
        p, y = (f"{name}_" if name else ""), i * spacing
        nodes += [
            f'  <node id="{p}inflow_highway" x="{-inflow}" y="{y:g}"/>',
            f'  <node id="{p}left" x="0" y="{y:g}"/>',
            f'  <node id="{p}center" x="{pre_merge}" y="{y:g}" radius="10"/>',
            f'  <node id="{p}right" x="{pre_merge + post_merge}" y="{y:g}"/>',
            f'  <node id="{p}inflow_merge" x="{pre_merge - (merge + inflow) * c:.4f}" '
            f'y="{y - (merge + inflow) * s:.4f}"/>',
            f'  <node id="{p}bottom" x="{pre_merge - merge * c:.4f}" y="{y - merge * s:.4f}"/>',
        ]
        edges += [
            edge.format(f"{p}{a}", f"{p}{a}", f"{p}{b}", speed, n)
            for a, b, n in (
                ("inflow_highway", "left", inflow),
                ("left", "center", pre_merge),
                ("inflow_merge", "bottom", inflow),
                ("bottom", "center", merge),
                ("center", "right", post_merge),
            )
        ]
    nodes.append("</nodes>")
    edges.append("</edges>")
    key = f"merge_{pre_merge:g}_{post_merge:g}_{merge:g}m_{speed:g}"
    if tuple(copies) != ("",):
        key = f"merges_{len(copies)}x_{spacing:g}_" + key
    return compile_network(key, "\n".join(nodes), "\n".join(edges))


def merge_routes(
    path: str,
    types: Sequence[VehicleType],
    flows: Sequence[tuple[str, str, float, float, float]],
    initial: Sequence[tuple[str, str, float]] = (),
    copies: Sequence[str] = ("",),
) -> None:
    """The merge's demand: ``flows`` ``(flow id, vType, veh/h, depart speed, end s)``, each
    on the highway unless its id starts with ``ramp``, inserted evenly spaced
    (``vehsPerHour``, the first at t = 0), on a free lane; and ``initial`` vehicles
    ``(id, vType, position on the highway's first 600 m)`` standing at t = 0.

    ``copies``: the same demand on every copy of :func:`merge_network` (``copies`` named
    alike): copy ``m3``'s routes, flows and vehicles are ``m3.highway``, ``m3.av.7``...;
    every copy's initial vehicles come before the flows, in depart order."""
    named = [((f"{m}." if m else ""), (f"{m}_" if m else "")) for m in copies]
    lines = ["<routes>", *[t.xml() for t in types]]
    for ids, eds in named:
        hw = " ".join(eds + e for e in MERGE_HIGHWAY_ROUTE)
        rp = " ".join(eds + e for e in MERGE_RAMP_ROUTE)
        lines.append(f'  <route id="{ids}highway" edges="{hw}"/>')
        lines.append(f'  <route id="{ids}ramp" edges="{rp}"/>')
        lines.append(f'  <route id="{ids}left" edges="{eds}left {eds}center"/>')
    for ids, _ in named:
        for vid, vtype, x in initial:
            route, pos = (
                ("highway", x) if x < MERGE_INFLOW_LENGTH else ("left", x - MERGE_INFLOW_LENGTH)
            )
            lines.append(
                f'  <vehicle id="{ids}{vid}" type="{vtype}" route="{ids}{route}" depart="0" '
                f'departPos="{pos:.2f}" departSpeed="0" departLane="0"/>'
            )
    for ids, _ in named:
        for fid, vtype, rate, speed, end in flows:
            if rate <= 0:
                continue
            route = "ramp" if fid.startswith("ramp") else "highway"
            lines.append(
                f'  <flow id="{ids}{fid}" type="{vtype}" route="{ids}{route}" begin="0" '
                f'end="{end:g}" vehsPerHour="{rate:g}" departLane="free" departSpeed="{speed:g}"/>'
            )
    lines.append("</routes>")
    _atomic_write(path, "\n".join(lines) + "\n")


BOTTLENECK_EDGES = ("1", "2", "3", "4", "5")
"""Flow's bottleneck: its edges in driving order (Flow's names)."""
BOTTLENECK_EDGE_LENGTHS = (100.0, 310.0, 140.0, 280.0, 155.0)
"""Their lengths (m)."""
BOTTLENECK_EDGE_LANES = (4, 4, 4, 2, 1)
"""Their lanes at ``lane_scale`` 1: 4 -> 2 at node 4, 2 -> 1 at node 5."""
BOTTLENECK_SPEED_LIMIT = 23.0
"""The road's speed limit (m/s)."""


def bottleneck_network(
    lane_scale: int = 1,
    metered: bool = False,
    sumo: tuple[str, str | None] = ("", None),
) -> str:
    """Flow's bottleneck as a SUMO network: edges 1-5 (100, 310, 140, 280, 155 m; 4, 4, 4, 2,
    1 lanes x ``lane_scale``; 23 m/s) in a straight line, zipper merges at nodes 4 and 5
    where lanes 2i and 2i+1 feed lane i, and with ``metered`` a traffic light at node 3 (one
    signal per lane). ``sumo`` is ``(version, home)`` of the SUMO install whose
    netconvert compiles it (default the project's own), so each release runs the network its
    own netconvert builds. Returns the .net.xml path (cached per version)."""
    xs = np.concatenate([[0.0], np.cumsum(BOTTLENECK_EDGE_LENGTHS)])
    node = '  <node id="{0}" x="{1:g}" y="0"{2}/>'
    kinds = {
        "3": ' type="traffic_light"' if metered else "",
        "4": ' type="zipper" radius="20"',
        "5": ' type="zipper" radius="20"',
    }
    nodes = "\n".join(
        [
            "<nodes>",
            *[node.format(str(i + 1), x, kinds.get(str(i + 1), "")) for i, x in enumerate(xs)],
            "</nodes>",
        ]
    )
    edge = '  <edge id="{0}" from="{1}" to="{2}" numLanes="{3}" speed="{4:g}" length="{5:g}" spreadType="center"/>'
    edges = "\n".join(
        [
            "<edges>",
            *[
                edge.format(e, i + 1, i + 2, n * lane_scale, BOTTLENECK_SPEED_LIMIT, length)
                for i, (e, n, length) in enumerate(
                    zip(BOTTLENECK_EDGES, BOTTLENECK_EDGE_LANES, BOTTLENECK_EDGE_LENGTHS)
                )
            ],
            "</edges>",
        ]
    )
    conns = ["<connections>"]
    for a, b in (("2", "3"), ("3", "4"), ("4", "5")):
        n_a, n_b = (
            BOTTLENECK_EDGE_LANES[BOTTLENECK_EDGES.index(a)],
            BOTTLENECK_EDGE_LANES[BOTTLENECK_EDGES.index(b)],
        )
        for i in range(n_a * lane_scale):
            j = i * n_b // n_a
            conns.append(f'  <connection from="{a}" to="{b}" fromLane="{i}" toLane="{j}"/>')
    conns.append("</connections>")
    version, home = sumo
    key = f"bottleneck_x{lane_scale}{'_metered' if metered else ''}"
    key += f"_sumo{version}" if home else ""
    con = os.path.join(cache_dir(), f"{key}.con.xml")
    if not os.path.exists(con):
        _atomic_write(con, "\n".join(conns) + "\n")
    return compile_network(key, nodes, edges, extra=["--connection-files", con], home=home)


def bottleneck_routes(
    path: str, human: VehicleType, inflow: float, av_share: float, end: float, av_flow: str
) -> None:
    """Flow's bottleneck demand: ``inflow`` veh/h (``av_share`` of them AVs of flow id
    ``av_flow``, the humans' type recoloured) inserted on a random lane of edge 1 at 10 m/s,
    evenly spaced, until ``end`` s."""
    av = VehicleType(**{**human.__dict__, "id": "av", "color": "1,0,0"})
    rate_av = inflow * av_share
    lines = ["<routes>", human.xml(), av.xml(),
             f'  <route id="road" edges="{" ".join(BOTTLENECK_EDGES)}"/>']  # fmt: skip
    for fid, vtype, rate in (("human", "human", inflow - rate_av), (av_flow, "av", rate_av)):
        if rate > 0:
            lines.append(
                f'  <flow id="{fid}" type="{vtype}" route="road" begin="0" end="{end:g}" '
                f'vehsPerHour="{rate:g}" departLane="random" departSpeed="10"/>'
            )
    lines.append("</routes>")
    _atomic_write(path, "\n".join(lines) + "\n")
