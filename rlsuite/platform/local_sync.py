"""DQN whose weight sync copies tensors in place when the learner samples in the driver.

RLlib 2.60's DQN syncs the env runners after every training step (one update of one
minibatch)::

    EnvRunnerGroup.sync_weights(from_worker_or_learner_group=learner_group, ...)

which, even with no remote env runner, reads the learner's module state into numpy,
``ray.put``s it for the remote runners there are none of, and loads it back into the
local runner's module as new torch tensors. With the ``replay`` plan sampling in the
driver (``num_env_runners=0``, RLlib's ``cartpole_dqn.py`` layout) and a local learner,
that round trip was ~10% of an iteration in a profile (the ``ray.put`` half of it).

:class:`InPlaceSyncDQN` keeps RLlib's DQN training step as it is and only gives that
call a shorter path when the learner and the sole env runner both live in the driver:
each of the runner's module tensors is ``copy_``-ed from the learner's tensor of the
same name, and the runner's ``weights_seq_no`` follows the learner's. The runner acts
with exactly the weights it would have received; any other sync (remote runners, a
different source, global vars, keys the learner lacks) goes to RLlib's method unchanged.

In that same layout RLlib's training step also reduces the env runner's, the replay
buffer's and the learner's metrics after every round of one sample and its updates, and
aggregates them into the algorithm's, though they are read once per iteration: a quarter
of the wall time in a profile of the CartPole row. Where nothing is remote and the module
is not stateful, :meth:`InPlaceSyncDQN.training_step` runs the same rounds, in the same
order and with the same arguments, until the iteration's minimum steps and time are met,
and reduces each component's metrics once at the end. The rounds count the lifetime
env steps from the sampled episodes instead of the algorithm's reduced metrics,
and each update's TD errors (for prioritized replay) straight from the learner's logger;
the samples, the updates, the priorities and the weights are those of RLlib's step.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch
from ray.rllib.algorithms.dqn import DQN, DQNConfig
from ray.rllib.algorithms.dqn.dqn import calculate_rr_weights
from ray.rllib.core.rl_module.multi_rl_module import MultiRLModule
from ray.rllib.utils.metrics import (
    ENV_RUNNER_RESULTS,
    ENV_RUNNER_SAMPLING_TIMER,
    LEARNER_RESULTS,
    LEARNER_UPDATE_TIMER,
    NUM_AGENT_STEPS_SAMPLED_LIFETIME,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
    REPLAY_BUFFER_ADD_DATA_TIMER,
    REPLAY_BUFFER_RESULTS,
    REPLAY_BUFFER_SAMPLE_TIMER,
    REPLAY_BUFFER_UPDATE_PRIOS_TIMER,
    SYNCH_WORKER_WEIGHTS_TIMER,
    TD_ERROR_KEY,
    TIMERS,
)
from ray.rllib.utils.numpy import convert_to_numpy
from ray.rllib.utils.replay_buffers.utils import update_priorities_in_episode_replay_buffer


class InPlaceSyncDQNConfig(DQNConfig):
    """RLlib's ``DQNConfig`` for :class:`InPlaceSyncDQN` (same settings, same learner)."""

    def __init__(self, algo_class: type | None = None):
        super().__init__(algo_class=algo_class or InPlaceSyncDQN)


class InPlaceSyncDQN(DQN):
    """DQN with the in-place local weight sync described in the module docstring."""

    @classmethod
    def get_default_config(cls) -> InPlaceSyncDQNConfig:
        return InPlaceSyncDQNConfig()

    def setup(self, config: Any) -> None:
        super().setup(config)
        group = self.env_runner_group
        rllib_sync = group.sync_weights
        learner_group = self.learner_group

        def sync_weights(
            policies: Any = None,
            from_worker_or_learner_group: Any = None,
            to_worker_indices: Any = None,
            global_vars: Any = None,
            timeout_seconds: Any = 0.0,
            inference_only: Any = False,
        ) -> None:
            if (
                from_worker_or_learner_group is not learner_group
                or global_vars is not None
                or not copy_learner_weights(learner_group, group, policies)
            ):
                rllib_sync(
                    policies=policies,
                    from_worker_or_learner_group=from_worker_or_learner_group,
                    to_worker_indices=to_worker_indices,
                    global_vars=global_vars,
                    timeout_seconds=timeout_seconds,
                    inference_only=inference_only,
                )

        group.sync_weights = sync_weights

    def training_step(self) -> None:
        if not self._defers_metrics():
            return super().training_step()
        cfg = self.config
        runner = self.env_runner_group.local_env_runner
        learner = self.learner_group._learner
        start = time.time()
        base_steps = self.metrics.peek(
            (ENV_RUNNER_RESULTS, NUM_ENV_STEPS_SAMPLED_LIFETIME), default=0
        )
        agent_steps = self.metrics.peek(
            (ENV_RUNNER_RESULTS, NUM_AGENT_STEPS_SAMPLED_LIFETIME), default={}
        )
        sampled = trained = updates = 0
        store_weight, train_weight = calculate_rr_weights(cfg)
        while True:
            for _ in range(store_weight):
                with self.metrics.log_time((TIMERS, ENV_RUNNER_SAMPLING_TIMER)):
                    episodes = runner.sample()
                sampled += sum(episode.env_steps() for episode in episodes)
                with self.metrics.log_time((TIMERS, REPLAY_BUFFER_ADD_DATA_TIMER)):
                    self.local_replay_buffer.add(episodes)
            current = base_steps + sampled
            if current >= cfg.num_steps_sampled_before_learning_starts:
                for _ in range(train_weight):
                    with self.metrics.log_time((TIMERS, REPLAY_BUFFER_SAMPLE_TIMER)):
                        batch = self.local_replay_buffer.sample(
                            num_items=cfg.total_train_batch_size,
                            n_step=cfg.n_step,
                            batch_length_T=0,
                            lookback=0,
                            min_batch_length_T=getattr(cfg, "burn_in_len", 0),
                            gamma=cfg.gamma,
                            beta=cfg.replay_buffer_config.get("beta"),
                            sample_episodes=True,
                        )
                    with self.metrics.log_time((TIMERS, LEARNER_UPDATE_TIMER)):
                        self.learner_group.update(
                            episodes=batch,
                            timesteps={
                                NUM_ENV_STEPS_SAMPLED_LIFETIME: current,
                                NUM_AGENT_STEPS_SAMPLED_LIFETIME: agent_steps,
                            },
                            _no_metrics_reduce=True,
                        )
                    updates += 1
                    with self.metrics.log_time((TIMERS, REPLAY_BUFFER_UPDATE_PRIOS_TIMER)):
                        update_priorities_in_episode_replay_buffer(
                            replay_buffer=self.local_replay_buffer,
                            td_errors=take_td_errors(learner),
                        )
                    trained += cfg.total_train_batch_size
                with self.metrics.log_time((TIMERS, SYNCH_WORKER_WEIGHTS_TIMER)):
                    self.env_runner_group.sync_weights(
                        from_worker_or_learner_group=self.learner_group,
                        policies=set(learner.module.keys()),
                        global_vars=None,
                        inference_only=True,
                    )
            if self._iteration_met(time.time() - start, sampled, trained):
                break
        self.metrics.aggregate([runner.get_metrics()], key=ENV_RUNNER_RESULTS)
        if updates:
            self.metrics.aggregate(
                [self.local_replay_buffer.get_metrics()], key=REPLAY_BUFFER_RESULTS
            )
            self.metrics.aggregate([learner.metrics.reduce()], key=LEARNER_RESULTS)
        return None

    def _defers_metrics(self) -> bool:
        """Whether :meth:`training_step` may run the iteration's rounds with one metrics
        reduction at the end (the layout in the module docstring)."""
        cfg = self.config
        runner = getattr(self.env_runner_group, "local_env_runner", None)
        return (
            self.learner_group.is_local
            and getattr(self.learner_group, "_learner", None) is not None
            and runner is not None
            and self.env_runner_group.num_remote_workers() == 0
            and cfg.count_steps_by == "env_steps"
            and not self._module_is_stateful
        )

    def _iteration_met(self, elapsed: float, sampled: int, trained: int) -> bool:
        """RLlib's test for the end of a training iteration (``TrainIterCtx.should_stop``),
        on this iteration's own counts."""
        cfg = self.config
        return (
            (not cfg.min_time_s_per_iteration or elapsed >= cfg.min_time_s_per_iteration)
            and (
                not cfg.min_sample_timesteps_per_iteration
                or sampled >= cfg.min_sample_timesteps_per_iteration
            )
            and (
                not cfg.min_train_timesteps_per_iteration
                or trained >= cfg.min_train_timesteps_per_iteration
            )
        )


def take_td_errors(learner: Any) -> dict:
    """The TD errors the learner logged since the last call, per module (the form RLlib's
    ``update_priorities_in_episode_replay_buffer`` takes), removed from its logger."""
    td_errors = {}
    for module_id in learner.module.keys():
        key = (module_id, TD_ERROR_KEY)
        if key not in learner.metrics:
            continue
        values = convert_to_numpy(learner.metrics.peek(key))
        learner.metrics.delete(*key)
        td_errors[module_id] = {TD_ERROR_KEY: np.concatenate(values, axis=0)}
    return td_errors


def copy_learner_weights(learner_group: Any, group: Any, policies: Any = None) -> bool:
    """Copy the local learner's module tensors into the local env runner's module in place
    and set the runner's ``weights_seq_no`` to the learner's. Returns False (copying
    nothing) where that is not the whole sync: a remote learner or env runner, no local
    runner, or a runner tensor the learner has no same-shaped counterpart for."""
    learner = getattr(learner_group, "_learner", None)
    runner = getattr(group, "local_env_runner", None)
    if not learner_group.is_local or learner is None or runner is None:
        return False
    if group.num_remote_workers() > 0:
        return False
    source = learner.module
    target = runner.module
    module_ids = list(policies) if policies is not None else list(source.keys())
    pairs = []
    for module_id in module_ids:
        if module_id not in source:
            return False
        if isinstance(target, MultiRLModule):
            if module_id not in target:
                return False
            dst = target[module_id]
        elif len(module_ids) == 1:
            dst = target
        else:
            return False
        src_state = source[module_id].state_dict()
        for name, tensor in dst.state_dict().items():
            src = src_state.get(name)
            if src is None or src.shape != tensor.shape:
                return False
            pairs.append((tensor, src))
    with torch.no_grad():
        for tensor, src in pairs:
            tensor.copy_(src)
    runner._weights_seq_no = learner._weights_seq_no
    return True
