"""PI's demonstrations on the multi-AV ring (real SUMO): recorded AV by AV with PI's own
actions, and ``traffic_ring_multi --plan sync --demonstrations N`` in quick form, which
clones them into one shared policy before PPO."""

from __future__ import annotations

import json
import os
import re

import numpy as np
import pytest

from rlsuite.apps.traffic import scenarios
from rlsuite.apps.traffic.controllers import PISaturation
from rlsuite.bench import registry, runner
from rlsuite.platform import checkpoints, demo_sources, demonstrations, envs

ENV_ID = "rlsuite/RingMulti-v0"
SMALL = dict(num_avs=3, ring_length=230, warmup_steps=0, horizon=300, bunching=20.0)
"""3 AVs on a ring bunched by 20 m, driven from t = 0 for 300 steps (30 s)."""


def _pi_on_every_av():
    return scenarios.controller_for(scenarios.get("ring_multi"), "pi", SMALL)[0]


def test_pi_on_every_av_is_recorded_av_by_av_with_pis_own_actions(tmp_path):
    path = str(tmp_path / "pi.parquet")
    info = demonstrations.record_episodes(_pi_on_every_av(), ENV_ID, 2, path, SMALL, seed=10_000)
    data = demo_sources.load(path)
    avs = sorted(envs.spaces(ENV_ID, SMALL))
    assert len(avs) == 3 and info["episodes"] == 6 and info["transitions"] == 2 * 3 * 300
    assert sorted(set(data["agent_id"])) == avs
    assert np.bincount(data["episode"]).tolist() == [300] * 6  # one episode per AV and run
    assert data["truncateds"].sum() == 6 and data["actions"].std() > 0.05
    firsts = set()
    for ep in range(6):
        rows = data["episode"] == ep
        assert len(set(data["agent_id"][rows])) == 1
        firsts.add(tuple(data["obs"][rows][0].round(4)))
        # a fresh PI fed this AV's recorded observations in order answers every recorded
        # action: they are PI's, for this AV (its own speed history), not another's
        pi = PISaturation()
        again = np.concatenate([pi.act(o) for o in data["obs"][rows]])
        np.testing.assert_allclose(again, data["actions"][rows].ravel(), atol=1e-6)
    assert len(firsts) == 6  # every AV of every run starts from its own observation


def test_dagger_labels_pi_on_the_states_another_driver_reaches(tmp_path):
    """With a driver, the driver's actions step the ring and PI (labelling) answers on the
    states it reaches: the recording holds PI's labels on IDM's trajectory."""
    idm = scenarios.controller_for(scenarios.get("ring_multi"), "idm", SMALL)[0]
    path, own = str(tmp_path / "dagger.parquet"), str(tmp_path / "pi.parquet")
    info = demonstrations.record_episodes(
        scenarios.pi_labeller(), ENV_ID, 1, path, SMALL, seed=10_000, driver=idm
    )
    demonstrations.record_episodes(_pi_on_every_av(), ENV_ID, 1, own, SMALL, seed=10_000)
    data, pi_run = demo_sources.load(path), demo_sources.load(own)
    assert info["transitions"] == 3 * 300 and sorted(set(data["agent_id"])) == [
        "av_0",
        "av_1",
        "av_2",
    ]
    # the same seed, another driver: the AVs' states part from PI's own run
    assert np.abs(data["obs"][:, 0] - pi_run["obs"][:, 0]).max() > 0.05
    for ep in set(data["episode"]):
        rows = data["episode"] == ep
        pi = PISaturation(labelling=True)  # PI's answer on each state IDM reached, in order
        again = np.concatenate([pi.act(o) for o in data["obs"][rows]])
        np.testing.assert_allclose(again, data["actions"][rows].ravel(), atol=1e-6)
    with pytest.raises(ValueError, match="needs a multi-agent env"):
        demo_sources.record(PISaturation(), "rlsuite/Ring-v0", 1, path, driver=PISaturation())


def _bench_run(tmp_path, monkeypatch, argv) -> int:
    """``rlsuite bench run traffic_ring_multi --quick ARGV`` writing under ``tmp_path``,
    evaluated with 3 AVs at 230 m only."""
    decl = registry.load()
    module = decl.modules["traffic_ring_multi"]
    monkeypatch.chdir(tmp_path)  # a quick run writes under runs/bench-quick here
    monkeypatch.setattr(module, "COUNTS", (3,))
    monkeypatch.setattr(module, "LENGTHS", (230,))
    env = [f"--env-set={k}={v}" for k, v in SMALL.items() if k not in ("num_avs", "ring_length")]
    argv = ["--quick", "--no-lock", "--minutes", "0", *env, *argv]
    return runner.run(decl.get("traffic_ring_multi"), module, argv)


@pytest.mark.slow
def test_quick_run_clones_pi_on_every_av_into_the_shared_policy_before_ppo(
    tmp_path, monkeypatch, capsys
):
    plan = ["train_batch_size=300", "minibatch_size=150", "num_epochs=1", "demo_epochs=300"]
    # with memory: the policy's memory_s must reach validation and the final evaluation (PI's
    # own 38 s, so that PI's answer, the DAgger round's labels too, is a function of the state)
    # recorded at 3 and 4 AVs: the fourth AV, which the 3-AV training env lacks, teaches the
    # one shared module too
    argv = ["--plan", "sync", "--demonstrations", "1", "--demo-avs", "3", "4", "--validate"]
    argv += ["--env-set=memory_s=38", "--dagger", "1", "--dagger-episodes", "1"]
    argv += [f"--plan-set={p}" for p in plan]
    assert _bench_run(tmp_path, monkeypatch, argv) in (0, 1)  # 1: the check failed
    out = capsys.readouterr().out
    first, last = map(
        float, re.search(r"nll (\S+) in the first pass, (\S+) in the last", out).groups()
    )
    assert last < first - 0.5, (first, last)
    assert "cloned 2100 demonstrated transitions" in out  # 1 episode x (3 + 4) AVs x 300 steps
    # one DAgger round: that clone drove 1 episode at 3 and 1 at 4 AVs, PI labelled them,
    # and the sync plan cloned the aggregate before PPO
    assert len(re.findall(r"DAgger round 1: the clone drove 1 episodes", out)) == 2
    assert "cloned 4200 demonstrated transitions" in out
    res = json.loads(
        (tmp_path / "runs/bench-quick/results/traffic/traffic_ring_multi.json").read_text()
    )
    assert res["training"] == "with demonstrations (PI)" and res["from_scratch"] is False
    assert res["plan"]["demonstrations"].endswith("demonstrations.parquet")
    assert [(r["avs"], r["ring_length"]) for r in res["rows"]] == [(3, 230)]
    row = res["rows"][0]
    assert row["clone"] > 0 and row["learned"] > 0
    # --validate scored the clone (iteration 0), then the chunk's checkpoint, on seeds of
    # its own, against PI there, and the one reported as learned is the better of the two
    val = res["validation"]
    assert val["seeds"] == [500] and val["pi"]["230"] > 0
    assert [v["iteration"] for v in val["scores"]] == [0] + [c["iteration"] for c in res["curve"]]
    assert val["best"] == max(val["scores"], key=lambda v: v["score"])
    assert res["learned"].endswith("best") and res["learned"] != res["checkpoint"]
    assert os.path.isabs(res["learned"]) and os.path.isabs(res["clone"])  # for Ray workers
    data = demo_sources.load(res["plan"]["demonstrations"])
    assert res["env_config"]["memory_s"] == 38 and data["obs"].shape[1] == 5  # 3 + memory
    assert sorted(set(data["agent_id"])) == ["av_0", "av_1", "av_2", "av_3"]
    assert len(set(data["episode"])) == 14  # no episode id twice across the four recordings
    own, more = slice(0, 2100), slice(2100, None)  # PI's own recordings, then DAgger's labels

    def error(path, rows):  # the clone's median |action - recorded action| on those rows
        c = checkpoints.load_controller(path)
        acts = np.concatenate([c.act({"av_0": o})["av_0"] for o in data["obs"][rows]])
        return np.median(np.abs(acts - data["actions"][rows].ravel()))

    # on PI's own observations the round's clone acts as PI did: its typical error is a
    # fraction of the typical spread of PI's actions
    pi = data["actions"][own].ravel()
    first = os.path.join(os.path.dirname(res["clone"]), "dagger1", "clone")
    err, spread = error(first, own), np.median(np.abs(pi - np.median(pi)))
    assert err < 0.5 * spread, (err, spread)
    # on the states that clone drove into, PI answers otherwise than it acts (DAgger's
    # point); the clone of the aggregate, the one PPO starts from, learnt those answers
    drift = error(first, more)
    assert drift > err and error(res["clone"], more) < 0.7 * drift, (err, drift)


def test_demonstrations_are_refused_for_es_before_anything_is_recorded(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="use --plan sync"):
        _bench_run(tmp_path, monkeypatch, ["--plan", "es", "--demonstrations", "1"])
    assert not (tmp_path / "runs/bench-quick/traffic_ring_multi").exists()


def test_keep_best_scores_the_first_folder_once_then_each_checkpoint_and_keeps_the_best(tmp_path):
    from types import SimpleNamespace

    from rlsuite.apps.traffic.benchmarking import KeepBest

    ckpt, clone = tmp_path / "checkpoint", tmp_path / "clone"
    clone.mkdir()
    (clone / "who").write_text("clone")
    keep = KeepBest(str(tmp_path / "best"), lambda p: scores.pop(0), first=str(clone))
    ckpt.mkdir()
    scores = [0.9, 0.8, 0.95, 0.7]  # clone, it 1, it 2, it 3
    for it in (1, 2, 3):
        (ckpt / "who").write_text(f"it {it}")  # one checkpoint folder, rewritten each chunk
        keep(SimpleNamespace(checkpoint=str(ckpt), iterations=it))
        if it == 1:  # the clone beat the first chunk: it is the one kept
            assert (tmp_path / "best" / "who").read_text() == "clone"
    assert [h["iteration"] for h in keep.history] == [0, 1, 2, 3] and not scores
    assert keep.best == dict(iteration=2, score=0.95)
    assert (tmp_path / "best" / "who").read_text() == "it 2"
