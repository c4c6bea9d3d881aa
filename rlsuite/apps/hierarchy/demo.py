"""The hierarchy section of ``make demo``: long-hand addition (program synthesis), then the
robot half (pick-and-place) when it is installed.

Synthesis: 3 strong + 200 weak teacher demonstrations of 1-10 digits; PHP trained on both
(weak ones by expectation-gradient over the hidden call stack), the flat-LSTM baseline on the
same data; exact-match accuracy of whole sums at 10, 100 and 1000 digits on 20 seeded
problems each, evaluated in parallel. About a minute and a half on 2 CPUs.
"""

from __future__ import annotations

import time

REFERENCE = "PHP (Fox et al. 2018): 100% at 500 and 1000 digits"


def synthesis_rows(
    strong: int = 3,
    weak: int = 200,
    problems: int = 20,
    lengths=(10, 100, 1000),
    num_workers: int | None = None,
    out_dir: str = "runs/demo/hierarchy-synthesis",
) -> list[dict]:
    from rich.console import Console

    from rlsuite.apps.hierarchy.synthesis.experiment import SynthesisConfig, run_synthesis

    cfg = SynthesisConfig(
        strong=strong,
        weak=weak,
        models=("php", "flat-lstm"),
        eval_lengths=tuple(lengths),
        eval_problems=problems,
        epochs=150,
        time_limit_s=75.0,
        num_workers=num_workers,
        out_dir=out_dir,
    )
    res = run_synthesis(cfg, console=Console())
    rows = []
    for r in res["results"]:
        for L in lengths:
            rows.append(
                dict(
                    app="hierarchy",
                    task=f"addition, {L} digits",
                    controller=f"{r['model']} ({r['strong']} strong + {r['weak']} weak demos)",
                    metric="exact-match accuracy",
                    value=float(r["accuracy"][str(L)]),
                    reference=REFERENCE if r["model"] == "php" else "baseline",
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
