"""Hierarchical imitation against flat cloning on the pybullet Panda tasks, and skill reuse:
hierarchical (strong) >= 90% success on pick_place from 20 demonstrations, ahead of flat
cloning with >= 2x fewer demonstrations; (weak, EM) >= 80% on the long tasks from 20.

Every task is scored over 100 seeded episodes (demonstrations from seeds 100000+) at 5, 10,
20, 50 and 100 demonstrations, strong supervision (recorded call stacks), weak (hard EM)
and flat cloning on the same first-n demonstrations; criteria in
rlsuite.apps.hierarchy.robot.scoring. ``--reuse``: stack learned with pick_place's
procedures against scratch. ``--reuse-only TASKS``: PICK and PLACE learned once from 20
pick_place demonstrations, then each task from 1, 2, 5 or 10 of its own by reuse, retrain,
recreate or scratch. ``--imperfect``: pick_place and sort from 50 noisy, retried and
second-expert demonstrations (and all three), weak against clean.
"""

import time
from dataclasses import dataclass

from rlsuite.bench import Benchmark, Row, Value, here

MODELS = ("hierarchical-strong", "hierarchical-weak", "flat")


@dataclass(frozen=True)
class Settings:
    tasks: str = "pick_place,sort,tower,clear_then_place"
    """comma-separated tasks"""
    counts: str = "5,10,20,50,100"
    """numbers of demonstrations"""
    episodes: int = 100
    """evaluation episodes (seeds 0..episodes-1)"""
    no_flat: bool = False
    """leave flat cloning out (its criteria on pick_place are then not judged)"""
    reuse: bool = False
    """also run the skill-reuse experiment (stack from pick_place)"""
    reuse_only: str = ""
    """run only the skill-reuse experiment on these second tasks (e.g. sort,tower)"""
    reuse_counts: str = "1,2,5,10"
    """--reuse-only: demonstrations of the second task"""
    imperfect: bool = False
    """run only the imperfect-demonstration experiment (pick_place and sort)"""
    imperfect_demos: int = 50
    """--imperfect: demonstrations per condition"""


def ints(text: str) -> tuple[int, ...]:
    return tuple(sorted({int(c) for c in text.split(",") if c}))


def names(text: str) -> list[str]:
    from rlsuite.apps.hierarchy.robot import tasks as T

    out = [t.strip() for t in text.split(",") if t.strip()]
    for t in out:
        T.get(t)  # an unknown task lists the valid ones
    return out


def sweep(ctx, task: str) -> dict:
    from rlsuite.apps.hierarchy.robot import experiment as X
    from rlsuite.apps.hierarchy.robot import scoring

    s = ctx.settings
    expert = scoring.expert_success(task, s.episodes)
    ctx.say(f"{task}: scripted expert {expert['success']:.0%} over {s.episodes} seeds")
    counts = ints(s.counts)
    base = X.RobotRunConfig(demos=max(counts), supervision=("strong", "weak"), flat=not s.no_flat, episodes=s.episodes, task=task)  # fmt: skip
    rows = X.sweep(counts, base, progress=True)
    stem = "hierarchy_robot" if task == "pick_place" else f"hierarchy_robot_{task}"
    X.plot_sweep(rows, str(ctx.path(stem, ".png")), f"{task} (pybullet Panda)")
    if task == "pick_place":
        crit = scoring.pick_place_criteria(rows)
    else:
        crit = scoring.long_criteria(rows, expert["success"])
    reuse = None
    if s.reuse and task == "pick_place":
        reuse = X.reuse_experiment(X.ReuseConfig(episodes=s.episodes, counts=ints(s.reuse_counts)))
        X.plot_reuse(reuse, str(ctx.path("hierarchy_robot_reuse", ".png")))
        crit["reuse needs fewer stack demos than scratch (to 90%)"] = scoring.reuse_criterion(reuse["demos_to_90"])  # fmt: skip
    table = [{"demos": r["demos"], **{m: r["success"].get(m, "-") for m in MODELS}} for r in rows]
    ctx.table(table, f"{task}: success over {s.episodes} seeded episodes")
    ctx.save(stem, dict(task=task, episodes=s.episodes, counts=list(counts), expert=expert, rows=rows, reuse=reuse, criteria=crit))  # fmt: skip
    return crit


def reuse_only(ctx, task: str) -> dict:
    from rlsuite.apps.hierarchy.robot import experiment as X
    from rlsuite.apps.hierarchy.robot import scoring

    counts = ints(ctx.settings.reuse_counts)
    res = X.reuse_experiment(
        X.ReuseConfig(task=task, counts=counts, episodes=ctx.settings.episodes)
    )
    X.print_reuse(res)
    X.plot_reuse(res, str(ctx.path(f"hierarchy_robot_reuse_{task}", ".png")))
    crit = {"a mode from pick_place's skills needs fewer demos to 90% than scratch": scoring.reuse_criterion(res["demos_to_90"], min(counts))}  # fmt: skip
    ctx.save(f"hierarchy_robot_reuse_{task}", dict(task=task, episodes=ctx.settings.episodes, reuse=res, criteria=crit))  # fmt: skip
    return crit


def imperfect(ctx) -> dict:
    from rlsuite.apps.hierarchy.robot import experiment as X
    from rlsuite.apps.hierarchy.robot import scoring

    s = ctx.settings
    results = [X.imperfect_experiment(X.ImperfectConfig(task=t, demos=s.imperfect_demos, episodes=s.episodes)) for t in ("pick_place", "sort")]  # fmt: skip
    crit, table = scoring.imperfect_criteria(results)
    ctx.table(table, f"imperfect demonstrations ({s.imperfect_demos}), success over {s.episodes} clean episodes")  # fmt: skip
    X.plot_imperfect(results, str(ctx.path("hierarchy_robot_imperfect", ".png")))
    ctx.save("hierarchy_robot_imperfect", dict(episodes=s.episodes, results=results, criteria=crit))
    return crit


def run(ctx) -> int:
    from rlsuite.platform import cluster

    s, crit = ctx.settings, {}
    tasks = names(s.reuse_only or s.tasks)  # an unknown task: one line, before Ray starts
    with cluster.local_cluster():
        if s.imperfect:
            crit = imperfect(ctx)
        else:
            for task in tasks:
                t0 = time.perf_counter()
                part = reuse_only(ctx, task) if s.reuse_only else sweep(ctx, task)
                crit.update({f"{task}: {k}": v for k, v in part.items()})
                ctx.say(f"{task} done in {time.perf_counter() - t0:.0f} s")
    judged = {f"{k} ({v['value']})": v["pass"] for k, v in crit.items() if v["pass"] is not None}
    return ctx.verdict(judged)


# fmt: off
BENCHMARK = Benchmark(run=run, settings=Settings, quick=dict(tasks="pick_place", counts="2", no_flat=True, episodes=5), rows=(
    *(
        Row("hierarchy", f"robot {task}, weak (EM), 20 demos", "success, 100 episodes", file,
            Value(("rows", {"demos": 20}, "success", "hierarchical-weak")),
            here("the scripted expert", "expert", "success"),
            f"rlsuite bench run hierarchy_robot --tasks {task} --no-flat", "trained in the run (not saved)", fmt="{:.0%}")
        for task, file in (
            ("pick_place", "hierarchy_robot.json"),
            ("sort", "hierarchy_robot_sort.json"),
            ("tower", "hierarchy_robot_tower.json"),
            ("clear_then_place", "hierarchy_robot_clear_then_place.json"),
        )
    ),
))
# fmt: on
