"""The ring training benchmark's plan (``ring_training.plan_fields``): ES on whole episodes,
PPO on every ring of its runners per iteration, ``--plan-set`` last. Nothing is trained."""

from __future__ import annotations

from rlsuite.apps.traffic.ring_training import RingTrainSettings, plan_fields
from rlsuite.platform import optimizers


def test_ppo_takes_one_episode_of_every_ring_per_iteration() -> None:
    s = RingTrainSettings(workers=2, rings=4, train_horizon=100, plan_set=("lr=5e-5",))
    fields = plan_fields(s, {"horizon": 100})
    assert fields["train_batch_size"] == 2 * 4 * 100 and fields["minibatch_size"] == 800
    assert fields["lr"] == 5e-5 and fields["vf_clip_param"] == 1e6
    plan = optimizers.make_plan("sync", **fields)
    assert plan.num_envs_per_env_runner == 4


def test_es_plans_whole_episodes_on_its_workers() -> None:
    s = RingTrainSettings(plan="es", workers=3, plan_set=('recurrent="gru"',))
    fields = plan_fields(s, {})
    assert fields["num_workers"] == 3 and fields["recurrent"] == "gru"
    assert "train_batch_size" not in fields
    assert optimizers.make_plan("es", **fields).name == "es"
