"""Cluster: an embedded Ray, and a two-node local cluster where runners land on both nodes."""

import pytest
import ray

from rlsuite.platform import cluster, optimizers
from rlsuite.platform.backends.rllib import RLlibBackend


def test_address_and_num_cpus_together_is_an_error():
    with pytest.raises(ValueError, match="only for an embedded local Ray"):
        cluster.init(num_cpus=2, address="127.0.0.1:6379")
    with pytest.raises(ValueError, match="num_cpus must be >= 1"):
        cluster.init(num_cpus=0)


@pytest.mark.parametrize(
    "raised,expected",
    [
        (RuntimeError("GCS said: InvalidAuthToken"), "RAY_AUTH_MODE=disabled"),
        (ConnectionError("no GCS at that address"), "could not join the Ray cluster"),
    ],
)
def test_joining_a_cluster_fails_with_what_to_do(monkeypatch, raised, expected):
    # pure logic: which message a failed ray.init(address=...) becomes (no cluster needed)
    def refuse(**kwargs):
        assert kwargs["address"] == "10.0.0.9:6379"
        raise raised

    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", refuse)
    with pytest.raises(ConnectionError, match=expected):
        cluster.init(address="10.0.0.9:6379")


def test_embedded_ray_is_sized_and_stopped():
    with cluster.local_cluster(num_cpus=2) as info:
        assert info.num_cpus == 2 and info.num_nodes == 1 and info.started_here
        assert ray.is_initialized()
    assert not ray.is_initialized()


@pytest.mark.slow
def test_two_node_cluster_places_env_runners_on_both_nodes():
    from ray.cluster_utils import Cluster

    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    c.add_node(num_cpus=2)
    try:
        info = cluster.init(address=c.address)
        assert info.num_nodes == 2 and info.num_cpus == 3 and not info.started_here
        plan = optimizers.make_plan(
            "sync",
            env="CartPole-v1",
            num_env_runners=3,
            num_envs_per_env_runner=2,
            train_batch_size=600,
            minibatch_size=200,
            num_epochs=1,
        )
        trainer = RLlibBackend(plan)
        try:
            nodes = trainer.algo.env_runner_group.foreach_env_runner(
                lambda r: ray.get_runtime_context().get_node_id(), local_env_runner=False
            )
            assert len(nodes) == 3 and len(set(nodes)) == 2  # both nodes sample
            row = trainer.train()
            assert row["env_steps_this_iter"] >= 600
        finally:
            trainer.stop()
    finally:
        cluster.shutdown()
        c.shutdown()
