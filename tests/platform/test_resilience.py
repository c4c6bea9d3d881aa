"""Fault tolerance and resume: a killed env runner, a killed training run."""

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from rlsuite.platform import checkpoints, optimizers, training
from rlsuite.platform.backends.rllib import RLlibBackend
from tests._plans import ppo


def _two_runner_cartpole(**values):
    return ppo("CartPole-v1", 1000, 250, 2, num_env_runners=2, num_envs_per_env_runner=2, **values)


def _runner_pids(algo):
    return algo.env_runner_group.foreach_env_runner(lambda r: os.getpid(), local_env_runner=False)


@pytest.mark.slow
@pytest.mark.parametrize("overlap", [False, True])
def test_killed_env_runner_is_replaced_and_training_goes_on(ray_local, overlap):
    plan = _two_runner_cartpole(overlap=overlap)
    trainer = RLlibBackend(plan)
    try:
        trainer.train()
        pids = _runner_pids(trainer.algo)
        assert len(pids) == 2
        os.kill(pids[0], signal.SIGKILL)
        # The replacement is a new process (Ray, torch, the env): on a loaded 2-core machine it
        # can take longer than a few iterations to come up, so train until it has, within limits.
        rows, deadline = [], time.time() + 120
        while len(rows) < 4 or (
            rows[-1]["num_env_runners_healthy"] < 2 and len(rows) < 40 and time.time() < deadline
        ):
            rows.append(trainer.train())
        assert all(r["env_steps_this_iter"] > 0 for r in rows)  # training went on
        assert rows[-1]["num_env_runners_healthy"] == 2, len(rows)  # the dead one was replaced
        assert rows[-1]["num_env_runner_restarts"] >= 1
        new_pids = _runner_pids(trainer.algo)
        assert pids[0] not in new_pids and len(new_pids) == 2
        # the replacement froze its start-up objects out of the GC too (platform.runners)
        frozen = trainer.algo.env_runner_group.foreach_env_runner(
            lambda r: __import__("gc").get_freeze_count(), local_env_runner=False
        )
        assert all(n > 10_000 for n in frozen), frozen
        # every runner, the replacement too, is seeded as RLlib seeds it (torch's
        # deterministic switch on), without loading torch's compiler (platform.runners)
        seeded = trainer.algo.env_runner_group.foreach_env_runner(
            lambda r: (
                type(r).__name__,
                __import__("torch").are_deterministic_algorithms_enabled(),
                "torch._inductor.config" in __import__("sys").modules,
                os.environ.get("TORCHINDUCTOR_DETERMINISTIC"),
            ),
            local_env_runner=False,
        )
        assert seeded == [("SingleAgentRunner", True, False, "1")] * 2, seeded
        if overlap:  # the replacement samples at the lowered priority too
            nice = trainer.algo.env_runner_group.foreach_env_runner(
                lambda r: os.getpriority(os.PRIO_PROCESS, 0), local_env_runner=False
            )
            assert all(n > os.getpriority(os.PRIO_PROCESS, 0) for n in nice), nice
    finally:
        trainer.stop()


@pytest.mark.slow
def test_killed_run_resumes_from_its_checkpoint(ray_local, tmp_path):
    run = tmp_path / "run"
    cmd = [sys.executable, "-m", "rlsuite.cli", "train", "--plan", "sync", "--env", "CartPole-v1",
           "--iterations", "200", "--checkpoint-every", "2", "--run-dir", str(run),
           "--address", ray_local.address, "--no-progress",
           "--set", "num_env_runners=1", "--set", "train_batch_size=500",
           "--set", "minibatch_size=250", "--set", "num_epochs=2"]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    latest = run / "checkpoints" / "latest"
    try:
        deadline = time.time() + 180
        while time.time() < deadline and proc.poll() is None:
            if latest.exists() and latest.read_text().strip() >= "iter_000002":
                break
            time.sleep(0.5)
        assert proc.poll() is None, "the run ended before it could be killed"
        assert latest.exists(), "no checkpoint within 180 s"
    finally:
        proc.kill()  # SIGKILL: no chance to save anything on the way out
        proc.wait()
    ckpt = checkpoints.latest_checkpoint(str(run))
    with open(os.path.join(ckpt, checkpoints.META)) as f:
        k = json.load(f)["iteration"]
    assert k >= 2
    plan = ppo("CartPole-v1", batch=500, minibatch=250, epochs=2, num_env_runners=1)
    res = training.train(plan, iterations=k + 2, run_dir=str(run), resume=True, progress=False)
    its = [m["iteration"] for m in res.metrics]
    assert its == list(range(1, k + 3))  # rows up to the checkpoint kept, then k+1, k+2
    assert res.iterations == k + 2
    assert res.metrics[k]["env_steps"] > res.metrics[k - 1]["env_steps"]
    # Trying to resume a run with another plan is refused, not silently mixed.
    with pytest.raises(ValueError, match="cannot resume"):
        training.train(
            optimizers.make_plan("sync", env="Acrobot-v1", num_env_runners=1),
            iterations=k + 3,
            run_dir=str(run),
            resume=True,
            progress=False,
        )


def _flat(state: dict):
    import numpy as np

    return np.concatenate([np.asarray(v).ravel() for _, v in sorted(state.items())])


def _learner_weights(trainer) -> dict:
    from ray.rllib.core import COMPONENT_LEARNER, COMPONENT_RL_MODULE

    state = trainer.algo.learner_group.get_state(
        components=f"{COMPONENT_LEARNER}/{COMPONENT_RL_MODULE}", inference_only=True
    )
    return state[COMPONENT_LEARNER][COMPONENT_RL_MODULE]["default_policy"]


@pytest.mark.slow
def test_resume_gives_every_env_runner_the_restored_weights_and_keeps_the_kl_coeff(
    ray_local, tmp_path
):
    """RLlib's own restore sends the weights fire-and-forget and drops them for a runner
    that still has a weights request in flight (as right after the algorithm is built),
    so a resumed run sampled its first iteration with initial weights. Here the runners
    are kept busy with such a request, once, while the restore happens."""
    import numpy as np

    plan = _two_runner_cartpole()
    # The checkpoint is trained by sampling in the driver (the restore below is what this
    # is about, into two remote runners; an RLlib checkpoint holds no runner count).
    trained = dataclasses.replace(plan, num_env_runners=0)
    res = training.train(trained, iterations=2, run_dir=str(tmp_path / "run"), progress=False)
    with open(os.path.join(res.checkpoint, checkpoints.LEARNER_EXTRA)) as f:
        saved_kl = json.load(f)["kl_coeffs"]
    # PPO adapted its KL coefficient away from kl_coeff (0.2); RLlib's checkpoint lacks it.
    assert saved_kl and all(v != pytest.approx(plan.kl_coeff) for v in saved_kl.values())
    for busy in (True, False):
        trainer = RLlibBackend(plan)
        try:
            if busy:  # a weights request in flight (as RLlib leaves one after building)
                group = trainer.algo.env_runner_group
                group.fetch_ready_async_reqs(tags="set_state", timeout_seconds=30)
                assert group.foreach_env_runner_async(lambda r: time.sleep(2), "set_state") == 2
            initial = _learner_weights(trainer)
            trainer.restore(res.checkpoint)
            learner = _learner_weights(trainer)
            assert not np.allclose(_flat(learner), _flat(initial)), "nothing was restored"
            runners = trainer.algo.env_runner_group.foreach_env_runner(
                lambda r: {
                    k: np.asarray(v) for k, v in r.module.get_state(inference_only=True).items()
                },
                local_env_runner=False,
            )
            assert len(runners) == 2
            for w in runners:
                assert np.allclose(_flat(w), _flat(learner)), "a runner kept other weights"
            assert trainer._kl_coeffs() == pytest.approx(saved_kl)
        finally:
            trainer.stop()
