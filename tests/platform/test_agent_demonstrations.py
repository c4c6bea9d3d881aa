"""The sync plan's demonstrations warm start on a multi-agent env: each agent's recorded
steps train the module the plan maps that agent to (the shared one, or its own), and the
returns the critic is fitted to stay within each agent's own episode."""

from __future__ import annotations

import numpy as np
import pytest

from rlsuite.platform import checkpoints, demonstrations, training
from tests._plans import ppo

MATCHING = "rlsuite-test/Matching-v0"
"""Two agents, a0 and a1, each seeing a one-hot bit (10 steps an episode)."""


class _EchoOrFlip:
    """a0 answers its bit; a1 answers the other bit when ``flip`` (else its own)."""

    name = "echo-or-flip"

    def __init__(self, flip: bool):
        self.flip = flip

    def act(self, obs):
        return {a: int(np.argmax(o)) ^ int(self.flip and a == "a1") for a, o in obs.items()}


def test_returns_to_go_stay_within_each_interleaved_episode():
    # two agents' episodes written step by step together, as a multi-agent recording is
    got = demonstrations.returns_to_go(["a", "b", "a", "b", "a"], [1, 10, 1, 10, 1], 0.5)
    np.testing.assert_allclose(got, [1.75, 15.0, 1.5, 10.0, 1.0])
    got = demonstrations.returns_to_go(["a", "a", "b", "b"], [1, 1, 2, 2], 1.0)
    np.testing.assert_allclose(got, [2.0, 1.0, 4.0, 2.0])  # one after the other, as before


@pytest.mark.parametrize("policies, flip", [("shared", False), ("per_agent", True)])
def test_each_agents_steps_train_the_module_it_is_mapped_to(ray_local, tmp_path, policies, flip):
    """per_agent: a0's module clones a0 (echo) and a1's clones a1 (flip), which one shared
    module could not do; shared: the one module clones both agents' echo."""
    data = tmp_path / "demos.parquet"
    info = demonstrations.record_episodes(_EchoOrFlip(flip), MATCHING, 4, str(data), seed=0)
    assert info["episodes"] == 8 and info["transitions"] == 80  # 4 episodes x 2 agents x 10
    plan = ppo(MATCHING, 40, 20, 1, policies=policies, demonstrations=str(data),
               demo_epochs=60, lr=1e-6, hidden=[16])  # fmt: skip
    training.train(plan, iterations=1, run_dir=str(tmp_path / "run"), progress=False)
    clone = checkpoints.load_controller(str(tmp_path / "run" / demonstrations.CLONE))
    for bit in (0, 1):
        o = np.eye(2, dtype=np.float32)[bit]
        assert clone.act({"a0": o, "a1": o}) == {"a0": bit, "a1": bit ^ int(flip)}, bit


def test_a_recording_without_agent_ids_is_refused_on_a_multi_agent_env(ray_local, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    data = tmp_path / "single.parquet"
    pq.write_table(pa.table(dict(eps_id=["0", "0"], obs=[[1.0, 0.0], [0.0, 1.0]],
                                 actions=[0, 1], rewards=[1.0, 1.0])), data)  # fmt: skip
    plan = ppo(MATCHING, 40, 20, 1, demonstrations=str(data), hidden=[16])
    with pytest.raises(ValueError, match="no agent_id column"):
        training.train(plan, iterations=1, run_dir=str(tmp_path / "run"), progress=False)


def _relabel(src, dst, agents: dict[str, str]) -> None:
    """``src``'s recording with only the steps of ``agents``' keys, renamed to its values."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    t = pq.read_table(src)
    t = t.filter(pc.is_in(t["agent_id"], value_set=pa.array(list(agents))))
    ids = pa.array([agents[a] for a in t["agent_id"].to_pylist()])
    pq.write_table(t.set_column(t.schema.get_field_index("agent_id"), "agent_id", ids), dst)


def test_an_agent_the_env_lacks_teaches_the_shared_module(ray_local, tmp_path, capsys):
    """Recorded with more agents than the plan's env has (as PI's demonstrations at 4 AVs
    for a 3-AV ring): a shared module learns their steps; per-agent modules cannot."""
    data, more = tmp_path / "demos.parquet", tmp_path / "a2.parquet"
    demonstrations.record_episodes(_EchoOrFlip(False), MATCHING, 4, str(data), seed=0)
    _relabel(data, more, {"a1": "a2"})  # only a stranger's 40 steps
    plan = ppo(MATCHING, 40, 20, 1, policies="shared", demonstrations=str(more),
               demo_epochs=60, lr=1e-6, hidden=[16])  # fmt: skip
    training.train(plan, iterations=1, run_dir=str(tmp_path / "run"), progress=False)
    assert "cloned 40 demonstrated transitions" in capsys.readouterr().out
    clone = checkpoints.load_controller(str(tmp_path / "run" / demonstrations.CLONE))
    for bit in (0, 1):
        o = np.eye(2, dtype=np.float32)[bit]
        assert clone.act({"a0": o, "a1": o}) == {"a0": bit, "a1": bit}, bit
    plan = plan.replace(policies="per_agent")
    with pytest.raises(ValueError, match=r"agents \['a2'\] that .* no module of the plan's"):
        training.train(plan, iterations=1, run_dir=str(tmp_path / "run2"), progress=False)
