"""Backends: every plan names one, and checkpoints go through the one that wrote them."""

import json
import os

import pytest

from rlsuite.platform import checkpoints, optimizers
from rlsuite.platform.backends import registry
from rlsuite.platform.backends.base import Backend


@pytest.mark.parametrize("name", optimizers.plan_names())
def test_every_plan_names_a_backend_with_the_whole_interface(name):
    cls = registry.backend_class(optimizers.plan_class(name))
    for method in ("train", "save", "restore", "stop", "load_controller"):
        assert callable(getattr(cls, method)), (cls, method)
    assert {m for m in dir(Backend) if not m.startswith("_")} <= set(dir(cls)) | {"plan"}


class _Memo:
    """A backend that trains nothing: a counter saved in one file."""

    def __init__(self, plan):
        self.plan, self.n = plan, 0

    def train(self):
        self.n += 1
        return {"env_steps_this_iter": 10, "time_this_iter_s": 0.0, "episode_return_mean": 1.0}

    def save(self, path):
        os.makedirs(path, exist_ok=True)
        with open(os.path.join(path, "memo.json"), "w") as f:
            json.dump({"n": self.n}, f)

    def restore(self, path):
        with open(os.path.join(path, "memo.json")) as f:
            self.n = json.load(f)["n"]

    def stop(self):
        pass

    @classmethod
    def load_controller(cls, path, meta):
        return ("memo", meta["iteration"])


def test_checkpoints_point_to_the_newest_and_load_through_the_plans_backend(tmp_path, monkeypatch):
    plan = optimizers.make_plan("sync", env="CartPole-v1")
    monkeypatch.setitem(registry.BACKENDS, "rllib", _Memo)
    backend = registry.make_backend(plan)
    run = str(tmp_path)
    for it in (1, 2, 3):
        backend.train()
        path = checkpoints.write_checkpoint(backend, plan, run, it, 10 * it)
    assert checkpoints.latest_checkpoint(run) == path
    assert sorted(os.listdir(os.path.join(run, "checkpoints"))) == [
        "iter_000002",
        "iter_000003",
        "latest",
    ]
    meta = checkpoints.metadata(run)
    assert (meta["plan"], meta["iteration"], meta["env_steps"]) == ("sync", 3, 30)
    assert checkpoints.load_controller(run) == ("memo", 3)
    with pytest.raises(FileNotFoundError, match="not an rlsuite checkpoint"):
        checkpoints.load_controller(str(tmp_path / "nothing"))
