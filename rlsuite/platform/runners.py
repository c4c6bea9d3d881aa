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

:func:`inductor_flag_set_lazily` lets RLlib seed a runner without importing torch's
compiler; :func:`runner_class` gives the plans' RLlib config the runner classes that use it
(:mod:`rlsuite.platform.seeded_runners`).
"""

from __future__ import annotations

import contextlib
import gc
import os
import sys
from collections.abc import Iterator
from typing import Any


def freeze_startup_objects(*, env_runner: Any, **kwargs: Any) -> None:
    """RLlib ``on_environment_created`` callback: ``gc.freeze()`` in a remote runner.

    The local runner (index 0) lives in the driver process, which this leaves alone."""
    if (getattr(env_runner, "worker_index", None) or 0) > 0:
        gc.freeze()


@contextlib.contextmanager
def inductor_flag_set_lazily() -> Iterator[None]:
    """``torch.use_deterministic_algorithms`` without importing torch's compiler.

    RLlib seeds every env runner it builds with a seed (``EnvRunner.__init__``), and its
    torch seeding calls ``torch.use_deterministic_algorithms(True)``. That function
    imports ``torch._inductor.config`` only to set one flag of the compiler, which pulls
    in torch._dynamo and torch._inductor: ~1.3 s of CPU in every runner process, about a
    third of a CartPole runner's start. Inside this block the call sets the same switch
    in torch (``torch._C._set_deterministic_algorithms``) and hands the compiler's flag
    over through ``TORCHINDUCTOR_DETERMINISTIC``, the variable its config reads when it is
    first imported; once the compiler is loaded, torch's own function runs."""
    import torch

    real = torch.use_deterministic_algorithms

    def lazy(mode: bool, *, warn_only: bool = False) -> None:
        if "torch._inductor.config" in sys.modules:
            real(mode, warn_only=warn_only)
            return
        os.environ["TORCHINDUCTOR_DETERMINISTIC"] = "1" if mode else "0"
        torch._C._set_deterministic_algorithms(mode, warn_only=warn_only)

    torch.use_deterministic_algorithms = lazy
    try:
        yield
    finally:
        torch.use_deterministic_algorithms = real


def runner_class(multi_agent: bool) -> type:
    """The env runner class for a plan's RLlib config: RLlib's own single- or multi-agent
    runner, seeded without the compiler's import (:func:`inductor_flag_set_lazily`)."""
    from rlsuite.platform import seeded_runners

    return seeded_runners.MultiAgentRunner if multi_agent else seeded_runners.SingleAgentRunner
