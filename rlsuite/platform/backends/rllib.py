"""The ``rllib`` backend: the RLlib plans' ``Algorithm`` and their checkpoints' controller.

:class:`RLlibBackend` builds the algorithm from a plan
(:func:`rlsuite.platform.optimizers.to_rllib`), runs one ``train()`` per iteration (a
flat row: :func:`flatten_result`), and saves and restores it with what RLlib's own
checkpoint leaves out (the spaces, PPO's adaptive KL coefficient). :class:`RLModuleController` acts with the RLModule(s) of such a checkpoint.
"""

from __future__ import annotations

import json
import math
import os
import pickle
from collections.abc import Mapping
from typing import Any

import numpy as np

from rlsuite.platform import cluster, resources
from rlsuite.platform import envs as env_registry
from rlsuite.platform.checkpoints.layout import LEARNER_EXTRA, OBS_FILTER, SPACES
from rlsuite.platform.optimizers import RLlibPlan, to_rllib

RL_MODULE_DIR = os.path.join("learner_group", "learner", "rl_module")
"""Where RLlib's checkpoint keeps the RLModule(s), relative to the checkpoint."""


class RLlibBackend:
    """The ``rllib`` backend: a plan's RLlib ``Algorithm`` behind the
    :class:`~rlsuite.platform.backends.base.Backend` interface."""

    def __init__(self, plan: RLlibPlan, algo: Any = None):
        """``algo``: an ``Algorithm`` already built from ``plan`` (e.g. by a benchmark
        that changed its reporting), to save or train; None builds one."""
        self.plan = plan
        res = resources.resolve(plan, log=algo is None)  # raises on GPUs not there
        self.resolved = res.to_dict()
        """What ran: the learner's device and the runners' CPUs, with why (recorded in
        each checkpoint's ``rlsuite.json`` under ``resources``)."""
        if algo is None:
            with cluster.quiet_runner_creation():
                algo = to_rllib(plan, res).build_algo()
        self.algo = algo

    def train(self) -> dict[str, Any]:
        """One ``Algorithm.train()``, flattened, with the env runners' health."""
        row = flatten_result(self.algo.train())
        group = self.algo.env_runner_group
        if group is not None and self.plan.num_env_runners > 0:
            row["num_env_runners_healthy"] = group.num_healthy_remote_workers()
            row["num_env_runner_restarts"] = group.num_remote_worker_restarts()
        return row

    def save(self, path: str) -> None:
        """RLlib's checkpoint, the spaces and the learner state RLlib leaves out."""
        self.algo.save_to_path(os.path.abspath(path))
        with open(os.path.join(path, SPACES), "wb") as f:
            pickle.dump(env_registry.spaces(self.plan.env, self.plan.env_config), f)
        with open(os.path.join(path, LEARNER_EXTRA), "w") as f:
            json.dump({"kl_coeffs": self._kl_coeffs()}, f)
        if getattr(self.plan, "observation_filter", "none") == "meanstd":
            with open(os.path.join(path, OBS_FILTER), "wb") as f:
                pickle.dump(observation_filter_state(self.algo), f)

    def restore(self, path: str) -> None:
        """The algorithm, its runners' weights and PPO's KL coefficient from ``path``."""
        # RLlib's restore sends the restored weights to the remote env runners
        # fire-and-forget, and its actor manager drops that request for a runner that
        # still has one in flight (max_requests_in_flight_per_env_runner, default 1),
        # as every runner has right after the algorithm is built (its own weights
        # sync). Such a runner sampled the first iteration after a resume with its
        # *initial* weights (in one ring run 4 of 8 resumes; KL jumps at resumes
        # reached 3: benchmarks/RESULTS.md). Waiting for those requests first lets the
        # sync land, ahead of any sampling request.
        if self.algo.env_runner_group is not None:
            self.algo.env_runner_group.fetch_ready_async_reqs(timeout_seconds=None)
        self.algo.restore_from_path(os.path.abspath(path))
        extra = os.path.join(path, LEARNER_EXTRA)
        if os.path.exists(extra):
            with open(extra) as f:
                self._set_kl_coeffs(json.load(f).get("kl_coeffs", {}))

    def _kl_coeffs(self) -> dict[str, float]:
        """PPO's adaptive KL coefficient per module, which RLlib's checkpoint leaves out
        (a resumed run would restart it at ``kl_coeff``)."""
        res = self.algo.learner_group.foreach_learner(
            lambda learner: {
                str(m): float(v)
                for m, v in getattr(learner, "curr_kl_coeffs_per_module", {}).items()
            }
        )
        return next((r.get() for r in res if r.ok), {})

    def _set_kl_coeffs(self, coeffs: dict[str, float]) -> None:
        def put(learner: Any) -> None:
            if hasattr(learner, "curr_kl_coeffs_per_module"):
                for m, v in coeffs.items():
                    learner.curr_kl_coeffs_per_module[m].data.fill_(v)

        if coeffs:
            for r in self.algo.learner_group.foreach_learner(put):
                r.get()  # raises what failed on a learner

    def stop(self) -> None:
        from rlsuite.platform.offline import close_batch_iterators

        close_batch_iterators(self.algo)
        self.algo.stop()

    @classmethod
    def policy_files(cls) -> list[str]:
        """The RLModule(s), the spaces and the observation filter (plans with one); not
        the optimiser, runners or learner state."""
        return [RL_MODULE_DIR, SPACES, OBS_FILTER]

    @classmethod
    def load_controller(cls, path: str, meta: Mapping[str, Any]) -> RLModuleController:
        """The RLModule(s) saved in checkpoint ``path``, acting deterministically."""
        return RLModuleController(path, dict(meta))


def observation_filter_state(algo: Any) -> dict[Any, Any]:
    """The ``MeanStdFilter``'s state (per agent: its running mean and std) in ``algo``'s
    env-to-module pipeline, merged over the runners: the local runner's, or the
    algorithm's own copy when every runner is remote."""
    from ray.rllib.connectors.env_to_module import MeanStdFilter

    runner = algo.env_runner
    pipeline = runner._env_to_module if runner is not None else algo.env_to_module_connector
    pieces = [c for c in pipeline.connectors if isinstance(c, MeanStdFilter)]
    if not pieces:
        raise ValueError("the algorithm's env-to-module pipeline has no MeanStdFilter")
    return pieces[0].get_state()


class ObservationFilter:
    """Applies a saved ``MeanStdFilter`` state to single observations, as the runners did
    (RLlib's own filter, its statistics frozen)."""

    def __init__(self, path: str, spaces: Mapping[Any, Any]):
        from ray.rllib.connectors.env_to_module import MeanStdFilter

        with open(path, "rb") as f:
            state = pickle.load(f)
        multi_agent = list(state) != [None]
        obs_space = (
            _dict_space({a: s[0] for a, s in spaces.items()})
            if multi_agent
            else next(iter(spaces.values()))[0]
        )
        self.connector = MeanStdFilter(multi_agent=multi_agent, update_stats=False)
        # set after __init__: RLlib 2.60's constructor reads its clip before setting it
        self.connector.input_observation_space = obs_space
        self.connector.set_state(state)

    def __call__(self, obs: np.ndarray, agent_id: Any = None) -> np.ndarray:
        return np.asarray(self.connector._filters[agent_id](obs, update=False), dtype=np.float32)


def _dict_space(spaces: Mapping[Any, Any]) -> Any:
    import gymnasium as gym

    return gym.spaces.Dict(dict(spaces))


def flatten_result(r: dict[str, Any]) -> dict[str, Any]:
    """The numbers worth keeping from an RLlib result dict, flat."""
    er = r.get("env_runners", {}) or {}
    ev = (r.get("evaluation", {}) or {}).get("env_runners", {}) or {}
    row: dict[str, Any] = {
        "episode_return_mean": _num(er.get("episode_return_mean")),
        "episode_len_mean": _num(er.get("episode_len_mean")),
        # an async iteration in which no runner reported has NaN here: nothing sampled
        "env_steps_this_iter": int(_num(er.get("num_env_steps_sampled"), 0)),
        "time_this_iter_s": _num(r.get("time_this_iter_s")),
    }
    if ev:
        row["eval_return_mean"] = _num(ev.get("episode_return_mean"))
        if math.isnan(row["episode_return_mean"]):
            row["episode_return_mean"] = row["eval_return_mean"]
    # a training step of rlsuite's own (e.g. apex's) reports its numbers here
    row.update((r.get("rlsuite", {}) or {}).items())
    for mid, stats in (r.get("learners", {}) or {}).items():
        if mid == "__all_modules__" or not isinstance(stats, dict):
            continue
        for k in (
            "total_loss",
            "policy_loss",
            "vf_loss",
            "entropy",
            "mean_kl_loss",
            "qf_loss",
            "curr_entropy_coeff",
            "curr_kl_coeff",
        ):
            if k in stats:
                row[f"learner/{mid}/{k}"] = _num(stats[k])
    return row


def _num(v: Any, default: float = math.nan) -> float:
    """``v`` as a float; ``default`` when it is missing, not a number, or NaN."""
    try:
        f = float(v)
    except (TypeError, ValueError):
        return default
    return default if math.isnan(f) else f


class RLModuleController:
    """Acts with the RLModule(s) saved in an RLlib checkpoint.

    A recurrent module (a plan with ``recurrent="lstm"``) carries its state from one
    :meth:`act` to the next, one state per agent, and starts every episode from the
    module's initial state: call :meth:`reset` at each episode start (evaluation does).
    """

    def __init__(self, ckpt: str, meta: dict[str, Any]):
        import torch
        from ray.rllib.core.rl_module.multi_rl_module import MultiRLModule

        torch.set_num_threads(1)
        self.meta = meta
        self.name = f"{meta['plan']}@{meta['iteration']}"
        self.multi_agent = bool(meta.get("multi_agent"))
        self.policies = meta.get("policies", "shared")
        module_dir = os.path.join(ckpt, RL_MODULE_DIR)
        if not os.path.isdir(module_dir):
            raise FileNotFoundError(f"{ckpt} has no saved RLModule ({module_dir})")
        self.modules = MultiRLModule.from_checkpoint(module_dir)
        with open(os.path.join(ckpt, SPACES), "rb") as f:
            self.spaces = pickle.load(f)
        cfg = meta.get("plan_config", {})
        self.normalize_actions = cfg.get("normalize_actions", True)
        self.obs_filter: ObservationFilter | None = None
        """The observation filter the policy was trained behind (``meanstd`` plans)."""
        if cfg.get("observation_filter", "none") == "meanstd":
            path = os.path.join(ckpt, OBS_FILTER)
            if not os.path.exists(path):
                raise FileNotFoundError(
                    f"{ckpt} was trained with observation_filter='meanstd' but has no "
                    f"{OBS_FILTER}: its policy cannot act on raw observations"
                )
            self.obs_filter = ObservationFilter(path, self.spaces)
        self.recurrent = any(m.is_stateful() for m in self.modules.values())
        """Whether the policy carries state between steps (an LSTM)."""
        self._state: dict[Any, Any] = {}

    def reset(self, seed: int | None = None) -> None:
        """Start an episode: every agent's recurrent state back to the initial one."""
        self._state.clear()

    def module_id(self, agent_id: Any) -> str:
        if not self.multi_agent:
            return next(iter(self.modules.keys()))
        return "shared" if self.policies == "shared" else str(agent_id)

    def act(self, observation: Any) -> Any:
        if self.multi_agent:
            return {a: self._act_one(o, self.module_id(a), a) for a, o in observation.items()}
        if isinstance(observation, Mapping) and not isinstance(self._space(None, 0), Mapping):
            # a single-agent policy driving every agent of a multi-agent env that observes
            # and acts as it trained (checkpoints.fit.check_fits lets it), e.g. the lights of
            # a signals map trained through rlsuite/SignalsShared-v0
            return {a: self._act_one(o, self.module_id(None), a) for a, o in observation.items()}
        return self._act_one(observation, self.module_id(None), None)

    def _space(self, agent_id: Any, which: int) -> Any:
        return self.spaces.get(agent_id, next(iter(self.spaces.values())))[which]

    def _obs(self, observation: Any, agent_id: Any) -> np.ndarray:
        """The observation as the module's input, after checking it is what the policy
        was trained on (a clear error, not a shape traceback deep in torch)."""
        obs = np.asarray(observation, dtype=np.float32)
        space = self._space(agent_id, 0)
        shape = getattr(space, "shape", None)
        if shape is not None and obs.shape != tuple(shape):
            raise ValueError(
                f"observation of shape {obs.shape} given to policy {self.name}, which was "
                f"trained on observations of shape {tuple(shape)} from env "
                f"{self.meta.get('env')!r} with env_config {self.meta.get('env_config', {})}; "
                "evaluate it on an env that observes the same (its checkpoint's rlsuite.json "
                "records the training env config)"
            )
        if self.obs_filter is not None:
            obs = self.obs_filter(obs, agent_id if self.multi_agent else None)
        return obs

    def action_values(self, observation: Any, agent_id: Any = None) -> np.ndarray:
        """How much the policy prefers each action of a discrete action space, greedy = argmax.

        Q-values for value-based modules (the ``replay`` plan's DQN: dueling and
        double-Q included), the action-distribution logits for policy-gradient ones.
        Lets a caller choose the best *allowed* action (e.g. mask rules that do not
        apply) instead of only the greedy one. A recurrent policy's values are read
        with its current state, which they do not advance (only :meth:`act` does).
        """
        import torch
        from ray.rllib.core.columns import Columns

        space = self._space(agent_id, 1)
        if not hasattr(space, "n"):
            raise TypeError(
                f"action_values needs a discrete action space, this policy acts in {space}"
            )
        module_id = self.module_id(agent_id)
        module = self.modules[module_id]
        obs = self._obs(observation, agent_id)
        with torch.no_grad():
            if hasattr(module, "compute_q_values"):
                out = module.compute_q_values({Columns.OBS: torch.as_tensor(obs[None])})["qf_preds"]
            else:
                out = self._forward(module, obs, agent_id)[0][Columns.ACTION_DIST_INPUTS]
        return out.reshape(-1, out.shape[-1])[0].cpu().numpy().astype(np.float64)

    def _forward(self, module: Any, obs: np.ndarray, agent_id: Any) -> tuple[dict, Any]:
        """``forward_inference`` on one observation: a batch of one (and, for a recurrent
        module, one time step with the agent's current state). Returns the output and the
        state after this step (None for a feed-forward module)."""
        import torch
        from ray.rllib.core.columns import Columns
        from ray.rllib.utils import tree

        if not module.is_stateful():
            return module.forward_inference({Columns.OBS: torch.as_tensor(obs[None])}), None
        state = self._state.get(agent_id)
        if state is None:
            state = tree.map_structure(
                lambda s: torch.as_tensor(np.asarray(s))[None], module.get_initial_state()
            )
        out = module.forward_inference(
            {Columns.OBS: torch.as_tensor(obs[None, None]), Columns.STATE_IN: state}
        )
        return out, out[Columns.STATE_OUT]

    def _act_one(self, observation: Any, module_id: str, agent_id: Any) -> Any:
        import torch
        from ray.rllib.core.columns import Columns
        from ray.rllib.utils.spaces.space_utils import clip_action, unsquash_action

        module = self.modules[module_id]
        obs = self._obs(observation, agent_id)
        with torch.no_grad():
            out, state = self._forward(module, obs, agent_id)
        if state is not None:
            self._state[agent_id] = state
        # a recurrent module's outputs have a time axis: [batch, time, ...]
        first = (lambda t: t[:, 0]) if state is not None else (lambda t: t)
        if Columns.ACTIONS in out:
            action = first(out[Columns.ACTIONS])
        else:
            dist_cls = module.get_inference_action_dist_cls()
            logits = first(out[Columns.ACTION_DIST_INPUTS])
            action = dist_cls.from_logits(logits).to_deterministic().sample()
        a = action[0].cpu().numpy()
        space = self._space(agent_id, 1)
        if a.shape == () and np.issubdtype(a.dtype, np.integer):
            return int(a)
        if self.normalize_actions:
            return unsquash_action(a, space)
        return clip_action(a, space)
