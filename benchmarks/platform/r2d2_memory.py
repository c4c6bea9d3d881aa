"""A memory task: the longest delay k at which ``r2d2`` (LSTM) and the feed-forward ``replay``
plan can repeat the first observation, on ``rlsuite/RepeatFirst-v0``.

The env (:class:`rlsuite.platform.memory_envs.RepeatFirst`, bsuite's ``memory_len`` shape):
a cue (+1 or -1) shows at the first step, then ``k`` blank steps; the next action must name
the cue, for +1 (else -1), and the episode ends (k + 1 steps). Chance is 0; a feed-forward
policy can do no better for k >= 1, and k = 0 needs no memory (it checks that ``replay``
learns the task at all).

"Solves": the smoothed training return (the last 20 episodes, with the runners'
exploration) reaches ``target`` (0.8: at least 90% right answers) within ``max_env_steps``
env steps. Each plan walks up the delay grid (``delays``) and stops at its first unsolved k;
its longest solved k is the last one before that (-1: none). One seed per cell.

The plans: ``r2d2`` with the StatelessCartPole settings of ``platform_r2d2`` (sequences of 20
with a burn-in of 10, so a delay past ~30 steps leaves the cue outside every replayed window
and only the stored state can carry it), learning from 1,000 steps; ``replay`` with that
benchmark's feed-forward DQN, its epsilon annealed over 2,000 steps instead of 20,000 (the
budget here is 20,000). Writes ``platform_r2d2_memory.json`` and ``.png``.

Pass criterion: ``r2d2``'s longest solved delay is larger than ``replay``'s.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from rlsuite.bench import Benchmark, Row, Value, command, here

ENV = "rlsuite/RepeatFirst-v0"
OUT = "platform_r2d2_memory"
"""The default results name (the row's file)."""


@dataclass(frozen=True)
class Settings:
    delays: str = "0,1,2,4,8,16,32,64"
    """the delay grid k, walked up in this order"""
    plans: str = "r2d2,replay"
    """the plans, in turn"""
    max_env_steps: int = 20_000
    """env steps per plan and delay at most"""
    target: float = 0.8
    """the smoothed training return that counts as solved (1 = always right, 0 = chance)"""
    max_wall_s: float = 120.0
    """give a cell up after this long (a cut cell counts as unsolved, and says so)"""
    seed: int = 0
    """the seed of every cell"""
    out: str = "platform_r2d2_memory"
    """results name (another seed: another file)"""


def plan_for(name: str, delay: int, seed: int):
    from rlsuite.platform.optimizers import make_plan

    common = dict(env=ENV, env_config={"delay": delay}, env_steps_per_iteration=1000, seed=seed)
    if name == "r2d2":
        return make_plan(
            "r2d2", num_env_runners=2, num_envs_per_env_runner=4, rollout_fragment_length=20,
            num_replay_shards=2, seq_len=20, burn_in=10, n_step=5, gamma=0.99, lr=5e-4,
            epsilon=0.1, hidden=(64,), cell_size=64, train_batch_size=32, buffer_size=5000,
            learning_starts=1000, target_update_freq=1000, training_intensity=32.0,
            min_time_s_per_iteration=0.0, **common,
        )  # fmt: skip
    return make_plan(
        "replay", num_env_runners=2, num_envs_per_env_runner=1, hidden=(256,), lr=5e-4,
        train_batch_size=32, buffer_size=100_000, n_step=1, epsilon_timesteps=2000,
        final_epsilon=0.02, training_intensity=8.0, **common,
    )  # fmt: skip


def learn(ctx, name: str, delay: int) -> dict:
    """One plan at one delay until solved, the step budget or the wall limit."""
    from rlsuite.platform.backends.rllib import RLlibBackend
    from rlsuite.platform.benchmarking.to_target import train_to_target

    s, curve = ctx.settings, []
    backend = RLlibBackend(plan_for(name, delay, s.seed))
    plan = backend.plan.to_dict()
    run = train_to_target(backend, s.target, s.max_env_steps, s.max_wall_s,
                          lambda steps, wall, row: curve.append(
                              (steps, round(wall, 1), row["episode_return_mean"])))  # fmt: skip
    stop = (
        "solved"
        if run.reached
        else "budget"
        if run.env_steps_run >= s.max_env_steps
        else "max_wall_s"
    )
    ctx.say(f"{name} k={delay}: {stop} (best {run.best_return:.2f} at {run.env_steps_run} steps)")
    return dict(delay=delay, solved=run.reached is not None, **(run.reached or {}),
                stopped_by=stop, best_return=run.best_return, env_steps_run=run.env_steps_run,
                wall_s_run=run.wall_s_run, loadavg_1min_at_end=round(os.getloadavg()[0], 2),
                curve=curve, plan=plan)  # fmt: skip


def longest(cells: list[dict]) -> int:
    """The largest delay solved before the first unsolved one (-1: none)."""
    best = -1
    for c in sorted(cells, key=lambda c: c["delay"]):
        if not c["solved"]:
            break
        best = c["delay"]
    return best


def _plot(out: dict, s: Settings):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    for i, (name, cells) in enumerate(out.items()):
        ks = [c["delay"] for c in cells]
        ax.plot([max(k, 0.5) for k in ks], [c["best_return"] for c in cells], "o-",
                color=f"C{i}", label=f"{name} (longest solved k={longest(cells)})")  # fmt: skip
    ax.axhline(s.target, color="grey", ls="--", lw=0.8, label=f"solved: {s.target:g}")
    ax.axhline(0.0, color="grey", ls=":", lw=0.8)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("delay k (k=0 drawn at 0.5)")
    ax.set_ylabel(f"best smoothed return in {s.max_env_steps:,} steps")
    ax.set_title("RepeatFirst: repeat the first observation after k steps")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def summary(out: dict, s: Settings) -> dict:
    return dict(
        cells=out,
        longest_solved={name: longest(cells) for name, cells in out.items()},
        solves=f"smoothed training return (20 episodes) >= {s.target} within "
        f"{s.max_env_steps:,} env steps",
        delays=[int(k) for k in s.delays.split(",")],
        walk="each plan walks up the grid and stops at its first unsolved delay",
        seed=s.seed,
    )


def run(ctx) -> int:
    import torch

    from rlsuite.platform import cluster

    torch.set_num_threads(1)
    s = ctx.settings
    delays = sorted(int(k) for k in s.delays.split(","))
    out = ctx.load(s.out).get("cells", {}) if ctx.resume else {}
    cluster.init()
    try:
        for name in s.plans.split(","):
            cells = out.setdefault(name, [])
            for k in delays:  # up the grid, to the first unsolved delay
                cell = next((c for c in cells if c["delay"] == k), None)
                if cell is None:
                    cell = learn(ctx, name, k)
                    cells.append(cell)
                    cells.sort(key=lambda c: c["delay"])
                    ctx.save(s.out, summary(out, s))
                if not cell["solved"]:
                    break
    finally:
        cluster.shutdown()
    ctx.save(s.out, summary(out, s))
    ctx.save_plot(s.out, _plot(out, s))
    ctx.table([dict(plan=n, delay=c["delay"], solved=c["solved"], best=c["best_return"],
                    env_steps=c["env_steps_run"], wall_s=c["wall_s_run"])
               for n, cells in out.items() for c in cells], "RepeatFirst")  # fmt: skip
    got = summary(out, s)["longest_solved"]
    if not {"r2d2", "replay"} <= got.keys():
        return ctx.verdict({})
    return ctx.verdict({"r2d2 solves a longer delay than replay": got["r2d2"] > got["replay"]})


CMD = command("platform_r2d2_memory")


def _seed_row(seed: int) -> Row:
    """``r2d2``'s longest delay on another seed (its own run and file, ``replay`` not rerun:
    a feed-forward policy is at chance for any k >= 1)."""
    out = f"{OUT}_r2d2_seed{seed}"
    return Row(
        "platform",
        "`r2d2` (R2D2) on RepeatFirst: repeat the first observation after k steps "
        "(k = 0, 1, 2, 4, ..., 64; 20k env steps each)",
        f"longest delay k solved (smoothed return >= 0.8; seed {seed})",
        f"{out}.json",
        Value(("longest_solved", "r2d2")),
        here("feed-forward `replay`, seed 0's run", "longest_solved", "replay", file=f"{OUT}.json"),
        command("platform_r2d2_memory", f"--plans r2d2 --seed {seed} --out {out}"),
        fmt="{:.0f}",
    )


BENCHMARK = Benchmark(
    run=run,
    settings=Settings,
    resume=True,
    quick=dict(delays="0,1", max_env_steps=2000, max_wall_s=60.0),
    rows=(
        Row(
            "platform",
            "`r2d2` (R2D2) on RepeatFirst: repeat the first observation after k steps "
            "(k = 0, 1, 2, 4, ..., 64; 20k env steps each)",
            "longest delay k solved (smoothed return >= 0.8; seed 0)",
            f"{OUT}.json",
            Value(("longest_solved", "r2d2")),
            here("feed-forward `replay`, same run", "longest_solved", "replay"),
            CMD,
            fmt="{:.0f}",
        ),
        *(_seed_row(seed) for seed in (1, 2)),
    ),
)
