"""Demonstrations: record a controller's episodes, and warm-start a policy from them.

:func:`record_episodes` runs any controller (a hand-written expert, a checkpoint)
on seeded episodes and writes its transitions as parquet, the format the
``imitation`` plan learns from. :func:`warm_start` is a ``sync`` plan's
``demonstrations`` option: before any RL the policy is cloned from such a file by
maximum likelihood and the critic fitted to the discounted returns
(:func:`clone_demonstrations`), and that clone is saved in ``run_dir/clone``.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
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
    driver: Any = None,
) -> dict[str, float]:
    """Run ``controller`` (anything :func:`rlsuite.platform.evaluation.build_controller`
    takes: an object, a factory, a checkpoint path) for ``episodes`` seeded episodes and
    write its transitions as parquet at ``path`` (the format the ``imitation`` plan reads,
    :func:`rlsuite.platform.demo_sources.record`). With ``driver`` (the same kinds), the
    driver acts and ``controller`` labels the states it reaches (DAgger).

    Returns ``{"episodes", "transitions", "return_mean"}``.
    """
    return demo_sources.record(
        build_controller(controller), env, episodes, path, env_config=env_config, seed=seed,
        driver=None if driver is None else build_controller(driver),
    )  # fmt: skip


def concatenate(parts: Sequence[str], path: str) -> None:
    """One recording at ``path`` of the recordings ``parts`` (removed), each with its own
    episode ids (e.g. recorded from other seeds)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.concat_tables([pq.read_table(p) for p in parts]), path)
    for p in parts:
        os.remove(p)


def clone_demonstrations(
    backend: RLlibBackend, path: str, epochs: int, seed: int = 0
) -> dict[str, float]:
    """Warm start: fit the policy to recorded transitions by maximum likelihood and
    the critic to their discounted returns, then send the weights to the env runners.

    ``path`` is parquet from :func:`record_episodes`. On a multi-agent env each agent's
    steps train the module the plan maps that agent to: with ``policies="shared"`` one
    module learns every agent's steps, with ``per_agent`` each agent's module its own.
    Returns the ``nll`` (per action) of the first and the last pass (``nll_first``,
    ``nll``), the last pass's ``value_mse`` and the ``transitions``, over every module.
    """
    data = _by_module(backend, path)
    batch, lr = 1024, 1e-3

    def fit(learner: Any) -> dict[str, float]:
        import torch
        from ray.rllib.core.columns import Columns

        gen = torch.Generator().manual_seed(seed)
        sums = np.zeros(3)  # first pass's nll, last pass's nll and value mse, summed per step
        for module_id, (obs, act, ret) in data.items():
            # None: a single-agent plan's one module
            module = learner.module[
                next(iter(learner.module.keys())) if module_id is None else module_id
            ]
            dist_cls = module.get_train_action_dist_cls()
            opt = torch.optim.Adam(module.parameters(), lr=lr)
            dev = next(module.parameters()).device
            o, a, r = (torch.as_tensor(x, device=dev) for x in (obs, act, ret))
            scale = float(r.abs().mean()) + 1e-6  # value loss in units of a typical return
            for epoch in range(epochs):
                nll = vmse = 0.0
                for idx in torch.randperm(len(o), generator=gen).split(min(batch, len(o))):
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
                    nll += loss_pi.item() * len(idx)
                    vmse += loss_v.item() * scale**2 * len(idx)
                if epoch == 0:
                    sums[0] += nll
            sums[1:] += (nll, vmse)
        n = sum(len(x[0]) for x in data.values())
        return {"nll_first": sums[0] / n, "nll": sums[1] / n, "value_mse": sums[2] / n}

    res = [x.get() for x in backend.algo.learner_group.foreach_learner(fit)]
    group = backend.algo.env_runner_group
    if group is not None:
        group.fetch_ready_async_reqs(timeout_seconds=None)  # see RLlibBackend.restore()
        group.sync_weights(
            from_worker_or_learner_group=backend.algo.learner_group,
            inference_only=True,
            timeout_seconds=None,
        )
    return {**res[0], "transitions": float(sum(len(x[0]) for x in data.values()))}


def _by_module(backend: RLlibBackend, path: str) -> dict[Any, tuple[np.ndarray, ...]]:
    """The recorded observations, actions (in the module's range) and discounted
    returns-to-go of ``path``, grouped by the module that learns them (``None``: a
    single-agent plan's one module; on a multi-agent env, the module the plan's policy
    mapping gives each step's agent, also an agent the env lacks when that module is one
    of the env's agents' own). Refused when they do not fit the plan's env."""
    import pyarrow.parquet as pq

    plan = backend.plan
    names = pq.read_schema(path).names
    agent_col = ["agent_id"] if "agent_id" in names else []
    cols = pq.read_table(path, columns=["eps_id", "obs", "actions", "rewards", *agent_col])
    cols = cols.to_pydict()
    if not cols["obs"]:
        raise ValueError(f"demonstrations {path!r} hold no transitions")
    obs = np.asarray(cols["obs"], dtype=np.float32)
    act = np.asarray(cols["actions"])
    ret = returns_to_go(cols["eps_id"], cols["rewards"], plan.gamma)
    spaces = env_registry.spaces(plan.env, plan.env_config)
    stand_in: dict[str, Any] = {}  # a recorded agent the env lacks -> one of its own
    if None in spaces:
        rows = {None: np.arange(len(obs))}
    elif not agent_col:
        raise ValueError(
            f"demonstrations {path!r} were not recorded on a multi-agent env (no agent_id "
            f"column); record them on {plan.env!r} itself"
        )
    else:
        ids = np.asarray(cols["agent_id"])
        known = {str(a): a for a in spaces}
        mapping = backend.algo.config.policy_mapping_fn
        # an agent this env_config lacks (recorded with more of them, e.g. 4 AVs for a 3-AV
        # ring) still teaches the module the plan maps it to when one of the env's agents
        # trains that module too (one shared policy), with that agent's spaces
        trained = {mapping(a, None): a for a in spaces}
        stand_in = {a: trained.get(mapping(a, None)) for a in set(ids.tolist()) - set(known)}
        strangers = sorted(a for a, k in stand_in.items() if k is None)
        if strangers:
            raise ValueError(
                f"demonstrations {path!r} hold agents {strangers} that {plan.env!r} with this "
                f"env_config does not have ({sorted(known)}), and no module of the plan's that "
                "those agents train: record them with the same env_config (or use one shared "
                "policy)"
            )
        rows = {known.get(a, a): np.flatnonzero(ids == a) for a in sorted(set(ids.tolist()))}
    parts: dict[Any, list[tuple[np.ndarray, ...]]] = {}
    for agent, idx in rows.items():
        obs_space, space = spaces[agent if agent is None or agent in spaces else stand_in[agent]]
        if obs.shape[1:] != tuple(obs_space.shape):
            raise ValueError(
                f"demonstrations {path!r} have observations of shape {obs.shape[1:]}, but "
                f"{plan.env!r} with this env_config observes {obs_space.shape}: "
                "record them with the same env_config"
            )
        a = act[idx]
        if getattr(plan, "normalize_actions", False) and hasattr(space, "low"):
            # the module acts in [-1, 1] and RLlib rescales to the env's bounds
            a = 2.0 * (a - space.low) / (space.high - space.low) - 1.0
        a = a.astype(np.float32 if hasattr(space, "low") else np.int64)
        module = None if agent is None else backend.algo.config.policy_mapping_fn(agent, None)
        parts.setdefault(module, []).append((obs[idx], a, ret[idx]))
    return {m: tuple(np.concatenate(x) for x in zip(*p)) for m, p in parts.items()}


def returns_to_go(eps_ids: Sequence[Any], rewards: Sequence[float], gamma: float) -> np.ndarray:
    """Each step's discounted return to the end of its own recorded episode (no bootstrap
    there). An episode's steps may be interleaved with others' (a multi-agent or vector
    env's recording writes every agent's step of one env step together), but are in order.

    >>> returns_to_go(["a", "b", "a", "b"], [1.0, 10.0, 1.0, 10.0], 0.5).tolist()
    [1.5, 15.0, 1.0, 10.0]
    """
    ret, g = np.zeros(len(rewards), np.float64), {}
    for i in range(len(rewards) - 1, -1, -1):
        g[eps_ids[i]] = rewards[i] + gamma * g.get(eps_ids[i], 0.0)
        ret[i] = g[eps_ids[i]]
    return ret.astype(np.float32)


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
        f"(nll {stats['nll_first']:.3f} in the first pass, {stats['nll']:.3f} in the last; "
        f"value mse {stats['value_mse']:.3g}); saved to {clone}"
    )
    return clone
