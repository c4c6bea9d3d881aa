"""The ``sync`` plan's learner: RLlib's PPO learner, the same update in less time.

:class:`SyncPPOLearner` is RLlib's ``PPOTorchLearner`` (its loss, its connector pipeline,
its checkpoints) with three changes in *how* an update is computed, none in *what*:

- **Adam is fused** (``torch.optim.Adam(fused=True)``): one kernel steps every parameter,
  where torch's default on the CPU loops over the tensors in Python. Same algorithm and
  hyperparameters; the arithmetic differs from the per-tensor loop only in rounding.
- **The minibatch loop is lean** (:meth:`SyncPPOLearner.update`). RLlib's
  ``Learner.update`` slices and concatenates ``SampleBatch`` objects for every minibatch,
  logs the steps trained, the batch's off-policyness and Ray's Prometheus counters per
  minibatch, and its module's ``forward_train`` calls ``nn.Module.train()`` on every
  forward. Here the minibatches are index-selects of the batch's tensors, in the same rows
  and order (:mod:`rlsuite.platform.minibatches`), and the per-update bookkeeping happens
  once per update with the same totals: the metrics after ``reduce()`` are RLlib's. The
  loss statistics (logged with ``window=1``: the last minibatch's survive) are computed
  and logged for the last minibatch only; the others take RLlib's loss without them
  (:mod:`rlsuite.platform.ppo_loss`), so the weights are the same bit for bit. The one
  thing dropped is RLlib's per-minibatch duration histogram on the Ray dashboard.
  Recurrent modules, ``torch.compile``, several learners and Ray Data iterators take
  RLlib's own loop.
- **The finite-gradient check is one test.** RLlib tests each gradient tensor with
  ``torch.isfinite(g).all()`` in every minibatch (two kernels and a sync per tensor: 24 on
  a 64x64 PPO). Here the sum of their norms (one ``_foreach_norm`` kernel) is tested; the
  norm of gradients that hold a NaN or an inf is not finite, so nothing slips through.
  Only when that test fails are the tensors tested one by one and repaired as RLlib
  repairs them (``nan_to_num``, with its warning). ``check_finite_gradients=False`` still
  skips both.

Measured on one 4,252-row CartPole batch (10 epochs of minibatch 500, 64x64 nets, 2-core
machine), before the lean loop: 231 ms per update with RLlib's learner, 205 ms with this
one; benchmarks/RESULTS.md has the whole-iteration numbers.

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

import numpy as np
import torch
import tree
from ray.rllib.algorithms.ppo.torch.ppo_torch_learner import PPOTorchLearner
from ray.rllib.connectors.connector_v2 import ConnectorV2
from ray.rllib.core.columns import Columns
from ray.rllib.core.learner.training_data import TrainingData
from ray.rllib.core.rl_module.torch.torch_rl_module import TorchRLModule
from ray.rllib.evaluation.postprocessing import Postprocessing
from ray.rllib.policy.sample_batch import SampleBatch
from ray.rllib.utils.metrics import (
    ALL_MODULES,
    DIFF_NUM_GRAD_UPDATES_VS_SAMPLER_POLICY,
    MODULE_TRAIN_BATCH_SIZE_MEAN,
    NUM_ENV_STEPS_TRAINED,
    NUM_ENV_STEPS_TRAINED_LIFETIME,
    NUM_MODULE_STEPS_TRAINED,
    NUM_MODULE_STEPS_TRAINED_LIFETIME,
    WEIGHTS_SEQ_NO,
)

from rlsuite.platform.minibatches import cyclic_indices
from rlsuite.platform.ppo_loss import ppo_loss

logger = logging.getLogger(__name__)

CHECK_FINITE = "check_finite_gradients"
"""``learner_config_dict`` key: test the gradients for NaN/inf (the plan's field)."""

DECOUPLED_CLIP = "decoupled_clip"
"""``learner_config_dict`` key: add :class:`DecoupledClip` to the learner's pipeline."""

LEAN_UPDATE = "lean_update"
"""``learner_config_dict`` key: False runs RLlib's own minibatch loop (default True)."""


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
    if len({(t.device, t.dtype) for t in tensors}) > 1:
        return bool(torch.isfinite(torch.nn.utils.get_total_norm(tensors)))
    # the sum of the tensors' norms: one kernel for all, without get_total_norm's
    # per-call grouping by device and dtype (half its time on a small net)
    return bool(torch.isfinite(torch.stack(torch._foreach_norm(tensors)).sum()))


class SyncPPOLearner(PPOTorchLearner):
    """RLlib's PPO learner with fused Adam, a lean minibatch loop and one finite-gradient
    test per minibatch (module docstring). The plan turns RLlib's own per-tensor test off
    (``torch_skip_nan_gradients=True``) and this learner's on, from
    ``learner_config_dict[CHECK_FINITE]``."""

    def build(self) -> None:
        super().build()
        self._in_lean_loop = False
        self._superseded: _SupersededDropped | None = None
        if self.config.learner_config_dict.get(DECOUPLED_CLIP, False):
            # After GAE: the advantages are computed and standardised by then.
            self._learner_connector.append(DecoupledClip())

    def update(
        self,
        batch: Any = None,
        batches: Any = None,
        batch_refs: Any = None,
        episodes: Any = None,
        episodes_refs: Any = None,
        data_iterators: Any = None,
        training_data: TrainingData | None = None,
        *,
        timesteps: dict[str, Any] | None = None,
        num_total_minibatches: int = 0,
        num_epochs: int = 1,
        minibatch_size: int | None = None,
        shuffle_batch_per_epoch: bool = False,
        _no_metrics_reduce: bool = False,
        **kwargs: Any,
    ) -> Any:
        """RLlib's ``Learner.update`` (same arguments, same result), with the lean
        minibatch loop wherever it applies (module docstring)."""
        if training_data is None:
            training_data = TrainingData(
                batch=batch,
                batches=batches,
                batch_refs=batch_refs,
                episodes=episodes,
                episodes_refs=episodes_refs,
                data_iterators=data_iterators,
            )
        rllib_loop = (
            not self.config.learner_config_dict.get(LEAN_UPDATE, True)
            or training_data.data_iterators
            or not minibatch_size
            or num_total_minibatches
            or self.config.num_learners > 1
            or self._torch_compile_complete_update
            or any(m.is_stateful() for m in self.module.values())
        )
        if rllib_loop:
            return super().update(
                training_data=training_data,
                timesteps=timesteps,
                num_total_minibatches=num_total_minibatches,
                num_epochs=num_epochs,
                minibatch_size=minibatch_size,
                shuffle_batch_per_epoch=shuffle_batch_per_epoch,
                _no_metrics_reduce=_no_metrics_reduce,
                **kwargs,
            )
        self._check_is_built()
        self.before_gradient_based_update(timesteps=timesteps or {})
        training_data.validate()
        training_data.solve_refs()
        self._weights_seq_no += 1
        full = self._make_batch_if_necessary(training_data=training_data)
        for mid in list(full.policy_batches):
            if not self.should_module_be_updated(mid, full):
                del full.policy_batches[mid]
        unknown = set(full.policy_batches) - set(self.module.keys())
        if unknown:
            raise ValueError(
                f"Batch contains one or more ModuleIDs ({unknown}) that are not in this Learner!"
            )
        if full.policy_batches:
            self._lean_epochs(
                full,
                num_epochs=num_epochs,
                minibatch_size=minibatch_size,
                shuffle=shuffle_batch_per_epoch and num_epochs > 1,
            )
        self.after_gradient_based_update(timesteps=timesteps or {})
        if not _no_metrics_reduce:
            return self.metrics.reduce()
        return None

    def _lean_epochs(
        self, full: Any, *, num_epochs: int, minibatch_size: int, shuffle: bool
    ) -> None:
        """The minibatch updates of one ``update``, and RLlib's per-minibatch bookkeeping
        once, with the same totals."""
        columns = {mid: dict(b) for mid, b in full.policy_batches.items()}
        for mid, cols in columns.items():
            if SampleBatch.SEQ_LENS in cols:
                raise ValueError(f"module {mid!r}: a sequence batch needs RLlib's loop")
        self._log_off_policyness(columns)
        for module in self.module.values():  # once: RLlib's forward_train does it per call
            if isinstance(module, torch.nn.Module):
                module.train()
        sizes = {mid: len(b) for mid, b in full.policy_batches.items()}
        # all of the update's index arrays at once (numpy's generator draws the same
        # permutations in the same order: nothing in an update step draws from it)
        cycle = list(
            cyclic_indices(
                sizes, num_epochs=num_epochs, minibatch_size=minibatch_size, shuffle=shuffle
            )
        )
        metrics = self.metrics
        superseded = self._superseded = _SupersededDropped(metrics)
        loss_per_module: dict = {}
        self._in_lean_loop = True
        try:
            for i, rows in enumerate(cycle):
                # window=1 values of all but the last minibatch are replaced before anyone
                # reads them (RLlib logs the total loss once at the end for this reason)
                self.metrics = metrics if i == len(cycle) - 1 else superseded
                minibatch = {
                    mid: _take(columns[mid], torch.from_numpy(idx)) for mid, idx in rows.items()
                }
                _, loss_per_module, _ = self._update(minibatch)
        finally:
            self.metrics = metrics
            self._in_lean_loop = False
            self._superseded = None
        self._log_steps_trained(full, minibatch_size, len(cycle))
        for mid, loss in loss_per_module.items():  # RLlib logs the last minibatch's
            self.metrics.log_value(key=(mid, self.TOTAL_LOSS_KEY), value=loss, window=1)

    def _uncompiled_update(self, batch: dict, **kwargs: Any) -> Any:
        if not self._in_lean_loop:
            return super()._uncompiled_update(batch, **kwargs)
        # RLlib's step without its per-minibatch off-policyness and nn.Module.train()
        # (both done once per update); num_learners is 1, so no DDP no_sync is needed.
        fwd_out = {mid: _forward_train(self.module[mid], b) for mid, b in batch.items()}
        loss_per_module = self.compute_losses(fwd_out=fwd_out, batch=batch)
        gradients = self.compute_gradients(loss_per_module)
        self.apply_gradients(self.postprocess_gradients(gradients))
        return fwd_out, loss_per_module, {}

    def compute_loss_for_module(
        self, *, module_id: str, config: Any, batch: dict, fwd_out: dict
    ) -> Any:
        if self.metrics is not self._superseded:  # None outside the lean loop
            return super().compute_loss_for_module(
                module_id=module_id, config=config, batch=batch, fwd_out=fwd_out
            )
        # a minibatch whose loss statistics the next one replaces: the loss alone
        return ppo_loss(self, module_id=module_id, config=config, batch=batch, fwd_out=fwd_out)

    def _log_off_policyness(self, columns: dict[str, dict]) -> None:
        # RLlib logs it per minibatch with a window of 1; every row of a batch carries the
        # seq-no of the weights that sampled it, so the whole batch's mean is the same
        # number when all of a batch was sampled with one set of weights.
        values = {
            (mid, DIFF_NUM_GRAD_UPDATES_VS_SAMPLER_POLICY): torch.mean(
                (self._weights_seq_no - torch.as_tensor(cols[WEIGHTS_SEQ_NO])).float()
            )
            for mid, cols in columns.items()
            if WEIGHTS_SEQ_NO in cols
        }
        if values:
            self.metrics.log_dict(values, window=1)

    def _log_steps_trained(self, full: Any, minibatch_size: int, count: int) -> None:
        # RLlib's _log_steps_trained_metrics and Prometheus counters, logged once per
        # update with the totals of its `count` minibatches (the sums and lifetime sums
        # add up the same; the mean of equal minibatch sizes is one of them).
        module_steps = minibatch_size * count
        for mid in full.policy_batches:
            self.metrics.log_value((mid, WEIGHTS_SEQ_NO), self._weights_seq_no, window=1)
            self.metrics.log_value(
                key=(mid, MODULE_TRAIN_BATCH_SIZE_MEAN), value=minibatch_size, reduce="mean"
            )
            self.metrics.log_value(
                key=(mid, NUM_MODULE_STEPS_TRAINED), value=module_steps, reduce="sum"
            )
            self.metrics.log_value(
                key=(mid, NUM_MODULE_STEPS_TRAINED_LIFETIME),
                value=module_steps,
                reduce="lifetime_sum",
                with_throughput=True,
            )
            self.metrics.log_value(
                key=(ALL_MODULES, NUM_MODULE_STEPS_TRAINED),
                value=module_steps,
                reduce="sum",
                with_throughput=True,
            )
            self.metrics.log_value(
                key=(ALL_MODULES, NUM_MODULE_STEPS_TRAINED_LIFETIME),
                value=module_steps,
                reduce="lifetime_sum",
                with_throughput=True,
            )
        # each of RLlib's minibatches reports the whole batch's env steps
        env_steps = full.env_steps() * count
        self.metrics.log_value(
            (ALL_MODULES, NUM_ENV_STEPS_TRAINED), env_steps, reduce="sum", with_throughput=True
        )
        self.metrics.log_value(
            (ALL_MODULES, NUM_ENV_STEPS_TRAINED_LIFETIME),
            env_steps,
            reduce="lifetime_sum",
            with_throughput=True,
        )
        if env_steps > 0:
            self._metrics_all_modules_num_env_steps_trained.inc(value=env_steps)
            self._metrics_all_modules_num_module_steps_trained.inc(
                value=module_steps * len(full.policy_batches)
            )

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


class _SupersededDropped:
    """The learner's metrics logger for all but the last minibatch of an update: a value
    logged with ``window=1`` (PPO's loss terms, KL, entropy, explained variance, the
    gradient norm) keeps only the last minibatch's, so these calls are dropped; every
    other call goes to the logger."""

    def __init__(self, metrics: Any):
        self._metrics = metrics

    def log_value(self, key: Any, value: Any, *args: Any, **kwargs: Any) -> None:
        if kwargs.get("window") != 1:
            self._metrics.log_value(key, value, *args, **kwargs)

    def log_dict(self, value_dict: Any, *args: Any, **kwargs: Any) -> None:
        if kwargs.get("window") != 1:
            self._metrics.log_dict(value_dict, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._metrics, name)


def _forward_train(module: Any, batch: dict) -> Any:
    """RLlib's ``forward_train`` without its ``nn.Module.train()`` (done once per update),
    unless the module class replaced ``forward_train`` itself."""
    if type(module).forward_train is TorchRLModule.forward_train:
        return module._forward_train(batch)
    return module.forward_train(batch)


def _take(columns: dict, rows: torch.Tensor) -> dict:
    """The given rows of every column: tensors, numpy arrays (such as RLlib's weight
    seq-nos) and nested columns."""
    out = {}
    for key, col in columns.items():
        if isinstance(col, torch.Tensor):
            out[key] = col[rows]
        else:
            out[key] = tree.map_structure(
                lambda c: c[rows] if isinstance(c, torch.Tensor) else np.asarray(c)[rows.numpy()],
                col,
            )
    return out


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
