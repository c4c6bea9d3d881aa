"""DQfD's large-margin loss on demonstrated steps, added to RLlib's DQN loss (an option).

:class:`LargeMarginDQNLearner` is RLlib's torch DQN learner whose loss, for a batch with
an ``is_demo`` column (the ``apex`` plan's batches with demonstrations), adds
``large_margin_coeff * (max_a [Q(s, a) + margin (a != a_E)] - Q(s, a_E))`` averaged over
the demonstrated elements (:func:`rlsuite.platform.r2d2.demos.large_margin_loss`).
R2D3 has no such term; DQfD (Hester et al. 2018) has it, with a margin of 0.8.
"""

from __future__ import annotations

from typing import Any

from ray.rllib.algorithms.dqn.dqn_learner import QF_PREDS
from ray.rllib.algorithms.dqn.torch.dqn_torch_learner import DQNTorchLearner
from ray.rllib.core.columns import Columns

from rlsuite.platform.r2d2.demos import large_margin_loss

KEY = "large_margin_loss"
"""The learner metric of the term (before its coefficient)."""


class LargeMarginDQNLearner(DQNTorchLearner):
    """RLlib's DQN learner plus DQfD's large-margin term (module docstring)."""

    def compute_loss_for_module(
        self, *, module_id: Any, config: Any, batch: dict[str, Any], fwd_out: dict[str, Any]
    ) -> Any:
        loss = super().compute_loss_for_module(
            module_id=module_id, config=config, batch=batch, fwd_out=fwd_out
        )
        settings = config.learner_config_dict
        if "is_demo" not in batch:
            return loss
        term = large_margin_loss(
            fwd_out[QF_PREDS], batch[Columns.ACTIONS], batch["is_demo"], settings["large_margin"]
        )
        self.metrics.log_value((module_id, KEY), term.item(), window=1)
        return loss + settings["large_margin_coeff"] * term


def with_margin_learner(config: Any, plan: Any) -> Any:
    """``config`` learning with :class:`LargeMarginDQNLearner` when the plan asks for DQfD's
    term (``large_margin_coeff`` > 0; unchanged otherwise)."""
    if plan.large_margin_coeff:
        config.learners(
            learner_class=LargeMarginDQNLearner,
            learner_config_dict={
                "large_margin_coeff": float(plan.large_margin_coeff),
                "large_margin": float(plan.large_margin),
            },
        )
    return config
