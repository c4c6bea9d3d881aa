"""The CPUs this process can actually use, and how many physical cores they are.

``os.cpu_count()`` is the machine's logical CPUs. A process can be held to fewer: by its
CPU affinity (``taskset``, a container's ``--cpuset-cpus``) and by a cgroup CPU quota (a
container's ``--cpus``, a Kubernetes limit). An embedded Ray sized by ``os.cpu_count()``
then offers CPUs that are not there: each runner reserves "one CPU", more runners start
than can run, and each one samples slower than a runner alone. :func:`usable_cpus` is
the smaller of the two limits, and is what an embedded Ray is given by default.

Logical CPUs are not cores either: with simultaneous multithreading (two hardware
threads per core) two runners on one core's threads share its execution units. A
scale-out measured per logical CPU can fall well short of linear for that reason alone;
:func:`cpu_topology` says how many physical cores the usable CPUs are.

Example::

    >>> cpus = cpu_topology()
    >>> 1 <= cpus.usable <= cpus.logical
    True
"""

from __future__ import annotations

import math
import os
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class CPUs:
    """What :func:`cpu_topology` found."""

    logical: int
    """The machine's logical CPUs (``os.cpu_count()``)."""
    affinity: int
    """Logical CPUs this process may run on (``os.sched_getaffinity``)."""
    quota: float | None
    """The cgroup CPU quota in CPUs (quota / period), None when unlimited or unknown."""
    usable: int
    """The smaller of ``affinity`` and the quota (rounded down, at least 1)."""
    physical_cores: int | None
    """Distinct (package, core) pairs among the affinity CPUs; None when unknown."""

    @property
    def threads_per_core(self) -> float | None:
        """Logical CPUs per physical core among the affinity CPUs (2 with SMT)."""
        if not self.physical_cores:
            return None
        return self.affinity / self.physical_cores

    def describe(self) -> str:
        """One line, e.g. ``16 logical CPUs, 16 usable, 8 physical cores (2 threads per
        core)``."""
        parts = [f"{self.logical} logical CPUs", f"{self.usable} usable"]
        limits = []
        if self.affinity < self.logical:
            limits.append(f"affinity {self.affinity}")
        if self.quota is not None:
            limits.append(f"cgroup quota {self.quota:g}")
        if limits:
            parts[-1] += f" ({', '.join(limits)})"
        if self.physical_cores:
            tpc = self.threads_per_core or 1.0
            threads = "thread" if tpc == 1 else "threads"
            parts.append(f"{self.physical_cores} physical cores ({tpc:g} {threads} per core)")
        else:
            parts.append("physical cores unknown")
        return ", ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["threads_per_core"] = self.threads_per_core
        return d


def cpu_topology(sys_root: str = "/sys", proc_root: str = "/proc") -> CPUs:
    """The CPUs of this process (``sys_root``/``proc_root`` point elsewhere in tests)."""
    allowed = _allowed_cpus()
    quota = cgroup_cpu_quota(sys_root, proc_root)
    return CPUs(
        logical=os.cpu_count() or 1,
        affinity=len(allowed),
        quota=quota,
        usable=_usable(len(allowed), quota),
        physical_cores=physical_cores(allowed, sys_root),
    )


def usable_cpus() -> int:
    """The CPUs this process can use: affinity and cgroup quota (see the module). Reads no
    core topology, unlike :func:`cpu_topology`."""
    return _usable(len(_allowed_cpus()), cgroup_cpu_quota())


def _allowed_cpus() -> list[int]:
    """The logical CPUs this process may run on."""
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return list(range(os.cpu_count() or 1))


def _usable(affinity: int, quota: float | None) -> int:
    """The smaller of the affinity and the quota rounded down, at least 1."""
    if quota is not None:
        affinity = min(affinity, math.floor(quota))
    return max(1, affinity)


def physical_cores(cpus: list[int], sys_root: str = "/sys") -> int | None:
    """Distinct physical cores among logical CPUs ``cpus`` (Linux sysfs), None if unknown."""
    cores = set()
    for c in cpus:
        base = os.path.join(sys_root, "devices", "system", "cpu", f"cpu{c}", "topology")
        try:
            with open(os.path.join(base, "physical_package_id")) as f:
                package = f.read().strip()
            with open(os.path.join(base, "core_id")) as f:
                core = f.read().strip()
        except OSError:
            return None
        cores.add((package, core))
    return len(cores) or None


def cgroup_cpu_quota(sys_root: str = "/sys", proc_root: str = "/proc") -> float | None:
    """The tightest CPU quota on this process's cgroup and its ancestors, in CPUs.

    cgroup v2: ``cpu.max`` ("max 100000" is no limit, "200000 100000" is 2 CPUs). cgroup
    v1: ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us`` (-1 is no limit). The group's path
    comes from ``/proc/self/cgroup``; inside a container that path may not exist under
    the container's own mount, whose root is then the group, so the root is read too.
    """
    try:
        with open(os.path.join(proc_root, "self", "cgroup")) as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    mount = os.path.join(sys_root, "fs", "cgroup")
    found: list[float] = []
    for line in lines:
        hier, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if hier == "0" and controllers == "":
            dirs = _ancestors(mount, path)
            found += [q for d in dirs if (q := _read_v2(d)) is not None]
        elif "cpu" in controllers.split(","):
            root = os.path.join(mount, controllers)
            if not os.path.isdir(root):
                root = os.path.join(mount, "cpu")
            found += [q for d in _ancestors(root, path) if (q := _read_v1(d)) is not None]
    return min(found) if found else None


def _ancestors(root: str, path: str) -> list[str]:
    """``root`` joined with ``path`` and each of its parents, down to ``root`` itself."""
    parts = [p for p in path.strip("/").split("/") if p]
    dirs = [os.path.join(root, *parts[:i]) for i in range(len(parts), -1, -1)]
    return [d for d in dict.fromkeys(dirs) if os.path.isdir(d)]


def _read_v2(d: str) -> float | None:
    try:
        with open(os.path.join(d, "cpu.max")) as f:
            quota, period = f.read().split()[:2]
    except (OSError, ValueError):
        return None
    if quota == "max" or float(period) <= 0:
        return None
    return float(quota) / float(period)


def _read_v1(d: str) -> float | None:
    try:
        with open(os.path.join(d, "cpu.cfs_quota_us")) as f:
            quota = float(f.read())
        with open(os.path.join(d, "cpu.cfs_period_us")) as f:
            period = float(f.read())
    except (OSError, ValueError):
        return None
    if quota <= 0 or period <= 0:
        return None
    return quota / period
