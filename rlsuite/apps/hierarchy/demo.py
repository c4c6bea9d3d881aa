"""The hierarchy section of ``make demo``: long-hand addition (program synthesis), then the
robot half (pick-and-place) when it is installed.

Synthesis, in about a minute on 2 CPUs:

1. PHP learns the addition procedures from 3 strong teacher demonstrations (300 digits
   each, so they show every digit combination a column can hold) and adds 10-, 100- and
   1000-digit numbers exactly; the flat-LSTM baseline gets the same demonstrations.
2. Weak supervision: from 60 action-only demonstrations of 1-3 digits, expectation-gradient
   over the hidden call stack recovers the teacher's procedure calls; the row reports the
   share of held-out steps whose most probable stack is the teacher's.

The full reproduction (3 short strong + 300 weak demonstrations, 100 problems per length,
NPI baseline) is ``rlsuite bench run hierarchy_synthesis``.
"""

from __future__ import annotations

import os
import time

REFERENCE = "PHP (Fox et al. 2018): 100% at 500 and 1000 digits"


def synthesis_rows(
    problems: int = 20,
    lengths=(10, 100, 1000),
    num_workers: int | None = None,
    out_dir: str = "runs/demo/hierarchy-synthesis",
) -> list[dict]:
    from rich.console import Console

    from rlsuite.apps.hierarchy.procedures.fit import fit
    from rlsuite.apps.hierarchy.procedures.model import ProcedureModel
    from rlsuite.apps.hierarchy.procedures.weak import WeakLattice
    from rlsuite.apps.hierarchy.synthesis.baselines import FlatLSTM
    from rlsuite.apps.hierarchy.synthesis.experiment import (
        evaluate_saved,
        results_table,
        save_model,
    )
    from rlsuite.apps.hierarchy.synthesis.program import SPEC, make_traces

    con = Console()
    os.makedirs(out_dir, exist_ok=True)
    strong = make_traces(3, seed=0, lengths=(300,))
    con.print(f"3 strong demonstrations of 300 digits ({sum(len(t) for t in strong)} actions)")
    rows, table_rows = [], []
    for name, model, train in (
        (
            "php",
            ProcedureModel(SPEC, hidden=(64, 64)),
            lambda m: fit(m, strong=strong, epochs=600, lr=1e-2, target_loss=1e-3, time_limit_s=60),
        ),
        (
            "flat-lstm",
            FlatLSTM(),
            lambda m: m.fit(strong, epochs=300, lr=1e-2, target_loss=1e-3, time_limit_s=30),
        ),
    ):
        t0 = time.process_time()
        hist = train(model)
        cpu = time.process_time() - t0
        path = os.path.join(out_dir, f"{name}.pt")
        save_model(model, path)
        con.print(f"{name}: trained in {cpu:.0f} CPU-s ({len(hist)} epochs); evaluating")
        ev = evaluate_saved(path, name, lengths, problems, num_workers, progress=True)
        table_rows.append({"model": name, "strong": 3, "weak": 0, "train_cpu_s": cpu, **ev})
        for L in lengths:
            rows.append(
                dict(
                    app="hierarchy",
                    task=f"addition, {L} digits",
                    controller=f"{name} (3 strong demos, {cpu:.0f} CPU-s)",
                    metric="exact-match accuracy",
                    value=float(ev["accuracy"][str(L)]),
                    reference=REFERENCE if name == "php" else "baseline",
                )
            )
    con.print(results_table(table_rows, lengths))

    con.print("weak supervision: 60 action-only demonstrations of 1-3 digits, EM over call stacks")
    weak = make_traces(60, seed=1, lengths=(1, 2, 3), strong=False)
    held_out = make_traces(4, seed=99, lengths=(3,))
    model = ProcedureModel(SPEC, hidden=(32,), seed=0)  # EM's optimum depends on the start
    t0 = time.process_time()
    fit(model, weak=weak, epochs=300, lr=1e-2, target_loss=0.05, time_limit_s=60)
    cpu = time.process_time() - t0
    ok, total = WeakLattice(SPEC).stacks_recovered(model, held_out)
    con.print(f"weak EM ({cpu:.0f} CPU-s): {ok}/{total} held-out call stacks match the teacher's")
    rows.append(
        dict(
            app="hierarchy",
            task="addition, 3 digits (held out)",
            controller=f"php, weak only (60 demos, {cpu:.0f} CPU-s)",
            metric="call stacks recovered",
            value=ok / total,
            reference="teacher's stacks = 1.0",
        )
    )
    return rows


def run() -> list[dict]:
    """Rows ``app, task, controller, metric, value, reference`` for the demo table."""
    t0 = time.perf_counter()
    print(
        "hierarchy/synthesis: teacher demonstrations -> PHP and a flat LSTM -> long additions",
        flush=True,
    )
    rows = synthesis_rows()
    print(f"synthesis demo done in {time.perf_counter() - t0:.0f} s", flush=True)
    try:
        from rlsuite.apps.hierarchy.robot import demo as robot_demo
    except ImportError as e:  # the robot half needs pybullet (the [hierarchy] extra)
        print(f"hierarchy/robot: skipped ({e})", flush=True)
        return rows
    return rows + robot_demo.run()
