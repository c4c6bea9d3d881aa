"""RLlib's per-agent and per-module step counters, logged once per ``sample()`` call.

RLlib's multi-agent env runner logs four counters for every agent at every env step
(agent steps and module steps, each per sample and over the lifetime): 32 calls into its
metrics logger per step on an 8-light signal map, ~7% of a cologne8 runner's sampling time
in a cProfile. :class:`AgentCountsOncePerSample` counts them in two dicts while sampling
and logs each total once when ``sample()`` returns; the env-step and episode counters go
through RLlib as before. The totals RLlib reports are the same (its counters are sums).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from ray.rllib.utils.metrics import (
    NUM_AGENT_STEPS_SAMPLED,
    NUM_AGENT_STEPS_SAMPLED_LIFETIME,
    NUM_MODULE_STEPS_SAMPLED,
    NUM_MODULE_STEPS_SAMPLED_LIFETIME,
)


class AgentCountsOncePerSample:
    """A mixin for ``MultiAgentEnvRunner`` (see the module)."""

    def _increase_sampled_metrics(self, num_steps: int, next_obs: Any, episode: Any) -> int:
        counts = self.__dict__.setdefault("_agent_counts", (Counter(), Counter()))
        for aid in next_obs:
            counts[0][str(aid)] += 1
            counts[1][episode.module_for(aid)] += 1
        return super()._increase_sampled_metrics(num_steps, {}, episode)  # env steps, episodes

    def sample(self, **kwargs: Any) -> Any:
        try:
            return super().sample(**kwargs)
        finally:
            self._log_agent_counts()

    def _log_agent_counts(self) -> None:
        agents, modules = self.__dict__.pop("_agent_counts", (Counter(), Counter()))
        log = self.metrics.log_value
        for aid, n in agents.items():
            log((NUM_AGENT_STEPS_SAMPLED, aid), n, reduce="sum")
            log((NUM_AGENT_STEPS_SAMPLED_LIFETIME, aid), n, reduce="lifetime_sum")
        for mid, n in modules.items():
            log((NUM_MODULE_STEPS_SAMPLED, mid), n, reduce="sum")
            log((NUM_MODULE_STEPS_SAMPLED_LIFETIME, mid), n, reduce="lifetime_sum")
