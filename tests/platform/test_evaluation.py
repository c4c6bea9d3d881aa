"""Evaluation: parallel, deterministic for fixed seeds, env metrics, clear errors."""

import pytest

from rlsuite.platform import evaluation
from tests.platform._fakes import RandomCartPole


def _strip(rows):
    return [{k: v for k, v in r.items() if k != "wall_s"} for r in rows]


def test_same_seeds_same_numbers_in_parallel_and_in_process(ray_local):
    scen = evaluation.scenarios("CartPole-v1", range(6))
    a = evaluation.evaluate(RandomCartPole(), scen, num_workers=2)
    b = evaluation.evaluate(RandomCartPole(), scen, num_workers=2)
    c = evaluation.evaluate(RandomCartPole(), scen, num_workers=0)
    assert _strip(a.episodes) == _strip(b.episodes) == _strip(c.episodes)
    assert [r["seed"] for r in a.episodes] == list(range(6))  # rows in scenario order
    assert len({r["return"] for r in a.episodes}) > 1  # the seeds really differ


def test_env_metrics_and_summary_per_scenario(ray_local):
    class Oracle:
        def act(self, obs):
            return int(obs.argmax())

    scen = evaluation.scenarios(
        "rlsuite-test/Identity-v0", 3, {"n": 3}, name="n3"
    ) + evaluation.scenarios("rlsuite-test/Identity-v0", 3, {"n": 5}, name="n5")
    res = evaluation.evaluate(Oracle, scen, num_workers=2)  # a factory, built per worker
    assert res.summary["hit_rate"]["mean"] == 1.0
    assert res.summary["return"]["mean"] == 20.0
    per = res.by_scenario()
    assert set(per) == {"n3", "n5"} and per["n5"]["length"]["n"] == 3
    table = res.table(["return", "hit_rate"])
    assert table.row_count == 2


def test_json_output(tmp_path):
    res = evaluation.evaluate(
        RandomCartPole(), evaluation.scenarios("CartPole-v1", 2), num_workers=0
    )
    out = tmp_path / "r.json"
    res.to_json(str(out))
    import json

    data = json.loads(out.read_text())
    assert len(data["episodes"]) == 2 and "return" in data["summary"]


def test_bad_input_is_explained():
    with pytest.raises(ValueError, match="no scenarios"):
        evaluation.evaluate(RandomCartPole(), [], num_workers=0)
    with pytest.raises(ValueError, match="unknown env id"):
        evaluation.evaluate(RandomCartPole(), [evaluation.Scenario("Nope-v9")], num_workers=0)
    with pytest.raises(TypeError, match="act\\(obs\\)"):
        evaluation.evaluate(42, evaluation.scenarios("CartPole-v1", 1), num_workers=0)
    with pytest.raises(FileNotFoundError, match="not an rlsuite checkpoint"):
        evaluation.evaluate(
            "/nonexistent/run", evaluation.scenarios("CartPole-v1", 1), num_workers=0
        )
