"""Demonstrations: record a controller's episodes, and warm-start a policy from them.

:func:`record_episodes` runs any controller (a hand-written expert, a checkpoint)
on seeded episodes and writes its transitions as parquet, the format the
``imitation`` plan learns from. :func:`warm_start` is a ``sync`` plan's
``demonstrations`` option: before any RL the policy is cloned from such a file by
maximum likelihood and the critic fitted to the discounted returns
(:func:`clone_demonstrations`), and that clone is saved in ``run_dir/clone``.
"""

from __future__ import annotations

import math
import os
import shutil
from collections.abc import Mapping
from typing import Any

import numpy as np

from rlsuite.platform import demo_sources
from rlsuite.platform import envs as env_registry
from rlsuite.platform.backends.rllib import RLlibBackend
from rlsuite.platform.checkpoints.layout import write_meta
from rlsuite.platform.evaluation import build_controller

CLONE = "clone"
"""The folder of a run that holds the warm-started policy, before any RL."""


def record_episodes(
    controller: Any,
    env: str,
    episodes: int,
    path: str,
    env_config: Mapping[str, Any] | None = None,
    seed: int = 0,
) -> dict[str, float]:
    """Run ``controller`` (anything :func:`rlsuite.platform.evaluation.build_controller`
    takes: an object, a factory, a checkpoint path) for ``episodes`` seeded episodes and
    write its transitions as parquet at ``path`` (the format the ``imitation`` plan reads,
    :func:`rlsuite.platform.demo_sources.record`).

    Returns ``{"episodes", "transitions", "return_mean"}``.
    """
    return demo_sources.record(
        build_controller(controller), env, episodes, path, env_config=env_config, seed=seed
    )


def clone_demonstrations(
    backend: RLlibBackend, path: str, epochs: int, seed: int = 0
) -> dict[str, float]:
    """Warm start: fit the policy to recorded transitions by maximum likelihood and
    the critic to their discounted returns, then send the weights to the env runners.

    ``path`` is parquet from :func:`record_episodes`.
    Returns the final ``nll`` (per action), ``value_mse`` and ``transitions``.
    """
    import pyarrow.parquet as pq

    cols = pq.read_table(path, columns=["eps_id", "obs", "actions", "rewards"]).to_pydict()
    if not cols["obs"]:
        raise ValueError(f"demonstrations {path!r} hold no transitions")
    obs = np.asarray(cols["obs"], dtype=np.float32)
    act = np.asarray(cols["actions"])
    rew = np.asarray(cols["rewards"], dtype=np.float64)
    eps = cols["eps_id"]
    obs_space, space = env_registry.spaces(backend.plan.env, backend.plan.env_config)[None]
    if obs.shape[1:] != tuple(obs_space.shape):
        raise ValueError(
            f"demonstrations {path!r} have observations of shape {obs.shape[1:]}, but "
            f"{backend.plan.env!r} with this env_config observes {obs_space.shape}: "
            "record them with the same env_config"
        )
    if getattr(backend.plan, "normalize_actions", False) and hasattr(space, "low"):
        # the module acts in [-1, 1] and RLlib rescales to the env's bounds
        act = 2.0 * (act - space.low) / (space.high - space.low) - 1.0
    act = act.astype(np.float32 if hasattr(space, "low") else np.int64)
    # discounted return-to-go within each recorded episode (no bootstrap at its end)
    ret = np.zeros_like(rew)
    g, gamma = 0.0, backend.plan.gamma
    for i in range(len(rew) - 1, -1, -1):
        if i == len(rew) - 1 or eps[i + 1] != eps[i]:
            g = 0.0
        g = rew[i] + gamma * g
        ret[i] = g
    ret = ret.astype(np.float32)
    batch, lr = min(1024, len(obs)), 1e-3

    def fit(learner: Any) -> dict[str, float]:
        import torch
        from ray.rllib.core.columns import Columns

        module = learner.module[next(iter(learner.module.keys()))]  # single-agent
        dist_cls = module.get_train_action_dist_cls()
        opt = torch.optim.Adam(module.parameters(), lr=lr)
        gen = torch.Generator().manual_seed(seed)
        dev = next(module.parameters()).device
        o, a, r = (torch.as_tensor(x, device=dev) for x in (obs, act, ret))
        scale = float(r.abs().mean()) + 1e-6  # value loss in units of a typical return
        nll = vmse = math.nan
        for _ in range(epochs):
            for idx in torch.randperm(len(o), generator=gen).split(batch):
                idx = idx.to(dev)
                out = module.forward_train({Columns.OBS: o[idx]})
                dist = dist_cls.from_logits(out[Columns.ACTION_DIST_INPUTS])
                lp = dist.logp(a[idx])
                loss_pi = -(lp.sum(-1) if lp.dim() > 1 else lp).mean()
                v = module.compute_values({Columns.OBS: o[idx]})
                loss_v = ((v - r[idx]) / scale).pow(2).mean()
                opt.zero_grad()
                (loss_pi + loss_v).backward()
                opt.step()
                nll, vmse = loss_pi.item(), loss_v.item() * scale**2
        return {"nll": nll, "value_mse": vmse}

    res = [x.get() for x in backend.algo.learner_group.foreach_learner(fit)]
    group = backend.algo.env_runner_group
    if group is not None:
        group.fetch_ready_async_reqs(timeout_seconds=None)  # see RLlibBackend.restore()
        group.sync_weights(
            from_worker_or_learner_group=backend.algo.learner_group,
            inference_only=True,
            timeout_seconds=None,
        )
    return {**res[0], "transitions": float(len(obs))}


def warm_start(backend: RLlibBackend, run_dir: str) -> str:
    """Clone the plan's ``demonstrations`` into ``backend`` and save that policy as a
    checkpoint in ``run_dir/clone`` (to compare the RL against); returns its path."""
    plan = backend.plan
    stats = clone_demonstrations(backend, plan.demonstrations, plan.demo_epochs, plan.seed)
    clone = os.path.join(run_dir, CLONE)
    shutil.rmtree(clone, ignore_errors=True)
    backend.save(clone)
    write_meta(clone, plan, 0, 0)
    print(
        f"warm start: cloned {int(stats['transitions'])} demonstrated transitions "
        f"(nll {stats['nll']:.3f}, value mse {stats['value_mse']:.3g}); saved to {clone}"
    )
    return clone
