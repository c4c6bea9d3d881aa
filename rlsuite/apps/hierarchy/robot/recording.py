"""Recording the scripted expert's demonstrations (in parallel on Ray), saving and loading them.

A demonstration is a :class:`~rlsuite.apps.hierarchy.procedures.traces.Trace` recorded by
the shared :class:`~rlsuite.apps.hierarchy.procedures.executor.Executor`: ``observations``
``[T, 65]`` (row ``t`` is what action ``t`` was chosen on), ``actions`` (``STEP(command)``
decisions; a final ``STOP`` if the root returned before the episode ended), ``events``
(strong: every decision with the call stack and arguments; ``None`` for weak ones) and
``info``::

    {"seed": int, "task": str, "success": bool,
     "final_obs": float32 (65,)}   # the observation after the last STEP

Demonstration seeds start at :data:`DEMO_SEED_BASE`, far from the evaluation seeds (0, 1, ...).

Example::

    >>> demos = collect(2, num_workers=0)
    >>> [d.info["success"] for d in demos], demos[0].events[2].proc
    ([True, True], 'MOVE_TO')
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from rlsuite.apps.hierarchy.procedures.traces import Trace, load_traces, save_traces
from rlsuite.apps.hierarchy.robot import tasks as T
from rlsuite.apps.hierarchy.robot.env import OBS_DIM, PickPlaceEnv
from rlsuite.apps.hierarchy.robot.expert import Imperfection, make_expert

DEMO_SEED_BASE = 100_000


def record(
    seed: int,
    task: str = "pick_place",
    max_steps: int | None = None,
    imperfection: Imperfection | None = None,
) -> Trace:
    """One expert episode on ``seed``: its strong trace (observations, actions, call stack)."""
    env = PickPlaceEnv(task=task, max_steps=max_steps)
    expert = make_expert(record=True, task=task, imperfection=imperfection)
    try:
        obs, _ = env.reset(seed=int(seed))
        expert.reset(seed)
        final = obs
        done = False
        while not done:
            a = expert.act(obs)
            obs, _, term, trunc, _ = env.step(a)
            if not expert.finished:
                final = obs  # the observation after the last STEP
            done = term or trunc
        return expert.trace(
            {
                "seed": int(seed),
                "task": task,
                "success": bool(env.episode_metrics()["success"]),
                "final_obs": np.asarray(final, dtype=np.float32),
                "expert": "second" if expert.policy.second else "first",
            }
        )
    finally:
        env.close()


def _record_many(seeds: Sequence[int], task: str, imperfection: Imperfection) -> list[Trace]:
    return [record(s, task, imperfection=imperfection) for s in seeds]


def collect(
    n: int,
    task: str = "pick_place",
    *,
    seed: int = DEMO_SEED_BASE,
    strong: bool = True,
    num_workers: int | None = None,
    progress: bool = False,
    imperfection: Imperfection | None = None,
) -> list[Trace]:
    """``n`` successful expert demonstrations of ``task``, from seeds ``seed, seed+1, ...``.

    Failed expert episodes (a few in 100, see ``benchmarks/RESULTS.md``) are skipped and replaced by the
    next seeds, so the result is always ``n`` successes. ``num_workers=0`` records in
    this process; otherwise the seeds are spread over Ray tasks (an embedded Ray is
    started if none is running). ``strong=False`` drops the call stacks. ``imperfection``:
    noisy commands, missed grasps retried, a second expert (:class:`~.expert.Imperfection`).
    """
    if not isinstance(n, int | np.integer) or n < 1:
        raise ValueError(f"number of demonstrations must be a positive int, got {n!r}")
    T.get(task)
    imperfection = (imperfection or Imperfection()).validate()
    out: list[Trace] = []
    next_seed = int(seed)
    t0 = time.perf_counter()
    bar = _Bar(n, f"recording {task} demonstrations") if progress else None
    try:
        while len(out) < n:
            want = n - len(out)
            batch = list(range(next_seed, next_seed + want + max(1, want // 10)))
            next_seed = batch[-1] + 1
            for d in _run_batch(batch, task, num_workers, imperfection):
                if d.info["success"] and len(out) < n:
                    out.append(d)
                    if bar:
                        bar.advance()
            if next_seed - seed > 3 * n + 20:
                raise RuntimeError(
                    f"the expert failed too often on {task!r}: {len(out)}/{n} successes"
                )
    finally:
        if bar:
            bar.stop()
    if not strong:
        out = weak(out)
    for d in out:
        d.info["collect_wall_s"] = time.perf_counter() - t0
    return out


def _run_batch(
    seeds: list[int], task: str, num_workers: int | None, imperfection: Imperfection
) -> list[Trace]:
    if num_workers == 0:
        return _record_many(seeds, task, imperfection)
    import ray

    from rlsuite.platform import cluster

    started = not ray.is_initialized()
    if started:
        cluster.init()
    try:
        cpus = int(ray.cluster_resources().get("CPU", 1))
        k = max(1, min(num_workers or cpus, len(seeds)))
        chunks = [seeds[i::k] for i in range(k)]
        remote = ray.remote(num_cpus=1)(_record_many)
        results = ray.get([remote.remote(c, task, imperfection) for c in chunks if c])
        by_seed = {d.info["seed"]: d for chunk in results for d in chunk}
        return [by_seed[s] for s in seeds]
    finally:
        if started:
            cluster.shutdown()


class _Bar:
    def __init__(self, total: int, label: str):
        from rich.progress import Progress

        self.p = Progress(transient=False)
        self.p.start()
        self.task = self.p.add_task(label, total=total)

    def advance(self) -> None:
        self.p.advance(self.task)

    def stop(self) -> None:
        self.p.stop()


def save(path: str, demos: Sequence[Trace]) -> None:
    """Write demonstrations to ``path`` (a compressed ``.npz``; no pickle)."""
    if not demos:
        raise ValueError("no demonstrations to save")
    save_traces(path, demos)


def load(path: str) -> list[Trace]:
    """Read demonstrations written by :func:`save`."""
    try:
        demos = load_traces(path)
    except FileNotFoundError:
        raise FileNotFoundError(
            f"no demonstrations at {path!r}: record some with `hier-train robot-demos`"
        ) from None
    except (KeyError, ValueError) as e:
        raise ValueError(
            f"{path!r} is not a demonstration file of this version ({e}): record it again "
            "with `hier-train robot-demos`"
        ) from None
    width = demos[0].observations.shape[-1] if demos else OBS_DIM
    if width != OBS_DIM:
        raise ValueError(
            f"{path!r} holds {width}-float observations, not the {OBS_DIM} of this version's "
            "robot env: record it again with `hier-train robot-demos`"
        )
    return demos


def of_task(demos: Sequence[Trace], task: str, source: str = "the demonstrations") -> list[Trace]:
    """``demos`` if every one was recorded on ``task``; otherwise an error naming both tasks."""
    other = sorted({d.info.get("task") for d in demos} - {task}, key=str)
    if other:
        raise ValueError(
            f"{source} were recorded for task {', '.join(map(repr, other))}, not {task!r}: "
            f"record {task} demonstrations with `hier-train robot-demos --task {task}`"
        )
    return list(demos)


def weak(demos: Sequence[Trace]) -> list[Trace]:
    """The same demonstrations without call stacks (observations and actions only)."""
    return [d.weak() for d in demos]


def commands(demo: Trace) -> tuple[np.ndarray, np.ndarray]:
    """``(obs [n+1, 20], actions [n, 5])``: the STEP commands with the observation before
    each and the one after the last (``final_obs``); a final STOP is left out."""
    steps = [d for d in demo.actions if d.kind == "act"]
    n = len(steps)
    acts = np.asarray([d.args[0] for d in steps], dtype=np.float32).reshape(n, 5)
    obs = np.vstack([demo.observations[:n], np.asarray(demo.info["final_obs"], np.float32)[None]])
    return obs, acts
