"""The backend interface: what the training loop, Tune and checkpoint loading need of
whatever runs a plan (RLlib's ``Algorithm``, the ES trainer, ...).

A backend is built from a validated plan (``Backend(plan)``), runs one iteration per
:meth:`~Backend.train`, writes and reads its own state inside a checkpoint directory
(the directory's shared files, ``rlsuite.json`` and the ``latest`` pointer, are
:mod:`rlsuite.platform.checkpoints.layout`'s), and turns a checkpoint back into a
controller. Which backend runs a plan is the plan's ``backend`` key
(:mod:`rlsuite.platform.backends.registry`); no caller looks at a plan's name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol


class Controller(Protocol):
    """What a loaded checkpoint gives: deterministic actions, episode by episode.

    ``reset(seed)`` starts an episode: a controller that keeps state across the steps
    of an episode (a recurrent policy's hidden state, say) clears it there, and
    ``act`` carries it from one step to the next.
    """

    def reset(self, seed: int | None = None) -> None: ...

    def act(self, observation: Any) -> Any: ...


class Backend(Protocol):
    """Runs one plan. Built as ``BackendClass(plan)`` (Ray must be up, or it starts it)."""

    plan: Any
    """The plan it runs. A backend that chooses something for the plan at build time
    (the RLlib backend: the learner's device for ``num_gpus_per_learner="auto"``) says
    what in a ``resolved`` dict, which checkpoints record under ``resources``."""

    def train(self) -> dict[str, Any]:
        """Run one iteration; a flat row of numbers with at least ``env_steps_this_iter``,
        ``time_this_iter_s`` and ``episode_return_mean`` (NaN when no episode ended)."""
        ...

    def save(self, path: str) -> None:
        """Write the state into directory ``path`` (resuming and inference need it)."""
        ...

    def restore(self, path: str) -> None:
        """Continue from the state in checkpoint ``path`` (same plan family and env)."""
        ...

    def stop(self) -> None:
        """Release the actors and processes it started."""
        ...

    @classmethod
    def policy_files(cls) -> list[str]:
        """The files and folders of a checkpoint, relative to it, that
        :meth:`load_controller` reads (besides ``rlsuite.json``): what a policy-only
        export keeps (:func:`rlsuite.platform.checkpoints.export.export_policy`)."""
        ...

    @classmethod
    def load_controller(cls, path: str, meta: Mapping[str, Any]) -> Controller:
        """A controller from checkpoint ``path`` (``meta``: its ``rlsuite.json``),
        without Ray and without the run."""
        ...
