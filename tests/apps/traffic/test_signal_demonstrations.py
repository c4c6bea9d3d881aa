"""Greedy and max-pressure as demonstrators on real SUMO: each plays its program's own
episode on a learning policy's env, its recorded episodes reach the ``replay`` plan's
buffer (R2D3), one buffer for the lights' shared policy, and a demonstrator that does not
fit the env is refused in one sentence naming both."""

from __future__ import annotations

import numpy as np
import pytest

from rlsuite.apps.traffic import demonstrators
from rlsuite.apps.traffic.envs.signals_resco import RescoSignalsEnv
from rlsuite.platform import demo_sources, envs, optimizers, training

ENV_ID = "rlsuite/SignalsShared-v0"
SMALL = {"network": "cologne1", "num_seconds": 100}
"""RESCO's cologne1 (one light), the first 100 s of its window: 10 decisions."""


def program_episode(program: str, seed: int) -> dict[str, float]:
    """RESCO's metrics of an episode whose lights the signals env's ``program`` runs."""
    env = RescoSignalsEnv(program=program, **SMALL)
    try:
        env.reset(seed=seed)
        while env.agents:
            env.step({})
        return env.episode_metrics()
    finally:
        env.close()


@pytest.mark.parametrize("program", demonstrators.PROGRAMS)
def test_a_demonstrator_plays_its_programs_own_episode(program):
    demo = getattr(demonstrators, program)()
    env = envs.make(ENV_ID, SMALL)
    try:
        demo.attach(env)
        obs, _ = env.reset(seed=3)
        phases, done = [], False
        while not done:
            phases.append(demo.act(obs))
            obs, _, term, trunc, _ = env.step(phases[-1])
            done = term or trunc
        m = env.unwrapped.episode_metrics()
    finally:
        env.close()
    assert len(phases) == 10 and len(set(phases)) > 1  # it switches the light
    assert m == program_episode(program, 3)  # the program's episode, vehicle for vehicle


@pytest.mark.slow
@pytest.mark.parametrize("program", demonstrators.PROGRAMS)
def test_recorded_demonstrations_reach_the_replay(program, ray_local, tmp_path):
    plan = optimizers.make_plan(
        "replay", env=ENV_ID, env_config=SMALL, seed=0,
        demonstrations=f"rlsuite.apps.traffic.demonstrators:{program}:2",  # 2 x 10 steps
        demo_ratio=0.5, num_env_runners=0, learning_starts=10, env_steps_per_iteration=20,
        training_intensity=4.0, train_batch_size=16, hidden=[16],
    )  # fmt: skip
    res = training.train(plan, 1, str(tmp_path / "run"), progress=False)
    row = res.metrics[-1]
    assert row["demo_transitions"] == 20
    assert 0 < row["demo_share"] < 1  # the learner's batches held demonstrated elements
    data = demo_sources.load(
        demo_sources.materialize(plan.demonstrations, ENV_ID, SMALL, 0, str(tmp_path))
    )
    assert len(np.unique(data["actions"])) > 1 and data["episode"].max() == 1


@pytest.mark.parametrize(
    "spec, match",
    [
        ("rlsuite.apps.traffic.controllers:PISaturation:1",  # an AV's speed for a light
         r"demonstrator 'rlsuite.apps.traffic.controllers:PISaturation' does not fit env "
         r"'rlsuite/SignalsShared-v0': it answered array\(\[0.\], dtype=float32\), and the "
         r"env acts in Discrete\(4\)"),
        ("random:1", None),  # fits: recorded
    ],
)  # fmt: skip
def test_a_demonstrator_that_does_not_fit_the_env_is_named_with_it(spec, match, tmp_path):
    if match is None:
        path = demo_sources.materialize(spec, ENV_ID, SMALL, 0, str(tmp_path))
        assert len(demo_sources.load(path)["rewards"]) == 10
        return
    with pytest.raises(ValueError, match=match):
        demo_sources.materialize(spec, ENV_ID, SMALL, 0, str(tmp_path))


def test_a_signal_demonstrator_refuses_an_env_without_lights():
    env = envs.make("CartPole-v1")
    try:
        with pytest.raises(ValueError, match="demonstrator greedy switches RESCO's traffic lights"):
            demonstrators.greedy().attach(env)
    finally:
        env.close()
