"""Export a checkpoint as a small policy-only copy, to ship a trained policy.

A training checkpoint holds what resuming needs (optimiser moments, env runner and
learner state); a shipped policy needs only what inference reads. :func:`export_policy`
copies the files the checkpoint's backend names (``Backend.policy_files``) and its
``rlsuite.json``, which already records the plan with its full training config and the
env with its config; the copy loads with :func:`rlsuite.platform.checkpoints.load_controller`
like any checkpoint, but cannot be resumed.

Example::

    >>> from rlsuite.platform.checkpoints.export import export_policy
    >>> export_policy("runs/ring", "benchmarks/policies/ring")   # doctest: +SKIP
    'benchmarks/policies/ring'
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from typing import Any

from rlsuite.platform.checkpoints.layout import META, metadata, resolve


def export_policy(path: str, out: str, note: str = "") -> str:
    """Copy the policy of checkpoint (or run directory) ``path`` into a new directory
    ``out``; ``note`` (e.g. the command that trained it) is kept in its ``rlsuite.json``.
    Returns ``out``. Refuses an ``out`` that exists, so nothing is overwritten."""
    from rlsuite.platform.backends.registry import backend_class
    from rlsuite.platform.optimizers import plan_class

    src = resolve(path)
    if os.path.exists(out):
        raise FileExistsError(f"{out} exists; export into a new directory (or remove it first)")
    meta: dict[str, Any] = metadata(src)
    backend = backend_class(plan_class(meta["plan"]))
    parent = os.path.dirname(os.path.abspath(out))
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(dir=parent, prefix=".export-")
    try:
        for rel in backend.policy_files():
            source, target = os.path.join(src, rel), os.path.join(tmp, rel)
            if not os.path.exists(source):
                continue  # a file only some plans write (the loader asks for what it needs)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            if os.path.isdir(source):
                shutil.copytree(source, target)
            else:
                shutil.copy2(source, target)
        meta["exported_from"] = src
        if note:
            meta["note"] = note
        with open(os.path.join(tmp, META), "w") as f:
            json.dump(meta, f, indent=2, default=str)
        os.rename(tmp, out)  # complete or absent
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


def size_bytes(path: str) -> int:
    """Total size of the files under ``path``."""
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(path) for f in files)
