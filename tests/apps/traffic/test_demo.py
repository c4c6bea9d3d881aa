"""`make demo`'s traffic section: the shipped from-scratch policies beside the baselines."""

from __future__ import annotations

import os

import pytest

from rlsuite.apps.traffic import demo, scenarios
from rlsuite.platform import checkpoints, envs
from rlsuite.platform.checkpoints.fit import check_fits


def test_every_demo_policy_is_shipped_and_fits_its_scenario():
    """The demo's policies exist, and each can act on the env the demo gives it (as
    ``traffic-train evaluate`` builds it: the checkpoint's policy fields added)."""
    policies = [c for c in demo.cases() if c.controller not in scenarios.get(c.scenario).baselines]
    policies = [c for c in policies if c.controller != demo.NO_AV]
    assert {c.controller for c in policies} == {
        "ring_es_gru_scratch_p025", "ring_2lane_es", "merge_es", "figure_eight_2_es",
        demo.RESCO_POLICY,
    }  # fmt: skip
    for c in policies:
        path = os.path.join(demo.POLICIES, c.controller)
        meta = checkpoints.metadata(path)
        assert not meta["plan_config"].get("demonstrations")  # nothing but its own experience
        if c.scenario != "signals":  # the RESCO policy's note is its benchmark command
            assert "from scratch" in meta["note"].lower()
        scen = scenarios.get(c.scenario)
        cfg = scenarios.with_policy_fields(scen.env_id, dict(c.env_config), path)
        check_fits(path, scen.env_id, envs.spaces(scen.env_id, cfg), cfg)
    # every task compares its policy with the traffic it improves on, or with the
    # hand-written controllers a user already has (signals: greedy and max-pressure)
    tasks = {c.task for c in demo.cases()}
    for t in tasks:
        labels = [c.label for c in demo.cases() if c.task == t]
        assert any(lab.startswith("all-human") or "hand-written" in lab for lab in labels)
        assert any(lab.startswith("learned from scratch") for lab in labels)
    signals = [c.label for c in demo.cases() if c.scenario == "signals"]
    assert signals == [
        "greedy (hand-written)", "max-pressure (hand-written)",
        f"learned from scratch (DQN, {demo.RESCO_POLICY})",
    ]  # fmt: skip


def _short(case: demo.Case, png_dir) -> demo.Case:
    """The demo's episode cut to a few seconds of simulated traffic."""
    from dataclasses import replace

    if case.scenario == "signals":
        cfg = {**case.env_config, "num_seconds": 60}
    else:
        cfg = {**case.env_config, "horizon": 40, "warmup_steps": 0}
    if case.scenario == "ring":
        cfg["measure_after"] = 0
    png = str(png_dir / os.path.basename(case.png)) if case.png else ""
    return replace(case, env_config=cfg, png=png)


def test_short_run_gives_table_rows_and_space_time_pngs(ray_local, tmp_path):
    first = {}
    for c in demo.cases():  # one episode of every (task, controller): the seeds repeat
        first.setdefault((c.task, c.label), c)
    cases = [_short(c, tmp_path) for c in first.values()]
    rows = demo.run(cases)
    assert [(r["task"], r["controller"]) for r in rows] == list(first)
    assert all(r["app"] == "traffic" for r in rows)
    assert [r["metric"] for r in rows if r["task"].startswith("RESCO")] == ["delay"] * 3
    assert all(r["metric"] == "mean_speed" for r in rows if not r["task"].startswith("RESCO"))
    assert all(isinstance(r["value"], float) and r["value"] >= 0 for r in rows)
    learned = [r for r in rows if r["controller"].startswith("learned")]
    speeds = [r for r in learned if r["metric"] == "mean_speed"]
    assert len(learned) == 5 and all("x all-human here" in r["reference"] for r in speeds)
    pngs = [p for r in rows for p in r["pngs"]]
    assert len(pngs) == sum(bool(c.png) for c in cases) == 5
    for p in pngs:
        with open(p, "rb") as f:
            assert f.read(4) == b"\x89PNG"


def test_a_policy_on_the_wrong_scenario_is_refused_before_its_episode():
    bad = demo.Case("ring", "figure_eight", "ring_es_gru_scratch_p025", "learned")
    with pytest.raises(ValueError, match="cannot go to policy ring_es_gru_scratch_p025"):
        demo.run_case(bad)
