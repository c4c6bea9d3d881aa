"""The ``r2d2`` plan: recurrent sequence replay on Ape-X, on real Ray."""

from __future__ import annotations

import glob
import os
import pickle

import numpy as np
import pytest

from rlsuite.platform import demo_sources, envs, evaluation, optimizers, training
from rlsuite.platform.r2d2 import sequences, unroll
from rlsuite.platform.r2d2.actors import SequenceBuilder
from rlsuite.platform.r2d2.algorithm import REPLAY_STATE
from tests.platform._fakes import CueEnv  # noqa: F401 - registered below by path

CUE = "rlsuite-test/R2D2Cue-v0"
envs.register(CUE, "tests.platform._fakes:CueEnv", default_config={"delay": 3})


class CueExpert:
    """The cue task's optimum: it remembers the cue and answers it."""

    def reset(self, seed=None):
        self.cue = None

    def act(self, obs):
        if self.cue is None:
            self.cue = int(obs[0] > 0)
        return self.cue


# -- the plan's bad input (no Ray) ------------------------------------------------------
def test_bad_input_is_refused_before_ray(tmp_path):
    env = "rlsuite/StatelessCartPole-v1"
    with pytest.raises(ValueError, match=r"burn_in \(80\) must be shorter than seq_len \(80\)"):
        optimizers.make_plan("r2d2", env=env, burn_in=80)
    with pytest.raises(ValueError, match="plan 'replay' cannot carry a recurrent policy.*r2d2"):
        optimizers.make_plan("replay", env=env, recurrent="lstm")
    with pytest.raises(ValueError, match="for a feed-forward one use the apex plan"):
        optimizers.make_plan("r2d2", env=env, recurrent="")
    with pytest.raises(ValueError, match="demo_ratio must be a number in"):
        optimizers.make_plan("r2d2", env=env, demonstrations="random:1", demo_ratio=-0.1)
    path = str(tmp_path / "cartpole.parquet")  # CartPole's 4 observations, not 2
    demo_sources.record(demo_sources.RandomController(envs.spaces("CartPole-v1")[None][1]),
                        "CartPole-v1", 1, path)  # fmt: skip
    with pytest.raises(ValueError, match="observations of shape"):
        optimizers.make_plan("r2d2", env=env, demonstrations=path)
    with pytest.raises(ValueError, match="n_step \\(9\\) must be at most seq_len \\(8\\)"):
        optimizers.make_plan("r2d2", env=env, seq_len=8, burn_in=2, n_step=9)


# -- sequences built as the steps come (pure logic) -------------------------------------
def _chunks(length: int, size: int, terminated: bool) -> list:
    """An episode of ``length`` steps in chunks of ``size``, as a runner gives them: the
    observation and the LSTM's ``STATE_OUT`` at step ``t`` are ``t`` and ``t + 1``."""
    from ray.rllib.env.single_agent_episode import SingleAgentEpisode

    out = []
    for t0 in range(0, length, size):
        t1 = min(t0 + size, length)
        ep = SingleAgentEpisode(
            id_="ep",
            observations=[np.array([t, 0.0], np.float32) for t in range(t0, t1 + 1)],
            actions=list(range(t0, t1)),
            rewards=[float(t) for t in range(t0, t1)],
            extra_model_outputs={
                "state_out": [
                    {"h": np.full((1, 1), t + 1.0), "c": np.zeros((1, 1))} for t in range(t0, t1)
                ]  # fmt: skip
            },
            terminated=terminated and t1 == length,
            t_started=t0,
            len_lookback_buffer=0,
        )
        ep.to_numpy()
        out.append(ep)
    return out


@pytest.mark.parametrize("length, size, m, burn_in", [(23, 7, 6, 4), (10, 3, 4, 1), (5, 2, 8, 3)])
def test_builder_gives_the_sequences_of_the_whole_episode(length, size, m, burn_in):
    builder = SequenceBuilder(m, burn_in, np.zeros(2, np.float32))
    parts = [builder.add([c]) for c in _chunks(length, size, terminated=True)]
    got = {k: np.concatenate([p[k] for p in parts if p]) for k in parts[-1]}
    t = np.arange(length)
    whole = {
        "obs": np.stack([t, 0 * t], 1).astype(np.float32),
        "next_obs": np.stack([t + 1, 0 * t], 1).astype(np.float32),
        "actions": t,
        "rewards": t.astype(np.float32),
        "terminateds": t == length - 1,
    }
    states = np.stack([t, 0 * t], 1).astype(np.float32)  # the state before step t: t
    want = unroll.finish(sequences.pack(whole, states, states[0], m, burn_in), burn_in)
    assert set(got) == set(want) and not builder.open
    for k in want:
        np.testing.assert_array_equal(got[k], want[k], err_msg=k)
    # each sequence's stored state is the one before its first burn-in step
    firsts = [w.burn_start for w in sequences.cut(length, m, burn_in)]
    np.testing.assert_array_equal(got["state"][:, 0], firsts)
    assert got["done"][-1] and not got["done"][:-1].any()


def test_sequence_td_takes_n_steps_inside_the_sequence():
    import torch

    batch = {  # one sequence: 1 burn-in step, 3 steps, the last one terminal
        "actions": torch.tensor([[0, 1, 0, 1]]),
        "rewards": torch.tensor([[9.0, 1.0, 2.0, 4.0]]),
        "loss_mask": torch.tensor([[False, True, True, True]]),
        "done": torch.tensor([True]),
    }
    q = torch.zeros(1, 4, 2)
    q[0, :, 0] = torch.tensor([10.0, 20.0, 30.0, 40.0])  # Q(s, 0); Q(s, 1) = 0
    td, q_sa, target = unroll.sequence_td(
        q, q, batch, burn_in=1, n_step=2, gamma=0.5, rescale_eps=None
    )
    # step 0: 1 + .5 * 2 + .25 * Q(s_2) = 2 + .25 * 30; step 1: 2 + .5 * 4 (terminal)
    np.testing.assert_allclose(target[0].numpy(), [2 + 7.5, 4.0, 4.0])
    np.testing.assert_allclose(q_sa[0].numpy(), [0.0, 20.0, 0.0])
    rescaled = unroll.sequence_td(q, q, batch, burn_in=1, n_step=2, gamma=0.5)[2]
    h = np.sign(4.0) * (np.sqrt(5.0) - 1) + 1e-3 * 4.0
    np.testing.assert_allclose(rescaled[0, 2].item(), h, rtol=1e-6)


# -- on Ray -----------------------------------------------------------------------------
def _shard(algo) -> dict:
    import ray

    return ray.get(algo.shards.handles[0].get_state.remote())


@pytest.mark.slow
def test_r2d3_learns_a_memory_task_and_keeps_its_sequences_across_a_restore(ray_local, tmp_path):
    from rlsuite.platform.backends.registry import make_backend

    # The cue shows at step 0 only and is answered at step 3. With m=3 (a sequence every
    # step) and a burn-in of 2, the answer step is in one sequence only, steps 1-3, so the
    # cue reaches it only through the state carried over its burn-in (step 0).
    plan = optimizers.make_plan(
        "r2d2",
        env=CUE,
        seq_len=3,
        burn_in=2,
        n_step=1,
        gamma=0.9,
        cell_size=16,
        hidden=(16,),
        num_env_runners=1,
        num_envs_per_env_runner=4,
        rollout_fragment_length=10,
        num_replay_shards=1,
        train_batch_size=32,
        buffer_size=2000,
        learning_starts=200,
        target_update_freq=200,
        training_intensity=16.0,  # replayed steps with a loss per env step
        min_time_s_per_iteration=0.0,
        env_steps_per_iteration=500,
        checkpoint_replay=True,
        demonstrations=f"{__name__}:CueExpert:25",  # 100 steps, 2 sequences an episode
        demo_ratio=0.25,
        seed=0,
    )
    backend = make_backend(plan)
    try:
        rows = [backend.train() for _ in range(5)]
        path = training.write_checkpoint(backend, plan, str(tmp_path), 5, 2500)
        assert backend.algo.shards.stats()[0]["updated"] > 0  # priorities came back
        # what the checkpoint holds (the runners push on in the background meanwhile)
        [state_file] = glob.glob(os.path.join(path, "**", "algorithm_state.pkl"), recursive=True)
        with open(state_file, "rb") as f:
            [saved] = pickle.load(f)[REPLAY_STATE]
        backend.train()  # the replay moves on: new sequences, new priorities...
        assert not np.array_equal(_shard(backend.algo)["tree"], saved["tree"])
        backend.restore(path)  # ...and the checkpoint brings it back
        back = _shard(backend.algo)
        assert backend.algo.shards.sizes == [saved["size"]]
    finally:
        backend.stop()
    assert rows[-1]["learner_updates"] > 0 and rows[-1]["demo_transitions"] == 50
    # R2D3: each batch element a demonstration with probability 1/4
    updates = rows[-1]["learner_updates"]
    share = np.mean([r["demo_share"] for r in rows if r["learner_updates"]])
    assert abs(share - 0.25) < 4 * np.sqrt(0.25 * 0.75 / (updates * 32)), share
    assert all(np.isfinite(r["learner/default_policy/qf_loss"]) for r in rows[2:])
    for k in ("state", "obs", "pad", "actions"):
        np.testing.assert_array_equal(back["_cols"][k], saved["_cols"][k], err_msg=k)
    np.testing.assert_array_equal(back["tree"], saved["tree"])
    ev = evaluation.evaluate(path, evaluation.scenarios(CUE, 20), num_workers=0)
    assert ev.summary["return"]["mean"] >= 0.8, ev.episodes  # chance: 0
