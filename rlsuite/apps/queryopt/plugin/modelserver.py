"""The model server that ``pg_qopt`` asks: decisions per query shape, from a trained model or rules.

Protocol (one line of JSON each way; a connection carries any number of messages in turn:
``pg_qopt`` keeps one per session for its plan requests, tools send one and close):

- ``{"op": "plan", "sql": ..., "search_path": ..., "database": ..., "mode": ...}`` ->
  ``{"sql": REWRITTEN or null, "arm": {setting: value}, "key": ..., "note": ...}``
  or ``{"error": ...}``.
- ``{"op": "reward", "key": ..., "ms": ...}`` -> no answer (the extension does not wait):
  the executor's runtime of a plan made with decision ``key``. The extension holds its
  rewards and sends them with its next ``plan`` request (``"rewards": [{"key": ...,
  "ms": ...}, ...]``: learned from once the answer is written), or on their own as
  ``{"op": "rewards", "items": [...]}``.
- ``{"op": "stats"}`` -> counters, cache sizes and reward summaries; ``{"op": "ping"}``.

Decisions come from a :class:`Decider`, which serves any of the queryopt app's
rewriters (:class:`~rlsuite.apps.queryopt.rewriter.Rewriter`): :class:`ModelDecider`
runs a checkpoint of ``qopt-bench train`` (the
:class:`~rlsuite.apps.queryopt.train.LearnedRewriter`), :class:`RulesDecider` applies
fixed rules (no learned model). Both validate a rewrite on the database (it must
re-parse and plan) and fall back to the original SQL.

Caching: an answer is cached per exact statement text (a dict look-up, answered in
microseconds), and the chosen rules per query *shape* (the text with literals replaced
by ``?``, from sqlglot's tokenizer), so a new instance of a known shape replays the
rules without running the model. A miss is decided on one background worker; the
first request waits at most ``wait_ms`` for it (later ones before it lands do not wait,
nor does any while there is no model, nor while recent decisions took longer than
``wait_ms``, the warm-up's timed decision counting as the first) and otherwise gets "no
change yet" (the standard plan) while the decision lands in the cache for the next time.
Background work a request starts (a decision, a row check) starts once its answer is
written, and the decider is warmed on one of the workload's training statements before
the server listens. ``serve_forever`` (the CLI's own process) then freezes the heap that
start-up left (``freeze_heap``), so that no full garbage collection stalls an answer.

Example::

    >>> srv = ModelServer("/tmp/qopt.sock", RulesDecider(dsn, "joins", ["eager_aggregation"]))  # doctest: +SKIP
    >>> srv.start()                                  # serves in a background thread  # doctest: +SKIP
    >>> request("/tmp/qopt.sock", {"op": "plan", "sql": SEED_QUERY, "search_path": "qopt_joins"})  # doctest: +SKIP
    {'sql': 'SELECT ...', 'arm': {}, 'key': '...', 'note': 'eager_aggregation (decided in 41.2 ms)'}
"""

from __future__ import annotations

import concurrent.futures as cf
import gc
import hashlib
import json
import logging
import math
import os
import socket
import socketserver
import stat
import statistics
import threading
import time
from collections import defaultdict, deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rlsuite.apps.queryopt.plugin.experience import Experience, ExperienceStore
from rlsuite.apps.queryopt.plugin.online import OnlineConfig, OnlineLearner, ShapeBook
from rlsuite.apps.queryopt.rewriter import Decision, FixedRules, Rewriter

if TYPE_CHECKING:
    from rlsuite.apps.queryopt.db import Database

ARM_SETTINGS = ("join_collapse_limit", "from_collapse_limit", "geqo")
"""Settings besides ``enable_*`` that an answer's arm may carry (the extension refuses others)."""
MAX_REQUEST = 4 * 1024 * 1024
log = logging.getLogger("rlsuite.queryopt.serve")


def default_socket() -> str:
    """``/tmp/rlsuite-qopt-<uid>/model.sock`` (a directory the ``postgres`` user can enter)."""
    return f"/tmp/rlsuite-qopt-{os.geteuid()}/model.sock"


def check_address(address: str) -> None:
    """A Unix socket path, or ``localhost:PORT`` / ``127.0.0.1:PORT``; anything else raises."""
    if address.startswith("/"):
        return
    host, _, port = address.rpartition(":")
    if host not in ("localhost", "127.0.0.1") or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(
            f"address {address!r}: the model server listens on this machine only "
            "(localhost:PORT or 127.0.0.1:PORT), or on an absolute Unix socket path"
        )


def strip_statement(sql: str) -> str:
    """The statement without surrounding whitespace and trailing semicolons."""
    s = sql.strip()
    while s.endswith(";"):
        s = s[:-1].rstrip()
    return s


def shape(sql: str) -> str:
    """The query's shape: tokens with literals replaced by ``?`` (keywords upper-cased)."""
    from sqlglot.tokens import Tokenizer, TokenType

    try:
        toks = Tokenizer().tokenize(sql)
    except Exception:  # noqa: BLE001 - untokenisable: the text is its own shape
        return " ".join(sql.split())
    out = []
    for t in toks:
        if t.token_type in (TokenType.NUMBER, TokenType.STRING):
            out.append("?")
        elif t.token_type == TokenType.VAR:
            out.append(t.text.lower())
        else:
            out.append(t.text.upper())
    return " ".join(out)


def search_path_schemas(search_path: str) -> list[str]:
    """``'"$user", public'`` -> ``['$user', 'public']``."""
    return [p.strip().strip('"') for p in (search_path or "").split(",") if p.strip()]


def _no_recursion(dsn: str) -> str:
    """The DSN with ``qopt.enabled=off``, so the server's own queries never ask the server."""
    if "://" in dsn:
        sep = "&" if "?" in dsn else "?"
        return f"{dsn}{sep}options=-c%20qopt.enabled%3Doff"
    return f"{dsn} options='-c qopt.enabled=off'"


def served_settings(settings: Mapping[str, str]) -> dict[str, str]:
    """The workload's session settings as a served session can have them: without any
    ``qopt.`` setting.

    A served session loads pg_qopt, which reserves the ``qopt.`` prefix, so no served
    statement runs with, say, the udf workload's ``qopt.udf_cost``: its UDF runs at the
    function's own default. The server's row checks and timed runs must run as the served
    statement does. With the workload's setting pinned they ran the UDF at another cost
    (1000 loop iterations where the served statements ran 100: 32 ms checks of a 4 ms
    query, and ratios measured at the wrong cost after a drift)."""
    return {k: str(v) for k, v in settings.items() if not k.startswith("qopt.")}


def _arm(settings: dict[str, str], base: dict[str, str]) -> dict[str, str]:
    return {
        k: str(v)
        for k, v in settings.items()
        if (k.startswith("enable_") or k in ARM_SETTINGS) and base.get(k) != str(v)
    }


class Decider:
    """A :class:`~rlsuite.apps.queryopt.rewriter.Rewriter` as the model server serves it.

    The rewriter works on sessions with ``qopt.enabled=off`` (the server's own
    queries never ask the server). A decision keeps, of its settings, only the
    planner arm (what differs from the workload's own settings), and a new
    statement of a known shape gets the shape's rules replayed
    (:class:`~rlsuite.apps.queryopt.rewriter.FixedRules`) instead of the rewriter.
    """

    def __init__(
        self,
        rewriter: Rewriter,
        db: Database,
        base: Mapping[str, str],
        workload: str = "joins",
        workload_config: Mapping[str, Any] | None = None,
        max_steps: int = 2,
        env: Any = None,
    ):
        self.rewriter = rewriter
        self.db = db
        self.base = served_settings(base)
        self.schema = rewriter.schema
        self.name = rewriter.name
        self.workload, self.workload_config = workload, dict(workload_config or {})
        self.max_steps = int(max_steps)
        self._env = env

    @property
    def rewrites(self) -> bool:
        """Whether a new statement's decision may be anything but the standard plan (a
        request for one waits ``wait_ms`` only then)."""
        return True

    @property
    def env(self) -> Any:
        """The MDP env that featurizes statements (the model's own, or one of ``max_steps``)."""
        if self._env is None:
            from rlsuite.apps.queryopt.envs.rewrite import QueryRewriteEnv

            self._env = QueryRewriteEnv(
                dsn=self.db.dsn,
                workload=self.workload,
                workload_config=self.workload_config,
                max_steps=self.max_steps,
            )
        return self._env

    def features(self, sql: str, applied: Sequence[str]) -> list[list[float]]:
        """The model's input along ``applied``: the state before each rule and after the last."""
        return [[float(x) for x in v] for v in self.env.observe(sql, applied)]

    def candidates(self, sql: str) -> list[tuple[str, ...]]:
        """Each rule that applies to ``sql`` on its own (what exploration may try)."""
        from rlsuite.apps.queryopt import rules as R

        self.env.reset(seed=0, options={"sql": sql})
        return [(n,) for n, q in self.env._applicable.items() if isinstance(q, R.Query)]

    def validated(
        self,
        sql: str,
        applied: Sequence[str],
        original: list | None,
        timeout_ms: int,
        timing: dict | None = None,
    ) -> Decision | str:
        """``applied`` on ``sql`` if it applies, plans and returns the original's rows
        (``original``); otherwise why not. ``timing["s"]`` gets the rewrite's runtime in
        that check."""
        from rlsuite.apps.queryopt.rewriter import has_order_by, rewrite, same_rows

        d = rewrite(self.db, self.schema, sql, list(applied), False, timeout_ms, self.base)
        if tuple(d.applied) != tuple(applied):
            return f"{'+'.join(applied)} does not apply here ({d.reason or 'no change'})"
        if original is None:
            return f"the original ran past {timeout_ms} ms: its rows cannot be checked"
        got = self.db.run(d.sql, self.schema, timeout_ms, d.settings)
        if timing is not None:
            timing["s"] = got.runtime_s
        if got.timed_out:
            return f"{'+'.join(applied)} ran past {timeout_ms} ms while its rows were checked"
        if not same_rows(original, got.rows or [], ordered=has_order_by(sql)):
            return f"{'+'.join(applied)} returned other rows than the original: never served"
        return self._served(sql, d)

    def warm(self) -> float:
        """Run every step of a decision once on one of the workload's training statements and
        throw the results away: imports, first-call caches and the check connection are paid
        for before the first request, not by it. Then time the decision and its row check once
        more, warm: returns those seconds, what a first request would wait for."""
        from rlsuite.apps.queryopt.workloads import get

        sql = get(self.workload, **self.workload_config).queries("train", 1, 0)[0]
        self.decide(sql)
        cands = self.candidates(sql)
        self.features(sql, ())
        original = self.db.run(sql, self.schema, 1000, self.base)
        for applied in cands[:1]:
            self.features(sql, applied)
            self.validated(sql, applied, original.rows or [], 1000, {})
        t0 = time.perf_counter()
        d = self.decide(sql)
        if d.applied:  # the decision's row check, as a new statement's first request has it
            original = self.db.run(sql, self.schema, 1000, self.base)
            self.validated(sql, d.applied, original.rows or [], 1000, {})
        return time.perf_counter() - t0

    def decide(self, sql: str) -> Decision:
        """The rewriter's decision for a new statement."""
        return self._served(sql, self.rewriter.rewrite(sql, check=False))

    def replay(self, sql: str, applied: Sequence[str]) -> Decision:
        """The rules ``applied`` (a known shape's) on ``sql``, validated as any rewrite."""
        return self._served(sql, FixedRules(self.db, self.schema, applied, self.base).rewrite(sql))

    def _served(self, sql: str, d: Decision) -> Decision:
        if not d.applied:
            return Decision(sql, {}, (), dict(d.reasons))
        return Decision(d.sql, _arm(d.settings, self.base), tuple(d.applied))

    def close(self) -> None:
        self.rewriter.close()
        self.db.close()


class RulesDecider(Decider):
    """Fixed rules in order (the queryopt app's rewriter with its validation; no model)."""

    def __init__(
        self,
        dsn: str,
        workload: str,
        rules: Sequence[str],
        workload_config: dict[str, Any] | None = None,
        max_steps: int = 2,
    ):
        from rlsuite.apps.queryopt.db import Database
        from rlsuite.apps.queryopt.workloads import get

        w = get(workload, **(workload_config or {}))
        db = Database(_no_recursion(dsn))  # connects on first use
        super().__init__(
            FixedRules(db, w.schema, rules, served_settings(w.settings())),
            db,
            w.settings(),
            workload,
            workload_config,
            max_steps,
        )
        self.rules = list(rules)
        self.name = "rules: " + ",".join(self.rules) if self.rules else "no model yet"

    @property
    def rewrites(self) -> bool:
        return bool(self.rules)


class ModelDecider(Decider):
    """A trained checkpoint (``qopt-bench train``) through the queryopt app's LearnedRewriter."""

    def __init__(
        self,
        model: str,
        dsn: str,
        workload: str | None = None,
        workload_config: dict[str, Any] | None = None,
        timeout_ms: int = 60_000,
    ):
        from rlsuite.apps.queryopt.db import Database
        from rlsuite.apps.queryopt.train import LearnedRewriter
        from rlsuite.apps.queryopt.workloads import get

        learned = LearnedRewriter(
            model,
            _no_recursion(dsn),
            workload=workload,
            workload_config=workload_config,
            timeout_ms=timeout_ms,
        )
        env = learned.env
        name = env.workload.name if hasattr(env, "workload") else (workload or "joins")
        w = get(name, **(workload_config or {}))
        wcfg = workload_config
        if wcfg is None:
            wcfg = {
                k: getattr(env.workload, k)
                for k in ("udf_cost", "scale")
                if hasattr(env.workload, k)
            }
        super().__init__(
            learned,
            Database(_no_recursion(dsn)),
            w.settings(),
            name,
            wcfg,
            learned.featurizer.max_steps,
            env,
        )
        self.checkpoint = learned.checkpoint


@dataclass
class Stats:
    requests: int = 0
    exact_hits: int = 0
    shape_hits: int = 0
    misses: int = 0
    not_ready: int = 0
    passthrough: int = 0
    errors: int = 0
    rewards: int = 0
    answer_us: list[float] = field(default_factory=list)


@dataclass
class Statement:
    """One statement text the server has seen: its shape and its validated answers."""

    shape: tuple[str, str]
    """(normalised search_path, shape)."""
    how: str
    """How its decision came to be (for the answer's note)."""
    answers: dict[tuple[str, ...], dict | str] = field(default_factory=dict)
    """Per decision: the answer (validated; rows checked), or why it cannot be served."""
    rows: list | None = None
    """The original's rows (computed once, for the row checks)."""
    checked: bool = False
    original_s: float | None = None
    """The original's runtime when its rows were computed."""


class ModelServer:
    """Serves decisions over a Unix socket (or ``localhost:PORT``); see the module doc."""

    def __init__(
        self,
        address: str,
        decider: Decider,
        wait_ms: float = 40.0,
        rewards_path: str | None = None,
        online: OnlineConfig | None = None,
        store: ExperienceStore | None = None,
        check_timeout_ms: int = 60_000,
    ):
        self.address = address
        self.decider = decider
        self.wait_ms = float(wait_ms)
        self.rewards_path = rewards_path
        self.online = online or OnlineConfig(explore_share=0.0)
        self.book = ShapeBook(self.online)
        self.store = store
        self.learner: OnlineLearner | None = None
        self.check_timeout_ms = int(check_timeout_ms)
        self.version = 0
        self.models: list[dict[str, Any]] = [
            {"version": 0, "name": decider.name, "time": time.time()}
        ]
        self.exact: dict[tuple[str, str], Statement] = {}
        self.examples: dict[tuple[str, str], str] = {}
        self.rewards: dict[str, list[float]] = defaultdict(list)
        self.decisions: dict[str, dict[str, Any]] = {}
        self.features: dict[tuple[tuple[str, str], tuple[str, ...]], list] = {}
        self.stats = Stats()
        self._bytes: dict[tuple, bytes] = {}
        self._key_shape: dict[str, tuple[str, str]] = {}
        self._pending: dict[Any, cf.Future] = {}
        self._lock = threading.Lock()
        self._pool = cf.ThreadPoolExecutor(max_workers=1, thread_name_prefix="qopt-decide")
        self._server: socketserver.BaseServer | None = None
        self._thread: threading.Thread | None = None
        self._after = threading.local()
        self._decide_s: deque[float] = deque(maxlen=20)  # how long recent decisions took
        self.frozen = 0  # start-up objects frozen by serve_forever

    # -------------------------------------------------------------- serving
    def _make_server(self) -> socketserver.BaseServer:
        try:  # the decider's env (a connection, the workload's statistics) before any query
            _ = self.decider.env
        except Exception as e:  # noqa: BLE001 - the first decision says why
            log.warning("the decider could not prepare its env yet: %s: %s", type(e).__name__, e)
        else:
            try:
                took = self.decider.warm()
                # what a first request would wait for: with a 4 ms query and a 20 ms decision
                # no request waits, not even the first few (see _too_slow_to_wait)
                self._decide_s.append(took)
                log.info("decider warmed; a decision and its row check take %.1f ms", took * 1e3)
            except Exception as e:  # noqa: BLE001 - only the first requests pay for it then
                log.warning("the decider could not be warmed: %s: %s", type(e).__name__, e)
        handler = _handler_for(self)
        if self.address.startswith("/"):
            path = Path(self.address)
            path.parent.mkdir(parents=True, exist_ok=True)
            # the server runs as `postgres`: it must enter the directory and write the socket
            os.chmod(path.parent, os.stat(path.parent).st_mode | stat.S_IXOTH | stat.S_IXGRP)
            if path.exists() or path.is_symlink():
                if not stat.S_ISSOCK(os.lstat(path).st_mode):
                    raise FileExistsError(
                        f"{path} exists and is not a socket; choose another --socket"
                    )
                if _alive(str(path)):
                    raise FileExistsError(f"a model server already answers on {path}")
                path.unlink()

            class Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
                daemon_threads = True

            srv = Server(str(path), handler)
            os.chmod(path, 0o666)
            return srv
        check_address(self.address)
        port = self.address.rpartition(":")[2]

        class TCPServer(socketserver.ThreadingMixIn, socketserver.TCPServer):
            daemon_threads = True
            allow_reuse_address = True

        return TCPServer(("127.0.0.1", int(port)), handler)

    def start(self) -> ModelServer:
        """Serve in a background thread (tests, benchmarks)."""
        self._server = self._make_server()
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="qopt-modelserver", daemon=True
        )
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        """Serve until interrupted (``qopt-bench serve``), in a process of its own: its
        start-up heap is frozen once the decider is warmed (:func:`freeze_heap`)."""
        self._server = self._make_server()
        self.frozen = freeze_heap()
        log.info("start-up heap frozen: %d objects out of the collector's reach", self.frozen)
        try:
            self._server.serve_forever()
        finally:
            self.close()

    def close(self) -> None:
        if self._server is not None:
            if self._thread is not None:
                self._server.shutdown()
            self._server.server_close()
            if self.address.startswith("/") and os.path.exists(self.address):
                os.unlink(self.address)
            self._server = None
        if self.learner is not None:
            self.learner.close()
        self._pool.shutdown(wait=True, cancel_futures=True)
        self.decider.close()
        if self.store is not None:
            self.store.close()

    def __enter__(self) -> ModelServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------ messages
    def handle(self, line: bytes) -> bytes | None:
        """One request line -> one answer line (None: no answer, for rewards)."""
        try:
            msg = json.loads(line)
            if not isinstance(msg, dict):
                raise ValueError("the request is not a JSON object")
            op = msg.get("op")
            if op == "plan":
                out = self._plan(msg)
                if msg.get("rewards"):  # learned from once the answer is written
                    try:
                        self._after.rewards = self._checked_rewards(msg["rewards"])
                    except ValueError as e:  # the answer still stands
                        self.stats.errors += 1
                        log.warning("rewards with a plan request refused: %s", e)
                return out
            if op == "reward":
                self._learn(self._checked_rewards([msg]))
                return None
            if op == "rewards":
                self._learn(self._checked_rewards(msg.get("items")))
                return None
            if op == "stats":
                return _line(self.summary())
            if op == "ping":
                return _line({"ok": True, "decider": self.decider.name})
            raise ValueError(f"unknown op {op!r} (plan, reward, stats, ping)")
        except Exception as e:  # noqa: BLE001 - answered, never crashes the server
            self.stats.errors += 1
            return _line({"error": f"{type(e).__name__}: {e}"})

    def _plan(self, msg: dict) -> bytes:
        t0 = time.perf_counter()
        self.stats.requests += 1
        sql = strip_statement(str(msg.get("sql") or ""))
        sp = ",".join(search_path_schemas(str(msg.get("search_path") or "")))
        key = (sp, sql)
        st = self.exact.get(key)
        if st is not None:
            self.stats.exact_hits += 1
            out = self._answer(key, st)
            self.stats.answer_us.append((time.perf_counter() - t0) * 1e6)
            return out
        schemas = [s for s in search_path_schemas(sp) if s != "$user"]
        if not sql or not schemas or schemas[0] != self.decider.schema:
            self.stats.passthrough += 1
            return _line(
                {
                    "sql": None,
                    "arm": {},
                    "key": "",
                    "note": f"search_path {sp!r} does not start with the model's schema "
                    f"{self.decider.schema}",
                }
            )
        with self._lock:
            waited = key in self._pending  # an earlier request waited for it already
        if waited or not self.decider.rewrites or self._too_slow_to_wait():
            self._later(key, self._decide, key)
            self.stats.not_ready += 1
            return _line(
                {"sql": None, "arm": {}, "key": "", "note": "deciding; the standard plan meanwhile"}
            )
        fut = self._submit(key, self._decide, key)
        try:
            fut.result(timeout=self.wait_ms / 1000.0)
        except cf.TimeoutError:
            self.stats.not_ready += 1
            return _line(
                {"sql": None, "arm": {}, "key": "", "note": "deciding; the standard plan meanwhile"}
            )
        self.stats.answer_us.append((time.perf_counter() - t0) * 1e6)
        return self._answer(key, self.exact[key])

    def _submit(self, tag: Any, fn: Any, *args: Any) -> cf.Future:
        """Run ``fn`` on the one decision worker, once per ``tag`` at a time."""
        with self._lock:
            fut = self._pending.get(tag)
            if fut is None:

                def run() -> None:
                    try:
                        fn(*args)
                    finally:
                        with self._lock:
                            self._pending.pop(tag, None)

                fut = self._pool.submit(run)
                self._pending[tag] = fut
        return fut

    def _too_slow_to_wait(self) -> bool:
        """Whether decisions lately took longer than ``wait_ms`` (the median of the last 20):
        then waiting for one only delays the standard plan, which is served at once."""
        if not self._decide_s:
            return False
        return statistics.median(tuple(self._decide_s)) * 1000.0 > self.wait_ms

    def _later(self, tag: Any, fn: Any, *args: Any) -> None:
        """:meth:`_submit`, but inside a request only once its answer is written: the worker
        starting at once would take the GIL from the thread that is answering."""
        later = getattr(self._after, "later", None)
        if later is None:
            self._submit(tag, fn, *args)
        else:
            later.append((tag, fn, args))

    def _answer(self, key: tuple[str, str], st: Statement) -> bytes:
        """The decision for this execution (served, or an exploration), as bytes."""
        sk = st.shape
        state = self.book.state(sk)
        if state.model_version != self.version and self.version > 0:
            self._later(("refresh", sk), self._refresh, sk)

        def ready(a: tuple[str, ...]) -> bool:
            if a not in st.answers:  # validate it in the background for a later answer
                self._later(("build", key, a), self._build, key, st, a)
            return isinstance(st.answers.get(a), dict)

        if self.online.explore_share > 0:
            # a shape's candidates are row-checked one at a time, in the background, as its
            # statements come (shapes take turns): the checks time them, so that the
            # fastest is served verified and slow ones are never explored
            todo = [c for c in state.candidates if c not in state.checks and c not in st.answers]
            if todo:
                self._later(("check", sk), self._build, key, st, todo[0])
        applied, kind = self.book.pick(sk, ready)
        ans = st.answers.get(applied)
        if ans is None:  # not validated for this statement yet: the standard plan meanwhile
            self._later(("build", key, applied), self._build, key, st, applied)
            applied, kind, ans = (), "standard", st.answers.get(())
        if not isinstance(ans, dict):  # cannot be served (rows differ, does not apply)
            applied, kind, ans = (), "standard", st.answers.get(())
        ck = (key, applied, kind, self.version)
        out = self._bytes.get(ck)
        if out is None:
            dkey = decision_key(sk, applied, kind, self.version)
            self._key_shape[dkey] = sk
            self.decisions.setdefault(
                dkey,
                {"shape": sk[1], "applied": list(applied), "arm": ans["arm"], "kind": kind},
            )
            out = _line({**ans, "key": dkey, "note": f"{ans['note']} [{st.how}; {kind}]"})
            self._bytes[ck] = out
        return out

    def _decide(self, key: tuple[str, str]) -> None:
        sp, sql = key
        t0 = time.perf_counter()
        sk = (sp, shape(sql))
        st = Statement(sk, "")
        state = self.book.state(sk)
        try:
            if state.model_choice is not None and state.model_version == self.version:
                self.stats.shape_hits += 1
                how = "rules of a known shape"
            else:
                self.stats.misses += 1
                how = "decided"
                self._choose(sk, sql)
        except Exception as e:  # noqa: BLE001 - the standard plan, with the reason
            how = f"decider failed: {type(e).__name__}: {e}"
            self.book.set_model_choice(sk, (), self.version)
        self.examples.setdefault(sk, sql)
        self._build(key, st, ())
        served = self.book.served(sk)
        if served:
            self._build(key, st, served)
        took = time.perf_counter() - t0
        st.how = f"{self.decider.name}; {how} in {took * 1000:.1f} ms"
        self._decide_s.append(took)
        self.exact[key] = st  # served from now on; what exploration may try comes after
        try:
            self.book.add_candidates(sk, self.decider.candidates(sql))
        except Exception as e:  # noqa: BLE001 - nothing to explore for this shape
            log.info("shape %s: no candidates (%s: %s)", sk[1], type(e).__name__, e)
            return
        if self.online.explore_share > 0:
            # the first candidate's row check at once, not at the shape's next request:
            # a rewrite it times faster is then served from that request on
            todo = [c for c in state.candidates if c not in state.checks]
            if todo:
                self._build(key, st, todo[0])

    def _choose(self, sk: tuple[str, str], sql: str) -> None:
        version = self.version
        d = self.decider.decide(sql)
        self.book.set_model_choice(sk, tuple(d.applied), version)

    def _refresh(self, sk: tuple[str, str]) -> None:
        """A new model's choice for a known shape (on its example statement)."""
        if self.book.state(sk).model_version == self.version:
            return
        try:
            self._choose(sk, self.examples[sk])
        except Exception as e:  # noqa: BLE001 - keep serving the old choice
            log.warning("shape %s: the new model failed to decide (%s)", sk[1], e)

    def _build(self, key: tuple[str, str], st: Statement, applied: tuple[str, ...]) -> None:
        """Validate ``applied`` for this statement (rows checked) and keep its answer."""
        if applied in st.answers:
            return
        sql = key[1]
        sk = st.shape
        if not applied:
            answer = {"sql": None, "arm": {}, "note": "no rewrite"}
        else:
            try:
                if not st.checked:
                    r = self.decider.db.run(
                        sql, self.decider.schema, self.check_timeout_ms, self.decider.base
                    )
                    st.rows, st.checked = (None if r.timed_out else r.rows or []), True
                    st.original_s = None if r.timed_out else r.runtime_s
                timing: dict[str, float] = {}
                d = self.decider.validated(
                    sql, applied, st.rows, self._check_timeout(st.original_s), timing
                )
                if st.original_s and "s" in timing:
                    self.book.set_check(sk, applied, timing["s"] / max(st.original_s, 1e-6))
            except Exception as e:  # noqa: BLE001 - never served, with the reason
                d = f"{type(e).__name__}: {e}"
            if isinstance(d, str):
                log.info("shape %s: %s not served: %s", sk[1], "+".join(applied), d)
                st.answers[applied] = d
                return
            changed = d.sql if d.sql != sql else None
            answer = {"sql": changed, "arm": d.settings, "note": ", ".join(applied)}
        # the features first: once the answer is published, its runtime may come back at once
        if (sk, applied) not in self.features:
            try:
                self.features[(sk, applied)] = self.decider.features(sql, applied)
            except Exception:  # noqa: BLE001 - an unparseable statement has no features
                self.features[(sk, applied)] = []
        st.answers[applied] = answer

    def _check_timeout(self, original_s: float | None) -> int:
        """A rewrite's row check may run 5x the original plus a second at most (a rewrite
        slower than that is never served), within ``check_timeout_ms``."""
        if original_s is None:
            return self.check_timeout_ms
        return int(min(self.check_timeout_ms, 1000.0 + 5000.0 * original_s))

    # ------------------------------------------------------------ learning
    def swap(self, decider: Decider, version: int, path: str) -> None:
        """Serve a new model from now on (atomically: one reference); shapes are re-decided
        in the background, each keeping its old decision until then."""
        old, self.decider = self.decider, decider
        self.version = int(version)
        self.models.append(
            {"version": version, "name": decider.name, "path": path, "time": time.time()}
        )
        self._pool.submit(old.close)

    def current_choices(self) -> dict[str, tuple[str, ...]]:
        """The served decision per shape (for the retrain's guard)."""
        return {r["shape"]: tuple(r["served"]) for r in self.book.report()}

    @staticmethod
    def _checked_rewards(items: Any) -> list[dict]:
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

    def _learn(self, rewards: list[dict]) -> None:
        for msg in rewards:
            self._reward(msg)

    def before_answer(self) -> None:
        """Hold the background work the coming request starts until :meth:`after_answer`."""
        self._after.later = []

    def after_answer(self) -> None:
        """Start the background work the request just answered asked for, and learn from
        the rewards that came with it (this thread's)."""
        later, self._after.later = getattr(self._after, "later", None), None
        for tag, fn, args in later or ():
            self._submit(tag, fn, *args)
        rewards = getattr(self._after, "rewards", None)
        if rewards:
            self._after.rewards = None
            try:
                self._learn(rewards)
            except Exception as e:  # noqa: BLE001 - never crashes the server
                self.stats.errors += 1
                log.warning("rewards not recorded: %s: %s", type(e).__name__, e)

    def _reward(self, msg: dict) -> None:
        k = str(msg.get("key") or "")
        ms = float(msg["ms"])
        if not math.isfinite(ms) or ms < 0:
            raise ValueError(f"a runtime must be a finite number of ms >= 0, got {ms}")
        try:
            self._record(k, ms)
        finally:  # counted once recorded everywhere: whoever waits on the count sees it all
            self.stats.rewards += 1

    def _record(self, k: str, ms: float) -> None:
        self.rewards[k].append(ms)
        if self.rewards_path:
            with open(self.rewards_path, "a") as f:
                f.write(json.dumps({"key": k, "ms": ms, "time": time.time()}) + "\n")
        d = self.decisions.get(k)
        if d is None:
            return  # a decision of another server process (or made up): not learned from
        kind, version = d["kind"], int(k[1:].split("-", 1)[0])
        sk = self._key_shape[k]
        applied = tuple(d["applied"])
        self.book.record(sk, applied, ms)
        if self.store is not None:
            self.store.add(
                Experience(
                    schema=self.decider.schema,
                    shape=d["shape"],
                    applied=applied,
                    ms=ms,
                    kind=kind,
                    features=tuple(tuple(v) for v in self.features.get((sk, applied), [])),
                    version=version,
                )
            )
        if self.learner is not None:
            self.learner.notify()

    def summary(self) -> dict[str, Any]:
        """Counters, the median cached answer time, rewards per decision, per-shape
        speed-ups, regressions caught, model versions and retrains."""
        s = self.stats
        us = sorted(s.answer_us)
        return {
            "decider": self.decider.name,
            "schema": self.decider.schema,
            "model_version": self.version,
            "requests": s.requests,
            "exact_hits": s.exact_hits,
            "shape_hits": s.shape_hits,
            "misses": s.misses,
            "not_ready": s.not_ready,
            "passthrough": s.passthrough,
            "errors": s.errors,
            "rewards": s.rewards,
            "cached_statements": len(self.exact),
            "cached_shapes": len(self.examples),
            "median_answer_us": us[len(us) // 2] if us else None,
            "frozen_objects": self.frozen,
            "explored": self.book.explored,
            "answers": self.book.answers,
            "explore_share": self.online.explore_share,
            "shapes": self.book.report(),
            "regressions_caught": list(self.book.regressions),
            "models": list(self.models),
            "retrains": [] if self.learner is None else list(self.learner.history),
            "retrainer": None if self.learner is None else self.learner.retrainer.state(),
            "store": None
            if self.store is None
            else {"path": self.store.path, "rows": self.store.count(), "window": self.store.window},
            "decisions": {
                k: {
                    **v,
                    "runs": len(self.rewards.get(k, [])),
                    "mean_ms": (
                        sum(self.rewards[k]) / len(self.rewards[k]) if self.rewards.get(k) else None
                    ),
                }
                for k, v in list(self.decisions.items())
            },
        }


def decision_key(sk: tuple[str, str], applied: Sequence[str], kind: str, version: int) -> str:
    """The key an answer carries (its reward comes back with it): how it was served
    (``m``odel, ``e``xplore, ``s``tandard), the model version, and a hash of the decision."""
    h = hashlib.sha1(f"{sk[0]}\n{sk[1]}\n{'+'.join(applied)}".encode()).hexdigest()[:16]
    return f"{kind[0]}{int(version)}-{h}"


def freeze_heap() -> int:
    """Collect once, then move every surviving object out of the collector's reach
    (``gc.freeze``); returns how many were frozen.

    After the imports (torch, RLlib, sqlglot) and the warm-up, a full collection walks about
    300k objects and holds the GIL for 150-250 ms. Answers stall behind it past the plugin's
    timeout, and the query runs the standard plan. Frozen, the start-up objects are never
    walked again, so later full collections only see what serving allocated since.
    """
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


def _line(obj: Any) -> bytes:
    return (json.dumps(obj, separators=(",", ":")) + "\n").encode()


def _handler_for(server: ModelServer) -> type[socketserver.StreamRequestHandler]:
    class Handler(socketserver.StreamRequestHandler):
        def handle(self) -> None:
            # one line per request, answered in order, until the client closes: pg_qopt
            # keeps one connection per session, tools send one request per connection
            while True:
                line = self.rfile.readline(MAX_REQUEST)
                if not line:
                    return
                server.before_answer()
                out = server.handle(line)
                if out is not None:
                    try:
                        self.wfile.write(out)
                        self.wfile.flush()
                    except OSError:
                        server.after_answer()
                        return  # the extension gave up waiting and closed the connection
                server.after_answer()

    return Handler


def _connect(address: str, timeout_s: float) -> socket.socket:
    if address.startswith("/"):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(timeout_s)
        s.connect(address)
    else:
        host, _, port = address.rpartition(":")
        s = socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s)
    return s


def request(address: str, msg: dict, timeout_s: float = 5.0) -> dict | None:
    """Send one message as the extension does; the answer (None for rewards)."""
    with _connect(address, timeout_s) as s:
        s.sendall(_line(msg))
        if msg.get("op") == "reward":
            return None
        buf = b""
        while not buf.endswith(b"\n"):
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
    return json.loads(buf)


def _alive(address: str) -> bool:
    try:
        return bool(request(address, {"op": "ping"}, timeout_s=0.5))
    except (OSError, ValueError):
        return False
