"""RLlib's env runners, seeded without importing torch's compiler.

RLlib seeds each runner in its constructor; :func:`inductor_flag_set_lazily` keeps that
seeding from loading ``torch._inductor`` (~1.3 s of CPU per runner process). The multi-agent
runner also logs its per-agent step counters once per sample
(:mod:`rlsuite.platform.agent_counts`). Everything else is RLlib's own class. :func:`rlsuite.platform.runners.runner_class` picks one for a plan.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from typing import Any

from ray.rllib.env.multi_agent_env_runner import MultiAgentEnvRunner
from ray.rllib.env.single_agent_env_runner import SingleAgentEnvRunner

from rlsuite.platform.agent_counts import AgentCountsOncePerSample


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


class SingleAgentRunner(SingleAgentEnvRunner):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        with inductor_flag_set_lazily():
            super().__init__(*args, **kwargs)


class MultiAgentRunner(AgentCountsOncePerSample, MultiAgentEnvRunner):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        with inductor_flag_set_lazily():
            super().__init__(*args, **kwargs)
