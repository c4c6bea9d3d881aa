"""What every plan is: a frozen, documented config that names the backend that runs it.

A plan is a frozen dataclass with a docstring per field. :class:`Plan` holds the
fields and the machinery all plans share (building from a dict with "did you mean"
on unknown keys, ``to_dict``, ``replace``, the basic checks); each family of plans
adds its own fields and checks, and says in ``backend`` which backend runs it
(:mod:`rlsuite.platform.backends`): ``rllib`` for the plans of
:mod:`rlsuite.platform.optimizers`, ``es`` for :class:`rlsuite.platform.es.ESPlan`.
No caller looks at a plan's name to decide what to do with it.

Example::

    >>> from rlsuite.platform.optimizers import SyncPlan
    >>> SyncPlan.from_dict({"env": "CartPole-v1", "lr": 1e-3}).backend
    'rllib'
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, Self

import numpy as np

from rlsuite.platform import envs as env_registry

# Names users bring from other libraries and older RLlib versions.
ALIASES = {
    "learning_rate": "lr",
    "batch_size": "train_batch_size",
    "num_workers": "num_env_runners",
    "num_rollout_workers": "num_env_runners",
    "num_envs_per_worker": "num_envs_per_env_runner",
    "sgd_minibatch_size": "minibatch_size",
    "num_sgd_iter": "num_epochs",
    "n_epochs": "num_epochs",
    "epochs": "num_epochs",
    "fcnet_hiddens": "hidden",
    "net_arch": "hidden",
    "lambda": "lambda_",
    "gae_lambda": "lambda_",
    "ent_coef": "entropy_coeff",
    "vf_coef": "vf_loss_coeff",
    "clip_range": "clip_param",
    "max_grad_norm": "grad_clip",
    "prioritized_replay": "prioritized",
    "target_network_update_freq": "target_update_freq",
    "exploration_final_eps": "final_epsilon",
}


@dataclass(frozen=True)
class Plan:
    """Fields every plan has, whichever backend runs it."""

    name: ClassVar[str] = ""
    """The plan's name (``make_plan(name, ...)``, ``--plan``), written into checkpoints."""
    backend: ClassVar[str] = ""
    """The key of the backend that runs this plan (:mod:`rlsuite.platform.backends`)."""

    env: str = ""
    """Registered env id (``rlsuite/Ring-v0``) or any gymnasium id (``CartPole-v1``)."""
    env_config: Mapping[str, Any] = field(default_factory=dict)
    """Keyword arguments for the env."""
    seed: int = 0
    """Seeds everything random in the run (module or parameter init, sampling, the envs):
    same seed, same run."""
    hidden: tuple[int, ...] = (64, 64)
    """Hidden layer sizes of the policy (and value) MLP."""
    activation: str = "tanh"
    """Hidden activation: ``tanh`` or ``relu``."""
    recurrent: str = ""
    """``""``: a feed-forward policy. ``"lstm"``: an LSTM over the MLP's features, so the
    policy acts on the episode's history, not only on the last observation (RLlib's
    ``use_lstm``; its size is the plan's ``cell_size``); ``"gru"``: a GRU, on the ``es``
    plan. Only plans whose class sets ``supports_recurrent`` can carry one; the others
    refuse it and name those that can."""

    supports_recurrent: ClassVar[bool] = False
    """Whether this plan's backend can train a recurrent policy."""
    recurrent_cells: ClassVar[tuple[str, ...]] = ()
    """The cells ``recurrent`` may name on this plan (RLlib's plans: ``lstm``; ``es``: ``gru``)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "env_config", dict(self.env_config or {}))
        object.__setattr__(self, "hidden", tuple(self.hidden))

    # -- validation -------------------------------------------------------------------
    def validate(self) -> None:
        """Raise ``ValueError`` on a bad value or a bad combination."""
        if not self.env or not isinstance(self.env, str):
            raise ValueError(f"plan {self.name!r} needs env=<id>, e.g. env='CartPole-v1'")
        env_registry.spec(self.env)  # raises with the list of known ids
        check(
            isinstance(self.seed, int | np.integer) and self.seed >= 0,
            f"seed must be an int >= 0, got {self.seed!r}",
        )
        check(
            all(isinstance(h, int | np.integer) and h >= 1 for h in self.hidden),
            f"hidden must list positive layer sizes, got {self.hidden!r}",
        )
        check(
            self.activation in ("tanh", "relu"),
            f"activation must be 'tanh' or 'relu', got {self.activation!r}",
        )
        if self.recurrent:
            able = recurrent_plan_names()
            check(
                self.supports_recurrent,
                f"plan {self.name!r} cannot carry a recurrent policy (recurrent="
                f"{self.recurrent!r}); the plans that can: {', '.join(able)}",
            )
            check(
                self.recurrent in self.recurrent_cells,
                f"recurrent must be one of {', '.join(map(repr, self.recurrent_cells))} "
                f"on plan {self.name!r} (or '' for a feed-forward policy), got "
                f"{self.recurrent!r}",
            )

    # -- conversions ------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: ``{"plan": name, field: value, ...}``."""
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        d["env_config"] = dict(self.env_config)
        d["hidden"] = list(self.hidden)
        return {"plan": self.name, **d}

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> Self:
        """Build and validate a plan; unknown keys are an error, never ignored."""
        values = dict(values)
        given = values.pop("plan", cls.name)
        if given != cls.name:
            raise ValueError(f"values are for plan {given!r}, not {cls.name!r}")
        known = {f.name for f in fields(cls)}
        for key in values:
            if key not in known:
                hint = (
                    [ALIASES[key]]
                    if ALIASES.get(key) in known
                    else difflib.get_close_matches(key, known, n=1)
                )
                did = f" (did you mean {hint[0]!r}?)" if hint else ""
                raise ValueError(
                    f"unknown key for plan {cls.name!r}: {key!r}{did}. "
                    f"Known keys: {', '.join(sorted(known))}"
                )
        if "hidden" in values:
            values["hidden"] = tuple(int(h) for h in values["hidden"])
        plan = cls(**values)
        plan.validate()
        return plan

    def replace(self, **changes: Any) -> Self:
        """A copy with ``changes`` applied, checked like :meth:`from_dict`."""
        return type(self).from_dict({**self.to_dict(), **changes})

    def placement_bundles(self) -> list[dict[str, float]]:
        """The resources one run of this plan needs, as Ray placement-group bundles:
        the driver's first, then one per actor the run starts."""
        raise NotImplementedError(f"{type(self).__name__} does not say what it needs")


RECURRENT_CELLS = ("lstm", "gru")
"""Every recurrent cell some plan offers: RLlib's default model has an LSTM (``sync``,
``async``), the ``es`` plan's numpy policy a GRU."""


def recurrent_plan_names() -> list[str]:
    """Names of the plan classes defined so far that can carry a recurrent policy."""
    out, todo = [], list(Plan.__subclasses__())
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if cls.supports_recurrent and cls.name and cls.name not in out:
            out.append(cls.name)
    return sorted(out)


def check(ok: bool, msg: str) -> None:
    """Raise ``ValueError(msg)`` unless ``ok``."""
    if not ok:
        raise ValueError(msg)


def check_at_least_one(
    config: Any, names: Iterable[str], label: Callable[[str], str] = str
) -> None:
    """Raise ``ValueError`` naming the first field of ``names`` whose value in ``config``
    is below 1 (``label``: the field's name as the message gives it)."""
    for k in names:
        check(int(getattr(config, k)) >= 1, f"{label(k)} must be >= 1, got {getattr(config, k)}")
