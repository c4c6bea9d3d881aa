"""The ``async_grad`` plan: RLlib's A3C learning test, and the parameter-server figure in small.

``--part learn``: RLlib's ``cartpole-a3c`` tuned example (``rllib_contrib/a3c``, torch,
CartPole-v1), return >= 150 within 200,000 env steps with 1 runner and gamma 0.95, the
rest A3C's defaults, which are the plan's (rollouts of 10 steps, lr 1e-4, Adam, grad clip
40, vf coeff 0.5, entropy 0.01, a [256, 256] tanh network), trained as ``rlsuite train
--plan async_grad --env CartPole-v1 --stop-return 150 --set num_runners=1 --set
gamma=0.95`` trains. Pass: every seed reaches 150 within the budget.

``--part gorila``: GORILA's asynchronous DQN (Nair et al. 2015) on the same optimizer:
CartPole-v1, return >= 150 within 200,000 env steps, 2 runners each with its own replay of
50k transitions, 2 parameter-server shards, double Q and a dueling head, a [256] tanh
network, Adam at lr 5e-4, one gradient of 32 replayed transitions per 4 env steps of a
runner (RLlib's DQN replay ratio of 8), the runners' target networks refreshed every 250
server updates, epsilon 1 -> 0.02 over each runner's first 10k steps. RLlib never shipped
GORILA, so there is no tuned example to hold it to: the settings are RLlib's
``cartpole_dqn.py`` ones where the plan has them, and the threshold and budget are A3C's.
Pass: every seed reaches 150 within the budget.

``--part shards``: the RLlib paper's parameter-server figure in small, updates/s with 1,
2, 4 and 8 shards on a ~1M-parameter network (hidden [512, 512, 512]: 1.06M parameters on
CartPole), against one shard. ``push``: pusher actors push a fixed gradient to the shards
in a loop and load the weights they answer with, as runners do, without envs or backward
passes (the shards' own throughput). ``a3c``: the whole plan on CartPole. On 2 cores the
shards, pushers and driver share two cores, so shards cannot apply in parallel: this
measures what sharding costs there, not the paper's speed-up across machines (the
16-core run is not measured).
"""

from __future__ import annotations

from dataclasses import dataclass

from rlsuite.bench import Benchmark, Row, Value, command, pub


@dataclass(frozen=True)
class Settings:
    part: str = "learn,shards"
    """which parts: learn, gorila, shards (comma-separated)"""
    budget: int = 200_000
    """learn: env steps per seed"""
    threshold: float = 150.0
    """learn: the return to reach"""
    per_iter: int = 4000
    """learn: env steps per iteration (one metrics row)"""
    hidden: str = ""
    """learn, gorila: hidden layers (default: 256,256 for A3C, 256 for GORILA)"""
    shards: str = "1,2,4,8"
    """shards: the shard counts"""
    pushers: int = 2
    """shards: pusher actors (push) and runners (a3c)"""
    seconds: float = 10.0
    """shards, push: seconds per measurement"""
    repeats: int = 3
    """shards, push: measurements per shard count (the median is kept)"""
    iterations: int = 3
    """shards, a3c: iterations of 2000 env steps after one of warm-up"""
    a3c: bool = True
    """shards: also time the whole plan"""


def run(ctx) -> int:
    import torch

    from rlsuite.platform import cluster
    from rlsuite.platform.benchmarking import async_grad_cells as cells_mod

    torch.set_num_threads(1)
    s, parts, checks = ctx.settings, ctx.settings.part.split(","), {}
    for part, stem, task in (
        ("learn", "async_grad_learn", "cartpole-a3c: CartPole-v1 return >= {} within {} env "
         "steps, 1 runner, gamma 0.95"),
        ("gorila", "async_grad_gorila", "GORILA's DQN: CartPole-v1 return >= {} within {} env "
         "steps, 2 runners with their own replay, 2 shards"),
    ):  # fmt: skip
        if part not in parts:
            continue
        cells = []
        for seed in ctx.seeds or (0, 1, 2):
            cells.append(cells_mod.learn_one(seed, s, gorila=part == "gorila"))
            ctx.say(str({k: v for k, v in cells[-1].items() if k != "curve"}))
        steps = sorted(c["env_steps_to_threshold"] for c in cells if c["reached"])
        ctx.save(
            stem,
            {
                "task": task.format(s.threshold, s.budget),
                "summary": {
                    "seeds_reached": len(steps),
                    "seeds": len(cells),
                    "median_env_steps": steps[len(steps) // 2]
                    if len(steps) == len(cells)
                    else None,
                    "max_env_steps": steps[-1] if len(steps) == len(cells) else None,
                },
                "cells": cells,
            },
        )
        checks[f"{part}: every seed reaches {s.threshold} within {s.budget} env steps"] = len(
            steps
        ) == len(cells)
    if "shards" in parts:
        import ray

        counts = [int(n) for n in s.shards.split(",")]
        cluster.init(num_cpus=2)
        push, a3c = [], []
        try:
            for _ in range(s.repeats):
                for n in counts:
                    push.append(cells_mod.shards_push(n, s))
                    ctx.say(str(push[-1]))
            for n in counts if s.a3c else []:
                a3c.append(cells_mod.shards_a3c(n, s))
                ctx.say(str(a3c[-1]))
        finally:
            ray.shutdown()
        result = {
            "what": "parameter-server updates/s by shard count, ~1M parameters, against one shard",
            "num_params": push[0]["num_params"],
            "push": {"rows": push, "median": cells_mod.medians(push, counts), "pushers": s.pushers},
            "a3c": {"rows": a3c, "median": cells_mod.medians(a3c, counts), "runners": s.pushers},
            "note": "2 cores: shards, pushers or runners and the driver share them, so shards "
            "cannot apply in parallel; the 16-core scale-out is not measured",
        }
        ctx.save("async_grad_shards", result)
        ctx.save_plot("async_grad_shards", cells_mod.plot(result))
        ctx.table([{"shards": n, **v} for n, v in result["push"]["median"].items()], "push")
    return ctx.verdict(checks)


SHARDS = command("platform_async_grad", "--part shards --seconds 8 --iterations 1")


def _learn_row(what: str, how: str, part: str, anchor: str) -> Row:
    return Row("platform", f"`async_grad` {what} to 150, CartPole-v1 ({how})",
               "env steps to 150, median of 3 seeds", f"async_grad_{part}.json",
               Value(("summary", "median_env_steps")), pub(anchor, 200_000),
               command("platform_async_grad", f"--part {part} --seeds 0,1,2"), fmt="{:,.0f}",
               lower_is_better=True)  # fmt: skip


BENCHMARK = Benchmark(
    run=run,
    settings=Settings,
    quick=dict(part="learn,shards", budget=2000, per_iter=1000, hidden="16", shards="1,2",
               seconds=1.0, repeats=1, iterations=1, a3c=False),
    seeds=True,
    rows=(
        _learn_row("A3C", "RLlib's `cartpole-a3c`: 1 runner, gamma 0.95", "learn",
                   "RLlib's `cartpole-a3c` budget"),
        _learn_row("GORILA's DQN", "2 runners with their own replay, 2 shards", "gorila",
                   "no tuned example (RLlib never shipped GORILA); A3C's budget"),
        Row("platform", "`async_grad` parameter server, 8 shards against 1 (1.06M parameters, 2 cores)",
            "updates/s ratio, median of 3", "async_grad_shards.json",
            Value(("push", "median", "8", "vs_one_shard")), None, SHARDS, fmt="{:.2f}x"),
        Row("platform", "`async_grad` whole plan (A3C, 2 runners, CartPole-v1), 8 shards against 1 (1.06M parameters, 2 cores)",
            "updates/s ratio, one run", "async_grad_shards.json",
            Value(("a3c", "median", "8", "vs_one_shard")), None, SHARDS, fmt="{:.2f}x"),
    ),
)  # fmt: skip
