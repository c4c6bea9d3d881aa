"""The ``sync`` plan's learner: RLlib's PPO learner, the same update in less time.

:class:`SyncPPOLearner` is RLlib's ``PPOTorchLearner`` (its loss, its connector pipeline,
its checkpoints) with two changes in *how* an update is computed, none in *what*:

- **Adam is fused** (``torch.optim.Adam(fused=True)``): one kernel steps every parameter,
  where torch's default on the CPU loops over the tensors in Python. Same algorithm and
  hyperparameters; the arithmetic differs from the per-tensor loop only in rounding.
- **The finite-gradient check is one test.** RLlib tests each gradient tensor with
  ``torch.isfinite(g).all()`` in every minibatch (two kernels and a sync per tensor: 24 on
  a 64x64 PPO). Here one ``get_total_norm`` over all of them is tested; the norm of
  gradients that hold a NaN or an inf is not finite, so nothing slips through. Only when
  that test fails are the tensors tested one by one and repaired as RLlib repairs them
  (``nan_to_num``, with its warning). ``check_finite_gradients=False`` still skips both.

Measured on one 4,252-row CartPole batch (10 epochs of minibatch 500, 64x64 nets, 2-core
machine): 231 ms per update with RLlib's learner, 205 ms with this one;
benchmarks/RESULTS.md has the whole-iteration numbers.

With ``overlap=True`` (:mod:`rlsuite.platform.overlap`) each batch was sampled one update
behind the learner. :class:`DecoupledClip` then centres PPO's clip on the learner's policy
at the start of the update (the *proximal* policy) instead of the behaviour policy, and
weights each sample by pi_prox / pi_behaviour: the decoupled objective of Hilton et al.
(2022, "Batch size-invariance for policy optimization"),

    L = E_behaviour[ pi_prox/pi_b * min(r * A, clip(r, 1-eps, 1+eps) * A) ],  r = pi/pi_prox.

It reaches RLlib's unchanged loss through the batch: the connector piece replaces the
batch's action log-probs and distribution inputs with the proximal policy's and scales the
(already standardised) advantages by the positive weight, which factors out of the
``min``. The KL term then measures KL(pi_prox || pi), the size of this update.
"""

from __future__ import annotations

import logging
from typing import Any

import torch
from ray.rllib.algorithms.ppo.torch.ppo_torch_learner import PPOTorchLearner
from ray.rllib.connectors.connector_v2 import ConnectorV2
from ray.rllib.core.columns import Columns
from ray.rllib.evaluation.postprocessing import Postprocessing

logger = logging.getLogger(__name__)

CHECK_FINITE = "check_finite_gradients"
"""``learner_config_dict`` key: test the gradients for NaN/inf (the plan's field)."""

DECOUPLED_CLIP = "decoupled_clip"
"""``learner_config_dict`` key: add :class:`DecoupledClip` to the learner's pipeline."""


def learner_settings(*, check_finite_gradients: bool, decoupled_clip: bool) -> dict[str, Any]:
    """The keyword arguments of ``AlgorithmConfig.learners`` that select this learner."""
    return {
        "learner_class": SyncPPOLearner,
        "learner_config_dict": {
            CHECK_FINITE: check_finite_gradients,
            DECOUPLED_CLIP: decoupled_clip,
        },
    }


def all_finite(tensors: list[torch.Tensor]) -> bool:
    """True when no tensor holds a NaN or an inf (one norm over all of them; a norm that
    overflows on finite values reads as not finite, which only sends the caller to its
    exact per-tensor check)."""
    if not tensors:
        return True
    return bool(torch.isfinite(torch.nn.utils.get_total_norm(tensors)))


class SyncPPOLearner(PPOTorchLearner):
    """RLlib's PPO learner with fused Adam and one finite-gradient test per minibatch
    (module docstring). The plan turns RLlib's own per-tensor test off
    (``torch_skip_nan_gradients=True``) and this learner's on, from
    ``learner_config_dict[CHECK_FINITE]``."""

    def build(self) -> None:
        super().build()
        if self.config.learner_config_dict.get(DECOUPLED_CLIP, False):
            # After GAE: the advantages are computed and standardised by then.
            self._learner_connector.append(DecoupledClip())

    def configure_optimizers_for_module(self, module_id: str, config: Any = None) -> None:
        # RLlib's TorchLearner default, with Adam fused where torch has a fused kernel.
        params = self.get_parameters(self._module[module_id])
        fused = bool(params) and all(
            p.is_floating_point() and p.device.type in ("cpu", "cuda") for p in params
        )
        self.register_optimizer(
            module_id=module_id,
            optimizer=torch.optim.Adam(params, fused=fused),
            params=params,
            lr_or_lr_schedule=config.lr,
        )

    def postprocess_gradients(self, gradients_dict: dict) -> dict:
        grads = super().postprocess_gradients(gradients_dict)  # RLlib's clipping
        if not self.config.learner_config_dict.get(CHECK_FINITE, True):
            return grads
        if all_finite([g for g in grads.values() if g is not None]):
            return grads
        names = {
            id(p): f"{mid}.{n}"
            for mid in self.module.keys()
            for n, p in self.module[mid].named_parameters()
        }
        for ref, g in grads.items():  # RLlib's repair, tensor by tensor
            if g is not None and not torch.isfinite(g).all():
                logger.warning(
                    "The gradient of %s holds nan/inf values: they are set to zero and the "
                    "infs to the largest float (nan_to_num). Lower the learning rate or "
                    "set grad_clip if this repeats.",
                    names.get(id(ref), f"a parameter of shape {tuple(g.shape)}"),
                )
                grads[ref] = torch.nan_to_num(g)
        return grads


class DecoupledClip(ConnectorV2):
    """Learner connector piece (after GAE): PPO's clip centred on the learner's policy at
    the start of the update, each sample weighted by pi_prox / pi_behaviour (module
    docstring). Padded time steps (``loss_mask`` false) keep a weight of 1."""

    def __call__(self, *, rl_module: Any, batch: dict, episodes: Any, **kwargs: Any) -> dict:
        for module_id, module_batch in batch.items():
            module = rl_module[module_id]
            with torch.no_grad():
                logits = module.forward_train(module_batch)[Columns.ACTION_DIST_INPUTS]
                prox = module.get_train_action_dist_cls().from_logits(logits)
                logp_prox = prox.logp(module_batch[Columns.ACTIONS])
                weight = torch.exp(logp_prox - module_batch[Columns.ACTION_LOGP])
                if Columns.LOSS_MASK in module_batch:
                    weight = torch.where(module_batch[Columns.LOSS_MASK], weight, 1.0)
            module_batch[Postprocessing.ADVANTAGES] = (
                module_batch[Postprocessing.ADVANTAGES] * weight
            )
            module_batch[Columns.ACTION_LOGP] = logp_prox
            module_batch[Columns.ACTION_DIST_INPUTS] = logits
        return batch
