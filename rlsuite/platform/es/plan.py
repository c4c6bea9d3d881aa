"""The ``es`` plan: the config of evolution strategies on Ray actors.

A :class:`rlsuite.platform.plans.Plan` whose ``backend`` is ``es``, so
:class:`rlsuite.platform.es.trainer.ESTrainer` runs it (see :mod:`rlsuite.platform.es`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rlsuite.platform.plans import Plan
from rlsuite.platform.plans import check as _check


@dataclass(frozen=True)
class ESPlan(Plan):
    """``es``: OpenAI-style evolution strategies on Ray actors (see :mod:`rlsuite.platform.es`)."""

    name: ClassVar[str] = "es"
    backend: ClassVar[str] = "es"
    supports_recurrent: ClassVar[bool] = True
    recurrent_cells: ClassVar[tuple[str, ...]] = ("gru",)

    seed: int = 0
    """Seeds the initial parameters, the noise offsets and the env seeds: same seed, same run."""
    hidden: tuple[int, ...] = (64, 64)
    """Hidden layer sizes of the policy MLP; ``()`` is a linear policy."""
    cell_size: int = 16
    """Size of the GRU's hidden state (with ``recurrent="gru"``): the GRU reads each
    normalised observation, and the MLP acts on the observation and the GRU's state."""
    num_workers: int = 2
    """Ray actors evaluating perturbations; each holds one env."""
    cpus_per_worker: float = 1.0
    """CPUs Ray reserves for each worker actor."""
    population_size: int = 32
    """Perturbed policies per generation; even, as antithetic pairs ``theta +- sigma*eps``."""
    sigma: float = 0.05
    """Standard deviation of the parameter perturbations."""
    lr: float = 0.02
    """Step size of the optimiser on the central parameters."""
    optimizer: str = "adam"
    """``adam`` or ``sgd`` (SGD with momentum)."""
    momentum: float = 0.9
    """Momentum of ``sgd`` (unused by ``adam``, which must keep the default)."""
    l2_coeff: float = 0.005
    """Weight decay on the central parameters, added to the ES gradient."""
    episodes_per_eval: int = 1
    """Episodes per perturbed policy (its fitness is their mean return); both members
    of an antithetic pair run the same env seeds."""
    common_env_seeds: bool = False
    """Every perturbation of a generation runs the same env seeds (common random
    numbers), so the ranks compare policies rather than env draws (a random ring length,
    say); ``False``: each antithetic pair draws its own."""
    max_episode_steps: int | None = None
    """Cut episodes after this many env steps; ``None``: the env's own horizon."""
    eval_episodes: int = 2
    """Episodes of the unperturbed central policy per generation (``eval_return_mean``); 0: none."""
    observation_filter: str = "meanstd"
    """``meanstd``: normalise observations by running mean/std (saved in checkpoints);
    ``none``: raw observations."""
    noise_table_size: int = 10_000_000
    """Float32 entries of the shared noise table (40 MB at the default); must exceed
    the number of policy parameters."""
    max_worker_failures: int = 8
    """Worker deaths tolerated within one generation before the run gives up."""
    fitness_shaping: str = "centered_ranks"
    """How returns weigh the noise in the update. ``centered_ranks`` (Salimans et al.
    2017): ranks scaled to [-0.5, 0.5], the gradient estimate
    ``sum (rank+ - rank-) eps / (2 n sigma)``. ``return_std`` (ARS, Mania et al. 2018):
    raw return differences over the std of the returns used,
    ``sum (f+ - f-) eps / (n std_f)``; with ``optimizer="sgd"``, ``momentum=0`` and
    ``l2_coeff=0`` the step is ARS's, ``lr`` its step size alpha."""
    top_pairs: int | None = None
    """Update only from the ``top_pairs`` antithetic pairs whose better return is highest
    (ARS's top b directions); ``None``: every pair."""
    action_head: str = "tanh"
    """Bounded ``Box`` actions: ``tanh`` squashes the output into the bounds; ``clip``
    clips the raw output to them (ARS's linear policy, with ``hidden=()``)."""
    init_from: str | None = None
    """An ES checkpoint or exported ES policy directory whose central parameters and
    observation filter start the run (a warm start; its env may differ, its policy
    architecture must match); the optimiser, generation count and RNG start fresh.
    ``None``: parameters drawn from ``seed``. A resumed run's checkpoint overrides it."""

    # -- validation -----------------------------------------------------------------
    def validate(self) -> None:
        """Raise ``ValueError`` saying what is wrong and what to use instead."""
        super().validate()
        _check(
            isinstance(self.num_workers, int) and self.num_workers >= 1,
            f"num_workers must be an int >= 1, got {self.num_workers!r}",
        )
        _check(self.cpus_per_worker > 0, f"cpus_per_worker must be > 0, got {self.cpus_per_worker}")
        if not (
            isinstance(self.population_size, int)
            and self.population_size >= 2
            and self.population_size % 2 == 0
        ):
            p = self.population_size
            hint = f"; use {p - 1} or {p + 1}" if isinstance(p, int) and p > 2 else "; use e.g. 32"
            raise ValueError(
                f"population_size must be an even int >= 2 (antithetic pairs), got {p!r}{hint}"
            )
        _check(
            isinstance(self.cell_size, int) and self.cell_size >= 1,
            f"cell_size must be an int >= 1, got {self.cell_size!r}",
        )
        _check(self.sigma > 0, f"sigma must be > 0, got {self.sigma}")
        _check(self.lr > 0, f"lr must be > 0, got {self.lr}")
        _check(
            self.optimizer in ("adam", "sgd"),
            f"optimizer must be 'adam' or 'sgd', got {self.optimizer!r}",
        )
        _check(0 <= self.momentum < 1, f"momentum must be in [0, 1), got {self.momentum}")
        if self.optimizer == "adam" and self.momentum != 0.9:
            raise ValueError(
                "momentum is only used by optimizer='sgd'; drop it or set optimizer='sgd'"
            )
        _check(self.l2_coeff >= 0, f"l2_coeff must be >= 0, got {self.l2_coeff}")
        _check(
            self.episodes_per_eval >= 1,
            f"episodes_per_eval must be >= 1, got {self.episodes_per_eval}",
        )
        _check(
            self.max_episode_steps is None or self.max_episode_steps >= 1,
            f"max_episode_steps must be None or >= 1, got {self.max_episode_steps}",
        )
        _check(self.eval_episodes >= 0, f"eval_episodes must be >= 0, got {self.eval_episodes}")
        _check(
            self.observation_filter in ("meanstd", "none"),
            f"observation_filter must be 'meanstd' or 'none', got {self.observation_filter!r}",
        )
        _check(
            self.noise_table_size >= 1000,
            f"noise_table_size must be >= 1000 (and exceed the parameter count), "
            f"got {self.noise_table_size}",
        )
        _check(
            self.fitness_shaping in ("centered_ranks", "return_std"),
            "fitness_shaping must be 'centered_ranks' or 'return_std', "
            f"got {self.fitness_shaping!r}",
        )
        pairs = self.population_size // 2
        _check(
            self.top_pairs is None
            or (isinstance(self.top_pairs, int) and 1 <= self.top_pairs <= pairs),
            f"top_pairs must be None or an int in [1, population_size / 2 = {pairs}], "
            f"got {self.top_pairs!r}",
        )
        _check(
            self.action_head in ("tanh", "clip"),
            f"action_head must be 'tanh' or 'clip', got {self.action_head!r}",
        )
        _check(
            self.init_from is None or (isinstance(self.init_from, str) and self.init_from),
            f"init_from must be None or a checkpoint directory, got {self.init_from!r}",
        )
        _check(
            self.max_worker_failures >= 0,
            f"max_worker_failures must be >= 0, got {self.max_worker_failures}",
        )

    def placement_bundles(self) -> list[dict[str, float]]:
        """Resources of one run: the driver (one CPU) and one bundle per worker."""
        return [{"CPU": 1.0}] + [{"CPU": float(self.cpus_per_worker)}] * self.num_workers
