"""Demonstrations for one network per light (``policies=per_agent`` on the multi-agent
``rlsuite/Signals-v0``): greedy's steps are recorded light by light, and each light's
network replays its own light's demonstrations, never another's; on real SUMO, plus the
mixing rule on made-up buffers."""

from __future__ import annotations

import numpy as np
import pytest

from rlsuite.platform import demo_sources, optimizers
from rlsuite.platform.r2d2 import demo_replay

ENV_ID = "rlsuite/Signals-v0"
SMALL = {"network": "cologne3", "num_seconds": 50}
"""RESCO's cologne3 (3 lights), the first 50 s of its window: 5 decisions a light."""
GREEDY = "rlsuite.apps.traffic.demonstrators:greedy"


def test_each_light_is_recorded_under_its_own_id_with_greedys_actions_for_it(tmp_path):
    path, shared = str(tmp_path / "agents.parquet"), str(tmp_path / "shared.parquet")
    info = demo_sources.record(
        demo_sources.controller(GREEDY, ENV_ID, SMALL, 0), ENV_ID, 2, path,
        env_config=SMALL, seed=5,
    )  # fmt: skip
    data = demo_sources.load(path)
    lights = sorted(optimizers.env_registry.spaces(ENV_ID, SMALL))
    assert info["episodes"] == 6 and info["transitions"] == 30  # 2 episodes x 3 lights x 5
    assert sorted(set(data["agent_id"])) == lights
    assert np.bincount(data["episode"]).tolist() == [5] * 6
    assert data["truncateds"].sum() == 6  # each light's episode ends at the window's end
    # the same seeds through the lights' vector env (one shared buffer, lights in the env's
    # order): each light's recorded actions are greedy's for that light
    demo_sources.record(
        demo_sources.controller(GREEDY, "rlsuite/SignalsShared-v0", SMALL, 0),
        "rlsuite/SignalsShared-v0", 2, shared, env_config=SMALL, seed=5,
    )  # fmt: skip
    ref = demo_sources.load(shared)
    for episode in range(2):
        for i, light in enumerate(_env_lights()):
            mine = data["actions"][data["agent_id"] == light][episode * 5 : episode * 5 + 5]
            theirs = ref["actions"][ref["episode"] == episode * 3 + i]
            assert mine.tolist() == theirs.tolist(), light


def _env_lights() -> list[str]:
    from rlsuite.apps.traffic.envs.signals import make_env

    env = make_env(**SMALL)
    try:
        return [x.id for x in env.lights] if hasattr(env, "lights") else list(env.possible_agents)
    finally:
        env.close()


class _AgentBuffer:
    """A stand-in for RLlib's multi-agent buffer: ``num_items`` elements per policy."""

    def __init__(self, modules):
        self.modules = modules

    def sample(self, num_items=None, **kwargs):
        return [_episode(m, -1.0) for m in self.modules for _ in range(num_items)]


def _episode(module: str, value: float, steps: int = 1):
    from ray.rllib.env.single_agent_episode import SingleAgentEpisode

    return SingleAgentEpisode(
        observations=[np.full(2, value, np.float32)] * (steps + 1), actions=[0] * steps,
        rewards=[0.0] * steps, agent_id=module, module_id=module, len_lookback_buffer=0,
    )  # fmt: skip


def test_each_policy_mixes_in_its_own_demonstrations_only():
    modules = {"a": 1.0, "b": 2.0, "c": 3.0}
    eps = [_episode(m, v, steps=8) for m, v in modules.items() if m != "c"]  # c: none recorded
    mixing = demo_replay.DemoMixingBuffer(
        _AgentBuffer(list(modules)), demo_replay.buffers(eps, per_module=True), 0.5, 0, mark=True
    )
    seen = {m: 0 for m in modules}
    for _ in range(20):
        for e in mixing.sample(num_items=16, n_step=1, gamma=0.99, sample_episodes=True):
            demo = e.extra_model_outputs["is_demo"].data[0] == 1.0
            value = float(e.get_observations(0)[0])
            assert value == (modules[e.module_id] if demo else -1.0), e.module_id
            seen[e.module_id] += demo
    assert seen["a"] > 100 and seen["b"] > 100 and seen["c"] == 0  # rho 0.5: ~320 each
    assert mixing._agent_items == {"a": 16, "b": 16, "c": 16}


def _key(obs, action) -> tuple:
    return (*np.round(np.asarray(obs, np.float64), 5).tolist(), int(action))


@pytest.mark.slow
def test_each_lights_network_replays_its_own_lights_demonstrations(ray_local, tmp_path):
    from rlsuite.platform.r2d2.margin_learner import KEY

    plan = optimizers.make_plan(
        "replay", env=ENV_ID, env_config=SMALL, seed=0, policies="per_agent",
        demonstrations=f"{GREEDY}:2", demo_ratio=0.5, large_margin_coeff=1.0,
        num_env_runners=0, learning_starts=5, env_steps_per_iteration=10,
        training_intensity=4.0, train_batch_size=8, hidden=[16],
    )  # fmt: skip
    algo = optimizers.to_rllib(plan).build_algo()
    try:
        buffer = algo.local_replay_buffer
        lights = sorted(optimizers.env_registry.spaces(ENV_ID, SMALL))
        assert sorted(buffer.demos) == lights  # one demonstrations buffer per light's network
        for light, demos in buffer.demos.items():
            assert demos.get_num_timesteps() == 10  # 2 episodes x 5 decisions
            assert {e.agent_id for e in demos.episodes} == {light}
        steps = {  # each light's recorded (obs, action) pairs
            light: {_key(e.get_observations(t), e.get_actions(t))
                    for e in demos.episodes for t in range(len(e))}
            for light, demos in buffer.demos.items()
        }  # fmt: skip
        result = algo.train()
        extra = result["rlsuite"]
        assert extra["demo_transitions_per_policy"] == {x: 10 for x in lights}
        assert 0 < extra["demo_share"] < 1 and extra[KEY] > 0
        assert all(KEY in result["learners"][x] for x in lights)  # every light's margin term
        seen = {x: 0 for x in lights}
        for e in buffer.sample(num_items=64, n_step=1, gamma=0.99, sample_episodes=True):
            if e.extra_model_outputs["is_demo"].data[0] == 1.0:  # in its light's own batch
                assert _key(e.get_observations(0), e.get_actions(0)) in steps[e.module_id]
                seen[e.module_id] += 1
        assert min(seen.values()) > 0
    finally:
        algo.stop()
