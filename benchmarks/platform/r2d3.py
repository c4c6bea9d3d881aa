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
trains here (rl-baselines3-zoo's settings; greedy probes of 10 episodes every 200k env steps
choose its checkpoint, kept under ``runs/bench/platform_r2d3/``, its held-out score
recorded), 5,000 demonstration steps of it acting greedily, then ``apex`` with and without
them (every seed of one arm before the next), each until a greedy probe (5 episodes every
20k) reaches 200 or its step or wall budget. Pass: both arms reach 200 and the arm with
demonstrations in fewer env steps. The logic and the plans' settings are in
``rlsuite/platform/benchmarking/r2d3_cells.py``.

Writes ``platform_r2d3_weak.json`` / ``platform_r2d3_lunar.json`` (per arm and seed: reached,
env steps and wall seconds, the held-out returns, the curve with the demonstrated share of
the learner's batches) and a PNG of each.
"""

from __future__ import annotations

from dataclasses import dataclass

from rlsuite.bench import Benchmark, Row, Value, command, here


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
    expert_steps: int = 3_000_000
    """lunar: the PPO expert's env steps at most"""
    expert_wall_s: float = 420.0
    """lunar: the PPO expert's wall seconds at most"""
    expert_probe_every: int = 200_000
    """lunar: env steps between the expert's greedy probes (10 episodes; it stops at 240 and
    the best probe's policy is the expert)"""
    eval_episodes: int = 20
    """held-out episodes for each final policy and the demonstrator"""
    probe_every: int = 0
    """env steps between greedy probes (5 episodes) that stop a run (0: weak 5,000, lunar 20,000)"""


def run(ctx) -> int:
    import torch

    from rlsuite.platform import cluster
    from rlsuite.platform.benchmarking.r2d3_cells import lunar, weak

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
    "platform_r2d3", "--part lunar --arms demos --seeds 0,1,2 --expert-wall-s 330 --max-wall-s 220"
)
LUNAR_NONE_CMD = command(
    "platform_r2d3", "--part lunar --arms none --seeds 0,1,2 --max-wall-s 220 --resume"
)
_WEAK = "`apex` (Ape-X) with a weak demonstrator's episodes in replay (R2D3, rho 1/4), CartPole-v1"
_LUNAR = (
    "`apex` (Ape-X) with 5,000 steps of a PPO expert in replay (R2D3, rho 1/4), LunarLander-v3, "
    "3 seeds each"
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
        "env steps to 200 (greedy probe of 5 episodes every 20k; a miss counts at the 400k "
        "budget), median of the seeds run",
        "platform_r2d3_lunar.json", Value(("summary", "demos", "median_env_steps")),
        here("the same plan without demonstrations, same file", "summary", "none",
             "median_env_steps"),
        LUNAR_NONE_CMD, fmt="{:,.0f}", lower_is_better=True),
    Row("platform", _LUNAR + ": with demonstrations",
        "held-out return of the best probe's policy (20 episodes), mean of 3 seeds",
        "platform_r2d3_lunar.json", Value(("summary", "demos", "held_out_mean")),
        here("the PPO expert (`sync`, 2.6M env steps, best greedy probe), same held-out seeds",
             "expert", "held_out", "mean"),
        LUNAR_CMD, fmt="{:.1f}"),
)  # fmt: skip

BENCHMARK = Benchmark(
    run=run,
    settings=Settings,
    seeds=True,
    resume=True,
    quick=dict(
        part="weak", max_env_steps=3000, max_wall_s=60.0, eval_episodes=2, expert_wall_s=20.0
    ),
    rows=_ROWS,
)
