"""Learning table: the platform's plans against RLlib's own tuned examples.

For each row (:mod:`rlsuite.platform.benchmarking.learning_tasks`: the example, the plan's
values for it, the differences and the variants), on the same machine and seeds, RLlib's
example as its file builds it (``rllib``) beside the plan (``ours`` and variants), each
(task, impl, seed) cell in its own process, saved when it ends (``--resume`` skips finished
cells; without it, the cells run are replaced and the others kept). Online rows stop as
RLlib's example launcher stops them: at the threshold on ``env_runners/episode_return_mean``
(RLlib 2.60: the mean of the training episodes that ended in the iteration, both sides with
RLlib's window of 100), at the budget of env steps, or after 200 iterations. BC is offline:
steps are learner updates and the stop metric the evaluation return. HalfCheetah is held to
cleanrl's published 1442.64 after 1M steps, the mean return of the last 100 training
episodes, and scored by a deterministic evaluation on 10 held-out seeds; cells cut by
``--max-wall-s`` are compared at the fewest steps any cell reached (``at_common_steps``).

Pass criterion of a row: every seed of ours reaches RLlib's threshold within RLlib's
budget, and ours' median wall time to it is at most 0.6x RLlib's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from rlsuite.bench import Benchmark, Row, Value, here, pub


@dataclass(frozen=True)
class Settings:
    tasks: str = ""
    """rows to run, comma-separated (default all)"""
    impls: str = ""
    """impls to run, comma-separated: rllib, ours, ours_overlap, ours_32envs, ours_frag5,
    ours_e8_overlap, ours_local (default: each row's all)"""
    max_wall_s: float = 0.0
    """stop a cell after this many seconds (saved as stopped_by=max_wall_s); 0: no cap"""
    num_cpus: int = 0
    """Ray's logical CPUs for every cell (0: each row's; RLlib's mujoco_ppo.py needs 5)"""
    out: str = "platform_learning"
    """results name (benchmarks/results/platform/OUT.json)"""
    merge: tuple[str, ...] = ()
    """add the cells of these results names (other runs) to OUT, and run nothing"""


def _load(ctx, stem: str) -> dict:
    path = ctx.path(stem)
    return json.loads(path.read_text()) if path.exists() else {}


def _finish(ctx, results: dict) -> None:
    from rlsuite.platform.benchmarking.learning_report import finish

    fig = finish(results)
    ctx.save(ctx.settings.out, results)
    if fig is not None:
        ctx.save_plot(ctx.settings.out, fig)


def run(ctx) -> int:
    from rlsuite.bench.settings import picked
    from rlsuite.platform.benchmarking import learning_cells as cells_
    from rlsuite.platform.benchmarking.learning_report import table_rows
    from rlsuite.platform.benchmarking.learning_tasks import TASKS

    s = ctx.settings
    tasks = picked(s.tasks, list(TASKS), "task")
    impls = picked(s.impls, sorted({i for t in TASKS.values() for i in t.impls}), "impl")
    results = _load(ctx, s.out)
    cells = results.setdefault("cells", {})
    for stem in s.merge:  # other runs' cells (e.g. a row run on a larger machine)
        if not ctx.path(stem).exists():
            raise ValueError(f"--merge: no results {ctx.path(stem)}")
        cells.update(_load(ctx, stem).get("cells", {}))
    failed = 0
    for key in [] if s.merge else tasks:
        task = TASKS[key]
        for seed in ctx.seeds or ((0,) if ctx.quick else (0, 1, 2)):
            for impl in [i for i in task.impls if i in impls]:
                cid = f"{key}|{impl}|{seed}"
                if ctx.resume and cid in cells:
                    ctx.say(f"[dim]{cid}: done, skipped (--resume)[/dim]")
                    continue
                if task.prepare is not None and key not in results.get("data", {}):
                    results.setdefault("data", {})[key] = task.prepare()  # records if missing
                ctx.say(f"{cid}: running")
                cell, err = cells_.run_in_process(key, impl, seed, s.max_wall_s, s.num_cpus)
                if cell is None:
                    ctx.say(f"[red]{cid} failed[/red]\n{err}")
                    results.setdefault("failed", {})[cid] = err[-2000:]
                    failed += 1
                    continue
                results.get("failed", {}).pop(cid, None)
                cells[cid] = cell
                ctx.say(f"{cid}: {cells_.said(cell)}")
                _finish(ctx, results)
    _finish(ctx, results)
    ctx.table(table_rows(results), "platform plans against RLlib's tuned examples")
    return 1 if failed else 0


def _vs_rllib(task, reach, seeds, kind, key, impl, example, args, metric_note=""):
    """A row of ours against RLlib's tuned example on the same seeds: env steps or wall
    seconds (``kind``: STEPS or WALL) to the example's threshold ``reach``."""
    metric, stat, fmt = kind
    return Row("platform", task, metric.format(reach, seeds) + metric_note, "platform_learning.json",
               Value(("summary", key, impl, stat)),
               here(example, "summary", key, "rllib", stat),
               f"{RUN} {args}", fmt=fmt, lower_is_better=True)  # fmt: skip


RUN = "rlsuite bench run platform_learning"
OUT = "platform_learning_halfcheetah"
STEPS = ("env steps to {}, median of {} seeds", "median_steps_to_threshold", "{:,.0f}")
WALL = ("wall seconds to {}, median of {} seeds", "median_wall_s_to_threshold", "{:.0f} s")
CARTPOLE = "`sync` PPO to 450, CartPole-v1"
DQN = "`replay` DQN to 450, CartPole-v1 (RLlib example's settings)"
PENDULUM = "`sync` PPO to -300, Pendulum-v1 (RLlib example's settings)"
BC = "`imitation` BC to 350, CartPole-v1 (RLlib example's settings, recorded expert data)"
PPO_EX, DQN_EX = "RLlib's `cartpole_ppo.py`, same seeds", "RLlib's `cartpole_dqn.py`, same seeds"
PEN_EX = "RLlib's `pendulum_ppo.py`, same seeds"
BC_EX = "RLlib's `cartpole_bc.py` on the same data, same seeds"
RESULT_100 = "mean return of the last 100 training episodes at 1M steps, median of 3 seeds"
HC = ("summary", "ppo-halfcheetah")

# fmt: off
BENCHMARK = Benchmark(run=run, settings=Settings, seeds=True, resume=True,
                      quick=dict(tasks="sync-cartpole", impls="ours", max_wall_s=15.0), rows=(
    _vs_rllib(f"{CARTPOLE} (RLlib example's settings)", 450, 3, STEPS, "sync-cartpole", "ours", PPO_EX,
              "--tasks sync-cartpole --seeds 0,1,2 --resume"),
    _vs_rllib(f"{CARTPOLE}, 32 envs per runner", 450, 3, WALL, "sync-cartpole", "ours_32envs", PPO_EX,
              "--tasks sync-cartpole --impls ours_32envs --seeds 0,1,2 --resume"),
    _vs_rllib("`async` APPO to 450, CartPole-v1, 32 envs per runner", 450, 3, WALL, "async-cartpole",
              "ours_32envs", "RLlib's `cartpole_appo.py`, same seeds",
              "--tasks async-cartpole --impls ours_32envs --seeds 0,1,2 --max-wall-s 600 --resume"),
    _vs_rllib(DQN, 450, 5, STEPS, "replay-cartpole", "ours", DQN_EX,
              "--tasks replay-cartpole --impls rllib,ours --seeds 0,1,2,3,4 --resume"),
    _vs_rllib(DQN, 450, 5, WALL, "replay-cartpole", "ours", DQN_EX,
              "--tasks replay-cartpole --impls rllib,ours --seeds 0,1,2,3,4 --resume"),
    _vs_rllib(PENDULUM, -300, 3, STEPS, "sync-pendulum", "ours", PEN_EX,
              "--tasks sync-pendulum --impls rllib,ours --seeds 0,1,2"),
    _vs_rllib(PENDULUM, -300, 3, WALL, "sync-pendulum", "ours", PEN_EX,
              "--tasks sync-pendulum --impls rllib,ours --seeds 0,1,2",
              " (two repeats of both sides: 0.61x and 0.47x; the three runs pooled, 9 per side: "
              "34 s against 59 s, 0.57x)"),
    _vs_rllib(BC, 350, 3, ("learner updates to evaluation {}, median of {} seeds", *STEPS[1:]),
              "imitation-cartpole", "ours", BC_EX, "--tasks imitation-cartpole --seeds 0,1,2"),
    _vs_rllib(BC, 350, 3, ("wall seconds to evaluation {}, median of {} seeds", *WALL[1:]),
              "imitation-cartpole", "ours", BC_EX, "--tasks imitation-cartpole --seeds 0,1,2"),
    Row("platform", "`sync` PPO, HalfCheetah-v5, 1M env steps (cleanrl's settings, `observation_filter=meanstd`)",
        RESULT_100, f"{OUT}.json", Value((*HC, "ours", "median_final_return_last_100")),
        pub("cleanrl `ppo_continuous_action.py`, HalfCheetah-v4, 3 seeds", 1442.64),
        f"{RUN} --tasks ppo-halfcheetah --impls ours --seeds 0,1,2 --max-wall-s 2400 --out {OUT}",
        fmt="{:,.0f}"),
    Row("platform", "`sync` PPO, HalfCheetah-v5, 1M env steps, against RLlib's own example",
        RESULT_100, f"{OUT}.json", Value((*HC, "ours", "median_final_return_last_100")),
        here("RLlib's `mujoco_ppo.py`, same seeds, 5 logical CPUs on the 2 cores", *HC, "rllib",
             "median_final_return_last_100"),
        f"{RUN} --tasks ppo-halfcheetah --impls rllib --seeds 0,1,2 --num-cpus 5 --max-wall-s 900 "
        f"--out {OUT}_rllib_2cpu && {RUN} --out {OUT} --merge {OUT}_rllib_2cpu", fmt="{:,.0f}"),
    Row("platform", "`sync` PPO to 1442, HalfCheetah-v5 (cleanrl's settings, 8 envs, `overlap=true`)",
        "wall seconds to 1442, median of 3 seeds", f"{OUT}.json",
        Value((*HC, "ours_e8_overlap", "median_wall_s_to_threshold")),
        here("RLlib's `mujoco_ppo.py`, 2 of 3 seeds reached, 5 logical CPUs on the 2 cores", *HC,
             "rllib", "median_wall_s_to_threshold"),
        f"{RUN} --tasks ppo-halfcheetah --impls ours_e8_overlap --seeds 0,1,2 --max-wall-s 900 "
        f"--out {OUT}_e8 && {RUN} --out {OUT} --merge {OUT}_e8", fmt="{:.0f} s", lower_is_better=True),
))
# fmt: on
