"""What the traffic benchmarks share: the training benchmarks' settings, training for a
wall-clock budget, evaluating controllers on the same episodes and saving the result with its
two-panel PNG; and the sampling measurements (a raw libsumo loop, the env in this process, one
RLlib env runner, the time to collect whole episodes) that the sampling benchmarks set side by
side."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rlsuite.bench import results_dir

RESULTS = results_dir("traffic")
MACHINE = "2-core CPU, no GPU, shared"


def evaluate_controllers(
    env_id: str, names: Sequence[str], controller: Callable[[str], tuple[Any, dict]],
    episodes: Any, cfg: Mapping[str, Any], columns: Mapping[str, str],
    say: Callable[[dict], str], console,
) -> list[dict]:  # fmt: skip
    """One row per controller name, evaluated on the same seeded ``episodes`` (a count or
    seeds): ``controller(name)`` gives the controller and its extra env config; ``columns``
    maps a row key to the evaluation summary's metric (its mean is kept); ``say(row)`` is
    printed after each."""
    from rlsuite.platform import evaluation

    rows = []
    for name in names:
        ctrl, extra = controller(name)
        ev = evaluation.evaluate(
            ctrl, evaluation.scenarios(env_id, episodes, {**cfg, **extra}), num_workers=0,
            name=name,
        )  # fmt: skip
        s = ev.summary
        rows.append({"controller": name, **{k: s[m]["mean"] for k, m in columns.items()}})
        console.print(say(rows[-1]))
    return rows


@dataclass(frozen=True)
class TrainingSettings:
    """The settings every traffic training benchmark takes (a benchmark's own subclass these)."""

    minutes: float = 10.0
    """training wall-clock budget in minutes"""
    workers: int = 2
    """env runners (and the embedded Ray's CPUs)"""
    chunk: int = 5
    """training iterations between progress reports and checkpoints"""
    run_dir: str = ""
    """the training run's folder (default runs/benchmarks/NAME)"""
    plan_set: tuple[str, ...] = ()
    """a plan field KEY=JSON (repeatable)"""
    env_set: tuple[str, ...] = ()
    """an env option KEY=JSON (repeatable)"""
    out: str = ""
    """results name (default: the benchmark's)"""


DEMO_SEED = 10_000
"""The first seed of recorded demonstrations (as ``traffic_train`` records PI's)."""


def train_plan(
    ctx: Any, plan_name: str, fields: Mapping[str, Any], run_dir: str = "",
    demonstrations: tuple[Any, int] | list[tuple[Any, int, Mapping[str, Any]]] | None = None,
    after_chunk: Any = None, dagger: tuple[list[tuple[Any, Mapping[str, Any]]], int, int] | None = None,
):  # fmt: skip
    """Make the ``plan_name`` plan of ``fields`` (``--plan-set`` on top) and train it for
    ``ctx.settings.minutes``: from scratch, or with ``demonstrations = (controller, N)``
    warm-started from N of the controller's episodes (seeds from :data:`DEMO_SEED`) on the
    training env config, recorded into the run folder first (the ``sync`` plan clones them
    before RL into ``RUN_DIR/clone``; the recording counts toward the budget). A list of
    ``(controller, N, env_config)`` records each on its own env config (e.g. PI at 2, 3 and
    4 AVs for one shared policy), into one recording.
    ``dagger = ([(labeller, env_config), ...], rounds, N)``: after the recording, each round
    clones the recording, lets that clone drive N episodes per env config while the
    labeller (the expert, e.g. PI labelling) answers on its states, and adds those labels
    to the recording (DAgger); the sync plan then clones the aggregate as usual.
    ``after_chunk(res)`` runs after each chunk (e.g. to score its checkpoint on validation
    seeds; its time counts toward the budget). Returns the plan, the last ``TrainResult``,
    the learning curve and the seconds (recording included)."""
    import shutil
    import time

    from rich.console import Console

    from rlsuite.cli_common import parse_sets
    from rlsuite.platform import demonstrations as demos
    from rlsuite.platform import optimizers

    s, console, t0 = ctx.settings, Console(width=140), time.time()
    plan = optimizers.make_plan(plan_name, **{**fields, **parse_sets(s.plan_set)})
    run_dir = ctx.run_dir(run_dir or os.path.join("runs", "benchmarks", ctx.bench.name))
    if demonstrations:
        if not getattr(plan, "demonstrations_warm_start", False):
            raise ValueError(
                f"demonstrations warm-start the sync plan (PPO), not the {plan.name} plan: "
                "use --plan sync, or drop --demonstrations"
            )
        path = os.path.join(run_dir, "demonstrations.parquet")
        shutil.rmtree(run_dir, ignore_errors=True)
        sources = [demonstrations] if isinstance(demonstrations, tuple) else demonstrations
        for i, (controller, episodes, *cfg) in enumerate(sources):
            part = path if len(sources) == 1 else f"{path}.{i}"  # seeds apart: no eps_id twice
            info = demos.record_episodes(controller, plan.env, episodes, part,
                                         cfg[0] if cfg else plan.env_config, seed=DEMO_SEED + 1000 * i)  # fmt: skip
            console.print(f"recorded {episodes} episodes ({int(info['transitions'])} transitions, "
                          f"return {info['return_mean']:.0f}) in {time.time() - t0:.0f} s: {part}")  # fmt: skip
        if len(sources) > 1:
            demos.concatenate([f"{path}.{i}" for i in range(len(sources))], path)
        plan = plan.replace(demonstrations=path)
        for r in range(1, 1 + (dagger[1] if dagger else 0)):
            _dagger_round(plan, run_dir, r, dagger[0], dagger[2], console, t0)
    minutes = s.minutes - (time.time() - t0) / 60
    res, curve, _ = train_for_minutes(
        plan, run_dir, minutes, s.chunk, s.workers, console, clear=not demonstrations,
        after_chunk=after_chunk,
    )  # fmt: skip
    return plan, res, curve, time.time() - t0


def _dagger_round(
    plan: Any, run_dir: str, r: int, labellers: Any, episodes: int, console: Any, t0: float
) -> None:
    """One DAgger round of :func:`train_plan`: the recording's clone drives, the labellers'
    answers on its states join the recording (seeds apart from the recording's)."""
    import time

    from rlsuite.platform import demonstrations as demos
    from rlsuite.platform.training import clone_only

    driver = clone_only(plan, os.path.join(run_dir, f"dagger{r}"))
    parts = [f"{plan.demonstrations}.d{r}.{i}" for i in range(len(labellers))]
    for i, ((labeller, cfg), part) in enumerate(zip(labellers, parts)):
        info = demos.record_episodes(labeller, plan.env, episodes, part, cfg,
                                     seed=DEMO_SEED + 100_000 * r + 1000 * i, driver=driver)  # fmt: skip
        console.print(f"DAgger round {r}: the clone drove {episodes} episodes, labelled "
                      f"({int(info['transitions'])} transitions) in {time.time() - t0:.0f} s: {part}")  # fmt: skip
    demos.concatenate([plan.demonstrations, *parts], plan.demonstrations + ".all")
    os.replace(plan.demonstrations + ".all", plan.demonstrations)


def clone_of(plan: Any) -> str:
    """The folder of the policy ``plan`` cloned from its demonstrations before RL (the
    ``sync`` plan's warm start, beside the demonstrations), or ``""`` when it has none."""
    from rlsuite.platform.demonstrations import CLONE

    path = getattr(plan, "demonstrations", "")
    # absolute, as the JSON records it: valid from any cwd
    return os.path.abspath(os.path.join(os.path.dirname(path), CLONE)) if path else ""


class KeepBest:
    """An ``after_chunk`` for :func:`train_plan`: scores each chunk's checkpoint with
    ``score(path)`` (higher is better, e.g. on validation seeds) and keeps the best one so far
    in ``best_dir``. ``first`` (e.g. the clone of a warm start, there after the first chunk)
    is scored before that chunk's checkpoint, as iteration 0. ``history`` lists every score."""

    def __init__(self, best_dir: str, score: Callable[[str], float], first: str = ""):
        # absolute, as the JSON records them: valid from any cwd
        self.best_dir, self.score = os.path.abspath(best_dir), score
        self.first = os.path.abspath(first) if first else ""
        self.history: list[dict] = []
        self.best: dict = {}

    def __call__(self, res: Any) -> None:
        import shutil

        todo = [(self.first, 0)] if self.first and not self.history else []
        for path, iteration in [*todo, (res.checkpoint, res.iterations)]:
            if not os.path.isdir(path):
                continue
            score = float(self.score(path))
            self.history.append(dict(iteration=iteration, score=score))
            print(f"validation: iteration {iteration} scores {score:.4f}", flush=True)
            if not self.best or score > self.best["score"]:
                shutil.rmtree(self.best_dir, ignore_errors=True)
                shutil.copytree(path, self.best_dir)
                self.best = dict(iteration=iteration, score=score)


def save_training(
    ctx: Any, stem: str, plan, cfg: dict, res, curve: list[dict], rows: list[dict],
    train_s: float, checks: Mapping[str, bool], bars: list[dict] | None = None,
    extra: Mapping[str, Any] | None = None, **plot: str,
) -> int:  # fmt: skip
    """Say each check's PASS/FAIL, save ``<stem>.json`` (plan, env config, curve, rows,
    checks, and ``extra``'s keys) and ``<stem>.png`` (:func:`training_figure`); 0 when every
    check passed."""
    ctx.save(stem, dict(plan=plan.to_dict(), env_config=cfg, curve=curve, rows=rows,
                        train_s=train_s, checkpoint=res.checkpoint, checks=dict(checks),
                        **dict(extra or {})))  # fmt: skip
    ctx.save_plot(stem, training_figure(curve, rows if bars is None else bars, **plot))
    return ctx.verdict(checks)


def training_figure(
    curve: list[dict], bars: list[dict], metric: str, curve_label: str, curve_title: str,
    bar_label: str, bar_title: str,
):  # fmt: skip
    """The learning curve (episode return against wall-clock) beside a bar per controller of
    ``metric`` (the learned one first, green)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4), dpi=110)
    a.plot([c["wall_s"] / 60 for c in curve], [c["episode_return_mean"] for c in curve],
           marker="o")  # fmt: skip
    a.set_xlabel("training wall-clock (min)")
    a.set_ylabel(curve_label)
    a.set_title(curve_title)
    names = [r["controller"] for r in bars]
    b.bar(names, [r[metric] for r in bars], color=["tab:green"] + ["grey"] * (len(names) - 1))
    b.set_ylabel(bar_label)
    b.set_title(bar_title)
    return fig


def train_for_minutes(
    plan, run_dir: str, minutes: float, chunk: int, workers: int, console, clear: bool = True,
    after_chunk: Any = None,
):  # fmt: skip
    """Train ``plan`` in ``run_dir`` on an embedded Ray of ``workers`` CPUs, in chunks of
    ``chunk`` iterations (resumed from the checkpoint) until ``minutes`` of wall-clock have
    passed (at least one chunk). ``clear``: remove what ``run_dir`` held first (False: it
    holds what the plan reads, its recorded demonstrations). ``after_chunk(res)``, when
    given, runs after each chunk, inside the budget. Returns the last
    ``TrainResult``, the learning curve (one row per chunk) and the training seconds."""
    import shutil
    import time

    from rlsuite.platform import cluster, training

    if clear and os.path.exists(run_dir):
        shutil.rmtree(run_dir)
    t0 = time.time()
    curve: list[dict] = []
    with cluster.local_cluster(num_cpus=workers):
        iterations = 0
        while not curve or time.time() - t0 < minutes * 60:
            iterations += chunk
            res = training.train(plan, iterations=iterations, run_dir=run_dir,
                                 resume=iterations > chunk, progress=True,
                                 checkpoint_every=chunk)  # fmt: skip
            curve.append(dict(iteration=res.iterations, env_steps=res.env_steps,
                              wall_s=time.time() - t0, episode_return_mean=res.final_return))  # fmt: skip
            console.print(f"it {res.iterations}: {res.env_steps} env steps, return "
                          f"{res.final_return:.1f}, {(time.time() - t0) / 60:.1f} min")  # fmt: skip
            if after_chunk is not None:
                after_chunk(res)
    return res, curve, time.time() - t0


def sampler_rate(
    env_id: str, env_config: Mapping[str, Any], steps: int, scalar: bool = False, **plan: Any
) -> float:
    """Env steps/s of ONE RLlib env runner of the platform's sync plan (its module acting,
    no learning) on ``env_id``, after one warm-up sample of the same size. ``scalar``: one
    scalar env in the runner even where the env has a vector entry point (the path before
    it had one); ``plan`` may set ``num_envs_per_env_runner`` (copies in its vector env)."""
    import time

    from rlsuite.platform import cluster, envs, optimizers

    envs.rllib_env(env_id)
    if scalar:
        plan = {**plan, "num_envs_per_env_runner": 1}
    plan_obj = optimizers.make_plan(
        "sync", env=env_id, env_config=dict(env_config), num_env_runners=1, seed=0, **plan
    )
    with cluster.local_cluster(num_cpus=2):
        config = optimizers.to_rllib(plan_obj)
        if scalar:
            config = config.env_runners(gym_env_vectorize_mode="sync")
        algo = config.build_algo()
        try:
            group = algo.env_runner_group

            def sample(r):
                return sum(len(e) for e in r.sample(num_timesteps=steps, random_actions=False))

            group.foreach_env_runner(sample, local_env_runner=False)  # warm-up
            t = time.perf_counter()
            n = sum(group.foreach_env_runner(sample, local_env_runner=False))
            return n / (time.perf_counter() - t)
        finally:
            algo.stop()


def raw_rate(env_id: str, steps: int) -> float:
    """Env steps/s of a raw libsumo loop of one copy of ``env_id``'s road: SUMO stepped as the
    env steps it (the merge: two 0.5 s steps per env step, on a road filled for 300 s first)
    and every vehicle's state read, with no noise, control or policy. The per-core anchor
    the samplers are set against."""
    import time

    import numpy as np

    from rlsuite.apps.traffic.envs import merge_road, ring, ring_2lane

    if env_id.startswith("rlsuite/Merge"):
        core, substeps, fill = (
            merge_road.MergeSimulation(merge_road.MergeConfig(horizon=10_000)),
            2,
            300,
        )
    elif env_id == "rlsuite/Ring2Lane-v0":
        cfg = ring_2lane.Ring2LaneConfig(warmup_steps=0, horizon=steps + 10)
        core, substeps, fill = ring_2lane.Ring2LaneSimulation(cfg), 1, 0
    else:
        cfg = ring.RingConfig(warmup_steps=0, horizon=steps + 10, accel_noise=0.0)
        core, substeps, fill = ring.RingSimulation(cfg), 1, 0
    try:
        core.start(np.random.default_rng(0))
        for _ in range(fill):
            core.advance({})
        sim = core.sim
        if sim.backend != "libsumo":
            raise RuntimeError(f"the raw loop needs libsumo, not {sim.backend}")
        read = sim.vehicle_lane_states if env_id == "rlsuite/Ring2Lane-v0" else sim.vehicle_states
        fixed = getattr(core, "ids", None)  # the rings' vehicles stay; the merge's come and go
        t = time.perf_counter()
        for _ in range(steps):
            for _ in range(substeps):
                sim.step()
                read(fixed or sim.vehicle_ids())
        return steps / (time.perf_counter() - t)
    finally:
        core.close()


def env_rate(env_id: str, env_config: Mapping[str, Any], steps: int, copies: int = 0) -> float:
    """Env steps/s of ``env_id`` stepped in this process with seeded random actions: one scalar
    env, or ``copies`` copies in one simulation (its vector entry point; an env step is one
    copy advancing), over whole episodes (a reset included where one ends)."""
    import time

    from rlsuite.platform import envs

    env = envs.make_vector(env_id, copies, env_config) if copies else envs.make(env_id, env_config)
    try:
        env.reset(seed=0)
        space = env.action_space
        if hasattr(space, "seed"):
            space.seed(0)
        n, t = 0, time.perf_counter()
        while n < steps:
            if hasattr(env, "agents"):  # a PettingZoo parallel env: every live agent acts
                acts = {a: env.action_space(a).sample() for a in env.agents}
                env.step(acts)
                if not env.agents:
                    env.reset()
            else:
                _, _, term, trunc, _ = env.step(space.sample())
                if not copies and (term or trunc):
                    env.reset()
            n += max(copies, 1)
        return n / (time.perf_counter() - t)
    finally:
        env.close()


def rollout_time(env_id: str, env_config: Mapping[str, Any], workers: int, trajectories: int,
                 copies: int) -> dict:  # fmt: skip
    """Wall time to collect ``trajectories`` whole episodes on ``workers`` env runners of the
    sync plan (its PPO module acting), ``copies`` per runner in one simulation (its vector
    entry point: all copies of a runner end their episodes together)."""
    import time

    from rlsuite.platform import envs, optimizers

    per = -(-trajectories // workers)
    if per % copies:
        raise ValueError(f"{trajectories} trajectories on {workers} worker(s) is {per} each, not a "
                         f"multiple of the {copies} copies per worker")  # fmt: skip
    envs.rllib_env(env_id)
    plan = optimizers.make_plan("sync", env=env_id, env_config=dict(env_config), seed=0,
                                num_env_runners=workers, num_envs_per_env_runner=copies,
                                normalize_actions=False)  # fmt: skip
    algo = optimizers.to_rllib(plan).build_algo()
    try:
        t = time.perf_counter()
        parts = algo.env_runner_group.foreach_env_runner(
            lambda r: [len(e) for e in r.sample(num_episodes=per, random_actions=False, force_reset=True)],
            local_env_runner=False,
        )  # fmt: skip
        wall = time.perf_counter() - t
    finally:
        algo.stop()
    lens = [n for part in parts for n in part]
    return dict(workers=workers, rings_per_worker=copies, trajectories=len(lens),
                steps=int(sum(lens)), wall_s=wall)  # fmt: skip
