"""traffic-train train / tune on a tiny budget (real Ray, real SUMO), and the learned checkpoint."""

from __future__ import annotations

import json
import os

import pytest

from rlsuite.apps.traffic import cli
from tests.apps.traffic._cli import train_shared_tiny

TINY_ENV = ["--horizon", "100", "--warmup", "50"]
TINY_PLAN = ["--plan-set", "train_batch_size=200", "--plan-set", "minibatch_size=100",
             "--plan-set", "num_epochs=1", "--plan-set", "hidden=[16,16]"]  # fmt: skip


@pytest.mark.slow
def test_train_then_evaluate_the_checkpoint(ray_local, tmp_path):
    run = tmp_path / "run"
    rc = cli.main(["train", "--scenario", "ring", "--plan", "sync", "--workers", "1",
                   "--iterations", "2", "--run-dir", str(run), "--eval-episodes", "1",
                   *TINY_ENV, *TINY_PLAN])  # fmt: skip
    assert rc == 0
    out = json.loads((run / "traffic_train.json").read_text())
    assert out["iterations"] == 2 and out["env_steps"] >= 400
    assert os.path.isdir(out["checkpoint"])
    assert out["evaluation"]["summary"]["mean_speed"]["mean"] > 0
    # the checkpoint evaluates through the CLI like a baseline
    js = tmp_path / "learned.json"
    rc = cli.main(["evaluate", "--scenario", "ring", "--controller", out["checkpoint"],
                   "--episodes", "1", "--workers", "0", "--json", str(js), *TINY_ENV])  # fmt: skip
    assert rc == 0
    assert json.loads(js.read_text())["summary"]["length"]["mean"] == 100
    # a second train into the same run dir without --resume is refused, clearly
    assert cli.main(["train", "--run-dir", str(run), "--iterations", "1", *TINY_ENV]) == 2


@pytest.mark.slow
def test_recurrent_ring_policy_trains_and_evaluates_through_the_cli(ray_local, tmp_path, capsys):
    """An LSTM policy (the sync plan's recurrent field) on the ring: its checkpoint says it
    is recurrent, and traffic-train evaluate drives with it, carrying its state. (Sampled
    in the driver: the test above trains the ring with a remote runner.)"""
    from rlsuite.platform import checkpoints

    run = tmp_path / "run"
    rc = cli.main(["train", "--scenario", "ring", "--plan", "sync", "--workers", "0",
                   "--iterations", "1", "--run-dir", str(run), "--eval-episodes", "1",
                   "--plan-set", "recurrent=lstm", "--plan-set", "cell_size=8",
                   "--plan-set", "max_seq_len=10", "--env-set", "memory_s=1",
                   *TINY_ENV, *TINY_PLAN])  # fmt: skip
    assert rc == 0
    ckpt = json.loads((run / "traffic_train.json").read_text())["checkpoint"]
    assert checkpoints.metadata(ckpt)["recurrent"] == "lstm"
    assert checkpoints.load_controller(ckpt).recurrent
    js = tmp_path / "lstm.json"
    rc = cli.main(["evaluate", "--scenario", "ring", "--controller", ckpt, "--episodes", "2",
                   "--workers", "0", "--json", str(js), *TINY_ENV])  # fmt: skip
    assert rc == 0
    out = json.loads(js.read_text())
    assert out["summary"]["length"]["mean"] == 100 and out["summary"]["mean_speed"]["mean"] > 0
    assert out["env_config"]["memory_s"] == 1  # what the policy observes, as it was trained
    # asked to observe otherwise, the checkpoint says what it was trained on
    assert cli.main(["evaluate", "--scenario", "ring", "--controller", ckpt, "--episodes", "1",
                     "--workers", "0", "--no-png", "--env-set", "memory_s=0", *TINY_ENV]) == 2  # fmt: skip
    said = capsys.readouterr()
    assert "trained on observations of shape (5,)" in " ".join((said.out + said.err).split())
    # a plan that cannot carry a recurrent policy is refused before anything runs
    assert cli.main(["train", "--scenario", "ring", "--plan", "replay", "--run-dir",
                     str(tmp_path / "r"), "--plan-set", "recurrent=lstm", *TINY_ENV]) == 2  # fmt: skip
    said = capsys.readouterr()
    assert "cannot carry a recurrent policy" in " ".join((said.out + said.err).split())


@pytest.mark.slow
def test_es_plan_trains_the_ring_through_the_cli(ray_local, tmp_path):
    """traffic-train train --plan es: evolution strategies on worker actors, no RLlib."""
    run = tmp_path / "es"
    rc = cli.main(["train", "--scenario", "ring", "--plan", "es", "--workers", "2",
                   "--iterations", "2", "--run-dir", str(run), "--eval-episodes", "1",
                   "--plan-set", "population_size=4", "--plan-set", "hidden=[8]",
                   *TINY_ENV])  # fmt: skip
    assert rc == 0
    out = json.loads((run / "traffic_train.json").read_text())
    assert out["iterations"] == 2 and out["env_steps"] >= 2 * 4 * 100
    assert out["evaluation"]["summary"]["mean_speed"]["mean"] > 0


@pytest.mark.slow
def test_tune_smoke(ray_local, tmp_path):
    rc = cli.main(["tune", "--scenario", "ring", "--plan", "sync", "--workers", "0",
                   "--samples", "2", "--iterations", "1", "--run-dir", str(tmp_path / "tune"),
                   "--search", "lr=choice:[0.0001,0.001]", "--json", str(tmp_path / "t.json"),
                   # 2 rings in one simulation: each reaches the 100-step horizon in the
                   # 200-step batch, so every trial reports an episode return
                   *TINY_ENV, *TINY_PLAN, "--plan-set", "num_envs_per_env_runner=2"])  # fmt: skip
    assert rc == 0
    data = json.loads((tmp_path / "t.json").read_text())
    assert len(data["trials"]) == 2
    assert data["best_config"]["lr"] in (0.0001, 0.001)


@pytest.mark.slow
def test_signals_grid_trains_one_shared_policy_checkpoints_and_evaluates(ray_local, tmp_path):
    """RLlib multi-agent through the platform: the 4 lights of the 2x2 grid share a module.
    (Sampled in the driver: multi-agent envs in remote runners are trained by the merge and
    figure-eight tests.)"""
    argv = ["--scenario", "signals", "--network", "grid2x2", "--horizon", "150"]
    out = train_shared_tiny(tmp_path / "sig", *argv, batch=60)  # one module for every light
    summary = out["evaluation"]["summary"]
    assert summary["mean_waiting_time"]["mean"] >= 0 and summary["mean_queue"]["mean"] >= 0
    assert summary["mean_speed"]["mean"] > 0


@pytest.mark.slow
def test_train_warm_started_from_pi_demonstrations_drives_like_pi(ray_local, tmp_path):
    """--demonstrations pi:4 records PI on the training ring and clones it before PPO;
    the clone (RUN_DIR/clone) keeps the ring moving as PI does, unlike human driving."""
    run = tmp_path / "run"
    env = ["--ring-length", "230", "--horizon", "2000", "--warmup", "0", "--env-set",
           "memory_s=38", "--env-set", "measure_after=750", "--env-set", "bunching=20"]  # fmt: skip
    rc = cli.main(["train", "--scenario", "ring", "--workers", "0", "--iterations", "1",
                   "--run-dir", str(run), "--demonstrations", "pi:4", *env,
                   "--plan-set", "demo_epochs=150", "--plan-set", "train_batch_size=400",
                   "--plan-set", "minibatch_size=200", "--plan-set", "num_epochs=1",
                   "--plan-set", "num_envs_per_env_runner=1"])  # fmt: skip
    assert rc == 0
    assert (run / "demonstrations.parquet").stat().st_size > 1000
    speed = {}
    for name in ("idm", "pi", str(run / "clone")):
        js = tmp_path / f"{len(speed)}.json"
        rc = cli.main(["evaluate", "--scenario", "ring", "--controller", name, "--episodes", "1",
                       "--seed", "5", "--workers", "0", "--json", str(js), "--no-png", *env])  # fmt: skip
        assert rc == 0
        speed[name] = json.loads(js.read_text())["summary"]["mean_speed"]["mean"]
    clone = speed[str(run / "clone")]
    assert abs(clone - speed["pi"]) < 0.3 and clone > speed["idm"] + 0.5, speed
    # a second run into the same dir is refused before anything of the first is overwritten
    before = (run / "demonstrations.parquet").stat().st_mtime_ns
    assert cli.main(["train", "--run-dir", str(run), "--demonstrations", "pi:1", *env]) == 2
    assert (run / "demonstrations.parquet").stat().st_mtime_ns == before
    # bad uses say what to do
    assert cli.main(["train", "--run-dir", str(tmp_path / "x"), "--demonstrations", "pi:x"]) == 2
    assert cli.main(["train", "--run-dir", str(tmp_path / "y"), "--plan", "async",
                     "--demonstrations", "pi"]) == 2  # fmt: skip
