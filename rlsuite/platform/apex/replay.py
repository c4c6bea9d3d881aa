"""Prioritised replay shards: Ray actors that store transitions and sample them by priority.

:class:`PrioritizedStorage` keeps columns of transitions in a ring with a sum tree over their
priorities (Schaul et al.'s proportional variant). :class:`SumTree` updates and searches
whole batches with numpy: RLlib's segment trees (``ray.rllib.execution.segment_tree``) do
one item at a time in Python, and a push of 1600 transitions through them kept a shard
busy for ~50 ms (more on a loaded machine), during which the learner's sample requests
waited. :class:`ReplayShard` is one Ray actor around one storage.

Every sample gets a *ticket*, ``(shard, generation, number)`` (``generation`` counts
the shard's restarts). The shard remembers which slots (and
which insertion of each slot) a ticket drew, so the learner sends back only the ticket
and the new priorities: an update reaches the shard that holds the samples and skips a
slot overwritten since. A ticket the shard did not give out is counted
(``misrouted``), never applied.

Example::

    >>> import numpy as np
    >>> s = PrioritizedStorage(capacity=4, alpha=1.0, seed=0)
    >>> s.add({"obs": np.arange(3.0)}, np.array([1.0, 1.0, 8.0]))
    3
    >>> batch, slots, stamps, weights = s.sample(2, beta=0.0)
    >>> sorted(batch)
    ['obs']
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import numpy as np

PRIORITY_EPS = 1e-6
"""Added to every priority so that no transition is never sampled again."""


class SumTree:
    """Sums of ``capacity`` non-negative leaves in a binary tree, set and searched a batch
    at a time."""

    def __init__(self, capacity: int):
        self.size = 1
        while self.size < capacity:
            self.size *= 2
        self.depth = self.size.bit_length() - 1
        self.tree = np.zeros(2 * self.size)

    def set(self, slots: np.ndarray, values: np.ndarray) -> None:
        """Leaves ``slots`` to ``values`` (the last value where a slot repeats)."""
        idx = np.asarray(slots, dtype=np.int64) + self.size
        self.tree[idx] = values
        for _ in range(self.depth):
            idx = np.unique(idx // 2)
            self.tree[idx] = self.tree[2 * idx] + self.tree[2 * idx + 1]

    def get(self, slots: np.ndarray) -> np.ndarray:
        return self.tree[np.asarray(slots, dtype=np.int64) + self.size]

    @property
    def total(self) -> float:
        return float(self.tree[1])

    def find(self, mass: np.ndarray) -> np.ndarray:
        """For each prefix-sum ``mass``, the leaf where the running sum passes it."""
        mass = np.array(mass, dtype=np.float64)
        idx = np.ones(len(mass), dtype=np.int64)
        for _ in range(self.depth):
            left = self.tree[2 * idx]
            right = mass > left
            mass = np.where(right, mass - left, mass)
            idx = 2 * idx + right
        return idx - self.size


class PrioritizedStorage:
    """A ring of ``capacity`` items (a dict of equal-length columns per add), sampled in
    proportion to ``priority ** alpha``."""

    def __init__(self, capacity: int, alpha: float, seed: int = 0):
        self.capacity = int(capacity)
        self.alpha = float(alpha)
        self._tree = SumTree(self.capacity)
        self._max_priority = 1.0
        self._cols: dict[str, np.ndarray] = {}
        self._stamps = np.full(self.capacity, -1, dtype=np.int64)
        self._next = 0
        self.size = 0
        self.added = 0
        """Items added over the storage's life."""
        self._rng = np.random.default_rng(seed)

    def add(self, items: dict[str, np.ndarray], priorities: np.ndarray | None = None) -> int:
        """Store ``items`` (columns of equal length) with their priorities (None: the
        highest seen so far); returns the number stored."""
        n = len(next(iter(items.values())))
        if priorities is None:
            priorities = np.full(n, self._max_priority)
        if n > self.capacity:  # only the newest fit
            items = {k: v[-self.capacity :] for k, v in items.items()}
            priorities, n = priorities[-self.capacity :], self.capacity
        if not self._cols:
            self._cols = {
                k: np.zeros((self.capacity, *np.shape(v)[1:]), dtype=np.asarray(v).dtype)
                for k, v in items.items()
            }
        slots = (self._next + np.arange(n)) % self.capacity
        for k, col in self._cols.items():
            col[slots] = items[k]
        self._stamps[slots] = self.added + np.arange(n)
        self._set_priorities(slots, np.asarray(priorities, dtype=np.float64))
        self._next = int((self._next + n) % self.capacity)
        self.size = min(self.size + n, self.capacity)
        self.added += n
        return n

    def _set_priorities(self, slots: np.ndarray, priorities: np.ndarray) -> None:
        p = np.abs(priorities) + PRIORITY_EPS
        self._max_priority = max(self._max_priority, float(p.max(initial=0.0)))
        self._tree.set(slots, p**self.alpha)

    def sample(
        self, n: int, beta: float
    ) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray, np.ndarray]:
        """``n`` items drawn by priority (stratified over the priority mass): their
        columns, slots, insertion stamps and importance weights ``(N p) ** -beta``,
        divided by the batch's largest."""
        total = self._tree.total
        mass = (np.arange(n) + self._rng.random(n)) * (total / n)
        slots = np.minimum(self._tree.find(mass), self.size - 1)
        weights = (self._tree.get(slots) / total * self.size) ** (-beta)
        batch = {k: col[slots] for k, col in self._cols.items()}
        return (
            batch,
            slots,
            self._stamps[slots].copy(),
            (weights / weights.max()).astype(np.float32),
        )

    def update(self, slots: np.ndarray, stamps: np.ndarray, priorities: np.ndarray) -> int:
        """Set new priorities of the slots still holding the items sampled (``stamps``);
        returns how many were set."""
        live = self._stamps[slots] == stamps
        self._set_priorities(slots[live], np.asarray(priorities, dtype=np.float64)[live])
        return int(live.sum())

    def priorities(self, slots: np.ndarray) -> np.ndarray:
        """The stored priorities (``priority ** alpha``) of ``slots``."""
        return self._tree.get(slots)

    STATE = ("_cols", "_stamps", "_next", "size", "added", "_max_priority")

    def get_state(self) -> dict[str, Any]:
        """Everything stored: the items, their priorities and the sampler's position."""
        return {
            **{k: getattr(self, k) for k in self.STATE},
            "tree": self._tree.tree,
            "rng": self._rng.bit_generator.state,
        }

    def set_state(self, state: dict[str, Any]) -> None:
        """Take :meth:`get_state`'s items and priorities (a storage of the same capacity)."""
        if len(state["_stamps"]) != self.capacity:
            raise ValueError(
                f"a replay state of capacity {len(state['_stamps'])} does not fit a storage "
                f"of capacity {self.capacity}"
            )
        for k in self.STATE:
            setattr(self, k, state[k])
        self._tree.tree = np.array(state["tree"])
        self._rng.bit_generator.state = state["rng"]


class ReplayShard:
    """One replay shard (run as a Ray actor: :func:`shard_actor`) around a
    :class:`PrioritizedStorage`; it hands out tickets with its samples and takes
    priorities back by ticket."""

    OPEN_TICKETS = 256
    """Samples whose priorities may still come back; older ones expire."""

    def __init__(self, index: int, capacity: int, alpha: float, seed: int = 0, generation: int = 0):
        self.index = index
        self.generation = generation
        self.storage = PrioritizedStorage(capacity, alpha, seed=seed)
        self._tickets: OrderedDict[int, tuple[np.ndarray, np.ndarray]] = OrderedDict()
        self._count = 0
        self.stats_ = {"sampled": 0, "updated": 0, "stale": 0, "expired": 0, "misrouted": 0}

    def add(
        self, items: dict[str, np.ndarray], priorities: np.ndarray | None = None
    ) -> tuple[int, int]:
        """Store items with their initial priorities; returns the number stored and this
        shard's generation (so that the sender knows which shard took them)."""
        return self.storage.add(items, priorities), self.generation

    def sample(self, n: int, beta: float) -> dict[str, Any] | None:
        """A batch of ``n``: its columns, ``weights`` and a ``ticket``; None while the
        shard holds fewer than ``n`` items."""
        if self.storage.size < n:
            return None
        batch, slots, stamps, weights = self.storage.sample(n, beta)
        self._count += 1
        self._tickets[self._count] = (slots, stamps)
        if len(self._tickets) > self.OPEN_TICKETS:
            self._tickets.popitem(last=False)
            self.stats_["expired"] += 1
        self.stats_["sampled"] += n
        return {
            "batch": batch,
            "weights": weights,
            "ticket": (self.index, self.generation, self._count),
        }

    def sample_many(self, n: int, beta: float, k: int) -> list[dict[str, Any]]:
        """``k`` batches of :meth:`sample` (none while the shard holds fewer than ``n``)."""
        out = [self.sample(n, beta) for _ in range(k)]
        return [b for b in out if b is not None]

    def update_priorities(self, ticket: tuple[int, int, int], priorities: np.ndarray) -> int:
        """New priorities (|TD error|) for the sample of ``ticket``; returns how many
        were set (0 for a ticket this shard did not give out, or one that expired)."""
        mine = tuple(ticket[:2]) == (self.index, self.generation)
        found = self._tickets.pop(ticket[2], None) if mine else None
        if found is None:
            self.stats_["expired" if mine else "misrouted"] += 1
            return 0
        slots, stamps = found
        done = self.storage.update(slots, stamps, priorities)
        self.stats_["updated"] += done
        self.stats_["stale"] += len(slots) - done
        return done

    def update_priorities_many(self, updates: list[tuple[tuple[int, int, int], Any]]) -> int:
        """:meth:`update_priorities` for each ``(ticket, priorities)`` in turn (one call
        for a learner's many batches); the total set."""
        return sum(self.update_priorities(ticket, p) for ticket, p in updates)

    def stats(self) -> dict[str, int]:
        """Its size, items added, sampled and priorities updated over its life."""
        return {
            "index": self.index,
            "generation": self.generation,
            "size": self.storage.size,
            "added": self.storage.added,
            **self.stats_,
        }

    def get_state(self) -> dict[str, Any]:
        """The storage's items and priorities (:meth:`PrioritizedStorage.get_state`)."""
        return self.storage.get_state()

    def set_state(self, state: dict[str, Any]) -> int:
        """Take a storage state; returns the number of items it holds."""
        self.storage.set_state(state)
        return self.storage.size

    def priorities(self, slots: list[int]) -> list[float]:
        """Stored priorities of ``slots`` (tests)."""
        return self.storage.priorities(np.asarray(slots)).tolist()

    def ticket_slots(self, number: int) -> list[int]:
        """The slots an open ticket drew (tests)."""
        return self._tickets[number][0].tolist()


def shard_actor(index: int, capacity: int, alpha: float, seed: int, generation: int = 0) -> Any:
    """A :class:`ReplayShard` as a Ray actor. It takes no CPU of its own from Ray (it
    is light next to the runners and the learner) and is not restarted by Ray: the
    algorithm replaces a dead shard itself and counts what it held as lost."""
    import ray

    cls = ray.remote(num_cpus=0, max_restarts=0)(ReplayShard)
    return cls.remote(index, capacity, alpha, seed, generation)
