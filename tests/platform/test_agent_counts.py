"""The multi-agent runner's per-agent and per-module step counters, logged once per sample
(rlsuite.platform.agent_counts), report what RLlib's runner reports."""

from __future__ import annotations

import numpy as np
import torch
from ray.rllib.env.multi_agent_env_runner import MultiAgentEnvRunner

from rlsuite.platform import optimizers
from rlsuite.platform.seeded_runners import MultiAgentRunner

COUNTERS = (
    "num_agent_steps_sampled",
    "num_agent_steps_sampled_lifetime",
    "num_module_steps_sampled",
    "num_module_steps_sampled_lifetime",
    "num_env_steps_sampled",
    "num_env_steps_sampled_lifetime",
)


def _counters(runner) -> dict:
    """The counters as plain numbers (the lifetime ones come as RLlib's stats objects,
    holding what was added since the last ``get_metrics``)."""
    m = runner.get_metrics()

    def num(v):
        return {k: num(x) for k, x in v.items()} if isinstance(v, dict) else float(v)

    return {k: num(m[k]) for k in COUNTERS}


def test_counts_and_episodes_equal_rllibs_runner_over_two_samples():
    plan = optimizers.make_plan("sync", env="rlsuite-test/Matching-v0", num_env_runners=0, seed=5)
    config = optimizers.to_rllib(plan)
    runners = [MultiAgentRunner(config=config), MultiAgentEnvRunner(config=config)]
    try:
        runners[1].set_state({"rl_module": runners[0].module.get_state(inference_only=True)})
        logged = []
        log = runners[0].metrics.log_value

        def spy(key, *a, **kw):
            if isinstance(key, tuple) and key[0] in COUNTERS:
                logged.append(key)
            return log(key, *a, **kw)

        runners[0].metrics.log_value = spy
        got = []
        for r in runners:
            torch.manual_seed(0)
            r.sample(num_timesteps=37, random_actions=False)
            first = _counters(r)
            eps = r.sample(num_timesteps=25, random_actions=False)
            second = _counters(r)
            actions = [e.get_actions()["a0"] for e in eps]
            got.append((first, second, np.concatenate(actions)))
        (f0, s0, a0), (f1, s1, a1) = got
        assert f0 == f1 and s0 == s1
        assert f0["num_agent_steps_sampled"] == {"a0": 37, "a1": 37}
        assert s0["num_agent_steps_sampled"] == {"a0": 25, "a1": 25}  # per sample, not summed
        assert s0["num_agent_steps_sampled_lifetime"] == {"a0": 25, "a1": 25}
        assert f0["num_module_steps_sampled"] == {"shared": 74}  # both agents' steps
        np.testing.assert_array_equal(a0, a1)  # the same episodes
        assert len(logged) == 2 * 6  # per sample: 2 agents and 1 module x 2 counters, once
    finally:
        for r in runners:
            r.stop()
