"""R2D3's demonstrations inside the ``replay`` plan's buffer (RLlib's DQN).

The demonstrations (:mod:`rlsuite.platform.demo_sources`) become RLlib
``SingleAgentEpisode`` s in an ``EpisodeReplayBuffer`` of their own, beside RLlib's
(prioritised) replay buffer. :class:`DemoMixingBuffer` stands in for that buffer in
RLlib's DQN training step: each ``sample`` draws the batch from the agent's buffer as
RLlib would, and then, element by element, demonstrations with probability
``demo_ratio`` until the agent's elements are all in (the same rule as the ``apex`` plan's,
:mod:`rlsuite.platform.r2d2.demo_apex`), sampled with the same n-step settings. Priorities
go back to the agent's buffer for its own elements only (and RLlib's step sends them:
:class:`PrioritizedDemoMixingBuffer`). Everything else (adding, metrics,
state) is RLlib's buffer's. With ``large_margin_coeff`` (DQfD's
term, :mod:`rlsuite.platform.r2d2.margin_learner`) every element carries an ``is_demo``
column, which the learner's term reads.

On a multi-agent env the demonstrations are recorded agent by agent (their ``agent_id``
column), and each policy gets a demonstrations buffer of its own agents' steps (the plan's
policy mapping: with ``policies=per_agent`` each agent's network replays that agent's
demonstrations, and no other's). RLlib's multi-agent buffer samples ``num_items`` elements
for each policy; each policy's share of demonstrations is drawn by the same rule.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from rlsuite.platform import demo_sources
from rlsuite.platform.local_sync import InPlaceSyncDQN, InPlaceSyncDQNConfig


def episodes(data: dict[str, np.ndarray], module_of: Any = None) -> list[Any]:
    """Recorded transitions (:func:`demo_sources.load`) as RLlib episodes, one per recorded
    episode id (rows of several episodes may interleave: a vector env's or a multi-agent
    env's steps). A multi-agent recording's episodes carry their agent's id and its policy,
    ``module_of(agent_id)``."""
    from ray.rllib.env.single_agent_episode import SingleAgentEpisode

    ep = data["episode"]
    order = np.argsort(ep, kind="stable")  # each episode's rows together, in time order
    out = []
    for idx in np.split(order, np.flatnonzero(np.diff(ep[order])) + 1):
        ids = {}
        if "agent_id" in data:
            agent = str(data["agent_id"][idx[0]])
            ids = dict(agent_id=agent, module_id=module_of(agent) if module_of else agent)
        out.append(
            SingleAgentEpisode(
                observations=[*data["obs"][idx], data["new_obs"][idx[-1]]],
                actions=list(data["actions"][idx].astype(np.int64)),
                rewards=list(data["rewards"][idx].astype(np.float32)),
                terminated=bool(data["terminateds"][idx[-1]]),
                truncated=not bool(data["terminateds"][idx[-1]]),
                len_lookback_buffer=0,
                **ids,
            )
        )
    return out


def buffers(eps: list[Any], per_module: bool) -> Any:
    """RLlib ``EpisodeReplayBuffer`` s holding ``eps``: one, or (``per_module``) one per
    policy, keyed by the episodes' module id."""
    from ray.rllib.utils.replay_buffers import EpisodeReplayBuffer

    groups: dict[Any, list[Any]] = {}
    for e in eps:
        groups.setdefault(e.module_id if per_module else None, []).append(e)
    out = {}
    for key, part in groups.items():
        steps = sum(len(e) for e in part)
        out[key] = EpisodeReplayBuffer(capacity=steps + len(part) + 1)
        out[key].add(part)
    return out if per_module else out[None]


def _lookback(values: list[float]) -> Any:
    from ray.rllib.env.utils.infinite_lookback_buffer import InfiniteLookbackBuffer

    return InfiniteLookbackBuffer(values, lookback=0)


class DemoMixingBuffer:
    """RLlib's replay buffer ``agent``, with demonstrations from ``demos`` mixed into each
    sample (module docstring)."""

    def __init__(self, agent: Any, demos: Any, rho: float, seed: int, mark: bool = False):
        self.agent, self.demos, self.rho, self.mark = agent, demos, float(rho), mark
        self.rng = np.random.default_rng([seed, 256])
        self._agent_items: dict[Any, int] = {}
        self.counts = [0, 0]
        """Demonstrated elements and all elements sampled since the last read."""

    def _draw(self, n: int) -> int:
        """How many demonstrations join ``n`` of the agent's elements (each element of the
        whole a demonstration with probability ``rho``, until ``n`` are the agent's)."""
        k = int(self.rng.negative_binomial(n, 1.0 - self.rho)) if n and 0 < self.rho < 1 else 0
        self.counts[0] += k
        self.counts[1] += n + k
        return k

    def sample(self, num_items: int | None = None, **kwargs: Any) -> Any:
        batch = list(self.agent.sample(num_items=num_items, **kwargs))
        if isinstance(self.demos, dict):  # one demonstrations buffer per policy
            modules = [e.module_id for e in batch]
            self._agent_items = {m: modules.count(m) for m in dict.fromkeys(modules)}
            demos = []
            for m, n in self._agent_items.items():
                k = self._draw(n) if m in self.demos else 0
                for e in self.demos[m].sample(num_items=k, **kwargs) if k else ():
                    e.module_id = e.agent_id = m  # RLlib's sampled slices drop the ids
                    demos.append(e)
        else:
            n = int(num_items or 0)
            self._agent_items = {None: n}
            k = self._draw(n)
            demos = list(self.demos.sample(num_items=k, **kwargs)) if k else []
        if not demos and not self.mark:
            return batch
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
        """The TD errors of the last sample's elements (of one policy) as the agent buffer's
        new priorities: the first ones, its own elements'; the demonstrations' that follow
        are dropped (they have no place in its priority trees)."""
        module = args[0] if args else kwargs.get("module_id")
        n = self._agent_items.get(module, self._agent_items.get(None, len(priorities)))
        return self.agent.update_priorities(priorities[:n], *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.agent, name)


class PrioritizedDemoMixingBuffer(DemoMixingBuffer):
    """:class:`DemoMixingBuffer` around a prioritised buffer (single- or multi-agent)."""


def _register_prioritized() -> None:
    # RLlib's DQN step updates priorities only for an instance of its prioritised episode
    # buffer (``update_priorities_in_episode_replay_buffer``). A wrapper around one offers
    # the same interface (its own ``update_priorities``, which keeps the demonstrations'
    # rows out of the agent buffer's trees, and the rest forwarded), so it is registered
    # as a virtual subclass of RLlib's ABC: the type check passes for what the wrapper is,
    # without copying RLlib's step. A wrapper around a uniform buffer stays outside.
    from ray.rllib.utils.replay_buffers import PrioritizedEpisodeReplayBuffer

    PrioritizedEpisodeReplayBuffer.register(PrioritizedDemoMixingBuffer)


def mixing_buffer(agent: Any, demos: Any, rho: float, seed: int, mark: bool = False) -> Any:
    """``agent`` (RLlib's replay buffer) with ``demos`` mixed into its samples: a
    :class:`PrioritizedDemoMixingBuffer` when ``agent`` is prioritised, so that RLlib's
    step updates its priorities."""
    from ray.rllib.utils.replay_buffers import PrioritizedEpisodeReplayBuffer

    if isinstance(agent, PrioritizedEpisodeReplayBuffer):
        _register_prioritized()
        return PrioritizedDemoMixingBuffer(agent, demos, rho, seed, mark)
    return DemoMixingBuffer(agent, demos, rho, seed, mark)


class DemoReplayDQN(InPlaceSyncDQN):
    """The ``replay`` plan's DQN with demonstrations mixed into its replay samples."""

    def setup(self, config: Any) -> None:
        super().setup(config)
        s = self.config.demo_settings
        data = demo_sources.load_for_run(
            s["demonstrations"], s["env_id"], dict(self.config.env_config), s["seed"]
        )
        mapping = self.config.policy_mapping_fn
        per_module = "agent_id" in data
        demos = buffers(episodes(data, lambda a: mapping(a, None)), per_module)
        self.demo_transitions = len(data["rewards"])
        self.demo_per_module = (
            {str(m): b.get_num_timesteps() for m, b in demos.items()} if per_module else None
        )
        """Each policy's demonstrated transitions (multi-agent envs)."""
        self.local_replay_buffer = mixing_buffer(
            self.local_replay_buffer,
            demos,
            s["demo_ratio"],
            s["seed"],
            mark=bool(self.config.learner_config_dict.get("large_margin_coeff")),
        )

    def step(self) -> dict[str, Any]:
        result = super().step()
        demo, total = self.local_replay_buffer.counts
        extra = result.setdefault("rlsuite", {})
        extra["demo_share"] = demo / total if total else float("nan")
        extra["demo_transitions"] = self.demo_transitions
        if self.demo_per_module:
            extra["demo_transitions_per_policy"] = self.demo_per_module
        self.local_replay_buffer.counts = [0, 0]
        from rlsuite.platform.r2d2.margin_learner import KEY

        margins = [
            float(m[KEY]) for m in result.get("learners", {}).values()
            if isinstance(m, dict) and m.get(KEY) is not None
        ]  # fmt: skip
        if margins:  # the policies' mean
            extra[KEY] = float(np.mean(margins))
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
