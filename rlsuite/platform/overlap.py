"""PPO whose env runners sample the next batch while the learner updates on this one.

RLlib's PPO samples, then updates, then syncs the weights: on a small machine the
runners wait for the learner and the learner for the runners. :class:`OverlappedPPO`
(the ``sync`` plan with ``overlap=True``) keeps one sample request in flight instead::

    iteration k:  wait for batch k  ->  send weights w_(k-1) + "sample batch k+1"
                  ->  learner: update on batch k (w_(k-1) -> w_k)   || runners sample k+1

so batch k+1 is sampled with ``w_(k-1)`` and trained on from ``w_k``: the behaviour
policy lags the learner by exactly one update (the first batch by none). The plan's
learner (:class:`rlsuite.platform.learners.DecoupledClip`) centres PPO's clip on ``w_k``,
the learner's policy at the start of the update, and weights each sample by its
probability under ``w_k`` over the behaviour policy's: an update then moves as far as an
on-policy one would (with the clip on the behaviour policy, much of each batch started
clipped and CartPole took 14-15 iterations to a return of 150 instead of 9-12). GAE uses
the learner's current value function.

The runners sample at a lower CPU priority than the driver (:data:`RUNNER_NICENESS`):
with the sample in flight, the learner's update is what each iteration waits for, so
where the runners and the learner share too few cores (2 runners and a learner on 2)
the update gets its core first and the runners the rest (more steps/s on 2 cores, as
measured in benchmarks/history/platform.md). With a core for each
process it changes nothing.

Everything else is RLlib's: the env runners, ``LearnerGroup.update`` with PPO's
learner and loss, the connector-state merge, metrics, timers and checkpoints. The
weights travel in the same remote call as the sample request, so a runner can never
sample with weights older than intended (each batch's ``weights_seq_no``, in the env
runners' metrics, is the learner's minus two from the second iteration on).
"""

from __future__ import annotations

from typing import Any

import ray
from ray.rllib.algorithms.ppo import PPO, PPOConfig
from ray.rllib.core import COMPONENT_LEARNER, COMPONENT_RL_MODULE
from ray.rllib.utils.metrics import (
    ALL_MODULES,
    ENV_RUNNER_RESULTS,
    ENV_RUNNER_SAMPLING_TIMER,
    LEARNER_RESULTS,
    LEARNER_UPDATE_TIMER,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
    NUM_MODULE_STEPS_TRAINED_LIFETIME,
    SYNCH_WORKER_WEIGHTS_TIMER,
    TIMERS,
    WEIGHTS_SEQ_NO,
)

SAMPLE_TAG = "overlapped_sample"
"""Tag of the in-flight sample requests in the env runner group's actor manager."""

RUNNER_NICENESS = 10
"""How much lower the env runners' CPU priority is than their default (Unix ``nice``
increment, applied in each runner process when it starts)."""


def _lower_priority(runner: Any, increment: int = RUNNER_NICENESS) -> int:
    """On an env runner: lower its process's CPU priority; returns the new niceness."""
    import os

    return os.nice(increment) if hasattr(os, "nice") else 0


def _set_state_and_sample(runner: Any, state: dict[str, Any]) -> Any:
    """On an env runner: take the learner's weights (and merged connector states), then
    sample one batch; returns (episodes ref, connector states, metrics)."""
    runner.set_state(state)
    return runner.sample_get_state_and_metrics()


class OverlappedPPOConfig(PPOConfig):
    """RLlib's ``PPOConfig`` for :class:`OverlappedPPO` (same settings, same learner)."""

    def __init__(self, algo_class: type | None = None):
        super().__init__(algo_class=algo_class or OverlappedPPO)
        # The step syncs the runners itself, with its sample request; RLlib's automatic
        # sync after each iteration would wait for the batch in flight.
        self._dont_auto_sync_env_runner_states = True

    def validate(self) -> None:
        super().validate()
        if self.num_env_runners < 1 and not self.in_evaluation:
            self._value_error("OverlappedPPO samples in remote env runners: num_env_runners >= 1")


class OverlappedPPO(PPO):
    """PPO with one sample request in flight during each learner update (see the module
    docstring). Checkpoints are PPO's: the in-flight batch is not part of them."""

    @classmethod
    def get_default_config(cls) -> OverlappedPPOConfig:
        return OverlappedPPOConfig()

    def setup(self, config: Any) -> None:
        super().setup(config)
        self._lower_runner_priority(None)

    def restore_env_runners(self, env_runner_group: Any) -> list[int]:
        restored = super().restore_env_runners(env_runner_group)
        if restored and env_runner_group is self.env_runner_group:
            self._lower_runner_priority(restored)  # a replaced runner is a new process
        return restored

    def _lower_runner_priority(self, runner_ids: list[int] | None) -> None:
        self.env_runner_group.foreach_env_runner(
            _lower_priority, local_env_runner=False, remote_worker_ids=runner_ids
        )

    def training_step(self) -> None:
        group = self.env_runner_group
        with self.metrics.log_time((TIMERS, ENV_RUNNER_SAMPLING_TIMER)):
            if group.num_in_flight_async_reqs(SAMPLE_TAG) == 0:
                # first iteration (or after a restore drained the requests)
                self._request_samples(connector_states=[])
            results = group.fetch_ready_async_reqs(
                tags=SAMPLE_TAG, timeout_seconds=self.config.sample_timeout_s
            )
            episode_refs = [r[0] for _, r in results]
            connector_states = [r[1] for _, r in results]
            self.metrics.aggregate([r[2] for _, r in results], key=ENV_RUNNER_RESULTS)

        with self.metrics.log_time((TIMERS, SYNCH_WORKER_WEIGHTS_TIMER)):
            # The next batch is sampled with the weights the learner has now, i.e.
            # before the update below: one update behind when it is trained on.
            self._request_samples(connector_states=connector_states)
        if not episode_refs:  # every runner failed; they are restarted before the next step
            return
        episodes = [e for ref in ray.get(episode_refs) for e in ref]

        with self.metrics.log_time((TIMERS, LEARNER_UPDATE_TIMER)):
            learner_results = self.learner_group.update(
                episodes=episodes,
                timesteps={
                    NUM_ENV_STEPS_SAMPLED_LIFETIME: self.metrics.peek(
                        (ENV_RUNNER_RESULTS, NUM_ENV_STEPS_SAMPLED_LIFETIME)
                    ),
                    NUM_MODULE_STEPS_TRAINED_LIFETIME: self.metrics.peek(
                        (LEARNER_RESULTS, ALL_MODULES, NUM_MODULE_STEPS_TRAINED_LIFETIME),
                        default=0,
                    ),
                },
                num_epochs=self.config.num_epochs,
                minibatch_size=self.config.minibatch_size,
                shuffle_batch_per_epoch=self.config.shuffle_batch_per_epoch,
            )
            self.metrics.aggregate(learner_results, key=LEARNER_RESULTS)

    def _request_samples(self, connector_states: list[dict[str, Any]]) -> None:
        """Send every healthy runner the learner's weights (and the merged connector
        states of the batch just received) with a request for its next batch."""
        learner_state = self.learner_group.get_state(
            components=COMPONENT_LEARNER + "/" + COMPONENT_RL_MODULE, inference_only=True
        )[COMPONENT_LEARNER]
        rl_module_state = {
            COMPONENT_RL_MODULE: ray.put(learner_state[COMPONENT_RL_MODULE]),
            WEIGHTS_SEQ_NO: learner_state[WEIGHTS_SEQ_NO],
        }
        state = self.env_runner_group.get_merged_env_runner_state(
            config=self.config,
            rl_module_state=rl_module_state,
            connector_states=connector_states,
            env_steps_sampled=self.metrics.peek(
                (ENV_RUNNER_RESULTS, NUM_ENV_STEPS_SAMPLED_LIFETIME), default=0
            ),
            env_to_module=self.env_to_module_connector,
            module_to_env=self.module_to_env_connector,
        )
        self.env_runner_group.foreach_env_runner_async(
            _set_state_and_sample, tag=SAMPLE_TAG, kwargs={"state": state}
        )
