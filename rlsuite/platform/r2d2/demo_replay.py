"""R2D3's demonstrations inside the ``replay`` plan's buffer (RLlib's DQN).

The demonstrations (:mod:`rlsuite.platform.demo_sources`) become RLlib
``SingleAgentEpisode`` s in an ``EpisodeReplayBuffer`` of their own, beside RLlib's
(prioritised) replay buffer. :class:`DemoMixingBuffer` stands in for that buffer in
RLlib's DQN training step: each ``sample`` draws the batch from the agent's buffer as
RLlib would, and then, element by element, demonstrations with probability
``demo_ratio`` until the agent's elements are all in (the same rule as the ``apex`` plan's,
:mod:`rlsuite.platform.r2d2.demo_apex`), sampled with the same n-step settings. Priorities
go back to the agent's buffer for its own elements only. Everything else (adding, metrics,
state) is RLlib's buffer's. Single-agent envs only. With ``large_margin_coeff`` (DQfD's
term, :mod:`rlsuite.platform.r2d2.margin_learner`) every element carries an ``is_demo``
column, which the learner's term reads.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from rlsuite.platform import demo_sources
from rlsuite.platform.local_sync import InPlaceSyncDQN, InPlaceSyncDQNConfig


def episodes(data: dict[str, np.ndarray]) -> list[Any]:
    """Recorded transitions (:func:`demo_sources.load`) as RLlib episodes."""
    from ray.rllib.env.single_agent_episode import SingleAgentEpisode

    ep = data["episode"]
    out = []
    for idx in np.split(np.arange(len(ep)), np.flatnonzero(np.diff(ep)) + 1):
        out.append(
            SingleAgentEpisode(
                observations=[*data["obs"][idx], data["new_obs"][idx[-1]]],
                actions=list(data["actions"][idx].astype(np.int64)),
                rewards=list(data["rewards"][idx].astype(np.float32)),
                terminated=bool(data["terminateds"][idx[-1]]),
                truncated=not bool(data["terminateds"][idx[-1]]),
                len_lookback_buffer=0,
            )
        )
    return out


def _lookback(values: list[float]) -> Any:
    from ray.rllib.env.utils.infinite_lookback_buffer import InfiniteLookbackBuffer

    return InfiniteLookbackBuffer(values, lookback=0)


class DemoMixingBuffer:
    """RLlib's replay buffer ``agent``, with demonstrations from ``demos`` mixed into each
    sample (module docstring)."""

    def __init__(self, agent: Any, demos: Any, rho: float, seed: int, mark: bool = False):
        self.agent, self.demos, self.rho, self.mark = agent, demos, float(rho), mark
        self.rng = np.random.default_rng([seed, 256])
        self._agent_items = 0
        self.counts = [0, 0]
        """Demonstrated elements and all elements sampled since the last read."""

    def sample(self, num_items: int | None = None, **kwargs: Any) -> Any:
        batch = self.agent.sample(num_items=num_items, **kwargs)
        n = int(num_items or 0)
        self._agent_items = n
        k = int(self.rng.negative_binomial(n, 1.0 - self.rho)) if n and 0 < self.rho < 1 else 0
        self.counts[0] += k
        self.counts[1] += n + k
        batch = list(batch)
        if not k and not self.mark:
            return batch
        demos = list(self.demos.sample(num_items=k, **kwargs)) if k else []
        for e in batch + demos:
            # per-step scalars in every element, as the prioritised buffer gives them (the
            # uniform one gives arrays, which RLlib's batching would take for batches)
            for key, buf in list(e.extra_model_outputs.items()):
                e.extra_model_outputs[key] = _lookback(np.asarray(buf.data).reshape(-1).tolist())
        for e in demos:
            e.extra_model_outputs["weights"] = _lookback([1.0] * len(e))  # importance weight 1
        if self.mark:  # the learner's large-margin term applies to demonstrated steps only
            for flag, part in ((0.0, batch), (1.0, demos)):
                for e in part:
                    e.extra_model_outputs["is_demo"] = _lookback([flag] * len(e))
        return batch + demos

    def update_priorities(self, priorities: Any, *args: Any, **kwargs: Any) -> Any:
        return self.agent.update_priorities(priorities[: self._agent_items], *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.agent, name)


class DemoReplayDQN(InPlaceSyncDQN):
    """The ``replay`` plan's DQN with demonstrations mixed into its replay samples."""

    def setup(self, config: Any) -> None:
        from ray.rllib.utils.replay_buffers import EpisodeReplayBuffer

        super().setup(config)
        s = self.config.demo_settings
        data = demo_sources.load_for_run(
            s["demonstrations"], s["env_id"], dict(self.config.env_config), s["seed"]
        )
        eps = episodes(data)
        demos = EpisodeReplayBuffer(capacity=len(data["rewards"]) + len(eps) + 1)
        demos.add(eps)
        self.local_replay_buffer = DemoMixingBuffer(
            self.local_replay_buffer,
            demos,
            s["demo_ratio"],
            s["seed"],
            mark=bool(self.config.learner_config_dict.get("large_margin_coeff")),
        )
        self.demo_transitions = len(data["rewards"])

    def step(self) -> dict[str, Any]:
        result = super().step()
        demo, total = self.local_replay_buffer.counts
        extra = result.setdefault("rlsuite", {})
        extra["demo_share"] = demo / total if total else float("nan")
        extra["demo_transitions"] = self.demo_transitions
        self.local_replay_buffer.counts = [0, 0]
        from ray.rllib.core import DEFAULT_MODULE_ID

        from rlsuite.platform.r2d2.margin_learner import KEY

        margin = result.get("learners", {}).get(DEFAULT_MODULE_ID, {}).get(KEY)
        if margin is not None:
            extra[KEY] = float(margin)
        return result


class DemoReplayDQNConfig(InPlaceSyncDQNConfig):
    """The ``replay`` plan's DQN config with its demonstrations' settings."""

    def __init__(self, algo_class: type | None = None):
        super().__init__(algo_class=algo_class or DemoReplayDQN)
        self.demo_settings: dict[str, Any] = {}


def config_class(plan: Any) -> type:
    """The RLlib config class of a ``replay`` plan: with demonstrations, the one that
    mixes them in."""
    return DemoReplayDQNConfig if plan.demonstrations else InPlaceSyncDQNConfig


def with_demonstrations(config: Any, plan: Any) -> Any:
    """Give ``config`` (of :func:`config_class`) the plan's demonstrations, if any."""
    if not plan.demonstrations:
        return config
    from rlsuite.platform.r2d2.margin_learner import with_margin_learner

    config = with_margin_learner(config, plan)
    config.demo_settings = dict(
        demonstrations=os.path.abspath(plan.demonstrations)
        if os.path.exists(plan.demonstrations)
        else plan.demonstrations,
        demo_ratio=float(plan.demo_ratio),
        env_id=plan.env,
        seed=plan.seed,
    )
    return config
