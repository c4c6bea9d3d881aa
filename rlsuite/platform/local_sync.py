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
"""

from __future__ import annotations

from typing import Any

import torch
from ray.rllib.algorithms.dqn import DQN, DQNConfig
from ray.rllib.core.rl_module.multi_rl_module import MultiRLModule


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
