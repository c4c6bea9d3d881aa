"""Beyond RESCO's protocol: signal controllers under other demand than the one they were tuned or
trained on.

Two parts, scored by RESCO's average delay on held-out SUMO seeds (from ``--seed``): ``scales``,
cologne1 (``--map``) on SUMO 1.9.2 (``--sumo``) with its demand scaled by SUMO's ``--scale``,
for the shipped DQN ``resco_cologne1_replay`` (``--policy``, trained at 1.0x) and the
baselines; ``routes``, grid4x4_resco on RESCO's route file and on unseen ones drawn by SUMO's
``randomTrips.py`` (a fixed seed per file), for the baselines and ``--grid-policy``. Pass: at
every scale and route file the learned policy's delay is at most 10% above the best
baseline's on the same seeds. ``--resume`` keeps the scored cells (a learned cell is scored
again when the policy at its path changed).
"""

import os

from rlsuite.apps.traffic.resco_demand import BeyondSettings
from rlsuite.bench import Benchmark


def run(ctx) -> int:
    import dataclasses
    import json

    from rlsuite.apps.traffic.resco_demand import TEXT, cells, checks, figure, key, run_cell, stale
    from rlsuite.bench import repo_root

    s = ctx.settings
    s = dataclasses.replace(s, policy=str(repo_root() / s.policy))  # relative: from the repository
    stem = os.path.splitext(os.path.basename(s.json))[0] if s.json else "traffic_resco_beyond"
    old = json.loads(ctx.path(stem).read_text()) if ctx.path(stem).exists() else {}
    info, rows = old.get("route_files", {}), (old.get("rows", {}) if ctx.resume else {})
    todo = [c for c in cells(s) if key(c) not in rows or stale(c, rows)]
    for c in ctx.progress(todo, "cells"):
        rows[key(c)] = run_cell(s, c, info)
        ctx.save(stem, dict(**TEXT, checks=checks(rows), route_files=info, rows=rows))
    ctx.save(stem, dict(**TEXT, checks=checks(rows), route_files=info, rows=rows))  # none left too
    ctx.table([dict(cell=k, delay=r["delay_mean"], std=r["delay_std"]) for k, r in rows.items()])
    ctx.save_plot(stem, figure(rows))
    return ctx.verdict({f"{k}: learned within 10% of {c['best']}": c["pass"]
                        for k, c in checks(rows).items() if "pass" in c})  # fmt: skip


BENCHMARK = Benchmark(
    run=run, settings=BeyondSettings, resume=True,
    quick=dict(part="scales", scales="1.0", controllers="fixed", seeds=1, num_seconds=300, sumo="1.28"),
)  # fmt: skip
