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

from dataclasses import dataclass

from rlsuite.bench import Benchmark, Row, Value, command, here


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


def run(ctx) -> int:
    import torch

    from rlsuite.platform import cluster
    from rlsuite.platform.benchmarking.cartpole450_cells import plot, summary, train_cell

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
                cells.setdefault(name, {})[str(seed)] = train_cell(name, seed, s, ctx.say)
                ctx.save("platform_cartpole450", dict(summary=summary(cells, s), cells=cells))
    finally:
        cluster.shutdown()
    ctx.save("platform_cartpole450", dict(summary=summary(cells, s), cells=cells))
    ctx.save_plot("platform_cartpole450", plot(cells))
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
