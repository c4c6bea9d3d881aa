"""Fault tolerance and resume: a killed env runner, a killed training run."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from rlsuite.platform import optimizers, training


def _runner_pids(algo):
    return algo.env_runner_group.foreach_env_runner(lambda r: os.getpid(), local_env_runner=False)


@pytest.mark.slow
def test_killed_env_runner_is_replaced_and_training_goes_on(ray_local):
    plan = optimizers.make_plan(
        "sync",
        env="CartPole-v1",
        num_env_runners=2,
        num_envs_per_env_runner=2,
        train_batch_size=1000,
        minibatch_size=250,
        num_epochs=2,
    )
    trainer = training.RLlibTrainer(plan)
    try:
        trainer.train()
        pids = _runner_pids(trainer.algo)
        assert len(pids) == 2
        os.kill(pids[0], signal.SIGKILL)
        rows = [trainer.train() for _ in range(4)]
        assert all(r["env_steps_this_iter"] > 0 for r in rows)  # training went on
        assert rows[-1]["num_env_runners_healthy"] == 2  # the dead one was replaced
        assert rows[-1]["num_env_runner_restarts"] >= 1
        new_pids = _runner_pids(trainer.algo)
        assert pids[0] not in new_pids and len(new_pids) == 2
    finally:
        trainer.stop()


@pytest.mark.slow
def test_killed_run_resumes_from_its_checkpoint(ray_local, tmp_path):
    run = tmp_path / "run"
    cmd = [
        sys.executable,
        "-m",
        "rlsuite.cli",
        "train",
        "--plan",
        "sync",
        "--env",
        "CartPole-v1",
        "--iterations",
        "200",
        "--checkpoint-every",
        "2",
        "--run-dir",
        str(run),
        "--address",
        ray_local.address,
        "--no-progress",
        "--set",
        "num_env_runners=1",
        "--set",
        "train_batch_size=500",
        "--set",
        "minibatch_size=250",
        "--set",
        "num_epochs=2",
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    latest = run / "checkpoints" / "latest"
    try:
        deadline = time.time() + 180
        while time.time() < deadline and proc.poll() is None:
            if latest.exists() and latest.read_text().strip() >= "iter_000004":
                break
            time.sleep(0.5)
        assert proc.poll() is None, "the run ended before it could be killed"
        assert latest.exists(), "no checkpoint within 180 s"
    finally:
        proc.kill()  # SIGKILL: no chance to save anything on the way out
        proc.wait()
    ckpt = training.latest_checkpoint(str(run))
    with open(os.path.join(ckpt, training.META)) as f:
        k = json.load(f)["iteration"]
    assert k >= 4
    plan = optimizers.make_plan(
        "sync",
        env="CartPole-v1",
        num_env_runners=1,
        train_batch_size=500,
        minibatch_size=250,
        num_epochs=2,
    )
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
