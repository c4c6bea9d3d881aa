"""What the model server counts and records: its request counters, the decisions it served
and the runtimes that came back for them.

:class:`Stats` are the server's counters. A :class:`Ledger` keeps every served decision
under the key its answer carried (:func:`decision_key`), the model's features along it,
and each runtime reported for a key (a ``reward``): in memory (the ``stats`` answer), as
one JSON line in the rewards file when there is one, and as an
:class:`~rlsuite.apps.queryopt.plugin.experience.Experience` in the experience store
when there is one (what retraining learns from).

Example::

    >>> ledger = Ledger(rewards_path=None, store=None)
    >>> key = decision_key(("qopt_joins", "SELECT ..."), ("eager_aggregation",), "model", 0)
    >>> ledger.served(key, ("qopt_joins", "SELECT ..."), ("eager_aggregation",), {}, "model")
    >>> ledger.record(key, 12.5)
    (('qopt_joins', 'SELECT ...'), ('eager_aggregation',))
    >>> ledger.decisions_report()[key]["runs"]
    1
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rlsuite.apps.queryopt.plugin.experience import Experience, ExperienceStore
from rlsuite.apps.queryopt.plugin.guard import Applied
from rlsuite.apps.queryopt.plugin.online import ShapeKey


@dataclass
class Stats:
    """The model server's counters (its ``stats`` answer)."""

    requests: int = 0
    exact_hits: int = 0
    shape_hits: int = 0
    misses: int = 0
    not_ready: int = 0
    passthrough: int = 0
    errors: int = 0
    rewards: int = 0
    answer_us: list[float] = field(default_factory=list)


def decision_key(sk: ShapeKey, applied: Sequence[str], kind: str, version: int) -> str:
    """The key an answer carries (its reward comes back with it): how it was served
    (``m``odel, ``e``xplore, ``s``tandard), the model version, and a hash of the decision."""
    h = hashlib.sha1(f"{sk[0]}\n{sk[1]}\n{'+'.join(applied)}".encode()).hexdigest()[:16]
    return f"{kind[0]}{int(version)}-{h}"


def checked_rewards(items: Any) -> list[dict]:
    """The rewards of a message as ``{key, ms}``; a bad one raises (answered as an error)."""
    if not isinstance(items, list):
        raise ValueError("rewards must be a list of {key, ms} objects")
    good = []
    for msg in items:
        if not isinstance(msg, dict) or "ms" not in msg:
            raise ValueError(f"a reward is a {{key, ms}} object, got {msg!r}")
        ms = float(msg["ms"])
        if not math.isfinite(ms) or ms < 0:
            raise ValueError(f"a runtime must be a finite number of ms >= 0, got {ms}")
        good.append({"key": str(msg.get("key") or ""), "ms": ms})
    return good


class Ledger:
    """The served decisions and the runtimes reported for them (see the module doc)."""

    def __init__(self, rewards_path: str | None = None, store: ExperienceStore | None = None):
        self.rewards_path = rewards_path
        self.store = store
        self.rewards: dict[str, list[float]] = defaultdict(list)
        """Runtimes (ms) per decision key, as they came."""
        self.decisions: dict[str, dict[str, Any]] = {}
        """Per key: the shape, the rules applied, the planner arm and how it was served."""
        self.features: dict[tuple[ShapeKey, Applied], list] = {}
        """The model's input along a decision (stored with its runtimes)."""
        self._key_shape: dict[str, ShapeKey] = {}

    def served(
        self, key: str, sk: ShapeKey, applied: Applied, arm: dict[str, str], kind: str
    ) -> None:
        """Note the decision an answer carries under ``key`` (its first answer's arm)."""
        self._key_shape[key] = sk
        self.decisions.setdefault(
            key, {"shape": sk[1], "applied": list(applied), "arm": arm, "kind": kind}
        )

    def record(self, key: str, ms: float) -> tuple[ShapeKey, Applied] | None:
        """Record a runtime of decision ``key`` (in memory and the rewards file): the shape
        and decision it measured, or None for a key this server never served (another
        server process's, or made up): kept, not learned from."""
        self.rewards[key].append(ms)
        if self.rewards_path:
            with open(self.rewards_path, "a") as f:
                f.write(json.dumps({"key": key, "ms": ms, "time": time.time()}) + "\n")
        d = self.decisions.get(key)
        if d is None:
            return None
        return self._key_shape[key], tuple(d["applied"])

    def store_experience(self, key: str, ms: float, schema: str) -> None:
        """Add a runtime of a served decision ``key`` to the experience store, with the
        features along it (nothing without a store)."""
        if self.store is None:
            return
        d = self.decisions[key]
        sk, applied = self._key_shape[key], tuple(d["applied"])
        self.store.add(
            Experience(
                schema=schema,
                shape=d["shape"],
                applied=applied,
                ms=ms,
                kind=d["kind"],
                features=tuple(tuple(v) for v in self.features.get((sk, applied), [])),
                version=int(key[1:].split("-", 1)[0]),
            )
        )

    def decisions_report(self) -> dict[str, dict[str, Any]]:
        """Per key: the decision, its runs and their mean runtime."""
        return {
            k: {
                **v,
                "runs": len(self.rewards.get(k, [])),
                "mean_ms": (
                    sum(self.rewards[k]) / len(self.rewards[k]) if self.rewards.get(k) else None
                ),
            }
            for k, v in list(self.decisions.items())
        }

    def store_report(self) -> dict[str, Any] | None:
        """The experience store's path, rows and window (None without a store)."""
        if self.store is None:
            return None
        return {"path": self.store.path, "rows": self.store.count(), "window": self.store.window}

    def close(self) -> None:
        if self.store is not None:
            self.store.close()
