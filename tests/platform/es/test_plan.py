"""The ``es`` plan: checks, round trips, and building it through the plan catalogue."""

import pytest

from rlsuite.platform.es import ESPlan


def test_bad_config_gives_clear_errors():
    with pytest.raises(
        ValueError, match=r"population_size must be an even int .* got 15; use 14 or 16"
    ):
        ESPlan(env="CartPole-v1", population_size=15).validate()
    with pytest.raises(
        ValueError,
        match=r"unknown key for plan 'es': 'populaton_size' \(did you mean 'population_size'\?\)",
    ):
        ESPlan.from_dict({"env": "CartPole-v1", "populaton_size": 8})
    with pytest.raises(ValueError, match="optimizer must be 'adam' or 'sgd'"):
        ESPlan.from_dict({"env": "CartPole-v1", "optimizer": "rmsprop"})
    with pytest.raises(ValueError, match="momentum is only used by optimizer='sgd'"):
        ESPlan.from_dict({"env": "CartPole-v1", "momentum": 0.5})
    with pytest.raises(ValueError, match="unknown env id 'NoSuchEnv-v9'"):
        ESPlan.from_dict({"env": "NoSuchEnv-v9"})
    with pytest.raises(ValueError, match="needs env=<id>"):
        ESPlan().validate()
    with pytest.raises(ValueError, match="sigma must be > 0"):
        ESPlan.from_dict({"env": "CartPole-v1", "sigma": 0})
    with pytest.raises(ValueError, match="values are for plan 'sync'"):
        ESPlan.from_dict({"plan": "sync", "env": "CartPole-v1"})


def test_plan_round_trips_and_replace_checks():
    plan = ESPlan.from_dict(
        {"env": "CartPole-v1", "hidden": [8, 8], "optimizer": "sgd", "momentum": 0.5}
    )
    assert plan.hidden == (8, 8)
    d = plan.to_dict()
    assert d["plan"] == "es" and d["hidden"] == [8, 8]
    assert ESPlan.from_dict(d) == plan
    assert plan.replace(sigma=0.2).sigma == 0.2
    with pytest.raises(ValueError, match="num_workers must be an int >= 1"):
        plan.replace(num_workers=0)
    assert plan.placement_bundles() == [{"CPU": 1.0}, {"CPU": 1.0}, {"CPU": 1.0}]


def test_make_plan_builds_es():
    from rlsuite.platform.optimizers import make_plan

    plan = make_plan("es", env="CartPole-v1", population_size=8)
    assert isinstance(plan, ESPlan) and plan.name == "es" and plan.population_size == 8
    with pytest.raises(ValueError, match="unknown key for plan 'es'"):
        make_plan("es", env="CartPole-v1", gamma=0.9)  # ES has no discount: not silently ignored


def test_ars_options_are_checked():
    plan = ESPlan(
        env="CartPole-v1",
        hidden=(),
        population_size=8,
        top_pairs=2,
        fitness_shaping="return_std",
        optimizer="sgd",
        momentum=0.0,
        l2_coeff=0.0,
    )
    plan.validate()
    assert ESPlan.from_dict(plan.to_dict()) == plan
    with pytest.raises(ValueError, match=r"top_pairs must be None or an int in \[1, .* = 4\]"):
        plan.replace(top_pairs=5)
    with pytest.raises(ValueError, match="fitness_shaping must be 'centered_ranks' or"):
        plan.replace(fitness_shaping="ranks")
    with pytest.raises(ValueError, match="action_head must be 'tanh' or 'clip'"):
        plan.replace(action_head="linear")
