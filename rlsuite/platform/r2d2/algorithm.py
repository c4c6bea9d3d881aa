"""R2D2 on Ape-X's training step and RLlib's recurrent DQN pieces.

What is RLlib's (2.60):

- the Q-network: RLlib's DQN RLModule with its LSTM encoder (``use_lstm``), dueling
  heads and target network; its learner's optimiser, gradient clipping and target
  syncs (``DQNTorchLearner``);
- acting with recurrent state: RLlib's env runners carry each env's LSTM state from step
  to step and keep every step's ``STATE_OUT`` in the episode (its stateful-module
  connectors), checkpoints, metrics.

What is ours:

- Ape-X's asynchronous loop, sharded prioritised replay and per-runner epsilons
  (:mod:`rlsuite.platform.apex`), reused through its hooks (``actor_kwargs``,
  ``learner_data``, ``priorities``);
- sequences of ``m`` steps overlapping by ``m / 2``, with ``b`` burn-in steps and the
  state stored before them, built on the runners as the steps come in
  (:mod:`rlsuite.platform.r2d2.actors`; RLlib's own recurrent DQN replays whole
  episodes uniformly and cuts chunks at learning time);
- sequence priorities ``eta max|d| + (1 - eta) mean|d|`` (RLlib has no prioritised
  sequence replay);
- the burn-in without gradient and the n-step double-Q targets inside each sequence with
  the value rescaling h (:mod:`rlsuite.platform.r2d2.unroll`; RLlib's DQN loss has
  neither h nor in-sequence n-step targets): :class:`R2D2Module`'s ``forward_train`` and
  :class:`R2D2Learner`'s loss;
- R2D3's demonstration sequences beside the replay (``demonstrations``, ``demo_ratio``:
  :class:`R2D3`, on :mod:`rlsuite.platform.r2d2.demo_apex`), and the replay in the
  checkpoint (``checkpoint_replay``).

Demonstration sequences are packed like the agent's, with the LSTM's initial state as
their stored state (a recording has no recurrent state); the burn-in recovers it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from ray.rllib.algorithms.dqn.dqn_learner import QF_LOSS_KEY, QF_MEAN_KEY, TD_ERROR_MEAN_KEY
from ray.rllib.algorithms.dqn.torch.default_dqn_torch_rl_module import DefaultDQNTorchRLModule
from ray.rllib.algorithms.dqn.torch.dqn_torch_learner import DQNTorchLearner

from rlsuite.platform.apex.algorithm import Apex, ApexConfig, apex_config
from rlsuite.platform.r2d2 import actors, demo_apex, sequences, unroll
from rlsuite.platform.r2d2.plan import R2D2Plan
from rlsuite.platform.r2d2.rescale import EPSILON

BURN_IN = "r2d2_burn_in"
"""The model-config key that tells :class:`R2D2Module` the burn-in."""
REPLAY_STATE = "rlsuite_replay_shards"
"""The algorithm-state key of the replay shards' contents (``checkpoint_replay``)."""


class R2D2Module(DefaultDQNTorchRLModule):
    """RLlib's DQN module (LSTM encoder) whose ``forward_train`` unrolls replayed
    sequences: the burn-in from the stored state without gradient, then the rest, for
    the online and the target network (:func:`unroll.unroll`). Its epsilon-greedy
    exploration keeps the time rank of a stateful module's batch (RLlib's mixes ``[B]``
    and ``[B, 1]`` action tensors there, which broadcasts to ``[B, B]`` with more than
    one env per runner)."""

    def _forward_exploration(self, batch: dict[str, Any], t: int) -> dict[str, Any]:
        import torch
        from ray.rllib.core.columns import Columns

        qf = self.compute_q_values(batch)
        q = qf["qf_preds"]
        greedy = q.argmax(-1)
        self.epsilon_schedule.update(t)
        eps = self.epsilon_schedule.get_current_value()
        explore = torch.rand(greedy.shape, device=q.device) < eps
        random = torch.randint(0, q.shape[-1], greedy.shape, device=q.device)
        out = {Columns.ACTIONS: torch.where(explore, random, greedy)}
        if Columns.STATE_OUT in qf:
            out[Columns.STATE_OUT] = qf[Columns.STATE_OUT]
        return out

    def _forward_train(self, batch: dict[str, Any]) -> dict[str, Any]:
        import torch

        b = int(self.model_config[BURN_IN])
        args = (batch["obs"], batch["state"], batch["pad"], b)
        q = unroll.unroll(self.compute_q_values, *args)
        with torch.no_grad():
            q_target = unroll.unroll(self.forward_target, *args)
        return {"qf_preds": q, "qf_target_next_preds": q_target}


class R2D2Learner(DQNTorchLearner):
    """RLlib's DQN learner with R2D2's loss: n-step double-Q targets inside each
    sequence, value rescaling, importance weights per sequence; it reports each
    sequence's priority (``eta max|d| + (1 - eta) mean|d|``) as the TD error."""

    def compute_loss_for_module(
        self, *, module_id: Any, config: Any, batch: dict[str, Any], fwd_out: dict[str, Any]
    ) -> Any:
        import torch
        from ray.rllib.utils.metrics import TD_ERROR_KEY

        s = config.learner_config_dict
        b = s["burn_in"]
        td, q_sa, target = unroll.sequence_td(
            fwd_out["qf_preds"], fwd_out["qf_target_next_preds"], batch, burn_in=b,
            n_step=config.n_step, gamma=config.gamma, double_q=config.double_q,
            rescale_eps=s["rescale_eps"],
        )  # fmt: skip
        mask = batch["loss_mask"][:, b:].float()
        loss_fn = torch.nn.HuberLoss if config.td_error_loss_fn == "huber" else torch.nn.MSELoss
        per_step = loss_fn(reduction="none")(q_sa, target) * mask
        weights = batch["weights"].float().unsqueeze(1)
        total = (weights * per_step).sum() / mask.sum().clamp(min=1.0)
        prio = sequences.priority(td.detach().abs(), mask, s["priority_eta"])
        self.metrics.log_value(key=(module_id, TD_ERROR_KEY), value=prio, reduce="item_series")
        n = mask.sum().clamp(min=1.0)
        self.metrics.log_dict(
            {
                QF_LOSS_KEY: total,
                QF_MEAN_KEY: (q_sa * mask).sum() / n,
                TD_ERROR_MEAN_KEY: td.abs().sum() / n,
            },
            key=module_id,
            window=1,
        )
        return total


class R2D2(Apex):
    """Ape-X's training step on sequences (module docstring)."""

    def actor_kwargs(self) -> dict[str, Any]:
        s = self.config.apex_settings
        return dict(
            items_fn=actors.sequence_items,
            seq_len=s["seq_len"],
            burn_in=s["burn_in"],
            eta=s["priority_eta"],
            double_q=self.config.double_q,
            rescale_eps=s["rescale_eps"],
        )

    def learner_data(self, item: dict[str, Any]) -> tuple[dict[str, Any], int]:
        """A shard's sample of sequences as the learner's batch (one row per sequence),
        and the env steps with a loss it holds (what ``training_intensity`` counts)."""
        from ray.rllib.core import DEFAULT_MODULE_ID
        from ray.rllib.policy.sample_batch import MultiAgentBatch, SampleBatch

        b = item["batch"]
        batch = SampleBatch({**b, "weights": item["weights"]})
        steps = int(b["loss_mask"].sum())
        return {"batch": MultiAgentBatch({DEFAULT_MODULE_ID: batch}, env_steps=steps)}, steps

    def priorities(self, td_error: np.ndarray, item: dict[str, Any]) -> np.ndarray:
        """The learner reports each sequence's priority itself (:class:`R2D2Learner`)."""
        return np.asarray(td_error, dtype=np.float64).reshape(-1)

    # -- the replay in checkpoints (checkpoint_replay) --------------------------------
    def get_state(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        state = super().get_state(*args, **kwargs)
        if self.config.apex_settings["checkpoint_replay"] and hasattr(self, "shards"):
            import ray

            state[REPLAY_STATE] = ray.get([h.get_state.remote() for h in self.shards.handles])
        return state

    def set_state(self, state: dict[str, Any]) -> None:
        shards = state.get(REPLAY_STATE)
        super().set_state({k: v for k, v in state.items() if k != REPLAY_STATE})
        if shards is not None:
            import ray

            if len(shards) != len(self.shards.handles):
                raise ValueError(
                    f"the checkpoint holds {len(shards)} replay shards; this run has "
                    f"{len(self.shards.handles)} (num_replay_shards)"
                )
            refs = [h.set_state.remote(s) for h, s in zip(self.shards.handles, shards)]
            self.shards.sizes = list(ray.get(refs))


class R2D3(demo_apex.DemoApex, R2D2):
    """R2D2 with R2D3's demonstration sequences mixed into each learner batch, element by
    element with probability ``demo_ratio`` (:class:`demo_apex.DemoApex`'s rule; its
    ``demo_transitions`` in each row counts the demonstration sequences)."""

    def demo_columns(self, data: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Recorded episodes as R2D2's sequences, the stored state the initial one."""
        s = self.config.apex_settings
        m, b = s["seq_len"], s["burn_in"]
        cell = s["cell_size"]
        init = np.zeros(2 * cell, dtype=np.float32)
        ep = data["episode"]
        parts = []
        for idx in np.split(np.arange(len(ep)), np.flatnonzero(np.diff(ep)) + 1):
            cols = {
                "obs": data["obs"][idx].astype(np.float32),
                "next_obs": data["new_obs"][idx].astype(np.float32),
                "actions": data["actions"][idx].astype(np.int64),
                "rewards": data["rewards"][idx].astype(np.float32),
                "terminateds": data["terminateds"][idx] > 0,
            }
            states = np.zeros((len(idx), 2 * cell), dtype=np.float32)
            parts.append(unroll.finish(sequences.pack(cols, states, init, m, b), b))
        return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}

    def learner_data(self, item: dict[str, Any]) -> tuple[dict[str, Any], int]:
        data, _ = super().learner_data(item)
        return data, int(data["batch"].env_steps())


def r2d2_config(plan: R2D2Plan) -> ApexConfig:
    """The RLlib config of an ``r2d2`` plan (the rest is :func:`optimizers.to_rllib`'s)."""
    config = demo_apex.with_demonstrations(apex_config(plan), plan)
    config.algo_class = R2D3 if plan.demonstrations else R2D2
    rescale_eps = EPSILON if plan.value_rescale else None
    config.apex_settings = dict(
        config.apex_settings,
        seq_len=plan.seq_len,
        cell_size=plan.cell_size,
        burn_in=plan.burn_in,
        priority_eta=plan.priority_eta,
        rescale_eps=rescale_eps,
        checkpoint_replay=plan.checkpoint_replay,
    )
    return config.learners(
        learner_class=R2D2Learner,
        learner_config_dict=dict(
            burn_in=plan.burn_in, priority_eta=plan.priority_eta, rescale_eps=rescale_eps
        ),
    )


def model_config(plan: R2D2Plan) -> dict[str, Any]:
    """RLlib's ``DefaultModelConfig`` of the plan's LSTM Q-network, as a dict with the
    burn-in for :class:`R2D2Module`."""
    import dataclasses

    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

    model = DefaultModelConfig(
        fcnet_hiddens=list(plan.hidden),
        fcnet_activation=plan.activation,
        use_lstm=True,
        lstm_cell_size=plan.cell_size,
        max_seq_len=plan.burn_in + plan.seq_len,
    )
    return {**dataclasses.asdict(model), BURN_IN: plan.burn_in}
