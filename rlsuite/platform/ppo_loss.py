"""RLlib's PPO loss without its metrics, for the minibatches whose metrics nobody reads.

RLlib's ``PPOTorchLearner.compute_loss_for_module`` computes the loss and, beside it, six
statistics (policy loss, value losses, explained variance, entropy, KL) that it logs with
``window=1``: only the last minibatch's values survive an update. The lean minibatch loop
(:mod:`rlsuite.platform.learners`) calls RLlib's own loss on an update's last minibatch
and :func:`ppo_loss` on the others. :func:`ppo_loss` is RLlib 2.60's loss term for term,
in the same operations and order, so the loss, its gradients and the weights are the
same; it leaves out the statistics that only the logger used, and it finds the rows of
the loss mask once per minibatch instead of once per mean (each boolean index is a
``nonzero``). A test holds the weights it trains to RLlib's loop.
"""

from __future__ import annotations

from typing import Any

import torch
from ray.rllib.core.columns import Columns
from ray.rllib.evaluation.postprocessing import Postprocessing


def ppo_loss(learner: Any, *, module_id: str, config: Any, batch: dict, fwd_out: dict) -> Any:
    """The total PPO loss of one module's minibatch, as RLlib computes it."""
    module = learner.module[module_id].unwrapped()
    if Columns.LOSS_MASK in batch:
        rows = torch.nonzero(batch[Columns.LOSS_MASK]).squeeze(-1)
        num_valid = rows.numel()  # RLlib divides by torch.sum(mask): the same count

        def masked_mean(data: torch.Tensor) -> torch.Tensor:
            return torch.sum(data[rows]) / num_valid

    else:
        masked_mean = torch.mean

    curr = module.get_train_action_dist_cls().from_logits(fwd_out[Columns.ACTION_DIST_INPUTS])
    logp_ratio = torch.exp(curr.logp(batch[Columns.ACTIONS]) - batch[Columns.ACTION_LOGP])
    if config.use_kl_loss:
        prev = module.get_exploration_action_dist_cls().from_logits(
            batch[Columns.ACTION_DIST_INPUTS]
        )
        mean_kl_loss = masked_mean(prev.kl(curr))
    curr_entropy = curr.entropy()
    advantages = batch[Postprocessing.ADVANTAGES]
    surrogate_loss = torch.min(
        advantages * logp_ratio,
        advantages * torch.clamp(logp_ratio, 1 - config.clip_param, 1 + config.clip_param),
    )
    if config.use_critic:
        value_fn_out = module.compute_values(batch, embeddings=fwd_out.get(Columns.EMBEDDINGS))
        vf_loss = torch.pow(value_fn_out - batch[Postprocessing.VALUE_TARGETS], 2.0)
        vf_loss_clipped = torch.clamp(vf_loss, 0, config.vf_clip_param)
    else:
        vf_loss_clipped = torch.tensor(0.0, device=surrogate_loss.device)
    entropy_coeff = learner.entropy_coeff_schedulers_per_module[module_id].get_current_value()
    total_loss = masked_mean(
        -surrogate_loss + config.vf_loss_coeff * vf_loss_clipped - (entropy_coeff * curr_entropy)
    )
    if config.use_kl_loss:
        total_loss += learner.curr_kl_coeffs_per_module[module_id] * mean_kl_loss
    return total_loss
