"""Evaluate any controller on a seeded list of scenarios, in parallel on Ray.

A *controller* is anything with ``act(observation) -> action`` (and optionally
``reset(seed)``): a hand-written baseline, or a learned policy loaded from an
rlsuite checkpoint (pass the checkpoint's path). Multi-agent envs (PettingZoo
parallel) get a dict of observations and return a dict of actions.

Each scenario is ``(env_id, env_config, seed)``; the episode is fully determined
by it, so the same scenarios give the same numbers. Envs may report domain
metrics by defining ``episode_metrics() -> dict[str, float]``; they are added to
each episode's row next to ``return`` and ``length``.

Example::

    >>> from rlsuite.platform.evaluation import Scenario, evaluate
    >>> class Left:
    ...     def act(self, obs):
    ...         return 0
    >>> res = evaluate(Left(), [Scenario("CartPole-v1", seed=s) for s in range(3)], num_workers=0)
    >>> len(res.episodes), res.summary["length"]["mean"] < 20
    (3, True)
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from rlsuite.platform import envs as env_registry
from rlsuite.platform.checkpoints.loading import load_controller


@runtime_checkable
class Controller(Protocol):
    """What evaluation needs of a policy."""

    def act(self, observation: Any) -> Any:
        """Return the action for one observation (a dict of them for multi-agent envs)."""
        ...


@dataclass(frozen=True)
class Scenario:
    """One seeded episode to run."""

    env_id: str
    """A registered env id (see :mod:`rlsuite.platform.envs`)."""
    env_config: Mapping[str, Any] = field(default_factory=dict)
    """Keyword arguments for the env."""
    seed: int = 0
    """Passed to ``env.reset(seed=...)`` and ``controller.reset(seed)``."""
    name: str = ""
    """A label for tables (e.g. ``ring-230m``); defaults to the env id."""

    @property
    def label(self) -> str:
        return self.name or self.env_id


def scenarios(
    env_id: str,
    seeds: Sequence[int] | int,
    env_config: Mapping[str, Any] | None = None,
    name: str = "",
) -> list[Scenario]:
    """``len(seeds)`` scenarios of one env; an int ``n`` means seeds ``0..n-1``."""
    seed_list = range(seeds) if isinstance(seeds, int) else seeds
    return [Scenario(env_id, dict(env_config or {}), int(s), name) for s in seed_list]


@dataclass
class EvaluationResult:
    """Per-episode rows and their summary."""

    controller: str
    episodes: list[dict[str, Any]]
    summary: dict[str, dict[str, float]]
    wall_time_s: float

    def by_scenario(self) -> dict[str, dict[str, dict[str, float]]]:
        """The summary per scenario label."""
        groups: dict[str, list[dict[str, Any]]] = {}
        for row in self.episodes:
            groups.setdefault(row["scenario"], []).append(row)
        return {k: summarize(v) for k, v in groups.items()}

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_json(self, path: str) -> None:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "w") as f:
            json.dump(self.to_dict(), f, indent=2, default=_json_default)

    def table(self, metrics: Sequence[str] | None = None, title: str | None = None):
        """A rich table: one row per scenario, mean ± std of each metric."""
        from rich.table import Table

        per = self.by_scenario()
        keys = list(metrics or next(iter(per.values()), {}).keys())
        t = Table(title=title or f"evaluation of {self.controller}")
        t.add_column("scenario")
        t.add_column("episodes", justify="right")
        for k in keys:
            t.add_column(k, justify="right")
        for label, summ in per.items():
            n = next(iter(summ.values()))["n"] if summ else 0
            t.add_row(label, str(int(n)), *[_fmt(summ.get(k)) for k in keys])
        return t


def _fmt(s: Mapping[str, float] | None) -> str:
    if not s:
        return "-"
    return f"{s['mean']:.3g} ± {s['std']:.2g}" if s["n"] > 1 else f"{s['mean']:.4g}"


def _json_default(o: Any) -> Any:
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    return str(o)


def summarize(rows: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, float]]:
    """mean / std / min / max / n of every numeric column."""
    out: dict[str, dict[str, float]] = {}
    keys = [k for k, v in rows[0].items() if isinstance(v, int | float | np.number)] if rows else []
    for k in keys:
        if k == "seed":
            continue
        vals = np.array([float(r[k]) for r in rows if k in r], dtype=float)
        out[k] = {
            "mean": float(vals.mean()),
            "std": float(vals.std()),
            "min": float(vals.min()),
            "max": float(vals.max()),
            "n": float(len(vals)),
        }
    return out


def run_episode(
    env: Any,
    controller: Any,
    scenario: Scenario,
    max_steps: int | None = None,
    multi_agent: bool | None = None,
) -> dict:
    """Run one seeded episode in this process and return its row."""
    if hasattr(controller, "reset"):
        controller.reset(scenario.seed)
    multi = env_registry.spec(scenario.env_id).multi_agent if multi_agent is None else multi_agent
    obs, _ = env.reset(seed=scenario.seed)
    total, steps = 0.0, 0
    t0 = time.perf_counter()
    while True:
        action = controller.act(obs)
        if multi:
            obs, rew, term, trunc, _ = env.step(action)
            total += float(sum(rew.values()))
            done = not env.agents or all(term.values()) or all(trunc.values())
        else:
            obs, rew, term, trunc, _ = env.step(action)
            total += float(rew)
            done = term or trunc
        steps += 1
        if done or (max_steps is not None and steps >= max_steps):
            break
    row: dict[str, Any] = {
        "scenario": scenario.label,
        "seed": scenario.seed,
        "return": total,
        "length": steps,
    }
    metrics_fn = getattr(getattr(env, "unwrapped", env), "episode_metrics", None)
    if metrics_fn is None:
        metrics_fn = getattr(env, "episode_metrics", None)
    if callable(metrics_fn):
        row.update({k: v for k, v in metrics_fn().items()})
    row["wall_s"] = time.perf_counter() - t0
    return row


class _Worker:
    """Holds one controller and a cache of envs; runs scenarios on request."""

    def __init__(self, controller_spec: Any, env_threads: int = 1):
        import torch

        torch.set_num_threads(env_threads)
        self.controller = build_controller(controller_spec)
        self.envs: dict[str, Any] = {}

    def run(self, scenario: Scenario, max_steps: int | None, spec: env_registry.EnvSpec) -> dict:
        key = json.dumps([scenario.env_id, dict(scenario.env_config)], sort_keys=True, default=str)
        env = self.envs.get(key)
        if env is None:
            env = self.envs[key] = env_registry.build(spec, scenario.env_config)
        try:
            return run_episode(env, self.controller, scenario, max_steps, spec.multi_agent)
        except Exception:
            # A broken env is rebuilt for the next scenario rather than reused.
            self.envs.pop(key, None)
            try:
                env.close()
            except Exception:  # noqa: BLE001 - the env is already broken
                pass
            raise

    def close(self) -> None:
        for env in self.envs.values():
            env.close()
        self.envs.clear()


def build_controller(controller_spec: Any) -> Any:
    """A controller from what the user gave: an object, a zero-arg factory, or a checkpoint path."""
    if isinstance(controller_spec, str | os.PathLike):
        return load_controller(os.fspath(controller_spec))
    if hasattr(controller_spec, "act") and not isinstance(controller_spec, type):
        return controller_spec
    if callable(controller_spec):  # a class or a zero-argument factory
        made = controller_spec()
        if not hasattr(made, "act"):
            raise TypeError(
                f"controller factory {controller_spec!r} returned {made!r}, which has no act()"
            )
        return made
    raise TypeError(
        f"cannot evaluate {controller_spec!r}: pass an object with act(obs), a zero-argument "
        "factory of one, or the path of an rlsuite checkpoint"
    )


def evaluate(
    controller: Any,
    scenario_list: Sequence[Scenario],
    *,
    num_workers: int | None = None,
    max_steps: int | None = None,
    progress: bool = False,
    name: str | None = None,
) -> EvaluationResult:
    """Run every scenario once and summarise.

    Args:
        controller: an object with ``act(obs)``, a zero-argument factory of one
            (built once per worker, so unpicklable state such as a simulator
            handle is fine), or the path of an rlsuite checkpoint.
        scenario_list: the seeded episodes to run, in order.
        num_workers: parallel Ray actors (default: one per CPU, at most one per
            scenario); ``0`` runs in this process without Ray.
        max_steps: cut episodes after this many steps (default: the env's own horizon).
        progress: show a progress bar.
        name: the controller's label in tables (default: derived from ``controller``).
    """
    if not scenario_list:
        raise ValueError("no scenarios to evaluate: pass at least one Scenario")
    # Resolved here (fails fast, with the list of known ids) and shipped to the workers,
    # so envs registered at run time in this process work there too.
    specs = {s.env_id: env_registry.spec(s.env_id) for s in scenario_list}
    check_controller(controller, scenario_list)
    label = name or _label(controller)
    t0 = time.perf_counter()
    if num_workers == 0:
        worker = _Worker(controller)
        try:
            rows = []
            for s in _progress(scenario_list, progress, label):
                rows.append(worker.run(s, max_steps, specs[s.env_id]))
        finally:
            worker.close()
    else:
        if isinstance(controller, str | os.PathLike):  # workers may run in another cwd
            controller = os.path.abspath(controller)
        rows = _evaluate_on_ray(
            controller, scenario_list, specs, num_workers, max_steps, progress, label
        )
    return EvaluationResult(label, rows, summarize(rows), time.perf_counter() - t0)


def check_controller(controller: Any, scenario_list: Sequence[Scenario]) -> None:
    """Refuse (``ValueError``, one sentence), in this process and before any worker starts,
    a checkpoint whose recorded spaces the scenarios' envs do not have (another observation
    size, action space or set of agents), where a worker would fail on its first step.
    :func:`evaluate` calls it; a CLI may call it before it starts Ray."""
    if not isinstance(controller, str | os.PathLike):
        return  # objects and factories record no spaces: they meet the env in the worker
    from rlsuite.platform.checkpoints.fit import check_fits

    seen: set[str] = set()
    for s in scenario_list:
        key = json.dumps([s.env_id, dict(s.env_config)], sort_keys=True, default=str)
        if key not in seen:
            seen.add(key)
            spaces = env_registry.spaces(s.env_id, s.env_config)
            check_fits(os.fspath(controller), s.env_id, spaces, s.env_config)


USER_ERRORS = (ValueError, TypeError, FileNotFoundError)
"""Errors that a worker raises because of what the caller gave (a controller that does not
fit the env, a bad option): re-raised in the driver as themselves, with their own message,
not wrapped in Ray's dump of the worker."""


def _unwrapped(e: Exception) -> Exception:
    """The worker's own exception when it is a user-input error, else ``e``."""
    cause = getattr(e, "cause", None)
    return cause if isinstance(cause, USER_ERRORS) else e


def _label(controller: Any) -> str:
    if isinstance(controller, str | os.PathLike):
        return os.path.basename(os.path.normpath(os.fspath(controller)))
    return (
        getattr(controller, "name", None)
        or getattr(controller, "__name__", None)
        or type(controller).__name__
    )


def _progress(items: Sequence[Any], show: bool, label: str):
    if not show:
        yield from items
        return
    from rich.progress import track

    yield from track(items, description=f"evaluating {label}")


def _evaluate_on_ray(
    controller: Any,
    scenario_list: Sequence[Scenario],
    specs: Mapping[str, env_registry.EnvSpec],
    num_workers: int | None,
    max_steps: int | None,
    show_progress: bool,
    label: str,
) -> list[dict]:
    import ray

    from rlsuite.platform import cluster

    started = not ray.is_initialized()
    if started:
        cluster.init()
    try:
        cpus = int(ray.cluster_resources().get("CPU", 1))
        n = num_workers or max(1, cpus)
        n = max(1, min(n, len(scenario_list)))
        Remote = ray.remote(num_cpus=1, max_restarts=1, max_task_retries=1)(_Worker)
        workers = [Remote.remote(controller) for _ in range(n)]
        rows: list[dict | None] = [None] * len(scenario_list)
        pending: dict[Any, tuple[int, Any]] = {}
        queue = list(enumerate(scenario_list))
        idle = list(workers)

        bar = None
        if show_progress:
            from rich.progress import Progress

            bar = Progress(transient=False)
            bar.start()
            task = bar.add_task(f"evaluating {label}", total=len(scenario_list))
        try:
            while queue or pending:
                while queue and idle:
                    i, s = queue.pop(0)
                    w = idle.pop()
                    pending[w.run.remote(s, max_steps, specs[s.env_id])] = (i, w)
                done, _ = ray.wait(list(pending), num_returns=1)
                for ref in done:
                    i, w = pending.pop(ref)
                    try:
                        rows[i] = ray.get(ref)
                    except ray.exceptions.RayTaskError as e:
                        raise _unwrapped(e) from None
                    idle.append(w)
                    if bar is not None:
                        bar.advance(task)
        finally:
            if bar is not None:
                bar.stop()
            ray.get([w.close.remote() for w in workers], timeout=60)
            for w in workers:
                ray.kill(w)
        return [r for r in rows if r is not None]
    finally:
        if started:
            cluster.shutdown()
