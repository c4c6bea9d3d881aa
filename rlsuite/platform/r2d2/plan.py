"""The ``r2d2`` plan: R2D2 (Kapturowski et al. 2019), Ape-X with an LSTM Q-network.

RLlib's: the LSTM Q-network (its DQN RLModule), its learner's optimiser and target syncs,
the env runners that act with recurrent state. Ours: Ape-X's loop and sharded replay,
the sequences with stored state, burn-in and priorities, the in-sequence n-step targets
with value rescaling, R2D3's demonstration sequences (the whole account:
:mod:`rlsuite.platform.r2d2.algorithm`).

Example::

    >>> from rlsuite.platform.optimizers import make_plan
    >>> plan = make_plan("r2d2", env="rlsuite/StatelessCartPole-v1")
    >>> (plan.recurrent, plan.seq_len, plan.burn_in, plan.priority_eta, plan.n_step)
    ('lstm', 80, 40, 0.9, 5)
    >>> make_plan("r2d2", env="rlsuite/StatelessCartPole-v1", seq_len=40, burn_in=40)
    Traceback (most recent call last):
    ...
    ValueError: burn_in (40) must be shorter than seq_len (40): ...
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rlsuite.platform.apex.plan import ApexPlan
from rlsuite.platform.plans import check as _check
from rlsuite.platform.r2d2 import sequences


@dataclass(frozen=True)
class R2D2Plan(ApexPlan):
    """``r2d2``: Ape-X's runners, replay shards and learner (``apex``) with an LSTM
    Q-network. Runners act with their recurrent state and push sequences of ``seq_len``
    steps, overlapping by half, each with the state stored before it and the priority
    ``priority_eta max|d| + (1 - priority_eta) mean|d|``; the learner unrolls ``burn_in``
    steps before each from that state without loss, then learns n-step double-Q targets
    with the value rescaling h (:mod:`rlsuite.platform.r2d2.algorithm`). Replay items,
    ``train_batch_size`` and ``buffer_size`` count sequences."""

    name: ClassVar[str] = "r2d2"
    supports_recurrent: ClassVar[bool] = True
    recurrent_cells: ClassVar[tuple[str, ...]] = ("lstm",)

    recurrent: str = "lstm"
    """The Q-network's cell: an LSTM over the MLP's features (RLlib's ``use_lstm``),
    the only one R2D2 has; for a feed-forward Q-network use ``apex``."""
    cell_size: int = 64
    """Size of the LSTM's cell and hidden state (R2D2: 512 on Atari)."""
    seq_len: int = 80
    """Steps of a replayed sequence with a loss (R2D2's m); a new one starts every
    ``seq_len // 2`` steps, so consecutive sequences overlap by half."""
    burn_in: int = 40
    """Steps before each sequence unrolled from its stored state without loss (R2D2's
    b), so that the state at its first step is the current network's."""
    priority_eta: float = 0.9
    """A sequence's priority: ``eta max|d| + (1 - eta) mean|d|`` over its TD errors."""
    value_rescale: bool = True
    """Targets in the rescaled value space, ``h(G + gamma^n h^-1(Q))`` with
    ``h(x) = sign(x)(sqrt(|x| + 1) - 1) + 1e-3 x`` (Pohlen et al.); False: plain targets."""
    checkpoint_replay: bool = False
    """Save the replay shards' sequences (their stored states and priorities) in each
    checkpoint, so that a resumed run learns from them at once; as with RLlib's DQN the
    replay is otherwise left out and refilled."""
    n_step: int = 5
    """n-step returns inside each sequence (R2D2: 5)."""
    gamma: float = 0.997
    """Discount factor (R2D2: 0.997)."""
    lr: float = 1e-3
    """Learning rate (Acme's R2D2: 1e-3)."""
    train_batch_size: int = 32
    """Sequences per learner update (R2D2: 64)."""
    buffer_size: int = 10_000
    """Replay capacity in sequences, over all shards."""
    priority_alpha: float = 0.9
    """How strongly priorities skew sampling (R2D2: 0.9)."""
    priority_beta: float = 0.6
    """Importance-sampling correction (R2D2: 0.6)."""
    target_update_freq: int = 2500
    """Env steps between target-network syncs."""
    training_intensity: float | None = None
    """Replayed steps with a loss per env step sampled, at most (a batch of
    ``train_batch_size`` sequences replays up to ``train_batch_size * seq_len`` of them);
    the runners wait when it is reached. ``None``: no limit, the learner updates as fast
    as it can (R2D2)."""

    def validate(self) -> None:
        super().validate()
        _check(
            self.recurrent == "lstm",
            "the r2d2 plan learns a recurrent Q-network (recurrent='lstm'); for a "
            "feed-forward one use the apex plan",
        )
        sequences.check_lengths(self.seq_len, self.burn_in)
        _check(self.cell_size >= 1, f"cell_size must be >= 1, got {self.cell_size}")
        _check(
            0.0 <= self.priority_eta <= 1.0,
            f"priority_eta must be in [0, 1], got {self.priority_eta}",
        )
        _check(
            self.n_step <= self.seq_len,
            f"n_step ({self.n_step}) must be at most seq_len ({self.seq_len}): the n-step "
            "targets are computed inside each sequence",
        )
