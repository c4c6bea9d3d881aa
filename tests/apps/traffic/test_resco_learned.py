"""RESCO training's own logic (rlsuite.apps.traffic.resco_training): each plan writes its own results file,
the controllers its held-out evaluation scores, the snapshots validation chooses from, and
the sampled PPO policy (seeded, following the softmax of the logits), the action mask's
offset in the plan, one network or one per light. Nothing is trained."""

from __future__ import annotations

import os

import numpy as np

from rlsuite.apps.traffic import resco_scoring
from rlsuite.apps.traffic import resco_training as bench
from rlsuite.apps.traffic.resco_training import RescoSettings as S
from rlsuite.cli_common import parse_sets
from rlsuite.platform import optimizers


class Logits:
    """A controller stand-in whose every light prefers action 2 (p = 0.8 of 3)."""

    name = "fake@1"

    def __init__(self) -> None:
        self.resets: list[int | None] = []

    def reset(self, seed: int | None = None) -> None:
        self.resets.append(seed)

    def action_values(self, obs, agent_id=None) -> np.ndarray:
        return np.log(np.array([0.1, 0.1, 0.8]))


def test_each_plan_writes_its_own_results_file() -> None:
    assert bench.results_stem(S(plan="replay")) == "traffic_resco_learned"
    assert bench.results_stem(S(plan="sync")) == "traffic_resco_learned_sync"
    assert bench.results_stem(S(plan="sync", json="results/x.json")) == "x"


def test_held_out_controllers_per_plan() -> None:
    args = S(plan="sync")
    assert resco_scoring.eval_labels(args, {"plan_name": "sync"}) == [
        "learned", "learned_sampled", "fixed", "greedy", "maxpressure"
    ]  # fmt: skip
    chosen = {"plan_name": "replay", "validation": {"chosen": "/x/iter_000010"}}
    args = S(no_baselines=True)
    assert resco_scoring.eval_labels(args, chosen) == ["learned", "learned_valsel"]
    # a validation that chose nothing (every snapshot crashed SUMO) adds no controller
    assert resco_scoring.eval_labels(
        args, {"plan_name": "replay", "validation": {"chosen": None}}
    ) == ["learned"]


def test_validation_takes_the_newest_snapshots(tmp_path) -> None:
    for it in (5, 10, 15, 20):
        (tmp_path / "snapshots" / f"iter_{it:06d}").mkdir(parents=True)
    (tmp_path / "snapshots" / "iter_000025.tmp").mkdir()  # a copy cut short: never chosen
    args = S(val_snapshots=2)
    got = [os.path.basename(p) for p in resco_scoring.snapshots_to_validate(args, str(tmp_path))]
    assert got == ["iter_000015", "iter_000020"]
    assert resco_scoring.snapshots_to_validate(args, str(tmp_path / "none")) == []


def test_sampled_policy_is_seeded_and_follows_the_softmax() -> None:
    ctrl = Logits()
    pol = resco_scoring.SampledPolicy(ctrl)
    obs = {f"tl{i}": np.zeros(3) for i in range(500)}
    pol.reset(7)
    first = pol.act(obs)
    pol.reset(7)
    assert pol.act(obs) == first  # the episode's seed fixes its actions
    assert ctrl.resets == [7, 7]  # and the wrapped controller is reset too
    share = np.mean([a == 2 for a in first.values()])
    assert 0.7 < share < 0.9, share
    assert set(first.values()) == {0, 1, 2}


def test_the_validation_choice_is_the_maps_policy(tmp_path) -> None:
    """With a validation, the checks, the plot and --ship use the chosen checkpoint's
    held-out row; without one, the final checkpoint's."""
    ev = {"seeds": [1000], "learned": {"delay_mean": 600.0}, "fixed": {"delay_mean": 50.0},
          "maxpressure": {"delay_mean": 34.0}}  # fmt: skip
    state = {"map": "cologne3", "plan_name": "sync", "sumo": "1.9.2", "command": "c",
             "env_config": {}, "chunks": [], "checkpoint": "/r/checkpoints/iter_000070",
             "evaluation": ev}  # fmt: skip
    assert bench.policy_label(ev) == "learned"
    assert bench.policy_checkpoint(state) == "/r/checkpoints/iter_000070"
    row = bench.summarise(str(tmp_path), state)
    assert not row["checks"]["held-out < fixed (same seeds)"]
    ev["learned_valsel"] = {"delay_mean": 23.0}
    state["validation"] = {"seeds": [900], "chosen": "/r/snapshots/iter_000060"}
    assert bench.policy_label(ev) == "learned_valsel"
    assert bench.policy_checkpoint(state) == "/r/snapshots/iter_000060"
    row = bench.summarise(str(tmp_path), state)
    assert row["policy"] == {"label": "learned_valsel", "checkpoint": "/r/snapshots/iter_000060"}
    assert row["checks"]["held-out < fixed (same seeds)"]
    assert row["checks"]["held-out <= RESCO's best learner (23.99)"]


def test_a_tagged_variant_is_reported_apart(tmp_path) -> None:
    for d, tag in (("cologne3_replay_1.9.2_s0", ""), ("cologne3_replay_1.9.2_s0_valsel", "valsel")):
        bench.save_state(str(tmp_path / d), {
            "map": "cologne3", "plan_name": "replay", "sumo": "1.9.2", "command": "c",
            "env_config": {}, "chunks": [], "args": {"tag": tag}})  # fmt: skip
    for tag, want in (
        ("", "cologne3_replay_1.9.2_s0"),
        ("valsel", "cologne3_replay_1.9.2_s0_valsel"),
    ):
        rows = bench.collect(S(report=True, run_root=str(tmp_path), tag=tag))
        assert [os.path.basename(r["run_dir"]) for r in rows] == [want]


def test_action_mask_puts_the_envs_mask_offset_into_the_plan() -> None:
    """``--action-mask``: the shared policy's plan reads each light's mask where the env puts
    it (after the one-hot of its phase: 4 on cologne8, whose lights have 2 to 4 phases)."""
    cfg = {"network": "cologne8"}
    masked = bench.make_plan(S(plan="sync", action_mask=True), cfg, 0, 10)
    assert masked.action_mask_offset == 4
    plain = bench.make_plan(S(plan="replay"), cfg, 0, 10)
    assert plain.action_mask_offset == -1


def test_env_set_reaches_the_env_and_plan_set_the_plan() -> None:
    """``--env-set`` and ``--plan-set`` values are read as JSON where they parse."""
    args = S(env_set=("light_index=true", "reward_fn=queue"), plan_set=("training_intensity=32",))
    assert parse_sets(args.env_set) == {"light_index": True, "reward_fn": "queue"}
    plan = bench.make_plan(args, {"network": "cologne1", **parse_sets(args.env_set)}, 0, 10)
    assert plan.training_intensity == 32
    assert plan.env_config["light_index"] is True


def test_one_network_shared_by_every_light_unless_plan_set_says_per_agent() -> None:
    """The shared network is the default; ``--plan-set policies=per_agent`` gives each light
    its own (RESCO's IDQN), and the plan then names one module per light."""
    cfg = {"network": "cologne8"}
    shared = bench.make_plan(S(plan="replay"), cfg, 0, 10)
    assert shared.policies == "shared"
    args = S(plan="replay", plan_set=("policies=per_agent",))
    per_agent = bench.make_plan(args, cfg, 0, 10)
    assert per_agent.policies == "per_agent"
    assert len(optimizers._policy_mapping(per_agent)[0]) == 8
    assert optimizers._policy_mapping(shared)[0] == ["shared"]
