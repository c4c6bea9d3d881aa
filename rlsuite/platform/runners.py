"""What the platform does inside each remote env runner process of an RLlib plan.

:func:`freeze_startup_objects` runs as RLlib's ``on_environment_created`` callback, so it
reaches every runner, a replacement for a crashed one included. It moves the objects the
runner holds once its env is built (torch, Ray, gymnasium, the env: ~400k objects on a
CartPole runner) into Python's permanent generation (``gc.freeze``). The collector stays
on; its full collections then walk only what was allocated since, such as the episodes.

Why: a full collection over the whole start-up heap paused a runner for ~150 ms. On the
2-core machine the overlapped ``sync`` plan's iterations take ~210 ms, so such a pause
made a batch arrive late in 2 of 15 iterations and cost ~13% of the throughput. With the
freeze, none arrived late in 30 iterations (benchmarks/RESULTS.md). Objects frozen here
and later dropped are still freed by reference counting; only a cycle among them would
outlive its use, and start-up objects live as long as the runner anyway.

:func:`runner_class` gives the plans' RLlib config RLlib's runner classes, seeded without
importing torch's compiler (:mod:`rlsuite.platform.seeded_runners`).
"""

from __future__ import annotations

import gc
from typing import Any


def freeze_startup_objects(*, env_runner: Any, **kwargs: Any) -> None:
    """RLlib ``on_environment_created`` callback: ``gc.freeze()`` in a remote runner.

    The local runner (index 0) lives in the driver process, which this leaves alone."""
    if (getattr(env_runner, "worker_index", None) or 0) > 0:
        gc.freeze()


def runner_class(multi_agent: bool) -> type:
    """The env runner class for a plan's RLlib config: RLlib's own single- or multi-agent
    runner, seeded without the compiler's import (:mod:`rlsuite.platform.seeded_runners`)."""
    from rlsuite.platform import seeded_runners

    return seeded_runners.MultiAgentRunner if multi_agent else seeded_runners.SingleAgentRunner
