"""Retraining in a process of its own, so that serving never waits on training.

The model server answers ``pg_qopt`` from threads of one Python process. A retrain
(RLlib's DQN on the replayed experience, torch) run in that process holds the GIL and a
core for seconds at a time, and every answer waits behind it. So the online learner
hands each retrain to a child process (:class:`ProcessRetrainer`): started with the
``spawn`` method, niced (``nice``, 10 by default) and with one torch thread, it keeps an
embedded Ray of one CPU up between retrains, reads the experience store read-only,
trains over the served model's own actions (``RetrainRequest.rules``), checks the
losses, applies the guard against the choices the server sent with
the request, and answers with the candidate checkpoint. The server only loads a
candidate that passed the guard and swaps it in (one reference; see
:class:`~rlsuite.apps.queryopt.plugin.learner.OnlineLearner`).

Failures stay in the child: a retrain that raises is answered with the reason; a child
that dies (killed, out of memory) is logged, the retrain counts as failed, and a new
child starts at the next retrain. The child ends when the server asks it to, when its
pipe closes, or when the server process is gone (it checks its parent every second),
and its embedded Ray ends with it: no orphans.

Example::

    >>> r = ProcessRetrainer()                                   # doctest: +SKIP
    >>> reply = r.run(request, should_stop=lambda: False)        # doctest: +SKIP
    >>> reply["ok"], reply["pid"] != os.getpid()                 # doctest: +SKIP
    (True, True)
    >>> r.close()                                                # doctest: +SKIP
"""

from __future__ import annotations

import gc
import logging
import math
import multiprocessing as mp
import os
import shutil
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

log = logging.getLogger("rlsuite.queryopt.serve")


@dataclass(frozen=True)
class RetrainRequest:
    """Everything one retrain needs (sent to the child; plain data only)."""

    version: int
    """The version the candidate gets when it is swapped in."""
    run_dir: str
    """Where its checkpoint goes (removed by the server when it is not swapped in)."""
    experience: str
    """The experience store (SQLite file), read-only here."""
    schema: str
    """The workload schema whose rows are learned from."""
    dsn: str
    workload: str
    workload_config: Mapping[str, Any]
    max_steps: int
    iterations: int
    env_steps_per_iteration: int
    guard_margin: float
    current: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """The server's served decision per shape when the retrain started (for the guard)."""
    seed: int = 1
    """The training seed: a new one per retrain, so that a candidate the guard refused is
    not trained again the same way on the same experience."""
    prefix_starts: float = 0.5
    """The share of replayed episodes that start at a logged rewrite prefix (the replay
    env's exploring starts: a tiny retrain then learns the value of stopping after a
    measured rewrite, not only of the first step)."""
    rules: tuple[str, ...] = ()
    """The served model's actions, by rule name, in order (empty: the MDP's default 14):
    the candidate is trained over them, and the stored states are featurized over them."""


class Retrainer(Protocol):
    """Runs one retrain and answers a reply dict (``ok``, ``pid``, ``checkpoint``,
    ``guard``, ``losses``, ``error``); never raises."""

    pid: int | None

    def run(self, req: RetrainRequest, should_stop: Callable[[], bool]) -> dict[str, Any]: ...

    def close(self) -> None: ...

    def state(self) -> dict[str, Any]: ...


# ------------------------------------------------------------------ the work itself
def retrain_once(req: RetrainRequest, start_ray: Callable[[], None] = lambda: None) -> dict:
    """Train on the store, check the losses, guard against ``req.current``. Never raises:
    a failure is answered as ``{"ok": False, "error": ...}``."""
    t0 = time.time()
    out: dict[str, Any] = {"ok": False, "pid": os.getpid(), "version": req.version}
    try:
        rows, shapes = _experience(req)
        if not shapes:
            raise ValueError(
                f"experience store {req.experience} holds no shape of {req.schema} with a "
                "measured standard plan: nothing to learn from yet"
            )
        start_ray()
        ckpt, losses = _train(req)
        bad = [x for x in losses if not math.isfinite(x)]
        if bad:
            raise FloatingPointError(f"the training loss is not finite ({bad[0]})")
        values = _q_values(ckpt)
        g = _guard(req, rows, shapes, values)
        out.update(ok=True, checkpoint=ckpt, guard=g, losses=losses[-3:])
    except Exception as e:  # noqa: BLE001 - answered with the reason, never raised
        out["error"] = f"{type(e).__name__}: {e}"
        out["traceback"] = traceback.format_exc(limit=6)
    out["seconds"] = time.time() - t0
    return out


def _experience(req: RetrainRequest):
    from rlsuite.apps.queryopt.envs.replay import summarise
    from rlsuite.apps.queryopt.featurizer import Featurizer
    from rlsuite.apps.queryopt.plugin.experience import read_only

    rows = [e for e in read_only(req.experience) if e.schema == req.schema]
    own = {"rules": tuple(req.rules)} if req.rules else {}
    shapes = summarise(rows, req.schema, size=Featurizer(max_steps=req.max_steps, **own).size)
    shapes = {k: s for k, s in shapes.items() if () in s.states and s.ms.get(())}
    return rows, shapes


def _train(req: RetrainRequest) -> tuple[str, list[float]]:
    """The same learner as ``qopt-bench train`` on the experience store; the checkpoint
    and the learner's losses."""
    from rlsuite.apps.queryopt import train as T

    shutil.rmtree(req.run_dir, ignore_errors=True)
    steps = req.env_steps_per_iteration
    cfg = T.TrainConfig(
        dsn=req.dsn,
        workload=req.workload,
        workload_config=dict(req.workload_config),
        experience=req.experience,
        max_steps=req.max_steps,
        iterations=req.iterations,
        num_env_runners=0,
        env_steps_per_iteration=steps,
        learning_starts=min(100, steps),
        epsilon_timesteps=max(1, steps * req.iterations // 2),
        target_update_freq=50,
        seed=req.seed,
        rules=tuple(req.rules),
        prefix_starts=req.prefix_starts,
    )
    res = T.train(cfg, req.run_dir, progress=False)
    losses = [float(v) for row in res.metrics for k, v in row.items() if k.endswith("qf_loss")]
    return res.checkpoint, losses


def _q_values(checkpoint: str) -> Callable[[Any], Any]:
    """The checkpoint's Q-values of a state (through the platform's controller)."""
    from rlsuite.platform.checkpoints import load_controller

    return load_controller(checkpoint).action_values


def _guard(req: RetrainRequest, rows, shapes, values) -> dict[str, Any]:
    from rlsuite.apps.queryopt.plugin.guard import guard

    weights: dict[str, float] = {}
    for e in rows:
        weights[e.shape] = weights.get(e.shape, 0.0) + 1.0
    g = guard(
        shapes,
        weights,
        {k: tuple(v) for k, v in req.current.items()},
        values,
        req.max_steps,
        req.guard_margin,
        actions=req.rules,
    )
    return {k: g[k] for k in ("passed", "shapes", "current_predicted", "new_predicted", "rows")}


# ------------------------------------------------------------------ the child process
def _child(conn, parent_pid: int, nice: int) -> None:
    """The retrain process's loop: one retrain per request, until told to stop or orphaned."""
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s retrainer %(message)s"
    )
    try:
        os.nice(nice)
    except OSError:
        pass
    ray_up = False

    def start_ray() -> None:
        nonlocal ray_up
        if not ray_up:
            from rlsuite.platform import cluster

            cluster.init(num_cpus=1)  # also one torch thread in this driver
            ray_up = True

    try:
        while True:
            if os.getppid() != parent_pid:  # the server is gone
                return
            try:
                if not conn.poll(1.0):
                    continue
                req = conn.recv()
            except (EOFError, OSError):
                return
            if req == "stop":
                return
            if req == "warm":  # start Ray and load the training stack before any retrain
                t0 = time.time()
                try:
                    start_ray()
                    import rlsuite.apps.queryopt.train  # noqa: F401 - loaded once, ahead of time

                    # no 200 ms full collections of Ray's and torch's start-up objects
                    gc.collect()
                    gc.freeze()
                    conn.send(
                        {
                            "ok": True,
                            "pid": os.getpid(),
                            "seconds": time.time() - t0,
                            "frozen": gc.get_freeze_count(),
                        }
                    )
                except Exception as e:  # noqa: BLE001 - answered; the first retrain tries again
                    conn.send(
                        {"ok": False, "pid": os.getpid(), "error": f"{type(e).__name__}: {e}"}
                    )
                continue
            conn.send(retrain_once(req, start_ray))
    finally:
        if ray_up:
            from rlsuite.platform import cluster

            cluster.shutdown()


class ProcessRetrainer:
    """Retrains in a spawned, niced child process (see the module doc); restarts a dead one."""

    def __init__(self, nice: int = 10, start_timeout_s: float = 600.0):
        self.nice = int(nice)
        self.start_timeout_s = float(start_timeout_s)
        self.starts = 0
        self.deaths: list[dict[str, Any]] = []
        self._proc: Any = None
        self._conn: Any = None

    @property
    def pid(self) -> int | None:
        return None if self._proc is None else self._proc.pid

    def _ensure(self) -> None:
        if self._proc is not None and self._proc.is_alive():
            return
        self._reap()
        ctx = mp.get_context("spawn")
        parent, child = ctx.Pipe()
        proc = ctx.Process(
            target=_child, args=(child, os.getpid(), self.nice), name="qopt-retrain", daemon=True
        )
        try:
            proc.start()
        finally:
            child.close()
        self._proc, self._conn = proc, parent
        self.starts += 1
        log.info("retrain process %d started (nice +%d)", self._proc.pid, self.nice)

    def _reap(self) -> None:
        """Forget a dead child (its death is logged once)."""
        if self._proc is None:
            return
        self._proc.join(timeout=1)
        code = self._proc.exitcode
        if code is not None and not any(d["pid"] == self._proc.pid for d in self.deaths):
            self.deaths.append({"pid": self._proc.pid, "exitcode": code, "time": time.time()})
            log.warning(
                "the retrain process %d exited (exit code %s); a new one is started",
                self._proc.pid,
                code,
            )
        self._conn.close()
        self._proc, self._conn = None, None

    def run(self, req: RetrainRequest, should_stop: Callable[[], bool]) -> dict[str, Any]:
        """Send one retrain and wait for its reply (polling, so that a stop or a dead child
        is noticed within half a second). Never raises."""
        try:
            self._ensure()
        except Exception as e:  # noqa: BLE001 - reported as a failed retrain
            return {"ok": False, "pid": None, "error": f"cannot start a retrain process: {e}"}
        pid = self._proc.pid
        try:
            self._conn.send(req)
        except (OSError, ValueError) as e:
            return {
                "ok": False,
                "pid": pid,
                "error": f"the retrain process {pid} is unreachable: {e}",
            }
        return self._reply(pid, should_stop)

    def _reply(self, pid: int, should_stop: Callable[[], bool]) -> dict[str, Any]:
        """The child's reply, polled so that a stop or a dead child is noticed within half a
        second."""
        while True:
            if should_stop():
                return {"ok": False, "pid": pid, "error": "the server is shutting down"}
            try:
                if self._conn.poll(0.5):
                    return self._conn.recv()
            except (EOFError, OSError):
                pass
            if not self._proc.is_alive():
                self._proc.join(timeout=1)
                code = self._proc.exitcode
                self._reap()
                return {
                    "ok": False,
                    "pid": pid,
                    "error": f"the retrain process {pid} died (exit code {code}); "
                    "a new one starts at the next retrain",
                }

    def warm(self, timeout_s: float | None = None) -> dict[str, Any]:
        """Start the child, its Ray and its training stack now, so that the first retrain
        does not start them beside served queries. Never raises; the reply says how it went."""
        try:
            self._ensure()
            self._conn.send("warm")
        except Exception as e:  # noqa: BLE001 - the first retrain tries again
            return {"ok": False, "pid": self.pid, "error": f"cannot start a retrain process: {e}"}
        limit = self.start_timeout_s if timeout_s is None else timeout_s
        deadline = time.time() + limit
        out = self._reply(self._proc.pid, lambda: time.time() > deadline)
        if out.get("error") == "the server is shutting down":
            out["error"] = f"not ready after {limit:.0f} s"
        return out

    def close(self, timeout_s: float = 30.0) -> None:
        """Stop the child (asked first, then terminated, then killed)."""
        if self._proc is None:
            return
        try:
            if self._proc.is_alive():
                self._conn.send("stop")
        except (OSError, ValueError):
            pass
        self._proc.join(timeout=timeout_s)
        if self._proc.is_alive():
            self._proc.terminate()
            self._proc.join(timeout=5)
        if self._proc.is_alive():
            self._proc.kill()
            self._proc.join(timeout=5)
        self._conn.close()
        self._proc, self._conn = None, None

    def state(self) -> dict[str, Any]:
        return {"pid": self.pid, "starts": self.starts, "deaths": list(self.deaths)}
