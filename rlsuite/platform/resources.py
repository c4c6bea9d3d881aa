"""What a run of an RLlib plan is given: the learner's device and the env runners' CPUs.

A plan says what it wants (``num_gpus_per_learner``, ``num_learners``,
``num_env_runners``); this module turns that into what RLlib is asked for, on the
machine or cluster the driver sees, before anything waits on Ray for resources:

* **The learner's device.** ``num_gpus_per_learner="auto"`` (the default) puts each
  learner on a GPU when one is there for it *and* its work is large enough to gain
  (:func:`choose_learner`, rule below); otherwise on the CPU. A number asks for that
  many GPUs per learner and is an error, with what to use instead, when the GPUs are
  not there (RLlib would otherwise wait for them forever, or fail deep in torch).
* **The env runners' CPUs.** Each runner reserves one CPU. When the runners (and the
  learners that run on CPUs) ask for more CPUs than Ray has, Ray would never start the
  surplus and RLlib would wait for them forever; instead every actor of the run gets an
  equal share of the CPUs there are (:func:`share_cpus`), all of them start, and a
  warning says how many can actually run at once.

The rule for ``"auto"``, measured (RLlib's PPO learner, one H100 against the CPU
learner of the same machine; benchmarks/RESULTS.md):

    ======================================  ============  ========================
    nets, minibatch                         work          GPU learner / CPU learner
    ======================================  ============  ========================
    64x64 (the plans' default), 500         4.6e6         0.6x (slower)
    256x256, 4000 (batch 16000)             5.4e8         4x faster
    ======================================  ============  ========================

*work* = the module's parameters (policy and value nets, :func:`module_params`) x the
learner's minibatch: the multiply-adds of one forward pass over a minibatch, which is
what a GPU does in parallel; a small update is bound by the per-kernel launch and
copy costs instead, where the CPU wins. The GPU is chosen when ``work >=``
:data:`GPU_MIN_WORK` = 2e7. Between the two measured points the crossover is not
measured: a fixed-launch-cost model through both points (GPU time = c + b*work, CPU
time = a*work) crosses 1.0x at ~0.9e7 and a straight line in log-log at ~1.7e7;
2e7 sits above both, so a borderline size stays on the CPU (there the two are about
even), and 27x below the size where the GPU was 4x faster.

Example::

    >>> choose_learner("auto", num_learners=0, gpus_visible=1, work=lambda: 4.6e6).device
    'cpu'
    >>> choose_learner("auto", num_learners=0, gpus_visible=1, work=lambda: 5.4e8).device
    'cuda'
    >>> choose_learner("auto", num_learners=0, gpus_visible=0, work=lambda: 5.4e8).reason
    "num_gpus_per_learner='auto': no GPU visible, so the CPU"
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from rlsuite.platform.machine import usable_cpus

logger = logging.getLogger(__name__)

GPU_MIN_WORK = 2e7
"""``"auto"`` puts a learner on a GPU when its work (parameters x minibatch) is at least
this (see the module's docstring for the measurements it sits between)."""

AUTO = "auto"


# --------------------------------------------------------------------------- what is there


@dataclass(frozen=True)
class GPU:
    """One CUDA device this process sees."""

    index: int
    name: str
    memory_gib: float


def local_gpus() -> list[GPU]:
    """The CUDA devices torch sees in this process (none on a CPU-only build)."""
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a dependency
        return []
    if not torch.cuda.is_available():
        return []
    out = []
    for i in range(torch.cuda.device_count()):
        p = torch.cuda.get_device_properties(i)
        out.append(GPU(i, p.name, round(p.total_memory / 2**30, 1)))
    return out


def ray_resources() -> dict[str, float] | None:
    """Ray's total resources when the driver is connected, else None."""
    import ray

    return dict(ray.cluster_resources()) if ray.is_initialized() else None


def gpus_for_learners(num_learners: int) -> float:
    """GPUs the plan's learners can get. A local learner (``num_learners=0``) runs in
    this process: the GPUs torch sees here, and (when Ray is up) no more than Ray
    offers, since a Tune trial reserves its learner's GPU from Ray. Remote learners are
    Ray actors: Ray's GPUs (or this machine's, which an embedded Ray would offer)."""
    ray_res = ray_resources()
    ray_gpus = None if ray_res is None else float(ray_res.get("GPU", 0.0))
    if num_learners == 0:
        here = float(len(local_gpus()))
        return here if ray_gpus is None else min(here, ray_gpus)
    return float(len(local_gpus())) if ray_gpus is None else ray_gpus


def cpus_for_actors() -> float:
    """CPUs Ray offers the run's actors (an embedded Ray started later: the CPUs this
    process can use, as :func:`rlsuite.platform.cluster.init` gives it)."""
    ray_res = ray_resources()
    if ray_res is None:
        return float(usable_cpus())
    return float(ray_res.get("CPU", 0.0))


# --------------------------------------------------------------------------- the learner


@dataclass(frozen=True)
class LearnerChoice:
    """Where the learners run, as RLlib is asked for it, and why."""

    requested: float | str
    """The plan's ``num_gpus_per_learner``."""
    num_learners: int
    """Remote learner actors (0: one learner in the driver)."""
    num_gpus_per_learner: float
    """What RLlib gets: 0 (CPU) or the GPUs per learner."""
    reason: str
    """Why, in words."""
    work: float | None = None
    """Parameters x minibatch of one learner update, where it was needed for the choice."""

    @property
    def device(self) -> str:
        """``"cuda"`` or ``"cpu"``."""
        return "cuda" if self.num_gpus_per_learner > 0 else "cpu"

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "device": self.device}


def check_gpus_requested(value: Any) -> None:
    """Raise ``ValueError`` unless ``value`` is ``"auto"`` or a number >= 0."""
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if not (value == AUTO if isinstance(value, str) else number and value >= 0):
        raise ValueError(f"num_gpus_per_learner must be 'auto' or a number >= 0, got {value!r}")


def choose_learner(
    requested: float | str,
    *,
    num_learners: int,
    gpus_visible: float,
    work: Callable[[], float],
) -> LearnerChoice:
    """The learner's GPUs for a plan: the rule of this module, as a pure function.

    Args:
        requested: the plan's ``num_gpus_per_learner``: ``"auto"`` or a number.
        num_learners: the plan's ``num_learners`` (0: one learner in the driver).
        gpus_visible: GPUs those learners can get (:func:`gpus_for_learners`).
        work: the learner's parameters x minibatch; called only when a GPU is there.

    Raises:
        ValueError: a number > 0 that the visible GPUs cannot give every learner, or a
            fraction of a GPU for each of several learners (they would share one GPU).
    """
    check_gpus_requested(requested)
    learners = max(1, num_learners)
    where = "the driver" if num_learners == 0 else f"{num_learners} learner actors"
    if requested != AUTO:
        n = float(requested)
        if n > 0 and n * learners > gpus_visible:
            have = "no GPU is visible" if gpus_visible == 0 else f"{gpus_visible:g} GPU(s) visible"
            raise ValueError(
                f"num_gpus_per_learner={requested!r} asks for {n * learners:g} GPU(s) for "
                f"{where}, but {have} to them (torch.cuda / Ray's GPU resources). Use "
                "num_gpus_per_learner='auto' (a GPU when there is one and the update is large "
                "enough to gain) or 0 (the CPU)."
            )
        if 0 < n < 1 and num_learners > 1:
            # Measured on a 1-GPU machine: torch's NCCL backend refuses two data-parallel
            # ranks on one GPU ("Duplicate GPU detected"), so the learners never build.
            raise ValueError(
                f"num_gpus_per_learner={requested!r} with num_learners={num_learners} puts "
                "several learners on one GPU, and torch's distributed backend (NCCL) refuses "
                "two learners on the same GPU. Give each learner a whole GPU "
                "(num_gpus_per_learner=1, one learner per GPU), or use one learner "
                "(num_learners=0 or 1)."
            )
        device = "a GPU" if n > 0 else "the CPU"
        return LearnerChoice(requested, num_learners, n, f"num_gpus_per_learner={n:g}: {device}")
    if gpus_visible < learners:
        seen = "no GPU visible" if gpus_visible == 0 else f"{gpus_visible:g} GPU(s) for {where}"
        return LearnerChoice(requested, num_learners, 0.0, f"{_auto()}: {seen}, so the CPU")
    w = float(work())
    if w < GPU_MIN_WORK:
        return LearnerChoice(
            requested,
            num_learners,
            0.0,
            f"{_auto()}: a GPU is there but the update is small (parameters x minibatch = "
            f"{w:.2g} < {GPU_MIN_WORK:.0e}), where the CPU is faster, so the CPU",
            w,
        )
    return LearnerChoice(
        requested,
        num_learners,
        1.0,
        f"{_auto()}: one GPU per learner (parameters x minibatch = {w:.2g} >= {GPU_MIN_WORK:.0e})",
        w,
    )


def _auto() -> str:
    return f"num_gpus_per_learner={AUTO!r}"


def mlp_params(n_in: int, hidden: Sequence[int], n_out: int) -> int:
    """Weights and biases of a fully connected net ``n_in -> hidden... -> n_out``."""
    sizes = [n_in, *hidden, n_out]
    return sum((a + 1) * b for a, b in zip(sizes[:-1], sizes[1:]))


def module_params(
    obs_dim: int,
    action_outputs: int,
    hidden: Sequence[int],
    lstm_cell: int = 0,
    shared_encoder: bool = False,
) -> int:
    """Parameters of RLlib's default module as the plans build it: an encoder (the
    MLP's hidden layers, then an LSTM of ``lstm_cell`` units when the policy is
    recurrent) with a linear policy head and a linear value head. PPO and APPO give the
    policy and the value their own encoder unless the plan says ``vf_share_layers``; DQN's Q-net
    shares one (``shared_encoder``) between its advantage and value heads."""
    body = mlp_params(obs_dim, hidden[:-1], hidden[-1])
    last = hidden[-1]
    if lstm_cell:
        body += 4 * lstm_cell * (last + lstm_cell + 2)
        last = lstm_cell
    encoders = 1 if shared_encoder else 2
    return encoders * body + (last + 1) * action_outputs + (last + 1)


def action_outputs(space: Any) -> int:
    """Outputs of the policy's last layer for an action space (the distribution's inputs)."""
    import gymnasium as gym

    if isinstance(space, gym.spaces.Discrete):
        return int(space.n)
    if isinstance(space, gym.spaces.MultiDiscrete):
        return int(sum(space.nvec))
    if isinstance(space, gym.spaces.Box):
        return 2 * int(math.prod(space.shape))  # a Gaussian's means and log-stds
    return int(gym.spaces.flatdim(space))


# --------------------------------------------------------------------------- the runners


@dataclass(frozen=True)
class RunnerCPUs:
    """The env runners' CPUs, as RLlib is asked for them."""

    num_env_runners: int
    """The plan's remote env runners."""
    cpus_per_env_runner: float
    """What each runner reserves: 1, or a share when the CPUs are fewer than the actors."""
    cpus_per_learner: float
    """What each remote learner reserves: 0 on a GPU (as RLlib's ``"auto"``); on the CPU
    1, or the same share as a runner."""
    at_once: int
    """Runners that can sample at the same moment."""
    cpus: float
    """CPUs Ray offers."""
    message: str = ""
    """The warning, when the runners share CPUs."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def share_cpus(num_env_runners: int, learner: LearnerChoice, cpus: float) -> RunnerCPUs:
    """One CPU per env runner and per CPU learner actor, or, when Ray has fewer CPUs
    than that, an equal share of them for each (so every actor starts and none waits
    forever for a CPU); the message then says how many runners run at once."""
    on_cpu = learner.num_gpus_per_learner == 0
    cpu_learners = learner.num_learners if on_cpu else 0
    need = num_env_runners + cpu_learners
    if need <= cpus or need == 0:
        return RunnerCPUs(num_env_runners, 1.0, float(on_cpu), num_env_runners, cpus)
    if cpus <= 0:
        raise ValueError(
            "Ray offers no CPU to this run's actors; start Ray with num_cpus >= 1 "
            "(cluster.init(num_cpus=...), --num-cpus)"
        )
    share = cpus / need
    at_once = max(1, min(num_env_runners, math.floor(cpus) - cpu_learners))
    learners = f" and {cpu_learners} CPU learner(s)" if cpu_learners else ""
    msg = (
        f"{num_env_runners} env runner(s){learners} ask for {need} CPUs but Ray has "
        f"{cpus:g}: all start, each with {share:.2g} CPU, and at most {at_once} runner(s) "
        f"sample at once, so sampling goes no faster than with {at_once}. Lower "
        f"num_env_runners to {max(1, math.floor(cpus) - cpu_learners)} or give Ray more CPUs "
        "(--num-cpus, or --address of a bigger cluster)."
    )
    return RunnerCPUs(num_env_runners, share, share if on_cpu else 0.0, at_once, cpus, msg)


# --------------------------------------------------------------------------- for a plan


@dataclass(frozen=True)
class Resources:
    """Everything :func:`resolve` chose for one run of a plan."""

    learner: LearnerChoice
    runners: RunnerCPUs

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, as recorded in a checkpoint's ``rlsuite.json`` (``resources``)."""
        return {"learner": self.learner.to_dict(), "env_runners": self.runners.to_dict()}


def learner_work(plan: Any) -> float:
    """Parameters x minibatch of one learner update of an RLlib ``plan`` (its env's
    spaces, ``hidden``, LSTM ``cell_size``, ``shares_encoder`` and
    ``learner_minibatch_size``; the largest module of a multi-agent env)."""
    import gymnasium as gym

    from rlsuite.platform import envs as env_registry

    spaces = env_registry.spaces(plan.env, plan.env_config)
    cell = int(getattr(plan, "cell_size", 0)) if plan.recurrent == "lstm" else 0
    params = max(
        module_params(
            gym.spaces.flatdim(obs), action_outputs(act), plan.hidden, cell, plan.shares_encoder
        )
        for obs, act in spaces.values()
    )
    return float(params * plan.learner_minibatch_size)


def resolve(plan: Any, *, log: bool = True, driver_bundle: bool | None = None) -> Resources:
    """The learner's device and the runners' CPUs for one run of an RLlib ``plan`` on
    what the driver sees now (Ray's resources when connected, else this machine).
    Raises ``ValueError`` on GPUs asked for and not there; logs a warning when the
    runners share CPUs.

    ``driver_bundle``: the driver itself holds one of Ray's CPUs (a Tune trial's first
    bundle), so the actors share one CPU fewer; ``None``: true inside a placement group,
    so a trial and the bundles Tune reserved for it agree."""
    if driver_bundle is None:
        driver_bundle = _in_placement_group()
    learner = choose_learner(
        plan.num_gpus_per_learner,
        num_learners=plan.num_learners,
        gpus_visible=gpus_for_learners(plan.num_learners),
        work=lambda: learner_work(plan),
    )
    cpus = cpus_for_actors() - (1.0 if driver_bundle else 0.0)
    runners = share_cpus(plan.num_env_runners, learner, cpus)
    if log:
        logger.info("plan %s: learner on %s (%s)", plan.name, learner.device, learner.reason)
        if runners.message:
            logger.warning("plan %s: %s", plan.name, runners.message)
    return Resources(learner, runners)


def _in_placement_group() -> bool:
    import ray

    if not ray.is_initialized():
        return False
    from ray.util import get_current_placement_group

    return get_current_placement_group() is not None
