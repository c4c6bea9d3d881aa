"""R2D3's measurements (``benchmarks/platform/r2d3.py``, which declares their settings and
rows): a plan trained to a return or a budget, its chosen policy acting greedily on held-out
env seeds, a demonstrator's own score on the same seeds, demonstrations recorded from a
checkpoint, and the two parts (:func:`weak`, :func:`lunar`) with their plans' settings.

Env seeds: demonstrations are recorded on seeds from :data:`DEMO_SEEDS`, the held-out
evaluation runs on seeds from :data:`HELD_OUT_SEEDS`; training envs are seeded by the plan.
"""

from __future__ import annotations

import math
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

DEMO_SEEDS = 5_000
"""The first env seed of recorded demonstrations."""
HELD_OUT_SEEDS = 10_000
"""The first env seed of the held-out evaluation."""
PROBE_SEEDS = 20_000
"""The first env seed of the greedy probes that may stop training (never held out)."""


class CartPoleWeak:
    """A weak CartPole demonstrator, one rule: push the way the pole swings, less a tenth of
    the cart's own velocity, ``a = [omega - 0.1 * x_dot > 0]``. It keeps the pole up but lets
    the cart run off the track: about 150 (144 on env seeds 1000-1049)."""

    name = "weak-swing"

    def act(self, obs: Any) -> int:
        return int(obs[3] - 0.1 * obs[1] > 0)


def held_out(
    controller: Any, env: str, episodes: int, first: int = HELD_OUT_SEEDS
) -> dict[str, Any]:
    """``controller``'s greedy returns on the held-out env seeds (from ``first``)."""
    from rlsuite.platform.evaluation import evaluate, scenarios

    seeds = range(first, first + episodes)
    ev = evaluate(controller, scenarios(env, seeds), num_workers=0)
    return dict(
        mean=round(ev.summary["return"]["mean"], 2),
        std=round(ev.summary["return"]["std"], 2),
        returns=[round(r["return"], 2) for r in ev.episodes],
        env_seeds=f"{seeds.start}..{seeds.stop - 1}",
    )


def save_policy(backend: Any, plan: Any, steps: int, path: str) -> str:
    """``backend``'s policy as a platform checkpoint at ``path`` (loadable as a controller)."""
    from rlsuite.platform.checkpoints.layout import write_meta

    os.makedirs(path, exist_ok=True)
    backend.save(path)
    write_meta(path, plan, 0, steps, backend)
    return path


def train(
    plan: Any,
    *,
    max_env_steps: int,
    stop_return: float,
    max_wall_s: float,
    eval_episodes: int,
    say: Callable[[str], None],
    keep: str = "",
    probe_every: int = 0,
    probe_episodes: int = 5,
) -> dict[str, Any]:
    """Train ``plan`` until its smoothed training return reaches ``stop_return``,
    ``max_env_steps`` env steps or ``max_wall_s`` seconds, then act greedily on
    ``eval_episodes`` held-out seeds. Wall time counts from the first iteration.

    With ``probe_every``, the policy acts greedily on ``probe_episodes`` probe seeds every
    ``probe_every`` env steps; training stops when a probe's mean reaches ``stop_return``,
    and the policy chosen is the one of the best probe (the last, without probes).
    ``held_out`` is the chosen policy's, ``held_out_last`` the last one's. ``keep``: a
    folder to copy the chosen policy's checkpoint to."""
    from rlsuite.platform.backends.registry import make_backend
    from rlsuite.platform.benchmarking.to_target import train_to_target
    from rlsuite.platform.checkpoints import load_controller

    def score(path: str, episodes: int, first: int) -> dict[str, Any]:
        return held_out(load_controller(path), plan.env, episodes, first)

    work = tempfile.mkdtemp(prefix="r2d3-")
    chosen, probe, last = (os.path.join(work, d) for d in ("chosen", "probe", "last"))
    backend = make_backend(plan)
    curve, probes, end = [], [], {}

    def on_row(steps: int, wall: float, row: dict[str, Any]) -> float | None:
        ret, share = row["episode_return_mean"], row.get("demo_share", math.nan)
        curve.append((steps, round(wall, 1), ret, share))
        if len(curve) % 5 == 1:
            say(f"{plan.name} seed {plan.seed}: {steps:>7} steps {wall:5.0f} s return "
                f"{ret:7.1f} demo share {share:.2f}")  # fmt: skip
        if not probe_every:
            return None
        if steps < (len(probes) + 1) * probe_every:
            return -math.inf
        shutil.rmtree(probe, ignore_errors=True)
        policy = save_policy(backend, plan, steps, probe)
        probed = score(policy, probe_episodes, PROBE_SEEDS)["mean"]
        if not probes or probed >= max(p[2] for p in probes):
            shutil.rmtree(chosen, ignore_errors=True)
            os.replace(probe, chosen)
            end["chosen_at"] = steps
        probes.append((steps, round(time.perf_counter() - t0, 1), probed))
        say(f"{plan.name} seed {plan.seed}: {steps:>7} steps, greedy probe {probed:.1f}")
        return probed

    def finish(steps: int, wall: float) -> None:
        end["wall_run"] = wall
        end["last"] = score(save_policy(backend, plan, steps, last), eval_episodes, HELD_OUT_SEEDS)
        picked = chosen if end.get("chosen_at") else last
        end["final"] = (
            score(chosen, eval_episodes, HELD_OUT_SEEDS) if picked == chosen else end["last"]
        )
        if keep:
            shutil.rmtree(keep, ignore_errors=True)
            shutil.copytree(picked, keep)

    t0 = time.perf_counter()
    try:
        run = train_to_target(backend, stop_return, max_env_steps, max_wall_s, on_row, finish)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    steps, final, chosen_at = run.env_steps_run, end["final"], end.get("chosen_at")
    say(f"{plan.name} seed {plan.seed}: {steps} steps, best {run.best_return:.1f}, "
        f"held-out {final['mean']}")  # fmt: skip
    return dict(
        reached=run.reached is not None,
        **(run.reached or {}),
        best_return=run.best_return,
        env_steps_run=steps,
        wall_s_run=end["wall_run"],
        held_out=final,
        held_out_last=end["last"],
        chosen="the best greedy probe's policy" if chosen_at else "the last policy",
        chosen_at_env_steps=chosen_at or steps,
        curve_columns=["env_steps", "wall_s", "return", "demo_share"],
        curve=curve,
        stopped_by="greedy probe" if probe_every else "smoothed training return",
        probe_columns=["env_steps", "wall_s", "greedy_return"],
        probes=probes,
    )


def record_demonstrations(controller: Any, env: str, steps: int, path: str) -> dict[str, Any]:
    """The first ``steps`` transitions of ``controller``'s episodes (anything
    :func:`rlsuite.platform.evaluation.build_controller` takes: a checkpoint's path acts
    greedily) on env seeds from :data:`DEMO_SEEDS`, written as parquet at ``path`` (a cut
    last episode ends truncated)."""
    import pyarrow.parquet as pq

    from rlsuite.platform.demo_sources import record
    from rlsuite.platform.evaluation import build_controller

    ctrl, episodes, table = build_controller(controller), 0, None
    while table is None or table.num_rows < steps:
        episodes = max(2 * episodes, 8)
        info = record(ctrl, env, episodes, path, seed=DEMO_SEEDS, name="expert")
        table = pq.read_table(path)
    pq.write_table(table.slice(0, steps), path)
    kept = set(table.slice(0, steps).column("eps_id").to_pylist())
    return dict(path=path, transitions=steps, episodes=len(kept),
                recorded_return_mean=info["return_mean"], recorded_episodes=episodes,
                env_seeds=f"{DEMO_SEEDS}..{DEMO_SEEDS + len(kept) - 1}")  # fmt: skip


WEAK = "rlsuite.platform.benchmarking.r2d3_cells:CartPoleWeak"
"""The weak demonstrator, as ``demonstrations=CONTROLLER:N`` names it."""
CARTPOLE_APEX = dict(
    num_env_runners=3, num_envs_per_env_runner=1, num_replay_shards=2, buffer_size=20_000,
    target_update_freq=500, training_intensity=4.0,
)  # fmt: skip
"""``apex`` on CartPole: RLlib's ``cartpole-apex.yaml`` (as in ``platform_cartpole450``)."""
LUNAR_PPO = dict(
    num_env_runners=2, num_envs_per_env_runner=8, hidden=(64, 64), activation="tanh",
    lr=3e-4, gamma=0.999, lambda_=0.98, num_epochs=4, train_batch_size=8192,
    minibatch_size=256, entropy_coeff=0.01, clip_param=0.2, vf_loss_coeff=0.5,
)  # fmt: skip
"""The PPO expert: rl-baselines3-zoo's LunarLander PPO (gamma 0.999, lambda 0.98, 4
epochs, entropy 0.01), minibatches of 256 (the zoo's 64 is too slow on 2 cores; 512 left
the greedy policy at 35 after 1M steps)."""
LUNAR_APEX = dict(
    num_env_runners=2, num_envs_per_env_runner=4, num_replay_shards=2, buffer_size=100_000,
    hidden=(256, 256), lr=5e-4, train_batch_size=64, n_step=3, gamma=0.99,
    target_update_freq=2000, learning_starts=5000, training_intensity=16.0,
)  # fmt: skip
"""``apex`` on LunarLander, both arms."""


def _steps(s: Any) -> int:
    return s.max_env_steps or (100_000 if s.part == "weak" else 400_000)


def _plan(name: str, env: str, seed: int, values: dict, **more: Any) -> Any:
    from rlsuite.platform.optimizers import make_plan

    return make_plan(name, env=env, seed=seed, **values, **more)


def _arm_values(arm: str, s: Any, demos: str) -> dict[str, Any]:
    if arm == "demos":
        return dict(demonstrations=demos, demo_ratio=s.demo_ratio)
    if arm == "none":
        return {}
    raise ValueError(f"--arms takes demos and none, got {arm!r}")


def summary(cells: dict, steps: int, demonstrator: float | None) -> dict[str, Any]:
    """Per arm: seeds, how many reached the target, median env steps (a miss counts at
    ``steps``) and wall seconds, and the held-out returns' mean and lowest."""
    out = {}
    for arm, seeds in cells.items():
        cs = list(seeds.values())
        finals = [c["held_out"]["mean"] for c in cs]
        out[arm] = dict(
            seeds=len(cs),
            reached=sum(c["reached"] for c in cs),
            median_env_steps=statistics.median(
                c["env_steps"] if c["reached"] else steps for c in cs
            ),
            median_wall_s=statistics.median(c["wall_s"] if c["reached"] else c["wall_s_run"] for c in cs),
            held_out_mean=round(statistics.mean(finals), 2),
            held_out_min=min(finals),
            over_demonstrator_min=round(min(finals) / demonstrator, 2) if demonstrator else None,
        )  # fmt: skip
    return out


def plot(cells: dict, title: str, lines: dict[str, float]) -> Any:
    """Each arm's and seed's smoothed training return against env steps, with ``lines``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    for i, (arm, seeds) in enumerate(cells.items()):
        for j, c in enumerate(seeds.values()):
            xs, ys = [p[0] for p in c["curve"]], [p[2] for p in c["curve"]]
            ax.plot(xs, ys, color=f"C{i}", alpha=0.8, label=arm if j == 0 else None)
    for k, (label, y) in enumerate(lines.items()):
        ax.axhline(y, color=f"C{k + 3}", ls="--", lw=0.9, label=label)
    ax.set_xlabel("env steps")
    ax.set_ylabel("smoothed training return")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(title, fontsize=9)
    return fig


def weak(ctx: Any) -> int:
    """``--part weak``: CartPole past the weak demonstrator (see the benchmark's docstring)."""
    s, stem = ctx.settings, "platform_r2d3_weak"
    old = ctx.load(stem) if ctx.resume else {}
    cells = old.get("cells", {})
    own = held_out(CartPoleWeak(), "CartPole-v1", s.eval_episodes)
    ctx.say(f"the demonstrator on the held-out seeds: {own['mean']}")
    demos = f"{WEAK}:{s.demo_episodes}"
    for seed in ctx.seeds or (0,):
        for arm in s.arms.split(","):
            if str(seed) in cells.get(arm, {}):
                continue
            plan = _plan("apex", "CartPole-v1", seed, CARTPOLE_APEX, **_arm_values(arm, s, demos))
            cells.setdefault(arm, {})[str(seed)] = train(
                plan, max_env_steps=_steps(s), stop_return=475.0, max_wall_s=s.max_wall_s,
                eval_episodes=s.eval_episodes, say=ctx.say, probe_every=s.probe_every or 5000,
            )  # fmt: skip
            out = dict(summary=summary(cells, _steps(s), own["mean"]), demonstrator=own,
                       demonstrations=demos, demo_ratio=s.demo_ratio, plan=CARTPOLE_APEX,
                       cells=cells)  # fmt: skip
            ctx.save(stem, out)
    summ = summary(cells, _steps(s), own["mean"])
    ctx.save_plot(stem, plot(cells, "CartPole-v1, apex with a weak demonstrator's episodes",
                             {"the demonstrator (held-out)": own["mean"],
                              "2x the demonstrator": 2 * own["mean"]}))  # fmt: skip
    ctx.table([dict(arm=a, **v) for a, v in summ.items()], "held-out return of the final policy")
    return ctx.verdict({
        f"{arm}: every seed's final policy >= 2x the demonstrator ({own['mean']:.0f})":
            all(c["held_out"]["mean"] >= 2 * own["mean"] for c in cells[arm].values())
        for arm in cells
    })  # fmt: skip


def lunar(ctx: Any) -> int:
    """``--part lunar``: the PPO expert (trained unless resumed), its demonstrations, then
    ``apex`` per arm (all seeds of the first arm before the next)."""
    s, stem, env = ctx.settings, "platform_r2d3_lunar", "LunarLander-v3"
    root = os.path.abspath(ctx.run_dir("runs/bench/platform_r2d3"))
    old = ctx.load(stem) if ctx.resume else {}
    cells, expert = old.get("cells", {}), old.get("expert")
    ckpt, demos = os.path.join(root, "lunar_expert"), os.path.join(root, "lunar_demos.parquet")
    needs_demos = "demos" in s.arms.split(",")  # the arm without them needs no expert
    if needs_demos and (not expert or not os.path.exists(ckpt)):
        expert = train(
            _plan("sync", env, 0, LUNAR_PPO), max_env_steps=s.expert_steps, stop_return=240.0,
            max_wall_s=s.expert_wall_s, eval_episodes=s.eval_episodes, say=ctx.say, keep=ckpt,
            probe_every=s.expert_probe_every, probe_episodes=10,
        )  # fmt: skip
        expert.update(checkpoint=os.path.relpath(ckpt), plan=LUNAR_PPO)
        ctx.save(stem, dict(expert=expert, cells=cells))
        if os.path.exists(demos):
            os.remove(demos)
    if needs_demos and not os.path.exists(demos):
        expert["demonstrations"] = record_demonstrations(ckpt, env, s.demo_steps, demos)
    expert_mean = expert["held_out"]["mean"] if expert else None
    ctx.say(f"expert: held-out {expert_mean}")
    for arm in s.arms.split(","):
        for seed in ctx.seeds or (0,):
            if str(seed) in cells.get(arm, {}):
                continue
            plan = _plan("apex", env, seed, LUNAR_APEX, **_arm_values(arm, s, demos))
            cells.setdefault(arm, {})[str(seed)] = train(
                plan, max_env_steps=_steps(s), stop_return=200.0, max_wall_s=s.max_wall_s,
                eval_episodes=s.eval_episodes, say=ctx.say, probe_every=s.probe_every or 20_000,
            )  # fmt: skip
            ctx.save(stem, dict(summary=summary(cells, _steps(s), None), expert=expert,
                                demo_ratio=s.demo_ratio, plan=LUNAR_APEX, max_env_steps=_steps(s),
                                max_wall_s=s.max_wall_s, cells=cells))  # fmt: skip
    summ = summary(cells, _steps(s), None)
    ctx.save_plot(stem, plot(cells, "LunarLander-v3, apex with and without 5,000 expert steps",
                             {"target 200": 200.0, "the PPO expert (held-out)": expert_mean}
                             if expert else {"target 200": 200.0}))  # fmt: skip
    ctx.table([dict(arm=a, **v) for a, v in summ.items()], "LunarLander-v3 to 200")
    checks = {f"{a} reaches 200 on every seed": v["reached"] == v["seeds"] for a, v in summ.items()}
    if {"demos", "none"} <= set(summ):
        checks["demonstrations reach 200 in fewer env steps"] = (
            summ["demos"]["median_env_steps"] < summ["none"]["median_env_steps"]
        )
    return ctx.verdict(checks)
