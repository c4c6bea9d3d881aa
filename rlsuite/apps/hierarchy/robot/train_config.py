"""How the robot's networks are fitted: :class:`TrainConfig`, shared by the hierarchical
model (:mod:`.model`), flat cloning and weak supervision (:mod:`.weak`).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TrainConfig:
    """How the networks are fitted."""

    hidden: int = 64
    """Width of the two hidden layers of every procedure network."""
    steps: int = 300
    """Full-batch Adam steps (cosine learning-rate decay)."""
    lr: float = 3e-3
    """Adam learning rate."""
    seed: int = 0
    """Seeds torch (initial weights) so the same demonstrations give the same model."""
    em_rounds: int = 4
    """Weak supervision: rounds of leaf segmentation / refit."""
    segment_penalty: float = 6.0
    """Weak supervision: log-likelihood cost of starting one more leaf call."""

    def validate(self) -> TrainConfig:
        for name in ("hidden", "steps", "em_rounds"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < (0 if name == "em_rounds" else 1):
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        if not self.lr > 0:
            raise ValueError(f"lr must be > 0, got {self.lr}")
        if self.segment_penalty < 0:
            raise ValueError(f"segment_penalty must be >= 0, got {self.segment_penalty}")
        return self
