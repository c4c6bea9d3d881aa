"""The on-disk layout of runs and checkpoints, for every backend (RLlib and ES alike).

A run directory (``training.train``) holds its checkpoints like this::

    run_dir/checkpoints/
      latest               the name of the newest *complete* checkpoint (written last)
      iter_000010/         one checkpoint (the newest ``keep`` are kept)
        rlsuite.json       META: plan, plan config, env, env config, iteration, env steps,
                           resources (what ran: the learner's device, the runners' CPUs)
        spaces.pkl         SPACES: observation and action spaces, for inference
        ...                the backend's own state:
                             RLlib: its algorithm checkpoint + learner_extra.json
                               (LEARNER_EXTRA: PPO's adaptive KL coefficient)
                               + obs_filter.pkl (OBS_FILTER: with a meanstd filter)
                             ES: es_state.json, es_params.npy, es_arrays.npz
                             QT-Opt: qtopt_state.pt

Any directory with ``rlsuite.json`` is a checkpoint, wherever it lies (Tune's trial
checkpoints, a warm start's ``clone/``). Nothing here imports a backend: backends
use these names to write their state, and :mod:`rlsuite.platform.checkpoints.loading`
reads it back through the backend that wrote it.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from typing import Any

from rlsuite.platform import envs as env_registry

META = "rlsuite.json"
"""What a checkpoint is (plan, env, iteration): JSON, written by :func:`write_meta`."""
SPACES = "spaces.pkl"
"""The observation and action spaces (pickled), so inference needs no env."""
LEARNER_EXTRA = "learner_extra.json"
"""RLlib: learner state its checkpoint leaves out (PPO's KL coefficient per module)."""
OBS_FILTER = "obs_filter.pkl"
"""RLlib, ``observation_filter="meanstd"``: the filter's running mean and std (RLlib's
``MeanStdFilter`` state, pickled), which the controller applies before the module."""
ES_STATE = "es_state.json"
"""ES: counters, RNG state, policy architecture and plan (JSON)."""
ES_PARAMS = "es_params.npy"
"""ES: the central parameter vector."""
ES_ARRAYS = "es_arrays.npz"
"""ES: the observation filter's sums and the optimiser's moments."""
QTOPT_STATE = "qtopt_state.pt"
"""QT-Opt: the Q-network, its two target networks, the optimiser, counters and RNGs."""
CHECKPOINTS = "checkpoints"
"""A run's checkpoint folder."""
LATEST = "latest"
"""The file in :data:`CHECKPOINTS` that names the newest complete checkpoint."""
FORMAT = 1
"""Version of :data:`META`'s format."""


def state_file(path: str, name: str, a_plan: str, writer: str = "training.train") -> str:
    """The backend state file ``name`` of checkpoint ``path``; a missing one raises
    ``FileNotFoundError`` saying it is not ``a_plan`` (``"an es"``) checkpoint and what
    writes one."""
    f = os.path.join(path, name)
    if not os.path.exists(f):
        raise FileNotFoundError(
            f"{path} is not {a_plan} checkpoint (no {name}); pass a directory written by "
            f"{writer} with {a_plan} plan"
        )
    return f


def checkpoint_name(iteration: int) -> str:
    """The folder name of a run's checkpoint at ``iteration``."""
    return f"iter_{iteration:06d}"


def latest_checkpoint(run_dir: str) -> str | None:
    """The newest complete checkpoint of a run, or None."""
    pointer = os.path.join(run_dir, CHECKPOINTS, LATEST)
    if not os.path.exists(pointer):
        return None
    with open(pointer) as f:
        path = os.path.join(run_dir, CHECKPOINTS, f.read().strip())
    return path if os.path.exists(os.path.join(path, META)) else None


def resolve(path: str) -> str:
    """A checkpoint directory from a checkpoint or a run directory."""
    path = os.path.abspath(os.fspath(path))
    if os.path.exists(os.path.join(path, META)):
        return path
    latest = latest_checkpoint(path)
    if latest:
        return latest
    raise FileNotFoundError(
        f"{path} is not an rlsuite checkpoint (no {META}) nor a run directory with one; "
        "pass the run directory given to train() or one of its checkpoints/iter_* folders"
    )


def metadata(path: str) -> dict[str, Any]:
    """The checkpoint's ``rlsuite.json`` (``path``: a checkpoint or a run directory)."""
    with open(os.path.join(resolve(path), META)) as f:
        return json.load(f)


def write_meta(path: str, plan: Any, iteration: int, env_steps: int, backend: Any = None) -> None:
    """Write ``rlsuite.json``: what a checkpoint is (plan, env, iteration) for loading it,
    and, under ``resources``, what the backend chose for the plan's ``"auto"`` fields on
    the machine that ran it (the RLlib backend's learner device and runner CPUs)."""
    meta = {
        "format": FORMAT,
        "plan": plan.name,
        "plan_config": plan.to_dict(),
        "env": plan.env,
        "env_config": dict(plan.env_config),
        "multi_agent": env_registry.spec(plan.env).multi_agent,
        "policies": getattr(plan, "policies", "shared"),
        "recurrent": plan.recurrent,
        "iteration": iteration,
        "env_steps": env_steps,
        "time": time.time(),
    }
    resolved = getattr(backend, "resolved", None)
    if resolved:
        meta["resources"] = resolved
    with open(os.path.join(path, META), "w") as f:
        json.dump(meta, f, indent=2, default=str)


def write_checkpoint(
    backend: Any, plan: Any, run_dir: str, iteration: int, env_steps: int, keep: int = 2
) -> str:
    """Save ``backend`` as the run's checkpoint at ``iteration``, then point ``latest`` at
    it (atomically: a run killed meanwhile keeps its previous checkpoint) and drop all
    but the newest ``keep``. Returns the checkpoint's path."""
    root = os.path.join(run_dir, CHECKPOINTS)
    os.makedirs(root, exist_ok=True)
    name = checkpoint_name(iteration)
    path = os.path.join(root, name)
    if os.path.exists(path):
        shutil.rmtree(path)
    backend.save(path)
    write_meta(path, plan, iteration, env_steps, backend)
    tmp = os.path.join(root, LATEST + ".tmp")
    with open(tmp, "w") as f:
        f.write(name)
    os.replace(tmp, os.path.join(root, LATEST))  # the checkpoint is complete only now
    olds = sorted(d for d in os.listdir(root) if d.startswith("iter_") and d != name)
    for d in olds[: max(0, len(olds) - (keep - 1))]:
        shutil.rmtree(os.path.join(root, d), ignore_errors=True)
    return path
