"""CartPole-v1 to 450 within 300k env steps: the asynchronous plans (``apex``, ``async_grad``'s
A3C) beside ``replay`` and ``sync``, in env steps and wall time, in the same run on the same
machine.

Each plan trains with its own tuned settings (RLlib's examples, the same as the learning
tests): ``sync`` with ``cartpole_ppo.py``'s, ``replay`` with ``cartpole_dqn.py``'s, ``apex``
with ``cartpole-apex.yaml``'s (3 runners, 2 replay shards, 20k buffer, replay ratio 4) and
``async_grad`` with ``cartpole-a3c``'s (1 runner, gamma 0.95). A cell stops at a smoothed
return >= 450, at 300k env steps or at ``--max-wall-s``, whichever comes first; its wall time
counts from the first training iteration (actor start-up excluded). ``--tune KEY=VALUE``
reruns one plan with changed settings, as a cell of its own (``PLAN+tuned``).
Writes ``platform_cartpole450.json`` (per plan and seed: reached, env steps, wall seconds,
best return, the curve; per plan the medians over the seeds run, a miss counted at the step
budget and at the wall time it ran) and ``platform_cartpole450.png`` (return against env steps and
against wall time). Pass: each plan reaches 450 within 300k on every seed run.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from rlsuite.bench import Benchmark, Row, Value, command, here

PLANS = {
    "sync": dict(
        num_env_runners=2, num_envs_per_env_runner=1, lr=3e-4, num_epochs=6, vf_loss_coeff=0.01,
        hidden=(32,), activation="tanh", train_batch_size=4000, minibatch_size=128,
        lambda_=1.0, clip_param=0.3, kl_coeff=0.2, vf_clip_param=10.0, grad_clip=None,
        entropy_coeff=0.0, gamma=0.99,
    ),
    "replay": dict(
        num_env_runners=0, num_envs_per_env_runner=1, rollout_fragment_length="auto", lr=5e-4,
        train_batch_size=32, buffer_size=50_000, n_step=3, target_update_freq=500,
        learning_starts=1000, epsilon_timesteps=10_000, final_epsilon=0.02, hidden=(256,),
        activation="tanh", env_steps_per_iteration=1000,
    ),
    "apex": dict(
        num_env_runners=3, num_envs_per_env_runner=1, num_replay_shards=2, buffer_size=20_000,
        target_update_freq=500, training_intensity=4.0,
    ),
    "async_grad": dict(num_runners=1, gamma=0.95, env_steps_per_iteration=4000),
}  # fmt: skip
"""Each plan's settings: its RLlib example's (the module's docstring)."""


@dataclass(frozen=True)
class Settings:
    plans: str = "sync,replay,apex,async_grad"
    """the plans, in the order they run (for each seed)"""
    max_env_steps: int = 300_000
    """env steps per cell"""
    target: float = 450.0
    """the smoothed return to reach"""
    max_wall_s: float = 1200.0
    """give a cell up after this long"""
    tune: str = ""
    """PLAN:KEY=VALUE[,KEY=VALUE]: one more cell, PLAN+tuned, with these settings changed"""


def _value(text: str):
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def cell_plan(name: str, seed: int, tune: str):
    from rlsuite.platform.optimizers import make_plan

    values = dict(PLANS[name.removesuffix("+tuned")])
    if name.endswith("+tuned"):
        values.update(
            {k: _value(v) for k, v in (kv.split("=", 1) for kv in tune.split(":", 1)[1].split(","))}
        )
    return make_plan(name.removesuffix("+tuned"), env="CartPole-v1", seed=seed, **values)


def train_cell(ctx, name: str, seed: int) -> dict:
    """One plan on one seed until 450, the step budget or the wall limit."""
    from rlsuite.platform.backends.registry import make_backend
    from rlsuite.platform.benchmarking.to_target import train_to_target

    s, curve = ctx.settings, []
    run = train_to_target(
        make_backend(cell_plan(name, seed, s.tune)), s.target, s.max_env_steps, s.max_wall_s,
        lambda steps, wall, row: curve.append((steps, round(wall, 1), row["episode_return_mean"])),
    )  # fmt: skip
    ctx.say(f"{name} seed {seed}: {run.reached or 'missed'} (best {run.best_return:.1f} at {run.env_steps_run} steps)")  # fmt: skip
    return dict(reached=run.reached is not None, **(run.reached or {}), best_return=run.best_return,
                env_steps_run=run.env_steps_run, wall_s_run=run.wall_s_run, curve=curve)  # fmt: skip


def summary(cells: dict, s: Settings) -> dict:
    """Per plan: seeds run and reached, and the medians over every seed run, a miss counted
    at the step budget and at the wall time it ran (so a miss never flatters a plan)."""
    out = {}
    for name, seeds in cells.items():
        cs = list(seeds.values())
        out[name] = dict(
            seeds=len(cs),
            reached=sum(c["reached"] for c in cs),
            median_env_steps=statistics.median(
                c["env_steps"] if c["reached"] else s.max_env_steps for c in cs
            ),
            median_wall_s=statistics.median(
                c["wall_s"] if c["reached"] else c["wall_s_run"] for c in cs
            ),
            best_return=max(c["best_return"] for c in cs),
        )
    return dict(target=s.target, max_env_steps=s.max_env_steps, plans=out)


def _plot(cells: dict):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
    for i, (name, seeds) in enumerate(cells.items()):
        for j, c in enumerate(seeds.values()):
            xs, ws, ys = zip(*c["curve"]) if c["curve"] else ((), (), ())
            label = name if j == 0 else None
            axes[0].plot(xs, ys, color=f"C{i}", alpha=0.8, label=label)
            axes[1].plot(ws, ys, color=f"C{i}", alpha=0.8, label=label)
    for ax, x in zip(axes, ("env steps", "wall seconds (2 cores)")):
        ax.axhline(450, color="grey", ls="--", lw=0.8)
        ax.set_xlabel(x)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("smoothed return, CartPole-v1")
    axes[0].legend()
    fig.suptitle("CartPole-v1 to 450 within 300k env steps, each plan with its example's settings")
    return fig


def run(ctx) -> int:
    import torch

    from rlsuite.platform import cluster

    torch.set_num_threads(1)
    s = ctx.settings
    names = s.plans.split(",") + ([s.tune.split(":", 1)[0] + "+tuned"] if s.tune else [])
    cells = ctx.load("platform_cartpole450").get("cells", {})
    cluster.init()
    try:
        for seed in ctx.seeds or (0,):
            for name in names:
                if str(seed) in cells.get(name, {}):
                    continue
                cells.setdefault(name, {})[str(seed)] = train_cell(ctx, name, seed)
                ctx.save("platform_cartpole450", dict(summary=summary(cells, s), cells=cells))
    finally:
        cluster.shutdown()
    ctx.save("platform_cartpole450", dict(summary=summary(cells, s), cells=cells))
    ctx.save_plot("platform_cartpole450", _plot(cells))
    ctx.table([dict(plan=k, **v) for k, v in summary(cells, s)["plans"].items()], "to 450")
    return ctx.verdict(
        {
            f"{name} reaches {s.target} within {s.max_env_steps:,} env steps on every seed": all(
                c["reached"] for c in cells[name].values()
            )
            for name in names
        }
    )


CMD = command("platform_cartpole450", "--seeds 0,1,2 --resume --max-wall-s 600")


def _row(plan: str, what: str, key: str, ref: str, fmt: str) -> Row:
    return Row("platform", f"`{plan}` to 450 within 300k env steps, CartPole-v1 (its example's settings)",
               f"{what} to 450, median of the seeds run (a miss counts at the 300k budget, or its "
               "wall time)", "platform_cartpole450.json",
               Value(("summary", "plans", plan, key)),
               here(f"`{ref}` (its example's settings), same run", "summary", "plans", ref, key),
               CMD, fmt=fmt, lower_is_better=True)  # fmt: skip


BENCHMARK = Benchmark(
    run=run,
    settings=Settings,
    seeds=True,
    resume=True,
    quick=dict(plans="async_grad,apex", max_env_steps=2000, max_wall_s=30.0),
    rows=(
        _row("apex", "env steps", "median_env_steps", "replay", "{:,.0f}"),
        _row("apex", "wall seconds", "median_wall_s", "replay", "{:.0f} s"),
        _row("async_grad", "env steps", "median_env_steps", "sync", "{:,.0f}"),
        _row("async_grad", "wall seconds", "median_wall_s", "sync", "{:.0f} s"),
        Row(
            "platform",
            "`async_grad` (A3C) to 450 within 300k env steps, CartPole-v1, gamma 0.99 "
            "(the example's 0.95 misses one seed)",
            "env steps to 450, median of 3 seeds",
            "platform_cartpole450.json",
            Value(("summary", "plans", "async_grad+tuned", "median_env_steps")),
            here(
                "`sync` (its example's settings), same file",
                "summary",
                "plans",
                "sync",
                "median_env_steps",
            ),
            command(
                "platform_cartpole450",
                "--seeds 0,1,2 --resume --plans async_grad "
                "--tune async_grad:gamma=0.99 --max-wall-s 500",
            ),
            fmt="{:,.0f}",
            lower_is_better=True,
        ),
    ),
)
