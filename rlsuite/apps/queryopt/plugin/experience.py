"""The model server's experience store: what it served, and how fast it ran (SQLite).

One row per measured execution (a ``reward`` from ``pg_qopt``): the query's
*shape*, the features the model saw along the decision (the observation of each
rewrite step), the decision (the rules applied, in order; none for the standard
plan), how it came to be served (``model``, ``explore``, ``standard``), the model
version that served it, and the executor's runtime.

What it holds, and why: shapes are the statement text with every literal replaced by
``?`` (:func:`~rlsuite.apps.queryopt.plugin.protocol.shape`), so no value a user
typed (a customer id, a date, a name) is stored; the features are counts and
log-scaled planner estimates (costs, row counts) of the whole plan, never a value
of a row. That is all learning needs: the replay env
(:mod:`rlsuite.apps.queryopt.envs.replay`) trains on the stored features, and
regression protection compares runtimes per shape. Identifiers (table and column
names) stay in the shape, as they are in the query text.

The store is bounded: it keeps the newest ``window`` executions (older rows are
deleted as new ones arrive), and it is durable: a restarted server reads it back.
It is a file of its own, marked as such in a ``meta`` table; a file that is not
SQLite, or a SQLite file that is not an experience store (another program's, or of
another format or workload schema), raises :class:`StoreError` naming the file, and
is never written to. The features are a model's input over its own actions (its rules,
in order): a store records them by name in ``meta.rules`` (the MDP's default 14 too; a store
made before that records none and is read as the default 14), and one opened for a server
over other actions is refused the same way.

Example::

    >>> store = ExperienceStore("/var/tmp/qopt-experience.sqlite", schema="qopt_udf")  # doctest: +SKIP
    >>> store.add(Experience("qopt_udf", "SELECT ...", ("filter_after_aggregation",), 3.2))  # doctest: +SKIP
    >>> store.count()                                                                   # doctest: +SKIP
    1
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

APP = "rlsuite-pg_qopt-experience"
"""The ``meta.app`` value that marks a file as an experience store."""
FORMAT = 1
"""Version of the tables' layout."""
KINDS = ("model", "verified", "explore", "standard")
"""How a decision came to be served: the model's (validated) choice, an exploration
of a not-yet-validated decision, or the standard plan measured as the baseline."""


class StoreError(RuntimeError):
    """The experience store cannot be used; the message names the file and says why."""


@dataclass(frozen=True)
class Experience:
    """One measured execution of a served decision."""

    schema: str
    """The workload schema (first in the session's ``search_path``)."""
    shape: str
    """The statement with literals replaced by ``?``."""
    applied: tuple[str, ...]
    """The rules applied, in order; empty for the standard plan."""
    ms: float
    """The executor's runtime (milliseconds)."""
    kind: str = "model"
    """One of :data:`KINDS`."""
    features: tuple[tuple[float, ...], ...] = ()
    """The observation before each rewrite step and after the last one (the model's
    input along the decision); empty when not known."""
    version: int = 0
    """The model version that served it (0: the model the server started with)."""
    time: float = field(default_factory=time.time)
    """When the reward arrived (seconds since the epoch)."""


SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    time REAL NOT NULL,
    schema TEXT NOT NULL,
    shape TEXT NOT NULL,
    applied TEXT NOT NULL,
    kind TEXT NOT NULL,
    version INTEGER NOT NULL,
    ms REAL NOT NULL,
    features TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_shape ON runs (schema, shape, applied);
CREATE TABLE IF NOT EXISTS models (
    version INTEGER PRIMARY KEY,
    time REAL NOT NULL,
    path TEXT NOT NULL,
    note TEXT NOT NULL
);
"""


class ExperienceStore:
    """A bounded window of :class:`Experience` rows in one SQLite file (thread-safe)."""

    def __init__(
        self,
        path: str | os.PathLike,
        schema: str,
        window: int = 5000,
        rules: Sequence[str] = (),
    ):
        """``rules``: the actions the stored features are over (the served model's own rules,
        or ``serve --rules``'s, in order; empty: the MDP's default 14), recorded by name."""
        from rlsuite.apps.queryopt.rules import RULE_NAMES

        if window < 1:
            raise ValueError(f"window must be >= 1, got {window}")
        self.path = os.path.abspath(os.fspath(path))
        self.schema = schema
        self.window = int(window)
        self.rules: tuple[str, ...] = tuple(rules) or RULE_NAMES
        """The actions the features are over, by name, in order (never empty)."""
        self._lock = threading.Lock()
        self._since_prune = 0
        self._closed_count: int | None = None
        self._conn = self._open()

    # ------------------------------------------------------------ opening
    def _open(self) -> sqlite3.Connection:
        parent = os.path.dirname(self.path)
        if not os.path.isdir(parent):
            raise StoreError(f"experience store {self.path}: directory {parent} does not exist")
        fresh = not os.path.exists(self.path) or os.path.getsize(self.path) == 0
        if not fresh and not os.access(self.path, os.W_OK):
            raise StoreError(f"experience store {self.path} is not writable")
        if fresh and not os.access(parent, os.W_OK):
            raise StoreError(
                f"experience store {self.path}: cannot create it ({parent} is read-only)"
            )
        try:
            conn = sqlite3.connect(self.path, check_same_thread=False, timeout=10)
            if not fresh:
                self._check_existing(conn)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            if fresh:
                conn.executescript(SCHEMA_SQL)
                conn.executemany(
                    "INSERT INTO meta VALUES (?, ?)",
                    [("app", APP), ("format", str(FORMAT)), ("schema", self.schema)]
                    + [("rules", json.dumps(list(self.rules)))],
                )
                conn.commit()
        except sqlite3.DatabaseError as e:
            raise StoreError(
                f"experience store {self.path} is not a readable SQLite database ({e}); "
                "it was left as it is: move it away or pass another --store"
            ) from e
        return conn

    def _check_existing(self, conn: sqlite3.Connection) -> None:
        """Refuse (never rewrite) a file that is not this kind of store."""
        ok = conn.execute("PRAGMA quick_check").fetchone()
        if not ok or ok[0] != "ok":
            raise StoreError(
                f"experience store {self.path} is corrupt (quick_check: {ok and ok[0]}); it was "
                "left as it is: move it away or pass another --store"
            )
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if "meta" not in tables:
            raise StoreError(
                f"{self.path} is a SQLite database but not a pg_qopt experience store (tables: "
                f"{', '.join(sorted(tables)) or 'none'}); it was left as it is: pass another --store"
            )
        meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        if meta.get("app") != APP:
            raise StoreError(
                f"{self.path} is a SQLite database but not a pg_qopt experience store "
                f"(meta app = {meta.get('app')!r}); it was left as it is: pass another --store"
            )
        if meta.get("format") != str(FORMAT):
            raise StoreError(
                f"experience store {self.path} has format {meta.get('format')}, this server "
                f"reads format {FORMAT}; it was left as it is: pass another --store"
            )
        if meta.get("schema") != self.schema:
            raise StoreError(
                f"experience store {self.path} holds experience of schema {meta.get('schema')}, "
                f"this server serves {self.schema}; pass another --store"
            )
        rules = recorded_rules(meta)
        if rules != self.rules:
            raise StoreError(
                f"experience store {self.path} holds features over "
                f"{_rules(rules)}, this server acts over {_rules(self.rules)}; "
                "pass another --store"
            )
        missing = {"runs", "models"} - tables
        if missing:
            raise StoreError(
                f"experience store {self.path} lacks table(s) {', '.join(sorted(missing))}; "
                "it was left as it is: move it away or pass another --store"
            )

    # ------------------------------------------------------------ writing
    def add(self, e: Experience) -> None:
        """Record one execution; the oldest rows beyond the window are dropped."""
        if e.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {e.kind!r}")
        row = (
            e.time,
            e.schema,
            e.shape,
            json.dumps(list(e.applied)),
            e.kind,
            int(e.version),
            float(e.ms),
            json.dumps([[round(float(x), 6) for x in v] for v in e.features]),
        )
        with self._lock:
            self._conn.execute(
                "INSERT INTO runs (time, schema, shape, applied, kind, version, ms, features) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                row,
            )
            self._since_prune += 1
            if self._since_prune >= max(1, min(100, self.window // 10)):
                self._prune()
            self._conn.commit()

    def _prune(self) -> None:
        self._since_prune = 0
        self._conn.execute(
            "DELETE FROM runs WHERE id <= (SELECT max(id) FROM runs) - ?", (self.window,)
        )

    def add_model(self, version: int, path: str, note: str) -> None:
        """Record a model version the server swapped in."""
        with self._lock:
            self._conn.execute(
                "INSERT OR REPLACE INTO models VALUES (?, ?, ?, ?)",
                (int(version), time.time(), path, note),
            )
            self._conn.commit()

    # ------------------------------------------------------------ reading
    def count(self) -> int:
        with self._lock:
            if self._closed_count is not None:  # closed: what it held then
                return self._closed_count
            self._prune()
            self._conn.commit()
            return int(self._conn.execute("SELECT count(*) FROM runs").fetchone()[0])

    def recent(self, limit: int | None = None) -> list[Experience]:
        """The newest ``limit`` rows (default: the whole window), oldest first."""
        n = self.window if limit is None else min(int(limit), self.window)
        with self._lock:
            rows = self._conn.execute(
                "SELECT time, schema, shape, applied, kind, version, ms, features FROM runs "
                "ORDER BY id DESC LIMIT ?",
                (n,),
            ).fetchall()
        return [_experience(r) for r in reversed(rows)]

    def models(self) -> list[dict]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT version, time, path, note FROM models ORDER BY version"
            ).fetchall()
        return [dict(version=v, time=t, path=p, note=n) for v, t, p, n in rows]

    def __iter__(self) -> Iterator[Experience]:
        return iter(self.recent())

    def close(self) -> None:
        if self._closed_count is not None:
            return
        n = self.count()
        with self._lock:
            self._conn.close()
            self._closed_count = n


def recorded_rules(meta: dict[str, str]) -> tuple[str, ...]:
    """The rules a store's ``meta`` records (a store that records none: the default 14)."""
    from rlsuite.apps.queryopt.rules import RULE_NAMES

    return tuple(json.loads(meta["rules"])) if "rules" in meta else RULE_NAMES


def _rules(rules: Sequence[str]) -> str:
    from rlsuite.apps.queryopt.rules import RULE_NAMES

    if tuple(rules) == RULE_NAMES:
        return "the default rules"
    return f"its own {len(rules)} rules {', '.join(rules)}"


def _experience(r: Sequence) -> Experience:
    t, schema, shp, applied, kind, version, ms, feats = r
    return Experience(
        schema=schema,
        shape=shp,
        applied=tuple(json.loads(applied)),
        ms=float(ms),
        kind=kind,
        features=tuple(tuple(float(x) for x in v) for v in json.loads(feats)),
        version=int(version),
        time=float(t),
    )


def read_only(path: str | os.PathLike) -> list[Experience]:
    """Every row of a store, without writing to it (the replay env's env runners)."""
    p = os.path.abspath(os.fspath(path))
    if not os.path.exists(p):
        raise StoreError(f"experience store {p} does not exist")
    try:
        conn = sqlite3.connect(f"file:{p}?mode=ro", uri=True)
        try:
            rows = conn.execute(
                "SELECT time, schema, shape, applied, kind, version, ms, features FROM runs "
                "ORDER BY id"
            ).fetchall()
        finally:
            conn.close()
    except sqlite3.DatabaseError as e:
        raise StoreError(f"experience store {p} cannot be read: {e}") from e
    return [_experience(r) for r in rows]
