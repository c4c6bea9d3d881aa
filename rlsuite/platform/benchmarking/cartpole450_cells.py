"""The cells of ``rlsuite bench run platform_cartpole450``: each plan with its RLlib
example's settings (or a tuned variant) on one seed until a smoothed return of 450, the
medians over the seeds run, and the figure against env steps and wall time."""

from __future__ import annotations

import statistics
from typing import Any

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
"""Each plan's settings: its RLlib example's (``benchmarks/platform/cartpole450.py``'s docstring)."""


def _value(text: str):
    """``text`` as an int, else a float, else itself."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def cell_plan(name: str, seed: int, tune: str):
    """``name``'s plan on CartPole-v1; ``PLAN+tuned`` with ``tune``'s ``KEY=VALUE`` changes."""
    from rlsuite.platform.optimizers import make_plan

    values = dict(PLANS[name.removesuffix("+tuned")])
    if name.endswith("+tuned"):
        values.update(
            {k: _value(v) for k, v in (kv.split("=", 1) for kv in tune.split(":", 1)[1].split(","))}
        )
    return make_plan(name.removesuffix("+tuned"), env="CartPole-v1", seed=seed, **values)


def train_cell(name: str, seed: int, s: Any, say) -> dict:
    """One plan on one seed until 450, the step budget or the wall limit."""
    from rlsuite.platform.backends.registry import make_backend
    from rlsuite.platform.benchmarking.to_target import train_to_target

    curve = []
    run = train_to_target(
        make_backend(cell_plan(name, seed, s.tune)), s.target, s.max_env_steps, s.max_wall_s,
        lambda steps, wall, row: curve.append((steps, round(wall, 1), row["episode_return_mean"])),
    )  # fmt: skip
    say(f"{name} seed {seed}: {run.reached or 'missed'} (best {run.best_return:.1f} at {run.env_steps_run} steps)")  # fmt: skip
    return dict(reached=run.reached is not None, **(run.reached or {}), best_return=run.best_return,
                env_steps_run=run.env_steps_run, wall_s_run=run.wall_s_run, curve=curve)  # fmt: skip


def summary(cells: dict, s: Any) -> dict:
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


def plot(cells: dict):
    """Return against env steps and against wall time, one line per plan and seed."""
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
