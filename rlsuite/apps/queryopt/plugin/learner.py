"""Online retraining in the model server: the DQN retrained from the experience store in the
background, over the served model's own actions, and swapped in after the guard.

:class:`OnlineLearner` retrains every ``retrain_every`` new rewards or ``retrain_seconds``
seconds (:class:`~.online.OnlineConfig`), with the same learner as ``qopt-bench train`` on
the replayed experience, in a process of its own (:mod:`.retrainer`). A model's actions are
its own setting (the rules its featurizer records, e.g. 16 with ``decorrelate_scalar`` and
``not_in_exact``), and a server with no model has the rules it serves (``serve --learn
--rules``): each retrain trains, featurizes and guards over the server's rules in their order
(``rules``; empty: the MDP's 14 of :data:`~rlsuite.apps.queryopt.rules.RULES`), and a
candidate over any other actions is never swapped in.
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rlsuite.apps.queryopt.plugin.guard import Applied
from rlsuite.apps.queryopt.plugin.online import OnlineConfig

log = logging.getLogger("rlsuite.queryopt.serve")


class OnlineLearner:
    """Retrains the DQN from the experience store in the background; swaps after the guard.

    The schedule runs in a thread of the server; each retrain runs in a process of its own
    (``retrainer``, a :class:`~rlsuite.apps.queryopt.plugin.retrainer.ProcessRetrainer`
    unless given), which trains, checks and guards a candidate; this thread only loads a
    candidate that passed (``make_decider(checkpoint)``) and swaps it in
    (``swap(decider, version, path)``, the server's). ``current_choices()`` returns the
    served decision per shape string (what the guard compares against).
    """

    def __init__(
        self,
        cfg: OnlineConfig,
        store: Any,
        models_dir: str,
        *,
        dsn: str,
        workload: str,
        workload_config: Mapping[str, Any] | None,
        max_steps: int,
        make_decider: Callable[[str], Any],
        swap: Callable[[Any, int, str], None],
        current_choices: Callable[[], dict[str, Applied]],
        start_version: int = 0,
        retrainer: Any = None,
        rules: Sequence[str] = (),
    ):
        """``rules``: the served model's actions, by rule name, in order (its featurizer's;
        empty: the MDP's default 14): every candidate is trained over them."""
        cfg.validate()
        self.cfg, self.store = cfg, store
        self.models_dir = os.path.abspath(models_dir)
        self.dsn, self.workload = dsn, workload
        self.workload_config = dict(workload_config or {})
        self.max_steps = int(max_steps)
        self.rules = tuple(rules)
        self.make_decider, self.swap, self.current_choices = make_decider, swap, current_choices
        self.version = int(start_version)
        self.new_rewards = 0
        self.last_retrain = time.time()
        self.history: list[dict[str, Any]] = []
        self._cond = threading.Condition()
        self._stop = False
        self._thread: threading.Thread | None = None
        self._check_writable()
        if retrainer is None:
            from rlsuite.apps.queryopt.plugin.retrainer import ProcessRetrainer

            retrainer = ProcessRetrainer()
        self.retrainer = retrainer

    def _check_writable(self) -> None:
        try:
            os.makedirs(self.models_dir, exist_ok=True)
        except OSError as e:
            raise RuntimeError(f"cannot create the models directory {self.models_dir}: {e}") from e
        if not os.access(self.models_dir, os.W_OK):
            raise RuntimeError(f"the models directory {self.models_dir} is not writable")

    def start(self) -> OnlineLearner:
        """Start the background schedule (the retrain process starts with the first retrain)."""
        if self.store.count():  # a restarted server learns from what the store kept at once
            self.new_rewards = self.cfg.retrain_every
        self._thread = threading.Thread(target=self._loop, name="qopt-learn", daemon=True)
        self._thread.start()
        return self

    def warm(self) -> dict[str, Any]:
        """Start the retrain process and its Ray ahead of the first retrain, and load the
        model-loading code here (both otherwise start beside served queries, once). Never
        raises: a failed warm-up is logged and the first retrain tries again."""
        t0 = time.time()
        out = self.retrainer.warm() if hasattr(self.retrainer, "warm") else {"ok": True}
        try:
            import ray.rllib.core.rl_module  # noqa: F401 - what make_decider loads

            import rlsuite.apps.queryopt.train  # noqa: F401
            import rlsuite.platform.backends.registry  # noqa: F401
            import rlsuite.platform.checkpoints.loading  # noqa: F401
            import rlsuite.platform.optimizers  # noqa: F401
        except Exception as e:  # noqa: BLE001 - the first swap imports it then
            out = {**out, "ok": False, "error": f"{type(e).__name__}: {e}"}
        out["seconds"] = time.time() - t0
        if out.get("ok"):
            log.info("retrain process %s ready in %.1f s", out.get("pid"), out["seconds"])
        else:
            log.warning(
                "warming the retrain process failed (%s); the first retrain tries again",
                out.get("error"),
            )
        return out

    def notify(self) -> None:
        """One new reward arrived."""
        with self._cond:
            self.new_rewards += 1
            if self.new_rewards >= self.cfg.retrain_every:
                self._cond.notify()

    def _due(self) -> bool:
        if self.new_rewards >= self.cfg.retrain_every:
            return True
        return self.new_rewards >= 1 and time.time() - self.last_retrain >= self.cfg.retrain_seconds

    def _loop(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._stop or self._due(), timeout=1.0)
                if self._stop:
                    return
                if not self._due():
                    continue
                self.new_rewards = 0
                self.last_retrain = time.time()
            self.retrain()

    def request(self, version: int, run_dir: str) -> Any:
        """The retrain request for ``version`` (what the retrain process gets)."""
        from rlsuite.apps.queryopt.plugin.retrainer import RetrainRequest

        return RetrainRequest(
            version=version,
            run_dir=run_dir,
            experience=self.store.path,
            schema=self.store.schema,
            dsn=self.dsn,
            workload=self.workload,
            workload_config=self.workload_config,
            max_steps=self.max_steps,
            iterations=self.cfg.iterations,
            env_steps_per_iteration=self.cfg.env_steps_per_iteration,
            guard_margin=self.cfg.guard_margin,
            current=self.current_choices(),
            seed=len(self.history) + 1,  # one per retrain, the refused ones included
            rules=self.rules,
        )

    def retrain(self) -> dict[str, Any]:
        """One retrain: trained, checked and guarded in the retrain process, swapped in here.
        Never raises; the outcome is logged and kept."""
        v = self.version + 1
        run_dir = os.path.join(self.models_dir, f"v{v:04d}")
        t0 = time.time()
        out: dict[str, Any] = {"version": v, "time": t0, "swapped": False}
        reply = self.retrainer.run(self.request(v, run_dir), lambda: self._stop)
        out["pid"] = reply.get("pid")
        out["train_seconds"] = reply.get("seconds")
        try:
            if not reply.get("ok"):
                raise RuntimeError(reply.get("error") or "no reason given")
            g = reply["guard"]
            out["guard"] = {
                k: g[k] for k in ("passed", "shapes", "current_predicted", "new_predicted")
            }
            if not g["passed"]:  # which decisions each model takes, to read a refusal by
                out["guard"]["rows"] = list(g.get("rows", []))[:10]
            ckpt = reply["checkpoint"]
            if not g["passed"]:
                out["reason"] = (
                    f"guard: the new model is predicted at {g['new_predicted']:.3f} standard-plan "
                    f"units on {g['shapes']} recent shapes, the current at {g['current_predicted']:.3f} "
                    f"(margin {self.cfg.guard_margin:.0%}); kept the current model"
                )
                log.info("retrain v%d not swapped: %s", v, out["reason"])
            else:
                decider = self.make_decider(ckpt)
                own = tuple(getattr(decider, "own_rules", self.rules))
                if own != self.rules:
                    close = getattr(decider, "close", None)
                    if close is not None:
                        close()
                    raise ValueError(
                        f"the candidate acts over {list(own) or 'the default rules'}, the "
                        f"served model over {list(self.rules) or 'the default rules'}"
                    )
                self.swap(decider, v, ckpt)
                self.version = v
                out.update(swapped=True, checkpoint=ckpt)
                self.store.add_model(
                    v, ckpt, f"guard {g['new_predicted']:.3f} <= {g['current_predicted']:.3f}"
                )
                log.info("model v%d swapped in (%s; trained in process %s)", v, ckpt, out["pid"])
        except Exception as e:  # noqa: BLE001 - a failed retrain keeps the current model
            out["reason"] = f"retrain failed, kept the current model: {type(e).__name__}: {e}"
            log.warning("retrain v%d: %s", v, out["reason"])
        out["seconds"] = time.time() - t0
        if not out["swapped"]:
            shutil.rmtree(run_dir, ignore_errors=True)
        self._prune()
        self.history.append(out)
        return out

    def _prune(self) -> None:
        try:
            names = sorted(d for d in os.listdir(self.models_dir) if d.startswith("v"))
        except OSError:
            return
        keep = f"v{self.version:04d}"
        for d in names[: max(0, len(names) - self.cfg.keep_models)]:
            if d != keep:
                shutil.rmtree(os.path.join(self.models_dir, d), ignore_errors=True)

    def close(self) -> None:
        """Stop the schedule and end the retrain process (a retrain in flight is abandoned)."""
        with self._cond:
            self._stop = True
            self._cond.notify()
        if self._thread is not None:
            self._thread.join(timeout=30)
        self.retrainer.close()
