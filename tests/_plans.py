"""Small training plans the tests share (real RLlib, tiny budgets)."""

from __future__ import annotations

from typing import Any

from rlsuite.platform import optimizers


def ppo(
    env: str,
    batch: int,
    minibatch: int,
    epochs: int | None = None,
    num_env_runners: int | None = 0,
    **fields: Any,
) -> Any:
    """A sync (PPO) plan of ``env`` with these batch and minibatch sizes and ``epochs``,
    sampled in the driver unless ``num_env_runners`` says otherwise (None, for either:
    the plan's default); ``fields``: any other plan fields."""
    sizes = {"train_batch_size": batch, "minibatch_size": minibatch}
    if epochs is not None:
        sizes["num_epochs"] = epochs
    if num_env_runners is not None:
        sizes["num_env_runners"] = num_env_runners
    return optimizers.make_plan("sync", env=env, **sizes, **fields)


def replay(env: str, batch: int, steps: int, num_env_runners: int | None = 0, **fields: Any) -> Any:
    """A replay (DQN) plan of ``env`` on batches of ``batch`` transitions, at least
    ``steps`` env steps an iteration, learning from the first transition on (unless
    ``learning_starts`` says otherwise), sampled in the driver unless ``num_env_runners``
    says otherwise (None: the plan's default); ``fields``: any other plan fields."""
    sizes = {"train_batch_size": batch, "env_steps_per_iteration": steps, "learning_starts": 0}
    if num_env_runners is not None:
        sizes["num_env_runners"] = num_env_runners
    return optimizers.make_plan("replay", env=env, **{**sizes, **fields})


def tune_one_trial(plan: Any, lr: float, run_dir: str) -> None:
    """Tune ``plan`` as one trial of one iteration at learning rate ``lr`` (FIFO) and check
    that the trial ran its iteration and that its best checkpoint loads as a controller."""
    from ray import tune as rt

    from rlsuite.platform import checkpoints, tuning

    res = tuning.tune(
        plan, {"lr": rt.grid_search([lr])}, scheduler="fifo", num_samples=1, iterations=1,
        run_dir=run_dir,
    )  # fmt: skip
    assert [t["iterations"] for t in res.trials] == [1]
    assert res.best_checkpoint and checkpoints.load_controller(res.best_checkpoint)
