"""R2D3's demonstrations inside Ape-X's replay: the ``apex`` plan's ``demonstrations``.

The demonstrations (:mod:`rlsuite.platform.demo_sources`: recorded episodes, or a
controller recorded here on N seeded episodes) are turned into n-step transitions with
the plan's ``n_step`` and ``gamma`` and kept in the driver, beside the replay shards.
Each learner batch is drawn element by element: every element comes from the
demonstrations with probability ``demo_ratio`` (``rho``), until ``train_batch_size``
elements have come from the agent's shard sample. So the agent's sample is trained on
whole and its priorities go back to its shard as in Ape-X, and the batch holds on
average ``rho / (1 - rho)`` demonstrated elements per agent element, i.e. a share
``rho`` of the batch. Demonstrated elements are sampled uniformly (R2D3 has no
priorities on the demonstrations) with importance weight 1. ``demo_share`` in each row
is the share of demonstrated elements the learner trained on in the iteration.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from rlsuite.platform import demo_sources
from rlsuite.platform.apex.algorithm import RESULT_KEY, Apex, ApexConfig


def n_step_columns(data: dict[str, np.ndarray], n: int, gamma: float) -> dict[str, np.ndarray]:
    """Recorded transitions (:func:`demo_sources.load`) as the n-step transitions of Ape-X's
    replay: step ``t`` of an episode of ``L`` steps gets the ``k = min(n, L - t)`` rewards
    that follow, discounted, the observation after them, and ``terminateds`` where those
    steps end the episode by termination."""
    ep = data["episode"]
    cut = np.flatnonzero(np.diff(ep)) + 1
    cols: dict[str, list[np.ndarray]] = {
        k: [] for k in ("obs", "actions", "rewards", "new_obs", "terminateds", "n_step")
    }
    for idx in np.split(np.arange(len(ep)), cut):
        length = len(idx)
        t = np.arange(length)
        k = np.minimum(n, length - t)
        r = np.concatenate([data["rewards"][idx].astype(np.float64), np.zeros(n)])
        ret = sum((gamma**j) * r[t + j] * (j < k) for j in range(n))
        last = idx[t + k - 1]
        cols["obs"].append(data["obs"][idx])
        cols["actions"].append(data["actions"][idx].astype(np.int64))
        cols["rewards"].append(np.asarray(ret, np.float32))
        cols["new_obs"].append(data["new_obs"][last])
        cols["terminateds"].append((data["terminateds"][last] > 0) & (t + k == length))
        cols["n_step"].append(k.astype(np.float32))
    return {key: np.concatenate(v) for key, v in cols.items()}


class DemoApex(Apex):
    """Ape-X whose learner batches mix in demonstrations (module docstring)."""

    def setup(self, config: Any) -> None:
        super().setup(config)
        s = self.config.apex_settings
        data = demo_sources.load_for_run(
            s["demonstrations"], s["env_id"], dict(self.config.env_config), s["seed"]
        )
        self.demos = self.demo_columns(data)
        self.demo_rng = np.random.default_rng([s["seed"], 256])
        self.demo_counts = [0, 0]  # demonstrated, all, in this iteration

    def demo_columns(self, data: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The replay items of recorded transitions: n-step transitions here (a
        sequence-replay subclass packs sequences)."""
        return n_step_columns(data, self.config.n_step, self.config.gamma)

    def learner_data(self, item: dict[str, Any]) -> tuple[dict[str, Any], int]:
        s = self.config.apex_settings
        rho, n = s["demo_ratio"], len(item["batch"]["actions"])
        # per-element draws until n agent elements: the number of demonstrated ones
        k = int(self.demo_rng.negative_binomial(n, 1.0 - rho)) if 0 < rho < 1 else 0
        if k:
            idx = self.demo_rng.integers(0, len(self.demos["actions"]), size=k)
            b = item["batch"]
            item = {
                **item,
                "batch": {
                    key: np.concatenate([b[key], self.demos[key][idx].astype(b[key].dtype)])
                    for key in b
                },
                "weights": np.concatenate([item["weights"], np.ones(k, np.float32)]),
                "agent_items": n,
            }
        self.demo_counts[0] += k
        self.demo_counts[1] += n + k
        data, _ = super().learner_data(item)
        if self.config.learner_config_dict.get("large_margin_coeff"):
            from ray.rllib.core import DEFAULT_MODULE_ID

            is_demo = np.arange(n + k) >= n
            data["batch"].policy_batches[DEFAULT_MODULE_ID]["is_demo"] = is_demo
        return data, n + k

    def priorities(self, td_error: np.ndarray, item: dict[str, Any]) -> np.ndarray:
        """The agent elements' |TD errors| only: they go back to the agent's shard."""
        return super().priorities(td_error, item)[: len(item["batch"]["actions"])]

    def step(self) -> dict[str, Any]:
        result = super().step()
        demo, total = self.demo_counts
        result[RESULT_KEY]["demo_share"] = demo / total if total else float("nan")
        result[RESULT_KEY]["demo_transitions"] = len(self.demos["actions"])
        from ray.rllib.core import DEFAULT_MODULE_ID

        from rlsuite.platform.r2d2.margin_learner import KEY

        margin = result.get("learners", {}).get(DEFAULT_MODULE_ID, {}).get(KEY)
        if margin is not None:
            result[RESULT_KEY][KEY] = float(margin)
        self.demo_counts = [0, 0]
        return result


def with_demonstrations(config: ApexConfig, plan: Any) -> ApexConfig:
    """``config`` running :class:`DemoApex` with the plan's demonstrations (unchanged when
    the plan has none)."""
    if not plan.demonstrations:
        return config
    config.algo_class = DemoApex
    from rlsuite.platform.r2d2.margin_learner import with_margin_learner

    config = with_margin_learner(config, plan)
    config.apex_settings = dict(
        config.apex_settings,
        demonstrations=os.path.abspath(plan.demonstrations)
        if os.path.exists(plan.demonstrations)
        else plan.demonstrations,
        demo_ratio=float(plan.demo_ratio),
        env_id=plan.env,
    )
    return config
