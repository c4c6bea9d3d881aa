"""The learner's device and the runners' CPUs: the measured rule for
``num_gpus_per_learner="auto"``, GPUs asked for and not there, more runners than CPUs,
and data-parallel CPU learners (``num_learners=2``) on real Ray. No test needs a GPU."""

from __future__ import annotations

import json
import logging
import math
import time

import gymnasium as gym
import pytest

from rlsuite.platform import optimizers, resources, training
from rlsuite.platform.checkpoints.layout import metadata
from rlsuite.platform.resources import GPU_MIN_WORK, choose_learner, share_cpus
from tests._plans import ppo

NO_GPU = not resources.local_gpus()
needs_no_gpu = pytest.mark.skipif(not NO_GPU, reason="checks the CPU-only machine's behaviour")

# The two measured points (one H100 against the CPU learner, RLlib's PPO learner):
DEFAULT = dict(env="CartPole-v1")  # 64x64 nets, minibatch 500: GPU 0.6x of the CPU
LARGE = dict(env="CartPole-v1", hidden=[256, 256], train_batch_size=16000, minibatch_size=4000)
# ... 256x256 nets, batch 16k, minibatch 4k: GPU 4x the CPU (2.9x in the latest H100 run)


def never():
    raise AssertionError("the learner's work is only needed when a GPU is there")


# --------------------------------------------------------------------------- the pure rule


def test_auto_at_the_measured_points():
    small = resources.learner_work(optimizers.make_plan("sync", **DEFAULT))
    large = resources.learner_work(optimizers.make_plan("sync", **LARGE))
    assert small == 9155 * 500 and large == 134915 * 4000  # 4.6e6 and 5.4e8
    assert small < GPU_MIN_WORK < large
    at_small = choose_learner("auto", num_learners=0, gpus_visible=1, work=lambda: small)
    assert at_small.device == "cpu" and at_small.num_gpus_per_learner == 0
    assert "the CPU is faster" in at_small.reason and at_small.work == small
    at_large = choose_learner("auto", num_learners=0, gpus_visible=1, work=lambda: large)
    assert at_large.device == "cuda" and at_large.num_gpus_per_learner == 1.0


def test_auto_edges():
    def pick(**kw):
        return choose_learner("auto", **{"num_learners": 0, "gpus_visible": 1, **kw})

    assert pick(work=lambda: GPU_MIN_WORK).device == "cuda"
    assert pick(work=lambda: GPU_MIN_WORK - 1).device == "cpu"
    # no GPU: the CPU, without even sizing the update
    none = pick(gpus_visible=0, work=never)
    assert none.device == "cpu" and "no GPU visible" in none.reason and none.work is None
    # data-parallel learners take one GPU each: fewer GPUs than learners -> the CPU
    assert pick(num_learners=2, gpus_visible=1, work=never).device == "cpu"
    two = pick(num_learners=2, gpus_visible=2, work=lambda: 1e9)
    assert two.num_gpus_per_learner == 1.0 and two.num_learners == 2
    assert pick(num_learners=0, gpus_visible=4, work=lambda: 1e9).num_gpus_per_learner == 1.0


def test_a_number_is_what_runs_or_an_error_that_names_auto_and_0():
    assert choose_learner(0, num_learners=0, gpus_visible=1, work=never).device == "cpu"
    one = choose_learner(1, num_learners=0, gpus_visible=1, work=never)
    assert one.device == "cuda" and one.num_gpus_per_learner == 1.0
    half = choose_learner(0.5, num_learners=1, gpus_visible=1, work=never)
    assert half.num_gpus_per_learner == 0.5  # one learner on half a GPU: asked for
    # two learners sharing one GPU: NCCL refused it on a real H100 ("Duplicate GPU detected")
    with pytest.raises(ValueError, match=r"refuses two learners on the same GPU.*num_learners=0"):
        choose_learner(0.5, num_learners=2, gpus_visible=1, work=never)
    for kw in (dict(num_learners=0, gpus_visible=0), dict(num_learners=2, gpus_visible=1)):
        with pytest.raises(ValueError, match=r"num_gpus_per_learner='auto'.* or 0 \(the CPU\)"):
            choose_learner(1, work=never, **kw)


@pytest.mark.parametrize("bad", ["gpu", -1, None, True, [1]])
def test_bad_gpu_values_are_refused_by_the_plan(bad):
    with pytest.raises(ValueError, match="num_gpus_per_learner must be 'auto' or a number"):
        optimizers.make_plan("sync", env="CartPole-v1", num_gpus_per_learner=bad)


def test_bad_learner_counts_are_refused_by_the_plan():
    for bad in (-1, 1.5):
        with pytest.raises(ValueError, match="num_learners must be an int >= 0"):
            optimizers.make_plan("sync", env="CartPole-v1", num_learners=bad)


@pytest.mark.parametrize(
    "plan,values",
    [
        ("sync", DEFAULT),
        ("sync", dict(env="Pendulum-v1", hidden=[32])),
        ("sync", dict(env="CartPole-v1", recurrent="lstm", cell_size=16)),
        ("async", dict(env="Pendulum-v1", hidden=[16, 8])),
        ("replay", dict(env="CartPole-v1", hidden=[128, 32])),
    ],
)
def test_the_counted_parameters_are_the_modules(plan, values):
    """The rule's parameter count is that of the RLModule RLlib builds for the plan."""
    p = optimizers.make_plan(plan, **values)
    module = optimizers.to_rllib(p).get_rl_module_spec(env=gym.make(p.env)).build()
    real = sum(x.numel() for x in module.parameters())
    assert resources.learner_work(p) == real * p.learner_minibatch_size


def test_the_default_plan_asks_auto_and_runs_its_learner_on_the_cpu():
    """On any machine: the default nets are below the rule's threshold, GPU or not."""
    plan = optimizers.make_plan("sync", env="CartPole-v1")
    assert plan.num_gpus_per_learner == "auto" and plan.to_dict()["num_gpus_per_learner"] == "auto"
    cfg = optimizers.to_rllib(plan)
    assert cfg.num_gpus_per_learner == 0 and cfg.num_learners == 0


@needs_no_gpu
def test_a_gpu_asked_for_on_a_cpu_machine_is_an_error_before_ray():
    for learners in (0, 1):
        plan = optimizers.make_plan(
            "sync", env="CartPole-v1", num_gpus_per_learner=1, num_learners=learners
        )
        with pytest.raises(ValueError, match=r"no GPU is visible.*'auto'.* or 0"):
            optimizers.to_rllib(plan)
        with pytest.raises(ValueError, match="no GPU is visible"):
            plan.placement_bundles()  # Tune's reservation: refused too, not pending
    cpu = optimizers.make_plan("sync", num_gpus_per_learner=0, **LARGE)
    assert optimizers.to_rllib(cpu).num_gpus_per_learner == 0


# --------------------------------------------------------------------------- the runners' CPUs


def test_runners_share_the_cpus_when_they_outnumber_them():
    cpu = choose_learner(0, num_learners=0, gpus_visible=0, work=never)
    fits = share_cpus(2, cpu, cpus=2)
    assert fits.cpus_per_env_runner == 1.0 and fits.at_once == 2 and not fits.message
    many = share_cpus(15, cpu, cpus=2)
    assert many.cpus_per_env_runner == pytest.approx(2 / 15) and many.at_once == 2
    assert "15 env runner(s) ask for 15 CPUs but Ray has 2" in many.message
    assert "at most 2 runner(s) sample at once" in many.message
    # CPU learners count too: 2 learners + 4 runners on 4 CPUs -> 2 runners at once
    two = choose_learner(0, num_learners=2, gpus_visible=0, work=never)
    mixed = share_cpus(4, two, cpus=4)
    assert mixed.cpus_per_env_runner == mixed.cpus_per_learner == pytest.approx(4 / 6)
    assert mixed.at_once == 2 and "2 CPU learner(s)" in mixed.message
    # learners on GPUs take no CPU (RLlib's "auto")
    gpu = choose_learner(1, num_learners=2, gpus_visible=2, work=never)
    assert share_cpus(4, gpu, cpus=4).cpus_per_learner == 0.0
    assert share_cpus(0, cpu, cpus=1).at_once == 0


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_more_runners_than_cpus_say_how_many_run_at_once_and_train(ray_local, caplog, tmp_path):
    """4 runners on Ray's 2 CPUs: RLlib would wait forever for the 3rd and 4th; all
    start with half a CPU each, the log says 2 sample at once, and an iteration runs."""
    plan = ppo("CartPole-v1", 200, 100, 1, num_env_runners=4, num_envs_per_env_runner=2)
    assert plan.placement_bundles()[1:] == [{"CPU": 0.25}] * 4  # Tune: the driver holds 1
    with caplog.at_level(logging.WARNING, logger="rlsuite.platform.resources"):
        res = training.train(plan, 1, str(tmp_path / "run"), progress=False)
    warned = [r.getMessage() for r in caplog.records if "sample at once" in r.getMessage()]
    assert warned and "4 env runner(s) ask for 4 CPUs but Ray has 2" in warned[0]
    assert "at most 2 runner(s) sample at once" in warned[0]
    assert res.metrics[-1]["num_env_runners_healthy"] == 4
    ran = metadata(res.checkpoint)["resources"]["env_runners"]
    assert ran["cpus_per_env_runner"] == 0.5 and ran["at_once"] == 2


# --------------------------------------------------------------------------- on real Ray


@needs_no_gpu
@pytest.mark.timeout(120)
def test_a_gpu_asked_for_fails_fast_on_ray_instead_of_waiting(ray_local, tmp_path):
    for learners in (0, 1):  # the driver's learner, and a remote one Ray would never place
        plan = optimizers.make_plan(
            "sync", env="CartPole-v1", num_gpus_per_learner=1, num_learners=learners
        )
        t = time.perf_counter()
        with pytest.raises(ValueError, match=r"no GPU is visible.*'auto'.* or 0"):
            training.train(plan, 1, str(tmp_path / f"run{learners}"), progress=False)
        assert time.perf_counter() - t < 30


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_two_data_parallel_cpu_learners_train_through_the_sync_plan(ray_local, tmp_path):
    """``num_learners=2`` with no GPU: RLlib's data-parallel learners as two CPU actors;
    each learns on its own train batch, so an iteration samples 2 x train_batch_size."""
    learners = dict(num_learners=2, num_gpus_per_learner=0)
    plan = ppo(
        "CartPole-v1", batch=200, minibatch=100, epochs=2, num_envs_per_env_runner=8, **learners
    )
    res = training.train(plan, 2, str(tmp_path / "run"), progress=False)
    assert res.iterations == 2
    assert all(row["env_steps_this_iter"] >= 2 * 200 for row in res.metrics)
    assert all(math.isfinite(row["learner/default_policy/total_loss"]) for row in res.metrics)
    meta = metadata(res.checkpoint)
    learner = meta["resources"]["learner"]
    assert learner["num_learners"] == 2 and learner["device"] == "cpu"
    assert meta["plan_config"]["num_learners"] == 2
    json.dumps(meta)  # the record is plain JSON
