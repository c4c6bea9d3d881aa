"""R2D3's measurement steps: the weak CartPole demonstrator and demonstrations cut to a
number of steps (real envs, no Ray)."""

from __future__ import annotations

from rlsuite.platform import demo_sources
from rlsuite.platform.benchmarking.r2d3_cells import CartPoleWeak, held_out, record_demonstrations
from rlsuite.platform.r2d2.demo_replay import episodes


def test_the_weak_demonstrator_keeps_cartpole_up_about_150_steps():
    own = held_out(CartPoleWeak(), "CartPole-v1", 10)
    assert 100 <= own["mean"] <= 200, own
    assert len(own["returns"]) == 10 and own["env_seeds"] == "10000..10009"


def test_demonstrations_are_cut_to_their_steps_and_the_cut_episode_ends_truncated(tmp_path):
    path = str(tmp_path / "demos.parquet")
    info = record_demonstrations(CartPoleWeak(), "CartPole-v1", 300, path)
    data = demo_sources.load(path)
    assert len(data["rewards"]) == info["transitions"] == 300
    eps = episodes(data)
    assert len(eps) == info["episodes"] >= 2
    assert sum(len(e) for e in eps) == 300
    assert all(e.is_terminated for e in eps[:-1])
    assert eps[-1].is_truncated and not eps[-1].is_terminated
