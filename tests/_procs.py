"""Process-tree checks on /proc for the tests that stop a process and expect its children
(Ray's processes, a retrain process, a sumo) to end with it."""

from __future__ import annotations

import os


def _stat(pid: int | str) -> tuple[str, str, int] | None:
    """(name, state, parent pid) of a process, or None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            head, rest = f.read().rsplit(")", 1)
        fields = rest.split()
        return head.split("(", 1)[1], fields[0], int(fields[1])
    except (OSError, IndexError, ValueError):
        return None


def _all() -> dict[int, tuple[str, str, int]]:
    return {int(d): s for d in os.listdir("/proc") if d.isdigit() and (s := _stat(d))}


def descendants(pid: int) -> set[int]:
    """Every process below ``pid``."""
    kids: dict[int, list[int]] = {}
    for p, (_name, _state, ppid) in _all().items():
        kids.setdefault(ppid, []).append(p)
    out, todo = set(), [pid]
    while todo:
        for k in kids.get(todo.pop(), []):
            out.add(k)
            todo.append(k)
    return out


def alive(pid: int) -> bool:
    """The process exists and is not a zombie."""
    s = _stat(pid)
    return s is not None and s[1] != "Z"


def live_children(pid: int) -> list[str]:
    """Names of ``pid``'s children that have not exited."""
    return [n for n, state, ppid in _all().values() if ppid == pid and state not in ("Z", "X")]
