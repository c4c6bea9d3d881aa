"""The model server that ``pg_qopt`` asks: decisions per query shape, from a trained model or rules.

The server answers the messages of :mod:`.protocol` (a ``plan`` request per statement,
the runtimes that come back as rewards, ``stats``, ``ping``) with decisions of a
:class:`~rlsuite.apps.queryopt.plugin.decider.Decider` (a trained model's or fixed
rules', validated on the database), and records the rewards in its
:class:`~rlsuite.apps.queryopt.plugin.ledger.Ledger` (the rewards file, the experience
store) and its :class:`~rlsuite.apps.queryopt.plugin.online.ShapeBook` (exploration,
regression protection).

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
import json
import logging
import math
import os
import socketserver
import statistics
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rlsuite.apps.queryopt.plugin.decider import Decider
from rlsuite.apps.queryopt.plugin.experience import ExperienceStore
from rlsuite.apps.queryopt.plugin.ledger import Ledger, Stats, checked_rewards, decision_key
from rlsuite.apps.queryopt.plugin.online import OnlineConfig, ShapeBook
from rlsuite.apps.queryopt.plugin.protocol import (
    encode_line,
    handler_for,
    listen,
    search_path_schemas,
    shape,
    strip_statement,
)
from rlsuite.apps.queryopt.verify import guarantee

if TYPE_CHECKING:
    from rlsuite.apps.queryopt.plugin.learner import OnlineLearner
    from rlsuite.apps.queryopt.rewriter import Decision

log = logging.getLogger("rlsuite.queryopt.serve")

TOO_SLOW_TO_EXPLORE = (
    "its original ran past the server's timeout: neither the standard plan nor an untimed "
    "candidate is explored"
)


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
    why: str = ""
    """Why the decision keeps the standard plan (for the answer's note)."""


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
        self.online = online or OnlineConfig(explore_share=0.0)
        self.book = ShapeBook(self.online)
        self.ledger = Ledger(rewards_path, store)
        self.learner: OnlineLearner | None = None
        self.check_timeout_ms = int(check_timeout_ms)
        self.version = 0
        self.models: list[dict[str, Any]] = [
            {"version": 0, "name": decider.name, "time": time.time()}
        ]
        self.exact: dict[tuple[str, str], Statement] = {}
        self.examples: dict[tuple[str, str], str] = {}
        self.stats = Stats()
        self._bytes: dict[tuple, bytes] = {}
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
        return listen(self.address, handler_for(self))

    def start(self) -> ModelServer:
        """Serve in a background thread (tests, benchmarks)."""
        self._server = self._make_server()
        # the thread looks for close()'s shutdown every 0.05 s instead of socketserver's 0.5
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="qopt-modelserver",
            daemon=True,
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
        self.ledger.close()

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
                        self._after.rewards = checked_rewards(msg["rewards"])
                    except ValueError as e:  # the answer still stands
                        self.stats.errors += 1
                        log.warning("rewards with a plan request refused: %s", e)
                return out
            if op == "reward":
                self._learn(checked_rewards([msg]))
                return None
            if op == "rewards":
                self._learn(checked_rewards(msg.get("items")))
                return None
            if op == "stats":
                return encode_line(self.summary())
            if op == "ping":
                return encode_line({"ok": True, "decider": self.decider.name})
            raise ValueError(f"unknown op {op!r} (plan, reward, stats, ping)")
        except Exception as e:  # noqa: BLE001 - answered, never crashes the server
            self.stats.errors += 1
            return encode_line({"error": f"{type(e).__name__}: {e}"})

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
            return encode_line(
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
            return encode_line(
                {"sql": None, "arm": {}, "key": "", "note": "deciding; the standard plan meanwhile"}
            )
        fut = self._submit(key, self._decide, key)
        try:
            fut.result(timeout=self.wait_ms / 1000.0)
        except cf.TimeoutError:
            self.stats.not_ready += 1
            return encode_line(
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

        if self.online.explore_share > 0 and not state.no_explore:
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
            self.ledger.served(dkey, sk, applied, ans["arm"], kind)
            out = encode_line({**ans, "key": dkey, "note": f"{ans['note']} [{st.how}; {kind}]"})
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
                d = self._choose(sk, sql)
                if not d.applied:
                    st.why = d.reasons.get("*", "")
                if self.decider.original_past_timeout(sql):
                    self.book.set_no_explore(sk, TOO_SLOW_TO_EXPLORE)
        except Exception as e:  # noqa: BLE001 - the standard plan, with the reason
            how = f"decider failed: {type(e).__name__}: {e}"
            self.book.set_model_choice(sk, (), self.version)
        self.examples.setdefault(sk, sql)
        self._build(key, st, ())
        served = self.book.served(sk)
        if served:
            self._build(key, st, served)
            if isinstance(st.answers.get(served), str):  # the standard plan says why
                st.why = f"{'+'.join(served)} not served: {st.answers[served]}"
                self._build(key, st, (), again=True)
        took = time.perf_counter() - t0
        st.how = f"{self.decider.name}; {how} in {took * 1000:.1f} ms"
        self._decide_s.append(took)
        self.exact[key] = st  # served from now on; what exploration may try comes after
        try:
            self.book.add_candidates(sk, self.decider.candidates(sql))
        except Exception as e:  # noqa: BLE001 - nothing to explore for this shape
            log.info("shape %s: no candidates (%s: %s)", sk[1], type(e).__name__, e)
            return
        if self.online.explore_share > 0 and not state.no_explore:
            # the first candidate's row check at once, not at the shape's next request:
            # a rewrite it times faster is then served from that request on
            todo = [c for c in state.candidates if c not in state.checks]
            if todo:
                self._build(key, st, todo[0])

    def _choose(self, sk: tuple[str, str], sql: str) -> Decision:
        version = self.version
        d = self.decider.decide(sql)
        self.book.set_model_choice(sk, tuple(d.applied), version)
        return d

    def _refresh(self, sk: tuple[str, str]) -> None:
        """A new model's choice for a known shape (on its example statement)."""
        if self.book.state(sk).model_version == self.version:
            return
        try:
            self._choose(sk, self.examples[sk])
        except Exception as e:  # noqa: BLE001 - keep serving the old choice
            log.warning("shape %s: the new model failed to decide (%s)", sk[1], e)

    def _build(
        self, key: tuple[str, str], st: Statement, applied: tuple[str, ...], again: bool = False
    ) -> None:
        """Validate ``applied`` for this statement (rows checked) and keep its answer
        (``again``: build it anew)."""
        if applied in st.answers and not again:
            return
        sql = key[1]
        sk = st.shape
        if not applied:
            note = f"no rewrite: {st.why}" if st.why else "no rewrite"
            answer = {"sql": None, "arm": {}, "note": note}
        else:
            try:
                d = self.decider.verified(sql, applied)  # rows compared in the decision
                if d is None:
                    d = self._validate(sql, sk, st, applied)
            except Exception as e:  # noqa: BLE001 - never served, with the reason
                d = f"{type(e).__name__}: {e}"
            if isinstance(d, str):
                log.info("shape %s: %s not served: %s", sk[1], "+".join(applied), d)
                st.answers[applied] = d
                return
            changed = d.sql if d.sql != sql else None
            note = ", ".join(applied)
            if d.checked_on:
                note += f" (rows {guarantee(d.checked_on, self.decider.schema)})"
            answer = {"sql": changed, "arm": d.settings, "note": note}
        # the features first: once the answer is published, its runtime may come back at once
        features = self.ledger.features
        if (sk, applied) not in features:
            try:
                features[(sk, applied)] = self.decider.features(sql, applied)
            except Exception:  # noqa: BLE001 - an unparseable statement has no features
                features[(sk, applied)] = []
        st.answers[applied] = answer

    def _validate(
        self, sql: str, sk: tuple[str, str], st: Statement, applied: tuple[str, ...]
    ) -> Decision | str:
        """:meth:`Decider.validated` against the original's rows (run once per statement)."""
        if not st.checked and self.book.state(sk).no_explore:
            # the shape's original ran past the timeout: a new statement of it is not run
            # whole again (its rewrite's rows are compared with DuckDB's answer, or on the
            # small copy), which would hold the one decision worker for the whole timeout
            st.checked = True
        if not st.checked:
            r = self.decider.db.run(
                sql, self.decider.schema, self.check_timeout_ms, self.decider.base
            )
            st.rows, st.checked = (None if r.timed_out else r.rows or []), True
            st.original_s = None if r.timed_out else r.runtime_s
            if r.timed_out:
                self.book.set_no_explore(sk, TOO_SLOW_TO_EXPLORE)
        timing: dict[str, float] = {}
        d = self.decider.validated(
            sql, applied, st.rows, self._check_timeout(st.original_s), timing
        )
        if st.original_s and "s" in timing:
            self.book.set_check(sk, applied, timing["s"] / max(st.original_s, 1e-6))
        return d

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
        served = self.ledger.record(k, ms)
        if served is None:
            return  # a decision of another server process (or made up): not learned from
        sk, applied = served
        self.book.record(sk, applied, ms)
        self.ledger.store_experience(k, ms, self.decider.schema)
        if self.learner is not None:
            self.learner.notify()

    @property
    def rewards(self) -> dict[str, list[float]]:
        """The runtimes (ms) reported per decision key (the ledger's)."""
        return self.ledger.rewards

    @property
    def decisions(self) -> dict[str, dict[str, Any]]:
        """The decisions served, per key (the ledger's)."""
        return self.ledger.decisions

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
            "store": self.ledger.store_report(),
            "decisions": self.ledger.decisions_report(),
        }


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
