"""Several RESCO maps as one env (``networks=...``), on real SUMO with short windows: maps in
turn, one padded space for every light, prefixed agent ids, per-map metrics and logs, the
same episode as the map alone, a shared masked policy trained over two maps, bad input."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rlsuite.apps.traffic.envs import signals
from rlsuite.apps.traffic.envs.signals_multimap import RescoMultiMapEnv, padding
from rlsuite.apps.traffic.envs.signals_resco import RescoSignalsEnv
from tests._plans import ppo

SHORT = {"num_seconds": 60}


def _run(env, seed: int, rng) -> tuple[dict, int]:
    obs, _ = env.reset(seed=seed)
    first, steps = obs, 0
    while env.agents:
        env.step({a: int(rng.integers(env.action_space(a).n)) for a in env.agents})
        steps += 1
    return first, steps


def test_maps_in_turn_in_one_padded_space(tmp_path):
    log = tmp_path / "episodes.jsonl"
    env = signals.make_env(networks="cologne1,cologne3", episode_log=str(log), **SHORT)
    try:
        assert isinstance(env, RescoMultiMapEnv)
        assert len(env.possible_agents) == 4  # 1 + 3 lights
        assert all(a.split("/")[0] in ("cologne1", "cologne3") for a in env.possible_agents)
        # each map's env observes in the same padded space (cologne1's light alone has fewer)
        shapes = {e.observation_space(a).shape for e in env.envs for a in e.possible_agents}
        assert shapes == {env.observation_space(env.possible_agents[0]).shape}
        assert {e.action_space(a).n for e in env.envs for a in e.possible_agents} == {4}
        pads = {k: env.single_map_options()[k] for k in ("pad_lanes", "pad_phases")}
        assert padding("cologne1,cologne3") == pads and pads["pad_phases"] == 4
        rng = np.random.default_rng(0)
        seen = []
        for seed in (5, 6, 7):
            _, steps = _run(env, seed, rng)
            assert steps == 6  # 60 s of 10 s decisions
            seen.append((env.network, sorted(env.episode_metrics())))
        assert [n for n, _ in seen] == ["cologne1", "cologne3", "cologne1"]
        assert "delay" in seen[0][1] and env.episode_metrics()["network"] == "cologne1"
        lines = [json.loads(x) for x in log.read_text().splitlines()]
        assert [x["network"] for x in lines] == ["cologne1", "cologne3", "cologne1"]
        assert [x["seed"] for x in lines] == [5, 6, 7]
    finally:
        env.close()


def test_a_map_in_the_multimap_env_is_the_map_alone():
    multi = RescoMultiMapEnv("cologne1,cologne3", **SHORT)
    alone = RescoSignalsEnv(network="cologne1", **multi.single_map_options())
    try:
        m_obs, _ = multi.reset(seed=11)
        a_obs, _ = alone.reset(seed=11)
        assert {k.split("/", 1)[1] for k in m_obs} == set(a_obs)
        for k, v in m_obs.items():
            np.testing.assert_array_equal(v, a_obs[k.split("/", 1)[1]])
        for _ in range(6):
            m_obs, m_r, *_ = multi.step({a: 1 for a in multi.agents})
            a_obs, a_r, *_ = alone.step({a: 1 for a in alone.agents})
        assert {k.split("/", 1)[1]: v for k, v in m_r.items()} == a_r
        assert multi.episode_metrics()["delay"] == alone.episode_metrics()["delay"]
    finally:
        multi.close()
        alone.close()


def test_bad_networks_are_refused_with_what_to_give():
    with pytest.raises(ValueError, match="unknown network 'kolne1'.*cologne1"):
        RescoMultiMapEnv("cologne1,kolne1")
    with pytest.raises(ValueError, match="a map twice"):
        RescoMultiMapEnv(["cologne1", "cologne1"])
    with pytest.raises(ValueError, match="no map"):
        RescoMultiMapEnv(" , ")
    with pytest.raises(ValueError, match="not both"):
        RescoMultiMapEnv("cologne1", network="cologne3")
    with pytest.raises(ValueError, match="light_index numbers the lights of one network"):
        RescoMultiMapEnv("cologne1,cologne3", light_index=True)


@pytest.mark.slow
def test_one_masked_policy_trains_over_two_maps(ray_local, tmp_path):
    """The sync plan with one shared, masked policy samples both maps in one runner (their
    lights in one padded space) and its checkpoint acts on either map alone."""
    from rlsuite.platform import checkpoints, envs, training

    log = tmp_path / "episodes.jsonl"
    cfg = {"networks": "cologne1,cologne3", "episode_log": str(log), **SHORT}
    cfg.update(padding(cfg["networks"]))
    env_id = envs.rllib_env("rlsuite/Signals-v0")
    plan = ppo(
        env_id,
        batch=48,
        minibatch=24,
        epochs=1,
        num_env_runners=1,
        env_config=cfg,
        hidden=(16,),
        seed=0,
        policies="shared",
        action_mask_offset=RescoMultiMapEnv("cologne1", **SHORT).action_mask_offset,
    )
    res = training.train(plan, iterations=1, run_dir=str(tmp_path / "run"), progress=False)
    maps = {json.loads(x)["network"] for x in log.read_text().splitlines()}
    assert maps == {"cologne1", "cologne3"}
    ctl = checkpoints.load_controller(res.checkpoint)
    alone = RescoSignalsEnv(network="cologne3", **{k: cfg[k] for k in ("pad_lanes", "pad_phases")},
                            **SHORT)  # fmt: skip
    try:
        obs, _ = alone.reset(seed=3)
        lights = {x.id: len(x.greens) for x in alone.lights}
        while alone.agents:
            acts = ctl.act(obs)
            assert all(acts[a] < lights[a] for a in acts), acts  # never a masked phase
            obs, *_ = alone.step(acts)
    finally:
        alone.close()


@pytest.mark.slow
def test_cli_trains_on_two_maps_and_scores_the_policy_on_one(ray_local, tmp_path):
    """``traffic-train train --env-set networks=...`` records the maps' common padding in
    its checkpoint, so ``evaluate --env-set network=<one of them>`` observes as it trained."""
    from rlsuite.apps.traffic import cli
    from rlsuite.platform import checkpoints

    run = tmp_path / "run"
    short = ["--env-set", "num_seconds=60", "--workers"]
    rc = cli.main(
        ["train", "--scenario", "signals", "--env-set", "networks=cologne1,cologne3", *short, "1",
         "--plan", "sync", "--iterations", "1", "--plan-set", "train_batch_size=48",
         "--plan-set", "minibatch_size=24", "--plan-set", "num_epochs=1", "--run-dir", str(run)]
    )  # fmt: skip
    assert rc == 0
    trained = checkpoints.metadata(str(run / "checkpoints" / "iter_000001"))["env_config"]
    assert (
        trained["pad_phases"] == 4
        and trained["pad_lanes"] == padding("cologne1,cologne3")["pad_lanes"]
    )
    out = tmp_path / "eval.json"
    rc = cli.main(
        ["evaluate", "--scenario", "signals", "--env-set", "network=cologne1", *short, "0",
         "--controller", str(run), "--episodes", "1", "--json", str(out)]
    )  # fmt: skip
    assert rc == 0
    assert json.loads(out.read_text())["summary"]["delay"]["mean"] > 0
