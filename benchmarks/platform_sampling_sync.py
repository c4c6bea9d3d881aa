"""The sync plan's sections of ``platform_sampling.py``: ``actions-connector`` (the
platform's module-to-env pipeline against RLlib's stock one), ``sync-iterations``
(interleaved rounds against the hand-written PPO), ``overlap-priority`` (the overlapped
plan's lowered runner priority) and ``overlap-learning`` (the learning cost of
``overlap=true``).

:func:`overlap_priority` sends a closure to Ray's env runners; ``platform_sampling.py``
registers this module with Ray's cloudpickle by value, since ``benchmarks/`` is not
importable there.
"""

from __future__ import annotations

import os
import time

from platform_sampling_rates import handwritten_ppo, iteration_rate, sample_rate

STOCK_LEARNER = "stock_learner"
"""A :data:`SYNC_VARIANTS` key: build the plan with RLlib's own ``PPOTorchLearner`` and its
per-tensor finite-gradient test instead of :mod:`rlsuite.platform.learners` (the platform
as it was before that learner, measured in the same run)."""

SYNC_VARIANTS = {
    "sync plan (defaults)": {},
    "sync plan, RLlib's stock PPO learner": {STOCK_LEARNER: True},
    "sync plan, overlap=true": {"overlap": True},
    "sync plan, overlap=true, RLlib's stock PPO learner": {"overlap": True, STOCK_LEARNER: True},
    "sync plan, overlap=true, check_finite_gradients=false": {
        "overlap": True,
        "check_finite_gradients": False,
    },
}
"""The sync plans of the ``sync-iterations`` section (batch 4000, minibatch 500, 10
epochs, 64x64 nets, 2 runners x 32 envs: the plan's defaults), each with the platform's
learner and, for comparison, with RLlib's stock one."""


def sync_config(env_id: str, values: dict):
    """The RLlib config of one :data:`SYNC_VARIANTS` entry."""
    from ray.rllib.algorithms.ppo.torch.ppo_torch_learner import PPOTorchLearner

    from rlsuite.platform import optimizers

    values = dict(values)
    stock = values.pop(STOCK_LEARNER, False)
    plan = optimizers.make_plan("sync", env=env_id, **values)
    config = optimizers.to_rllib(plan)
    if stock:
        config = config.learners(learner_class=PPOTorchLearner, learner_config_dict={})
        config = config.framework(torch_skip_nan_gradients=not plan.check_finite_gradients)
    return config


HANDWRITTEN = "hand-written PPO (1 process, 8 envs, 1 torch thread)"


def actions_connector(env_id: str, rounds: int, steps: int, console) -> dict:
    """One remote runner x 32 envs sampling with the platform's module-to-env pipeline
    (:mod:`rlsuite.platform.connectors`) and with RLlib's stock one, in interleaved rounds
    (ABBA order); the ratio is per round and its median is kept."""
    import statistics

    from rlsuite.platform import optimizers

    plan = optimizers.make_plan("sync", env=env_id, num_env_runners=1, num_envs_per_env_runner=32)
    configs = {"platform": optimizers.to_rllib(plan)}
    configs["stock"] = (
        configs["platform"]
        .copy(copy_frozen=False)
        .env_runners(
            module_to_env_connector=None, add_default_connectors_to_module_to_env_pipeline=True
        )
    )
    rates: dict[str, list[float]] = {"platform": [], "stock": []}
    for i in range(rounds):
        for label in ("platform", "stock") if i % 2 == 0 else ("stock", "platform"):
            rates[label].append(sample_rate(configs[label], steps, repeats=2))
        console.print(
            f"round {i + 1}: platform pipeline {rates['platform'][-1]:.0f}, "
            f"RLlib's stock pipeline {rates['stock'][-1]:.0f} steps/s"
        )
    ratios = [a / b for a, b in zip(rates["platform"], rates["stock"])]
    return {"steps_per_s": rates, "ratios": ratios, "median_ratio": statistics.median(ratios)}


def sync_iterations(env_id: str, rounds: int, its: int, console) -> dict:
    """Whole-iteration steps/s of the hand-written loop and each of :data:`SYNC_VARIANTS`,
    in ``rounds`` interleaved rounds; per-round ratios against the hand-written loop."""
    from statistics import median

    rates: dict[str, list[float]] = {HANDWRITTEN: [], **{k: [] for k in SYNC_VARIANTS}}
    ratios: dict[str, list[float]] = {k: [] for k in SYNC_VARIANTS}
    timers: dict[str, list[dict[str, float]]] = {k: [] for k in SYNC_VARIANTS}
    for rnd in range(rounds):
        hw = handwritten_ppo(
            env_id, num_envs=8, batch=4000, minibatch=500, epochs=10, iterations=its
        )["iteration_steps_per_s"]
        rates[HANDWRITTEN].append(hw)
        line = [f"round {rnd + 1}: hand-written {hw:.0f}"]
        for label, values in SYNC_VARIANTS.items():
            r = iteration_rate(sync_config(env_id, values), its)
            rates[label].append(r["iteration_steps_per_s"])
            ratios[label].append(r["iteration_steps_per_s"] / hw)
            timers[label].append(r["timers_mean_s"])
            line.append(f"{label}: {r['iteration_steps_per_s']:.0f} ({ratios[label][-1]:.2f}x)")
        console.print("; ".join(line))
    return {
        "rounds": rounds,
        "iterations_per_measurement": its,
        "steps_per_s": rates,
        "median_steps_per_s": {k: median(v) for k, v in rates.items()},
        "ratio_vs_handwritten_per_round": ratios,
        "median_ratio_vs_handwritten": {k: median(v) for k, v in ratios.items()},
        "timers_mean_s": timers,
    }


def overlap_priority(rounds: int, block: int, console) -> dict:
    """Steps/s of one overlapped sync plan with its runners at the driver's priority
    (``same``) and at :data:`rlsuite.platform.overlap.RUNNER_NICENESS` lower
    (``lowered``), in ABBA-ordered blocks."""
    from statistics import mean

    from rlsuite.platform import optimizers
    from rlsuite.platform.overlap import RUNNER_NICENESS

    driver = os.getpriority(os.PRIO_PROCESS, 0)
    plan = optimizers.make_plan("sync", env="CartPole-v1", overlap=True)
    algo = optimizers.to_rllib(plan).build_algo()
    group = algo.env_runner_group

    def set_nice(value: int) -> list[int]:
        def f(runner, value=value):
            os.setpriority(os.PRIO_PROCESS, 0, value)
            return os.getpriority(os.PRIO_PROCESS, 0)

        return group.foreach_env_runner(f, local_env_runner=False)

    out: dict = {"driver_niceness": driver, "block_iterations": block}
    try:
        try:
            set_nice(driver)
        except Exception as e:  # no right to raise a priority back
            out["skipped"] = f"cannot reset the runners' priority: {e}"
            console.print(f"[yellow]overlap-priority skipped: {out['skipped']}[/]")
            return out
        algo.train()
        rates: dict[str, list[float]] = {"same": [], "lowered": []}
        for _ in range(rounds):
            for key in ("same", "lowered", "lowered", "same"):
                set_nice(driver + (RUNNER_NICENESS if key == "lowered" else 0))
                t, steps = time.perf_counter(), 0
                for _ in range(block):
                    steps += int(algo.train()["env_runners"]["num_env_steps_sampled"])
                rates[key].append(steps / (time.perf_counter() - t))
        out["steps_per_s"] = rates
        out["mean_steps_per_s"] = {k: mean(v) for k, v in rates.items()}
        out["lowered_vs_same"] = (
            out["mean_steps_per_s"]["lowered"] / out["mean_steps_per_s"]["same"]
        )
        console.print(
            f"runners at the driver's priority: {out['mean_steps_per_s']['same']:.0f} steps/s, "
            f"lowered: {out['mean_steps_per_s']['lowered']:.0f} ({out['lowered_vs_same']:.2f}x)"
        )
    finally:
        algo.stop()
    return out


def overlap_learning(seeds: list[int], max_iterations: int, console) -> dict:
    """CartPole-v1 to a smoothed return of 150, sync plan with overlap off and on, and on
    with PPO's clip on the behaviour policy (the ablation of the decoupled clip)."""
    import tempfile

    from rlsuite.platform import learners, optimizers, training

    target = 150.0
    runs: dict[str, list[dict]] = {}
    for overlap in (False, True):
        key = f"overlap={str(overlap).lower()}"
        runs[key] = []
        for seed in seeds:
            plan = optimizers.make_plan("sync", env="CartPole-v1", seed=seed, overlap=overlap)
            with tempfile.TemporaryDirectory() as d:
                res = training.train(plan, max_iterations, d, progress=False, stop_return=target)
            reached = res.final_return >= target
            row = {
                "seed": seed,
                "reached": reached,
                "iterations": res.iterations,
                "env_steps": res.env_steps,
                "wall_s": res.wall_time_s,
                "train_s": sum(m.get("time_this_iter_s", 0.0) for m in res.metrics),
                "final_return": res.final_return,
                "returns": [m.get("episode_return_mean") for m in res.metrics],
            }
            runs[key].append(row)
            console.print(
                f"{key} seed {seed}: {'reached' if reached else 'did NOT reach'} {target:g} "
                f"after {res.iterations} iterations, {res.env_steps} steps, "
                f"{row['train_s']:.1f} s in train() ({res.wall_time_s:.1f} s with the build; "
                f"return {res.final_return:.1f})"
            )
    # Ablation: overlap=true with PPO's clip on the behaviour policy (the learner's
    # decoupled clip off), through RLlib's loop since no plan field turns it off.
    runs[BEHAVIOUR_CLIP] = []
    for seed in seeds:
        plan = optimizers.make_plan("sync", env="CartPole-v1", seed=seed, overlap=True)
        config = optimizers.to_rllib(plan).learners(
            **learners.learner_settings(check_finite_gradients=True, decoupled_clip=False)
        )
        row = {"seed": seed, **_train_to_return(config, target, max_iterations)}
        runs[BEHAVIOUR_CLIP].append(row)
        console.print(
            f"{BEHAVIOUR_CLIP} seed {seed}: {'reached' if row['reached'] else 'did NOT reach'} "
            f"{target:g} after {row['iterations']} iterations, {row['env_steps']} steps, "
            f"{row['train_s']:.1f} s in train()"
        )
    return {
        "env": "CartPole-v1",
        "target_return": target,
        "max_iterations": max_iterations,
        "runs": runs,
    }


BEHAVIOUR_CLIP = "overlap=true, clip on the behaviour policy"
"""The ``overlap-learning`` ablation: the overlapped plan without the decoupled clip."""


def _train_to_return(config, target: float, max_iterations: int) -> dict:
    """``algo.train()`` until the smoothed return reaches ``target`` (the ablation's loop;
    the same fields as a ``training.train`` row)."""
    t0 = time.perf_counter()
    algo = config.build_algo()
    try:
        returns, steps, train_s = [], 0, 0.0
        for _ in range(max_iterations):
            r = algo.train()
            returns.append(r["env_runners"].get("episode_return_mean", float("nan")))
            steps += int(r["env_runners"]["num_env_steps_sampled"])
            train_s += float(r.get("time_this_iter_s", 0.0))
            if returns[-1] >= target:
                break
    finally:
        algo.stop()
    return {
        "reached": returns[-1] >= target,
        "iterations": len(returns),
        "env_steps": steps,
        "wall_s": time.perf_counter() - t0,
        "train_s": train_s,
        "final_return": returns[-1],
        "returns": returns,
    }
