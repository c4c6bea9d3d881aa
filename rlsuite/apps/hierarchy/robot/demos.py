"""Demonstrations of the scripted expert, collected in parallel on Ray.

A demonstration is a dict::

    {"seed": int, "task": str, "success": bool,
     "obs": float32 (T+1, 20),        # observations, the last one after the last action
     "actions": float32 (T, 5),
     "stack": [[(proc, arg, pc, t, call_id), ...], ...] | None}   # per step (strong only)

``stack`` is the call stack that produced each action (strong supervision); weak
demonstrations carry ``None`` there. Demonstration seeds start at
:data:`DEMO_SEED_BASE`, far from the evaluation seeds (0, 1, ...).

Example::

    >>> demos = collect(2, num_workers=0)
    >>> [d["success"] for d in demos], demos[0]["stack"][0][-1][0]
    ([True, True], 'MOVE_TO')
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from rlsuite.apps.hierarchy.robot.env import TASKS, PickPlaceEnv
from rlsuite.apps.hierarchy.robot.expert import make_expert

DEMO_SEED_BASE = 100_000


def record(seed: int, task: str = "pick_place", max_steps: int = 150) -> dict[str, Any]:
    """One expert episode on ``seed`` with its observations, actions and call stacks."""
    env = PickPlaceEnv(task=task, max_steps=max_steps)
    expert = make_expert()
    try:
        obs, _ = env.reset(seed=int(seed))
        expert.reset(seed)
        observations, actions = [obs], []
        done = False
        while not done:
            a = expert.act(obs)
            obs, _, term, trunc, _ = env.step(a)
            observations.append(obs)
            actions.append(a)
            done = term or trunc
        return {
            "seed": int(seed),
            "task": task,
            "success": bool(env.episode_metrics()["success"]),
            "obs": np.asarray(observations, dtype=np.float32),
            "actions": np.asarray(actions, dtype=np.float32),
            "stack": [list(s) for s in expert.trace],
        }
    finally:
        env.close()


def _record_many(seeds: Sequence[int], task: str) -> list[dict[str, Any]]:
    return [record(s, task) for s in seeds]


def collect(
    n: int,
    task: str = "pick_place",
    *,
    seed: int = DEMO_SEED_BASE,
    strong: bool = True,
    num_workers: int | None = None,
    progress: bool = False,
) -> list[dict[str, Any]]:
    """``n`` successful expert demonstrations of ``task``, from seeds ``seed, seed+1, ...``.

    Failed expert episodes (about 1 in 30 on ``stack``) are skipped and replaced by the
    next seeds, so the result is always ``n`` successes. ``num_workers=0`` records in
    this process; otherwise the seeds are spread over Ray tasks (an embedded Ray is
    started if none is running). ``strong=False`` drops the call stacks.
    """
    if not isinstance(n, int | np.integer) or n < 1:
        raise ValueError(f"number of demonstrations must be a positive int, got {n!r}")
    if task not in TASKS:
        raise ValueError(f"unknown task {task!r}: choose one of {', '.join(TASKS)}")
    out: list[dict[str, Any]] = []
    next_seed = int(seed)
    t0 = time.perf_counter()
    bar = _Bar(n, f"recording {task} demonstrations") if progress else None
    try:
        while len(out) < n:
            want = n - len(out)
            batch = list(range(next_seed, next_seed + want + max(1, want // 10)))
            next_seed = batch[-1] + 1
            for d in _run_batch(batch, task, num_workers):
                if d["success"] and len(out) < n:
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
        for d in out:
            d["stack"] = None
    for d in out:
        d["collect_wall_s"] = time.perf_counter() - t0
    return out


def _run_batch(seeds: list[int], task: str, num_workers: int | None) -> list[dict[str, Any]]:
    if num_workers == 0:
        return _record_many(seeds, task)
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
        results = ray.get([remote.remote(c, task) for c in chunks if c])
        by_seed = {d["seed"]: d for chunk in results for d in chunk}
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


def save(path: str, demos: Sequence[dict[str, Any]]) -> None:
    """Write demonstrations to ``path`` (a compressed ``.npz``; no pickle)."""
    if not demos:
        raise ValueError("no demonstrations to save")
    os.makedirs(os.path.dirname(os.path.abspath(path)) or ".", exist_ok=True)
    meta = [{k: d[k] for k in ("seed", "task", "success")} | {"stack": d["stack"]} for d in demos]
    np.savez_compressed(
        path,
        obs=np.concatenate([d["obs"] for d in demos]),
        actions=np.concatenate([d["actions"] for d in demos]),
        lengths=np.array([len(d["actions"]) for d in demos]),
        meta=np.array(json.dumps(meta)),
    )


def load(path: str) -> list[dict[str, Any]]:
    """Read demonstrations written by :func:`save`."""
    if not os.path.exists(path):
        raise FileNotFoundError(
            f"no demonstrations at {path!r}: record some with `hier-train robot-demos`"
        )
    with np.load(path, allow_pickle=False) as z:
        obs, actions, lengths = z["obs"], z["actions"], z["lengths"]
        meta = json.loads(str(z["meta"]))
    out, i, j = [], 0, 0
    for n, m in zip(lengths, meta):
        n = int(n)
        stack = m["stack"]
        if stack is not None:
            stack = [[tuple(f) for f in s] for s in stack]
        out.append({**m, "stack": stack, "obs": obs[i : i + n + 1], "actions": actions[j : j + n]})
        i += n + 1
        j += n
    return out


def weak(demos: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The same demonstrations without call stacks (observations and actions only)."""
    return [{**d, "stack": None} for d in demos]
