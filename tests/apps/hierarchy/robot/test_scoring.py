"""The robot benchmark's pass criteria on hand-made sweep rows (pure logic)."""

from rlsuite.apps.hierarchy.robot import scoring


def _rows(success: dict[int, dict[str, float]]) -> list[dict]:
    return [{"demos": n, "success": s} for n, s in sorted(success.items())]


def test_pick_place_needs_90_at_20_and_half_the_demos_of_flat_cloning():
    rows = _rows({
        5: {"hierarchical-strong": 0.7, "flat": 0.1},
        10: {"hierarchical-strong": 0.95, "flat": 0.5},
        20: {"hierarchical-strong": 1.0, "flat": 0.95},
    })  # fmt: skip
    crit = scoring.pick_place_criteria(rows)
    assert crit["strong >= 90% at 20 demos"]["pass"]
    assert crit["hierarchical-strong ahead of flat at every count"]["pass"]
    fewer = crit["hierarchical-strong: >= 2x fewer demos than flat at 90%"]
    assert fewer["value"] == {"flat": 20, "hierarchical-strong": 10, "ratio": 2.0}
    assert fewer["pass"]
    no_flat = scoring.pick_place_criteria(_rows({20: {"hierarchical-strong": 0.8}}))
    assert (
        list(no_flat) == ["strong >= 90% at 20 demos"]
        and not no_flat["strong >= 90% at 20 demos"]["pass"]
    )


def test_long_tasks_judge_the_expert_and_weak_supervision_and_only_report_flat():
    rows = _rows({20: {"hierarchical-weak": 0.85, "flat": 0.02}})
    crit = scoring.long_criteria(rows, expert=0.96)
    assert crit["expert >= 90%"]["pass"] and crit["weak >= 80% at 20 demos"]["pass"]
    assert crit["flat BC (reported)"] == {"value": {20: 0.02}, "pass": None}


def test_reuse_beats_scratch_unless_scratch_needs_the_fewest_demos():
    assert scoring.reuse_criterion({"reuse": 1, "scratch": 5})["pass"] is True
    assert scoring.reuse_criterion({"reuse": None, "scratch": None})["pass"] is False
    assert scoring.reuse_criterion({"reuse": 1, "scratch": 1}, fewest=1)["pass"] is None


def test_imperfect_demos_may_cost_weak_supervision_at_most_10_points():
    def row(condition, weak):
        return {"condition": condition, "expert_success": 0.9, "success": {"strong": 0.9, "weak": weak},
                "weak_recovered": {"calls_and_objects": 1.0}}  # fmt: skip

    res = [
        {
            "config": {"task": "sort"},
            "rows": [row("clean", 0.95), row("noise", 0.9), row("all", 0.8)],
        }
    ]
    crit, table = scoring.imperfect_criteria(res)
    assert crit["sort noise: weak loses <= 10 points"]["pass"]
    assert not crit["sort all: weak loses <= 10 points"]["pass"]
    assert [r["condition"] for r in table] == ["clean", "noise", "all"]
