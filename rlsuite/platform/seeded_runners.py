"""RLlib's env runners, seeded without importing torch's compiler.

RLlib seeds each runner in its constructor; :func:`~.runners.inductor_flag_set_lazily`
keeps that seeding from loading ``torch._inductor`` (~1.3 s of CPU per runner process).
Everything else is RLlib's own class. :func:`~.runners.runner_class` picks one for a plan.
"""

from __future__ import annotations

from typing import Any

from ray.rllib.env.multi_agent_env_runner import MultiAgentEnvRunner
from ray.rllib.env.single_agent_env_runner import SingleAgentEnvRunner

from rlsuite.platform.runners import inductor_flag_set_lazily


class SingleAgentRunner(SingleAgentEnvRunner):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        with inductor_flag_set_lazily():
            super().__init__(*args, **kwargs)


class MultiAgentRunner(MultiAgentEnvRunner):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        with inductor_flag_set_lazily():
            super().__init__(*args, **kwargs)
