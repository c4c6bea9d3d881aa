"""The module-to-env pipeline of the platform's RLlib plans: RLlib's default pieces in
RLlib's order, and actions to the env equal to RLlib's, element for element
(rlsuite.platform.connectors)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from ray.rllib.connectors.module_to_env import NormalizeAndClipActions
from ray.rllib.core.columns import Columns

from rlsuite.platform import connectors, envs, optimizers


def _both(space, normalize: bool, clip: bool, actions: dict):
    """ACTIONS_FOR_ENV from RLlib's piece and from the batched one, on copies of a batch."""
    out = []
    for cls in (NormalizeAndClipActions, connectors.BatchedNormalizeAndClipActions):
        piece = cls(
            input_observation_space=gym.spaces.Box(-1, 1, (2,)),
            input_action_space=space,
            normalize_actions=normalize,
            clip_actions=clip,
        )
        batch = {Columns.ACTIONS: {k: [np.array(v[0], copy=True)] for k, v in actions.items()}}
        batch = piece(rl_module=None, batch=batch, episodes=[])
        out.append((batch[Columns.ACTIONS_FOR_ENV], batch[Columns.ACTIONS]))
    return out


@pytest.mark.parametrize(
    "space",
    [
        gym.spaces.Box(-2.0, 2.0, (1,), np.float32),  # Pendulum
        gym.spaces.Box(np.array([-2.0, -0.5, 0.0]), np.array([-0.5, 3.0, 1.0]), dtype=np.float32),
        gym.spaces.Box(-1.5, 4.0, (2, 2), np.float64),
    ],
)
@pytest.mark.parametrize("normalize,clip", [(True, False), (False, True), (True, True)])
def test_the_batched_piece_gives_the_env_rllibs_actions_exactly(space, normalize, clip):
    rng = np.random.default_rng(0)
    actions = {
        (f"eps{i}",): [(3 * rng.standard_normal(space.shape)).astype(space.dtype)]
        for i in range(32)
    }  # many outside [-1, 1] and outside the bounds: the clip matters
    (ref, ref_actions), (got, got_actions) = _both(space, normalize, clip, actions)
    assert list(got) == list(ref)
    for k in ref:
        assert got[k][0].dtype == ref[k][0].dtype and got[k][0].shape == ref[k][0].shape
        np.testing.assert_array_equal(got[k][0], ref[k][0])
        np.testing.assert_array_equal(got_actions[k][0], ref_actions[k][0])  # untouched
        assert not np.shares_memory(got[k][0], got_actions[k][0])
    rows = [got[k][0] for k in got]
    assert not any(np.shares_memory(a, b) for a, b in zip(rows, rows[1:]))


@pytest.mark.parametrize(
    "space,actions",
    [
        (  # an integer Box is shifted, not unsquashed: RLlib's path
            gym.spaces.Box(0, 5, (2,), np.int64),
            {("e0",): [np.array([1, 2])], ("e1",): [np.array([0, 4])]},
        ),
        (  # unbounded: left alone under normalisation, RLlib's path
            gym.spaces.Box(-np.inf, np.inf, (2,), np.float32),
            {("e0",): [np.array([5.0, -7.0], np.float32)]},
        ),
        (  # a Dict space: RLlib's path
            gym.spaces.Dict({"a": gym.spaces.Box(-2.0, 2.0, (1,), np.float32)}),
            {("e0",): [{"a": np.array([0.9], np.float32)}]},
        ),
        (  # several agents: RLlib's path
            gym.spaces.Box(-2.0, 2.0, (1,), np.float32),
            {("e0", "a0", "m"): [np.array([0.5], np.float32)]},
        ),
    ],
)
def test_other_action_spaces_go_through_rllibs_piece(space, actions, monkeypatch):
    calls = []
    original = NormalizeAndClipActions.__call__

    def spy(self, **kw):
        calls.append(type(self).__name__)
        return original(self, **kw)

    if len(next(iter(actions))) == 3:
        space = {"a0": space}  # a multi-agent action space struct
    monkeypatch.setattr(NormalizeAndClipActions, "__call__", spy)
    piece = connectors.BatchedNormalizeAndClipActions(normalize_actions=True, clip_actions=False)
    piece._action_space_struct = space
    batch = piece(rl_module=None, batch={Columns.ACTIONS: actions}, episodes=[])
    assert calls == ["BatchedNormalizeAndClipActions"]  # the parent's __call__ ran
    assert Columns.ACTIONS_FOR_ENV in batch


@pytest.mark.parametrize("multi_agent", [False, True])
def test_discrete_actions_skip_rllibs_deep_copy_with_the_same_result(multi_agent, monkeypatch):
    """With Discrete spaces RLlib's piece only deep-copies the actions; ours copies them
    without deepcopy: the same values and dtypes, the ACTIONS column untouched and unshared."""
    keys = [("e0", "a0", "m"), ("e0", "a1", "m")] if multi_agent else [("e0",), ("e1",)]
    actions = {keys[0]: [np.array(2)], keys[1]: [np.int64(0)]}
    space = gym.spaces.Discrete(3)
    struct = {"a0": space, "a1": space} if multi_agent else space
    ref = NormalizeAndClipActions(normalize_actions=True, clip_actions=False)
    ref._action_space_struct = struct
    want = ref(rl_module=None, batch={Columns.ACTIONS: dict(actions)}, episodes=[])
    calls = []
    monkeypatch.setattr(NormalizeAndClipActions, "__call__", lambda self, **kw: calls.append(1))
    piece = connectors.BatchedNormalizeAndClipActions(normalize_actions=True, clip_actions=False)
    piece._action_space_struct = struct
    got = piece(rl_module=None, batch={Columns.ACTIONS: dict(actions)}, episodes=[])
    assert calls == []  # RLlib's piece did not run
    for k in keys:
        (g,), (w,) = got[Columns.ACTIONS_FOR_ENV][k], want[Columns.ACTIONS_FOR_ENV][k]
        assert type(g) is type(w) and g == w and np.asarray(g).dtype == np.asarray(w).dtype
        assert got[Columns.ACTIONS][k][0] is actions[k][0]  # ACTIONS itself untouched
    assert not np.shares_memory(got[Columns.ACTIONS_FOR_ENV][keys[0]][0], actions[keys[0]][0])
    # a Box among the agents' spaces (or a non-integer action) is RLlib's path again
    piece._action_space_struct = {"a0": space, "a1": gym.spaces.Box(-1, 1, (1,))}
    piece(rl_module=None, batch={Columns.ACTIONS: dict(actions)}, episodes=[])
    assert calls == [1]


def _piece_names(config, env_id: str) -> list[str]:
    if config.is_multi_agent:
        from ray.rllib.env import INPUT_ENV_SINGLE_SPACES

        env = envs.EnvCreator(envs.spec(env_id))({"num_envs": 1})
        spaces = {INPUT_ENV_SINGLE_SPACES: (env.observation_space, env.action_space)}
        pipeline = config.build_module_to_env_connector(env=None, spaces=spaces)
    else:
        pipeline = config.build_module_to_env_connector(env=gym.make_vec(env_id, num_envs=2))
    return [type(c).__name__ for c in pipeline.connectors]


@pytest.mark.parametrize(
    "plan",
    [
        dict(name="sync", env="Pendulum-v1"),
        dict(name="async", env="Pendulum-v1", num_env_runners=1),
        dict(name="replay", env="CartPole-v1"),
        dict(name="sync", env="rlsuite-test/Matching-v0"),
    ],
    ids=["sync", "async", "replay", "multi-agent"],
)
def test_the_pipeline_is_rllibs_default_with_the_one_piece_replaced(plan):
    values = {k: v for k, v in plan.items() if k != "name"}
    config = optimizers.to_rllib(optimizers.make_plan(plan["name"], **values))
    ours = _piece_names(config, values["env"])
    stock = config.copy(copy_frozen=False).env_runners(
        module_to_env_connector=None, add_default_connectors_to_module_to_env_pipeline=True
    )
    expected = [
        "BatchedNormalizeAndClipActions" if n == "NormalizeAndClipActions" else n
        for n in _piece_names(stock, values["env"])
    ]
    assert ours == expected
    assert "BatchedNormalizeAndClipActions" in ours


def test_a_runner_samples_the_same_episodes_as_with_rllibs_pipeline():
    """Same weights, same env seeds, same torch seed: the platform's runner and one with
    RLlib's stock pipeline step Pendulum through the same observations and rewards."""
    from ray.rllib.env.single_agent_env_runner import SingleAgentEnvRunner

    plan = optimizers.make_plan(
        "sync", env="Pendulum-v1", num_env_runners=0, num_envs_per_env_runner=8, seed=3
    )
    ours = optimizers.to_rllib(plan)
    stock = ours.copy(copy_frozen=False).env_runners(
        module_to_env_connector=None, add_default_connectors_to_module_to_env_pipeline=True
    )
    runners = [SingleAgentEnvRunner(config=c) for c in (ours, stock)]
    try:
        runners[1].set_state({"rl_module": runners[0].module.get_state(inference_only=True)})
        got = []
        for r in runners:
            torch.manual_seed(0)
            eps = r.sample(num_timesteps=400, random_actions=False)
            got.append(
                (
                    np.concatenate([e.get_observations() for e in eps]),
                    np.concatenate([e.get_rewards() for e in eps]),
                    np.concatenate([e.get_actions() for e in eps]),
                )
            )
        assert got[0][0].shape[0] > 400
        for a, b in zip(got[0], got[1]):
            np.testing.assert_array_equal(a, b)
        assert np.abs(got[0][2]).max() > 0.5  # the policy acted (unsquashed x2 on Pendulum)
    finally:
        for r in runners:
            r.stop()
