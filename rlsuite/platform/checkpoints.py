"""Load a checkpoint as a controller: everything inference needs is in it.

An rlsuite checkpoint is RLlib's algorithm checkpoint plus ``rlsuite.json``
(plan, env id and config, iteration) and ``spaces.pkl`` (observation and action
spaces). ``load_controller`` needs nothing else: not the run, not the app's CLI,
not Ray. It acts deterministically (the distribution's mode: argmax for discrete
actions, the mean for continuous ones, mapped to the env's bounds the way RLlib's
runners do).

Example::

    >>> ctrl = load_controller("runs/cartpole")            # doctest: +SKIP
    >>> ctrl.act(obs)                                        # doctest: +SKIP
    1
"""

from __future__ import annotations

import json
import os
import pickle
from typing import Any

import numpy as np

from rlsuite.platform.training import META, SPACES, latest_checkpoint


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
    """The checkpoint's ``rlsuite.json``."""
    with open(os.path.join(resolve(path), META)) as f:
        return json.load(f)


def load_controller(path: str) -> Any:
    """A deterministic controller (``act(obs)``) from a checkpoint or run directory."""
    ckpt = resolve(path)
    meta = metadata(ckpt)
    if meta.get("plan") == "es":
        from rlsuite.platform.es import load_controller as load_es

        return load_es(ckpt)
    return RLModuleController(ckpt, meta)


class RLModuleController:
    """Acts with the RLModule(s) saved in an RLlib checkpoint."""

    def __init__(self, ckpt: str, meta: dict[str, Any]):
        import torch
        from ray.rllib.core.rl_module.multi_rl_module import MultiRLModule

        torch.set_num_threads(1)
        self.meta = meta
        self.name = f"{meta['plan']}@{meta['iteration']}"
        self.multi_agent = bool(meta.get("multi_agent"))
        self.policies = meta.get("policies", "shared")
        module_dir = os.path.join(ckpt, "learner_group", "learner", "rl_module")
        if not os.path.isdir(module_dir):
            raise FileNotFoundError(f"{ckpt} has no saved RLModule ({module_dir})")
        self.modules = MultiRLModule.from_checkpoint(module_dir)
        with open(os.path.join(ckpt, SPACES), "rb") as f:
            self.spaces = pickle.load(f)
        cfg = meta.get("plan_config", {})
        self.normalize_actions = cfg.get("normalize_actions", True)

    def module_id(self, agent_id: Any) -> str:
        if not self.multi_agent:
            return next(iter(self.modules.keys()))
        return "shared" if self.policies == "shared" else str(agent_id)

    def act(self, observation: Any) -> Any:
        if self.multi_agent:
            return {a: self._act_one(o, self.module_id(a), a) for a, o in observation.items()}
        return self._act_one(observation, self.module_id(None), None)

    def action_values(self, observation: Any, agent_id: Any = None) -> np.ndarray:
        """How much the policy prefers each action of a discrete action space, greedy = argmax.

        Q-values for value-based modules (the ``replay`` plan's DQN: dueling and
        double-Q included), the action-distribution logits for policy-gradient ones.
        Lets a caller choose the best *allowed* action (e.g. mask rules that do not
        apply) instead of only the greedy one.
        """
        import torch
        from ray.rllib.core.columns import Columns

        space = self.spaces.get(agent_id, next(iter(self.spaces.values())))[1]
        if not hasattr(space, "n"):
            raise TypeError(
                f"action_values needs a discrete action space, this policy acts in {space}"
            )
        module = self.modules[self.module_id(agent_id)]
        batch = {Columns.OBS: torch.as_tensor(np.asarray(observation, dtype=np.float32)[None])}
        with torch.no_grad():
            if hasattr(module, "compute_q_values"):
                out = module.compute_q_values(batch)["qf_preds"]
            else:
                out = module.forward_inference(batch)[Columns.ACTION_DIST_INPUTS]
        return out[0].cpu().numpy().astype(np.float64)

    def _act_one(self, obs: Any, module_id: str, agent_id: Any) -> Any:
        import torch
        from ray.rllib.core.columns import Columns
        from ray.rllib.utils.spaces.space_utils import clip_action, unsquash_action

        module = self.modules[module_id]
        batch = torch.as_tensor(np.asarray(obs, dtype=np.float32)[None])
        with torch.no_grad():
            out = module.forward_inference({Columns.OBS: batch})
        if Columns.ACTIONS in out:
            action = out[Columns.ACTIONS]
        else:
            dist_cls = module.get_inference_action_dist_cls()
            action = (
                dist_cls.from_logits(out[Columns.ACTION_DIST_INPUTS]).to_deterministic().sample()
            )
        a = action[0].cpu().numpy()
        space = self.spaces.get(agent_id, next(iter(self.spaces.values())))[1]
        if a.shape == () and np.issubdtype(a.dtype, np.integer):
            return int(a)
        if self.normalize_actions:
            return unsquash_action(a, space)
        return clip_action(a, space)
