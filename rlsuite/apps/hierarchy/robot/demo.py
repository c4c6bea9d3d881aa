"""The robot section of ``make demo``: learn pick-and-place from 5 demonstrations.

Records 5 scripted-expert demonstrations in parallel, trains the hierarchical model
(strong and weak supervision) and flat cloning on them, and evaluates all of them and
the expert on 20 seeded episodes. About a minute on 2 CPUs.
"""

from __future__ import annotations

import time

DEMOS = 5
EPISODES = 20
REFERENCE = "target >= 90% at 20 demos"


def run(demos: int = DEMOS, episodes: int = EPISODES, num_workers: int | None = None) -> list[dict]:
    """Rows ``app, task, controller, metric, value, reference`` for the demo table."""
    from rlsuite.apps.hierarchy.robot import experiment as X
    from rlsuite.apps.hierarchy.robot.expert import make_expert
    from rlsuite.platform.evaluation import evaluate, scenarios

    t0 = time.perf_counter()
    print(
        f"robot: {demos} expert demonstrations -> hierarchical (strong, weak) and flat cloning",
        flush=True,
    )
    cfg = X.RobotRunConfig(
        demos=demos, supervision=("strong", "weak"), episodes=episodes, num_workers=num_workers
    )
    res = X.run(cfg, progress=True)
    expert = evaluate(
        make_expert,
        scenarios(X.ENV_ID, episodes, {"task": "pick_place"}),
        num_workers=num_workers,
        name="scripted expert",
    )
    task = "PickPlace-v0 (pybullet Panda)"
    rows = [
        dict(
            app="hierarchy",
            task=task,
            controller="scripted expert",
            metric="success rate",
            value=float(expert.summary["success"]["mean"]),
            reference="50/50 measured",
        )
    ]
    for name, v in res["success"].items():
        rows.append(
            dict(
                app="hierarchy",
                task=task,
                controller=f"{name}, {demos} demos",
                metric="success rate",
                value=float(v),
                reference=REFERENCE if name != "flat" else "baseline",
            )
        )
    print(f"robot demo done in {time.perf_counter() - t0:.0f} s", flush=True)
    return rows


if __name__ == "__main__":
    from rich.console import Console
    from rich.table import Table

    from rlsuite.platform import cluster

    with cluster.local_cluster():
        out = run()
    table = Table(title="hierarchy (robot) demo")
    for col in ("task", "controller", "metric", "value", "reference"):
        table.add_column(col)
    for r in out:
        table.add_row(r["task"], r["controller"], r["metric"], f"{r['value']:.3g}", r["reference"])
    Console().print(table)
