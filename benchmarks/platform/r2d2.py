"""R2D2 on StatelessCartPole: the ``r2d2`` plan (LSTM Q-network, prioritised sequences with
stored state and burn-in, rescaled n-step targets) beside the feed-forward ``replay`` plan
(RLlib's DQN), which sees only the cart's position and the pole's angle and should fail.

The anchor: RLlib's new-stack example ``examples/algorithms/dqn/stateless_cartpole_dqn_with_lstm.py``
(DQN with an LSTM, burn-in 8, sequences of 20, 3 runners): return 350 with
``default_timesteps=200_000`` in its code (its docstring says "within 1,000,000"). The
installed 2.60 wheel does not ship ``examples/algorithms``; the budget is read from the
stored ray source (commit 2022e885). 200k env steps is the budget here.

Beside them, ``rllib_lstm``: RLlib's example itself (its config as in the file,
:func:`rlsuite.platform.benchmarking.rllib_examples.dqn_lstm_stateless_cartpole`: 3 runners,
burn-in 8, sequences of 20, no value rescaling, a plain episode buffer), on the platform's
StatelessCartPole (RLlib's class with CartPole-v1's 500-step limit, the env ``r2d2`` plays),
in a Ray of at least 3 CPUs (its 3 runners; 2 cores here, so they share them).

Each plan and seed trains until the smoothed training return (the last 20 episodes, with
the runners' exploration; RLlib's example is set to the same window) reaches 350, or
``max_env_steps`` env steps, or ``max_wall_s`` (counted from the first iteration, the
build excluded). ``r2d2``'s two runners explore with Ape-X's epsilons from a base of 0.1
(0.1 and ~1e-8). Writes ``OUT.json`` (per plan and seed: reached, env steps and wall
seconds to 350, best return, the curve) and ``OUT.png`` (return against env steps and wall
seconds). Env steps compare across runs; wall seconds depend on the shared machine's load.

RLlib's example samples ~50 env steps/s here (its config makes one update of 32 sequences
per 3 env steps: one step per runner per training step), so its 200k steps take ~1 h a seed
and are run in pieces: a seed cut by ``max_wall_s`` keeps an RLlib checkpoint (the replay
buffer with it) under ``run_dir``/OUT/, and ``--resume`` goes on from it, ``max_wall_s``
more per piece; the cell's env steps, wall seconds and curve count all pieces, and
``pieces`` records each (its command, env steps, seconds). The other plans' cells, and the
example's once it reached 350 or its budget, are kept as they are under ``--resume``.

The memory task (the longest delay each plan can recall) is ``platform_r2d2_memory``.

Pass criterion: ``r2d2`` and ``rllib_lstm`` reach 350 within 200k env steps on every seed
run; ``replay`` (feed-forward) does not, on any.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass

from rlsuite.bench import Benchmark, Row, Value, command, here, pub

ENV = "rlsuite/StatelessCartPole-v1"


@dataclass(frozen=True)
class Settings:
    max_env_steps: int = 200_000
    """env steps per plan and seed at most (the RLlib example's budget)"""
    target: float = 350.0
    """the smoothed training return to reach"""
    max_wall_s: float = 1800.0
    """give a plan's seed up after this long"""
    plans: str = "r2d2,replay"
    """the plans to run, in turn: r2d2, replay, rllib_lstm (RLlib's example)"""
    out: str = "platform_r2d2_stateless_cartpole"
    """results name"""
    run_dir: str = ""
    """where RLlib's example keeps the checkpoint of a cut seed, under OUT/ (default
    runs/bench/platform_r2d2); --resume reads the path the JSON records"""


PLANS = ("r2d2", "replay", "rllib_lstm")
EXAMPLE = "rllib/examples/algorithms/dqn/stateless_cartpole_dqn_with_lstm.py @ 2022e885a384"


def plan_for(name: str, seed: int):
    from rlsuite.platform.optimizers import make_plan

    if name == "r2d2":
        return make_plan(
            "r2d2",
            env=ENV,
            num_env_runners=2,
            num_envs_per_env_runner=4,
            rollout_fragment_length=20,
            num_replay_shards=2,
            seq_len=20,
            burn_in=10,
            n_step=5,
            gamma=0.99,
            lr=5e-4,
            epsilon=0.1,
            hidden=(64,),
            cell_size=64,
            train_batch_size=32,
            buffer_size=5000,  # sequences: every 10 steps, ~50k steps
            learning_starts=2000,
            target_update_freq=2000,
            training_intensity=32.0,  # replayed steps with a loss per env step: ~10k updates
            min_time_s_per_iteration=0.0,
            env_steps_per_iteration=2000,
            seed=seed,
        )
    # the RLlib example's DQN settings, feed-forward (no memory)
    return make_plan(
        "replay",
        env=ENV,
        num_env_runners=2,
        num_envs_per_env_runner=1,
        hidden=(256,),
        lr=5e-4,
        train_batch_size=32,
        buffer_size=100_000,
        n_step=1,
        epsilon_timesteps=20_000,
        final_epsilon=0.02,
        training_intensity=8.0,
        env_steps_per_iteration=2000,
        seed=seed,
    )


def example_config(seed: int):
    """RLlib's example (``rllib_lstm``): its config, seeded, on the CPU, smoothed over 20
    episodes as the plans are."""
    from rlsuite.platform.benchmarking.rllib_examples import dqn_lstm_stateless_cartpole

    return (
        dqn_lstm_stateless_cartpole(ENV)
        .learners(num_gpus_per_learner=0)
        .debugging(seed=seed)
        .reporting(metrics_num_episodes_for_smoothing=20)
    )


def learn(ctx, name: str, seed: int, before: dict | None = None) -> dict:
    """One plan's cell on ``seed``; RLlib's example goes on from ``before`` (its cut
    cell) when given, and saves a checkpoint when cut (:mod:`...example_runs`)."""
    from rlsuite.platform.backends.rllib import RLlibBackend
    from rlsuite.platform.benchmarking.example_runs import run_piece
    from rlsuite.platform.benchmarking.to_target import train_to_target

    s = ctx.settings

    def say(steps: int, wall: float, ret: float) -> None:
        ctx.say(f"{name} seed {seed}: {steps:>7} steps {wall:6.0f} s  return {ret:6.1f}")

    end = dict(loadavg_1min_at_end=None)
    if name == "rllib_lstm":
        folder = os.path.join(ctx.run_dir("runs/bench/platform_r2d2"), s.out)
        cell = run_piece(lambda: example_config(seed), os.path.join(folder, f"{name}_seed{seed}"),
                         s.target, s.max_env_steps, s.max_wall_s, before, say,
                         command=command("platform_r2d2", shlex.join(ctx.argv)))  # fmt: skip
        end["loadavg_1min_at_end"] = cell["pieces"][-1]["loadavg_1min_at_end"]
        return dict(**cell, **end, example=EXAMPLE, rllib_config=example_config(seed).to_dict())
    backend, curve = RLlibBackend(plan_for(name, seed)), []

    def point(steps: int, wall: float, row: dict) -> None:
        ret = row["episode_return_mean"]
        curve.append(dict(env_steps=steps, wall_s=round(wall, 1), episode_return_mean=ret))
        say(steps, wall, ret)

    run = train_to_target(backend, s.target, s.max_env_steps, s.max_wall_s, point)
    end["loadavg_1min_at_end"] = round(os.getloadavg()[0], 2)
    return dict(reached=run.reached is not None, **(run.reached or {}), best_return=run.best_return,
                env_steps_run=run.env_steps_run, wall_s_run=run.wall_s_run, **end, curve=curve,
                plan=backend.plan.to_dict())  # fmt: skip


def resumable(ctx, cell: dict) -> bool:
    """Whether a cell of an earlier run goes on under ``--resume``: RLlib's example cut
    short, with its checkpoint still there."""
    from rlsuite.platform.benchmarking.example_runs import finished

    if "pieces" not in cell or finished(cell, ctx.settings.max_env_steps):
        return False
    if not os.path.isdir(cell["checkpoint"]):
        ctx.say(f"the checkpoint {cell['checkpoint']} of a cut cell is gone: kept as cut")
        return False
    return True


def run(ctx):
    import ray
    import torch

    from rlsuite.platform import cluster
    from rlsuite.platform.benchmarking.r2d2_cells import plot, summary
    from rlsuite.platform.machine import usable_cpus

    torch.set_num_threads(1)
    s = ctx.settings
    names = s.plans.split(",")
    unknown = [n for n in names if n not in PLANS]
    if unknown:
        ctx.say(f"unknown plan(s) {', '.join(unknown)}; choose from {', '.join(PLANS)}")
        return 2
    seeds = list(ctx.seeds or (0, 1, 2))
    out = ctx.load(s.out).get("plans", {}) if ctx.resume else {}
    # RLlib's example asks for 3 runners of one CPU each: give Ray 3 when it runs
    cluster.init(num_cpus=max(3, usable_cpus()) if "rllib_lstm" in names else None)
    try:
        for seed in seeds:  # saved after each plan and seed: a cut-short run keeps them
            for name in names:
                before = out.get(name, {}).get(str(seed))
                if before is None or resumable(ctx, before):
                    out.setdefault(name, {})[str(seed)] = learn(ctx, name, seed, before)
                    ctx.save(s.out, summary(out, s))
    finally:
        if ray.is_initialized():
            cluster.shutdown()
    ctx.save_plot(s.out, plot(out, s, PLANS))
    res = summary(out, s)
    ctx.table([dict(plan=n, **v) for n, v in res["summary"].items()],
              f"StatelessCartPole-v1 to {s.target} within {s.max_env_steps:,} env steps")  # fmt: skip
    checks = {}
    if "r2d2" in res["summary"]:
        checks[f"r2d2 reaches {s.target} on every seed"] = res["summary"]["r2d2"]["all_reached"]
    if "rllib_lstm" in res["summary"]:
        checks[f"RLlib's example reaches {s.target} on every seed"] = res["summary"]["rllib_lstm"][
            "all_reached"
        ]
    if "replay" in res["summary"]:
        checks[f"feed-forward replay reaches {s.target} on no seed"] = res["summary"]["replay"][
            "none_reached"
        ]
    return ctx.verdict(checks)


CMD = command("platform_r2d2", "--seeds 0 --max-wall-s 158")
RLLIB_PIECES_S = (400, 400, 398, 1500)
"""The ``--max-wall-s`` of each piece of the run beside RLlib's example, in turn."""
CMD3 = command(
    "platform_r2d2", "--seeds 0,1,2 --plans r2d2 --out platform_r2d2_stateless_cartpole_r2d2_3seeds"
)
# run in pieces: the first, then --resume (the cut seeds go on from their checkpoints)
CMD_RLLIB = " && ".join(
    command(
        "platform_r2d2",
        f"--seeds 0,1,2 --plans r2d2,rllib_lstm --max-wall-s {n} "
        f"--out platform_r2d2_stateless_cartpole_rllib{' --resume' if i else ''}",
    )
    for i, n in enumerate(RLLIB_PIECES_S)
)
CMD_REPLAY = command(
    "platform_r2d2",
    "--seeds 0,1,2 --plans replay --max-wall-s 400 "
    "--out platform_r2d2_stateless_cartpole_replay_3seeds",
)
_ROWS = (
    Row(
        "platform",
        "`r2d2` (R2D2) to 350, StatelessCartPole (RLlib's DQN+LSTM example: 200k steps)",
        "env steps to 350, median of 3 seeds (r2d2 alone)",
        "platform_r2d2_stateless_cartpole_r2d2_3seeds.json",
        Value(("summary", "r2d2", "median_env_steps_to_target")),
        pub("the example's budget", 200_000),
        CMD3,
        fmt="{:,.0f}",
        lower_is_better=True,
    ),
    Row(
        "platform",
        "`r2d2` (R2D2) to 350, StatelessCartPole (RLlib's DQN+LSTM example: 200k steps)",
        "env steps to 350 (seed 0)",
        "platform_r2d2_stateless_cartpole.json",
        Value(("summary", "r2d2", "median_env_steps_to_target")),
        pub("the example's budget", 200_000),
        CMD,
        fmt="{:,.0f}",
        lower_is_better=True,
    ),
    Row(
        "platform",
        "feed-forward `replay` (RLlib's DQN), StatelessCartPole, same run",
        "best smoothed return (its run cut at 158 s)",
        "platform_r2d2_stateless_cartpole.json",
        Value(("summary", "replay", "best_return")),
        here("r2d2, same run", "summary", "r2d2", "best_return"),
        CMD,
        fmt="{:.0f}",
    ),
    Row(
        "platform",
        "`r2d2` (R2D2) to 350, StatelessCartPole seeds 0-2, beside RLlib's own DQN+LSTM "
        "example (its config) in one run",
        "env steps to 350, median of 3 seeds (the example: of the seeds that reached 350)",
        "platform_r2d2_stateless_cartpole_rllib.json",
        Value(("summary", "r2d2", "median_env_steps_to_target")),
        here(
            "RLlib's `stateless_cartpole_dqn_with_lstm.py`, same run",
            "summary",
            "rllib_lstm",
            "median_env_steps_to_target",
        ),
        CMD_RLLIB,
        fmt="{:,.0f}",
        lower_is_better=True,
    ),
    Row(
        "platform",
        "`r2d2` (R2D2) to 350, StatelessCartPole seeds 0-2, beside RLlib's own DQN+LSTM "
        "example (its config) in one run",
        "wall seconds to 350, median of 3 seeds (the example: of the seeds that reached 350)",
        "platform_r2d2_stateless_cartpole_rllib.json",
        Value(("summary", "r2d2", "median_wall_s_to_target")),
        here(
            "RLlib's `stateless_cartpole_dqn_with_lstm.py`, same run",
            "summary",
            "rllib_lstm",
            "median_wall_s_to_target",
        ),
        CMD_RLLIB,
        fmt="{:.0f} s",
        lower_is_better=True,
    ),
    Row(
        "platform",
        "`r2d2` (R2D2), StatelessCartPole seeds 0-2, beside RLlib's own DQN+LSTM example "
        "(its config; run in pieces, a cut seed resumed from its checkpoint)",
        "seeds that reached 350 (of 3; the example: within the env steps it ran)",
        "platform_r2d2_stateless_cartpole_rllib.json",
        Value(("summary", "r2d2", "reached")),
        here(
            "RLlib's `stateless_cartpole_dqn_with_lstm.py`, same run",
            "summary",
            "rllib_lstm",
            "reached",
        ),
        CMD_RLLIB,
        fmt="{:.0f}",
    ),
    Row(
        "platform",
        "feed-forward `replay` (RLlib's DQN), StatelessCartPole seeds 0-2, each cut at 400 s "
        "(114-116k of the 200k env steps; `r2d2` reached 350 by 71-121k)",
        "best smoothed return, 3 seeds",
        "platform_r2d2_stateless_cartpole_replay_3seeds.json",
        Value(("summary", "replay", "best_return")),
        pub("the target", 350),
        CMD_REPLAY,
        fmt="{:.0f}",
    ),
)

BENCHMARK = Benchmark(
    run=run,
    settings=Settings,
    seeds=True,
    resume=True,
    quick=dict(max_env_steps=4000, max_wall_s=120.0),
    rows=_ROWS,
)
