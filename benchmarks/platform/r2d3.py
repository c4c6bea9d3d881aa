"""R2D3 / DQfD: demonstrations inside the ``apex`` plan's replay (each learner batch element
is a demonstration with probability ``demo_ratio``, rho = 1/4, DI-engine's LunarLander
setting), measured on the final policy acting greedily on held-out env seeds.

``--part weak``: learning past a weak demonstrator. CartPole-v1, demonstrations from a
hand-written rule at about 150 (``CartPoleWeak`` in
``rlsuite/platform/benchmarking/r2d3_cells.py``: ``a = [omega - 0.1 * x_dot > 0]``, 20
episodes), ``apex`` with RLlib's ``cartpole-apex.yaml`` settings (3 runners, 2 shards, a 20k
buffer, replay ratio 4). Each seed trains until its greedy policy's mean return on 5 probe
episodes (env seeds from 20,000, tried every ``--probe-every`` env steps) reaches 475, or
100k env steps, or ``--max-wall-s``; the policy of its best probe is the one held out (the
last one's score is kept beside). The demonstrator acts on the same held-out seeds.
Pass: every seed's policy scores at least twice the demonstrator's mean.

``--part lunar``: LunarLander-v3 (gymnasium's Box2D). A PPO expert that the ``sync`` plan
trains here (its checkpoint kept under ``runs/bench/platform_r2d3/``, its held-out score
recorded), 5,000 demonstration steps from it, then ``apex`` with and without them, each
until the smoothed training return reaches 200 or its step or wall budget. Pass: both arms
reach 200 and the arm with demonstrations in fewer env steps.

Writes ``platform_r2d3_weak.json`` / ``platform_r2d3_lunar.json`` (per arm and seed: reached,
env steps and wall seconds, the held-out returns, the curve with the demonstrated share of
the learner's batches) and a PNG of each.
"""

from __future__ import annotations

import os
import statistics
from dataclasses import dataclass

from rlsuite.bench import Benchmark, Row, Value, command, here

WEAK = "rlsuite.platform.benchmarking.r2d3_cells:CartPoleWeak"
CARTPOLE_APEX = dict(
    num_env_runners=3, num_envs_per_env_runner=1, num_replay_shards=2, buffer_size=20_000,
    target_update_freq=500, training_intensity=4.0,
)  # fmt: skip
"""``apex`` on CartPole: RLlib's ``cartpole-apex.yaml`` (as in ``platform_cartpole450``)."""
LUNAR_PPO = dict(
    num_env_runners=2, num_envs_per_env_runner=8, hidden=(64, 64), activation="tanh",
    lr=3e-4, gamma=0.999, lambda_=0.98, num_epochs=4, train_batch_size=8192,
    minibatch_size=512, entropy_coeff=0.01, clip_param=0.2, vf_loss_coeff=0.5,
)  # fmt: skip
"""The PPO expert: rl-baselines3-zoo's LunarLander PPO (gamma 0.999, lambda 0.98, 4
epochs, entropy 0.01), larger minibatches for 2 cores."""
LUNAR_APEX = dict(
    num_env_runners=2, num_envs_per_env_runner=4, num_replay_shards=2, buffer_size=100_000,
    hidden=(256, 256), lr=5e-4, train_batch_size=64, n_step=3, gamma=0.99,
    target_update_freq=2000, learning_starts=5000, training_intensity=16.0,
)  # fmt: skip
"""``apex`` on LunarLander, both arms."""


@dataclass(frozen=True)
class Settings:
    part: str = "weak"
    """weak (CartPole past a weak demonstrator) or lunar (LunarLander from a PPO expert)"""
    arms: str = "demos"
    """the arms to run: demos (with demonstrations), none (the same plan without)"""
    demo_ratio: float = 0.25
    """rho: the probability that a learner batch element is a demonstration"""
    demo_episodes: int = 20
    """weak: the demonstrator's episodes recorded"""
    demo_steps: int = 5000
    """lunar: demonstration steps from the expert"""
    max_env_steps: int = 0
    """env steps per arm and seed (0: weak 100,000, lunar 400,000)"""
    max_wall_s: float = 300.0
    """give an arm's seed up after this long"""
    expert_steps: int = 1_000_000
    """lunar: the PPO expert's env steps at most"""
    expert_wall_s: float = 420.0
    """lunar: the PPO expert's wall seconds at most"""
    eval_episodes: int = 20
    """held-out episodes for each final policy and the demonstrator"""
    probe_every: int = 0
    """env steps between greedy probes (5 episodes) that stop a run (0: weak 5,000, lunar 20,000)"""


def _steps(s: Settings) -> int:
    return s.max_env_steps or (100_000 if s.part == "weak" else 400_000)


def _plan(name: str, env: str, seed: int, values: dict, **more):
    from rlsuite.platform.optimizers import make_plan

    return make_plan(name, env=env, seed=seed, **values, **more)


def _summary(cells: dict, steps: int, demonstrator: float | None) -> dict:
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


def _plot(cells: dict, title: str, lines: dict):
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


def _arm_values(arm: str, s: Settings, demos: str) -> dict:
    if arm == "demos":
        return dict(demonstrations=demos, demo_ratio=s.demo_ratio)
    if arm == "none":
        return {}
    raise ValueError(f"--arms takes demos and none, got {arm!r}")


def weak(ctx) -> int:
    from rlsuite.platform.benchmarking.r2d3_cells import CartPoleWeak, held_out, train

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
            out = dict(summary=_summary(cells, _steps(s), own["mean"]), demonstrator=own,
                       demonstrations=demos, demo_ratio=s.demo_ratio, plan=CARTPOLE_APEX,
                       cells=cells)  # fmt: skip
            ctx.save(stem, out)
    summ = _summary(cells, _steps(s), own["mean"])
    ctx.save_plot(stem, _plot(cells, "CartPole-v1, apex with a weak demonstrator's episodes",
                              {"the demonstrator (held-out)": own["mean"],
                               "2x the demonstrator": 2 * own["mean"]}))  # fmt: skip
    ctx.table([dict(arm=a, **v) for a, v in summ.items()], "held-out return of the final policy")
    return ctx.verdict({
        f"{arm}: every seed's final policy >= 2x the demonstrator ({own['mean']:.0f})":
            all(c["held_out"]["mean"] >= 2 * own["mean"] for c in cells[arm].values())
        for arm in cells
    })  # fmt: skip


def lunar(ctx) -> int:
    from rlsuite.platform.benchmarking import r2d3_cells as cells_mod

    s, stem, env = ctx.settings, "platform_r2d3_lunar", "LunarLander-v3"
    root = os.path.abspath(ctx.run_dir("runs/bench/platform_r2d3"))
    old = ctx.load(stem) if ctx.resume else {}
    cells, expert = old.get("cells", {}), old.get("expert")
    ckpt, demos = os.path.join(root, "lunar_expert"), os.path.join(root, "lunar_demos.parquet")
    if not expert or not os.path.exists(ckpt):
        plan = _plan("sync", env, 0, LUNAR_PPO)
        expert = cells_mod.train(
            plan, max_env_steps=s.expert_steps, stop_return=240.0, max_wall_s=s.expert_wall_s,
            eval_episodes=s.eval_episodes, say=ctx.say, keep=ckpt,
        )  # fmt: skip
        expert.update(checkpoint=os.path.relpath(ckpt), plan=LUNAR_PPO)
        ctx.save(stem, dict(expert=expert, cells=cells))
    if not os.path.exists(demos):
        expert["demonstrations"] = cells_mod.record_demonstrations(ckpt, env, s.demo_steps, demos)
    ctx.say(f"expert: held-out {expert['held_out']['mean']}")
    score = expert["held_out"]["mean"]
    for seed in ctx.seeds or (0,):
        for arm in s.arms.split(","):
            if str(seed) in cells.get(arm, {}):
                continue
            plan = _plan("apex", env, seed, LUNAR_APEX, **_arm_values(arm, s, demos))
            cells.setdefault(arm, {})[str(seed)] = cells_mod.train(
                plan, max_env_steps=_steps(s), stop_return=200.0, max_wall_s=s.max_wall_s,
                eval_episodes=s.eval_episodes, say=ctx.say, probe_every=s.probe_every or 20_000,
            )  # fmt: skip
            ctx.save(stem, dict(summary=_summary(cells, _steps(s), None), expert=expert,
                                demo_ratio=s.demo_ratio, plan=LUNAR_APEX, max_env_steps=_steps(s),
                                max_wall_s=s.max_wall_s, cells=cells))  # fmt: skip
    summ = _summary(cells, _steps(s), None)
    ctx.save_plot(stem, _plot(cells, "LunarLander-v3, apex with and without 5,000 expert steps",
                              {"target 200": 200.0, "the PPO expert (held-out)": score}))  # fmt: skip
    ctx.table([dict(arm=a, **v) for a, v in summ.items()], "LunarLander-v3 to 200")
    checks = {f"{a} reaches 200 on every seed": v["reached"] == v["seeds"] for a, v in summ.items()}
    if {"demos", "none"} <= set(summ):
        checks["demonstrations reach 200 in fewer env steps"] = (
            summ["demos"]["median_env_steps"] < summ["none"]["median_env_steps"]
        )
    return ctx.verdict(checks)


def run(ctx) -> int:
    import torch

    from rlsuite.platform import cluster

    torch.set_num_threads(1)
    part = {"weak": weak, "lunar": lunar}.get(ctx.settings.part)
    if part is None:
        raise ValueError(f"--part must be weak or lunar, got {ctx.settings.part!r}")
    cluster.init()
    try:
        return part(ctx)
    finally:
        cluster.shutdown()


WEAK_CMD = command("platform_r2d3", "--part weak --seeds 0,1,2")
WEAK_NONE_CMD = command("platform_r2d3", "--part weak --seeds 0,1,2 --arms none --resume")
LUNAR_CMD = command(
    "platform_r2d3", "--part lunar --arms demos,none --seeds 0 --expert-wall-s 480 --max-wall-s 330"
)
_WEAK = "`apex` (Ape-X) with a weak demonstrator's episodes in replay (R2D3, rho 1/4), CartPole-v1"
_LUNAR = (
    "`apex` (Ape-X) with 5,000 steps of a PPO expert in replay (R2D3, rho 1/4), LunarLander-v3, "
    "1 seed (3 not run)"
)
_ROWS = (
    Row("platform", _WEAK + ": with demonstrations",
        "held-out return of the policy chosen on probe seeds, lowest of 3 seeds (20 episodes each)",
        "platform_r2d3_weak.json", Value(("summary", "demos", "held_out_min")),
        here("the demonstrator's own score, same held-out seeds", "demonstrator", "mean"),
        WEAK_CMD, fmt="{:.1f}"),
    Row("platform", _WEAK + ": with demonstrations",
        "env steps until the greedy probe (5 episodes every 5k) reaches 475, median of 3 seeds",
        "platform_r2d3_weak.json", Value(("summary", "demos", "median_env_steps")),
        here("the same plan without demonstrations, same file", "summary", "none",
             "median_env_steps"),
        WEAK_NONE_CMD, fmt="{:,.0f}", lower_is_better=True),
    Row("platform", _LUNAR + ": with demonstrations",
        "env steps to 200 (greedy probe of 5 episodes every 20k; a miss counts at the 400k budget)",
        "platform_r2d3_lunar.json", Value(("summary", "demos", "median_env_steps")),
        here("the same plan without demonstrations, same run", "summary", "none",
             "median_env_steps"),
        LUNAR_CMD, fmt="{:,.0f}", lower_is_better=True),
    Row("platform", _LUNAR + ": with demonstrations",
        "held-out return of the last policy (20 episodes)",
        "platform_r2d3_lunar.json", Value(("summary", "demos", "held_out_mean")),
        here("the PPO expert (`sync`, 1M env steps), same held-out seeds", "expert", "held_out",
             "mean"),
        LUNAR_CMD, fmt="{:.1f}"),
)  # fmt: skip

BENCHMARK = Benchmark(
    run=run,
    settings=Settings,
    seeds=True,
    resume=True,
    quick=dict(part="weak", max_env_steps=3000, max_wall_s=60.0, eval_episodes=2),
    rows=_ROWS,
)
