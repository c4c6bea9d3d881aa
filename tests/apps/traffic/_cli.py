"""traffic-train runs the CLI tests share: a command that writes JSON, and one iteration of
a tiny PPO sampled in this process (of one shared policy, for multi-agent scenarios)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def cli_json(path: Path, *argv: str) -> dict[str, Any]:
    """``traffic-train *argv --json path``, which must succeed; the JSON it wrote."""
    from rlsuite.apps.traffic import cli

    assert cli.main([*argv, "--json", str(path)]) == 0
    return json.loads(Path(path).read_text())


def train_tiny(run: Path, *argv: str, batch: int) -> dict[str, Any]:
    """``traffic-train train *argv`` for one iteration of PPO (``batch`` steps in two
    minibatches, one epoch, a 16x16 net) sampled in this process, then one evaluation
    episode; it must succeed. The run's ``traffic_train.json``."""
    from rlsuite.apps.traffic import cli

    rc = cli.main(["train", *argv, "--plan", "sync", "--workers", "0", "--iterations", "1",
                   "--run-dir", str(run), "--eval-episodes", "1",
                   "--plan-set", f"train_batch_size={batch}",
                   "--plan-set", f"minibatch_size={batch // 2}",
                   "--plan-set", "num_epochs=1", "--plan-set", "hidden=[16,16]"])  # fmt: skip
    assert rc == 0
    return json.loads((Path(run) / "traffic_train.json").read_text())


def train_shared_tiny(run: Path, *argv: str, batch: int) -> dict[str, Any]:
    """:func:`train_tiny` of a multi-agent scenario: one iteration of at least ``batch`` env
    steps, whose checkpoint holds one module, ``shared``, for every agent. The run's JSON."""
    from rlsuite.platform import checkpoints

    out = train_tiny(run, *argv, batch=batch)
    assert out["iterations"] == 1 and out["env_steps"] >= batch
    meta = checkpoints.metadata(out["checkpoint"])
    assert meta["multi_agent"] and meta["policies"] == "shared"
    assert list(checkpoints.load_controller(out["checkpoint"]).modules.keys()) == ["shared"]
    return out
