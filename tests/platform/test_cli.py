"""The rlsuite CLI: argument parsing, info, clear errors, and a tiny train/evaluate run."""

import json

import pytest

from rlsuite import cli
from rlsuite.platform.resources import local_gpus


def test_parse_sets_and_search():
    assert cli.parse_sets(["lr=1e-3", "hidden=[32,32]", "policies=shared"]) == {
        "lr": 1e-3,
        "hidden": [32, 32],
        "policies": "shared",
    }
    with pytest.raises(ValueError, match="key=value"):
        cli.parse_sets(["lr"])
    space = cli.parse_search(["lr=loguniform:1e-4:1e-2", "num_epochs=choice:5,10"])
    assert 1e-4 <= space["lr"].sample() <= 1e-2
    assert space["num_epochs"].sample() in (5, 10)
    with pytest.raises(ValueError, match="unknown search kind"):
        cli.parse_search(["lr=normal:0:1"])


def test_help_reads_like_a_man_page(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    for word in ("info", "train", "evaluate", "tune", "--set key=value"):
        assert word in out


def test_info_lists_components(capsys):
    assert cli.main(["info"]) == 0
    out = capsys.readouterr().out
    for name in ("ray", "torch", "SUMO binary", "PostgreSQL server", "pybullet"):
        assert name in out
    from rlsuite.platform.machine import cpu_topology

    assert f"CPUs: {cpu_topology().describe()}" in out


def test_info_lists_the_gpus_or_says_there_are_none(capsys):
    assert cli.main(["info"]) == 0
    out = capsys.readouterr().out
    gpus = local_gpus()
    if gpus:
        assert f"GPUs: {len(gpus)}" in out and gpus[0].name in out
    else:
        assert "GPUs: none" in out and "learners run on the CPU" in out


@pytest.mark.skipif(bool(local_gpus()), reason="checks a machine without a GPU")
def test_a_gpu_asked_for_on_a_cpu_machine_exits_2_naming_auto(capsys, tmp_path):
    rc = cli.main(["train", "--plan", "sync", "--env", "CartPole-v1", "--run-dir",
                   str(tmp_path / "run"), "--num-cpus", "2", "--no-progress", "--set",
                   "num_gpus_per_learner=1"])  # fmt: skip
    assert rc == 2
    err = capsys.readouterr().err
    assert "no GPU is visible" in err and "num_gpus_per_learner='auto'" in err and "or 0" in err


def test_bad_plan_key_exits_2_with_the_reason(capsys, tmp_path):
    rc = cli.main(["train", "--plan", "sync", "--env", "CartPole-v1", "--run-dir", str(tmp_path),
                   "--set", "learning_rate=0.1"])  # fmt: skip
    assert rc == 2
    assert "did you mean 'lr'" in capsys.readouterr().err


def test_train_then_evaluate_tiny(ray_local, capsys, tmp_path):
    run = tmp_path / "run"
    # sampled in the driver: the CLI's training with a remote runner is test_resilience's
    # killed-run test; parallel evaluation is below
    rc = cli.main(["train", "--plan", "sync", "--env", "CartPole-v1", "--iterations", "1",
                   "--run-dir", str(run), "--num-cpus", "2", "--no-progress",
                   "--set", "num_env_runners=0", "--set", "train_batch_size=200",
                   "--set", "minibatch_size=100", "--set", "num_epochs=1"])  # fmt: skip
    assert rc == 0
    assert "learner: cpu" in capsys.readouterr().out  # what ran, as rlsuite.json records it
    out = tmp_path / "eval.json"
    rc = cli.main(["evaluate", "--controller", str(run), "--episodes", "2", "--workers", "2",
                   "--num-cpus", "2", "--json", str(out)])  # fmt: skip
    assert rc == 0
    data = json.loads(out.read_text())
    assert len(data["episodes"]) == 2 and data["episodes"][0]["length"] > 0
    # export: a policy-only copy that acts exactly as the checkpoint, and is small
    pol = tmp_path / "policy"
    assert cli.main(["export", "--controller", str(run), "--out", str(pol), "--note", "tiny"]) == 0
    from rlsuite.platform import checkpoints, envs
    from rlsuite.platform.checkpoints.export import size_bytes

    assert not (pol / "algorithm_state.pkl").exists()
    assert size_bytes(str(pol)) < size_bytes(checkpoints.latest_checkpoint(str(run)))
    assert checkpoints.metadata(str(pol))["note"] == "tiny"
    full, small = checkpoints.load_controller(str(run)), checkpoints.load_controller(str(pol))
    env = envs.make("CartPole-v1")
    obs, _ = env.reset(seed=3)
    for _ in range(20):
        a = full.act(obs)
        assert small.act(obs) == a
        obs, *_ = env.step(a)
    # exporting over an existing directory is refused, and it is left as it was
    assert cli.main(["export", "--controller", str(run), "--out", str(pol)]) == 2
    assert "exists" in capsys.readouterr().err
    assert checkpoints.metadata(str(pol))["note"] == "tiny"
