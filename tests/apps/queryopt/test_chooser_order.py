"""The measured chooser's order of runs (pure logic, on a scripted engine): the model's choice
gets one run under the original's time before the passes, so a slow original's learned fix is
found within a budget that passes over every candidate would spend first."""

from __future__ import annotations

from rlsuite.apps.queryopt.choosers import MeasuredChooser, Trace, _Clock
from rlsuite.apps.queryopt.engines.base import RunResult


class _Query:
    def __init__(self, sql: str):
        self._sql, self.settings_dict = sql, {}

    def sql(self) -> str:
        return self._sql


class _Scripted:
    """Each statement takes its scripted seconds; a run under a smaller bound times out
    after the bound. ``spent`` sums the seconds the runs would take."""

    def __init__(self, seconds: dict[str, float]):
        self.seconds, self.spent, self.bounds = seconds, 0.0, []

    def run(self, sql, schema, timeout_ms, settings=None):
        s = self.seconds[sql]
        self.bounds.append((sql, timeout_ms))
        if s * 1000 > timeout_ms:
            self.spent += timeout_ms / 1000
            return RunResult(None, timeout_ms / 1000, timed_out=True)
        self.spent += s
        return RunResult([], s)


class _EngineClock(_Clock):
    """A clock on the scripted engine's seconds, not the wall's."""

    def __init__(self, db: _Scripted, budget_s: float):
        self.db, self.budget_s = db, budget_s

    def left_ms(self) -> int:
        return int((self.budget_s - self.db.spent) * 1000)


def _measure(model_choice):
    # a slow original (past its 20 s bound) and eleven candidates: ten as slow as it, one
    # (the model's choice) at 5.3 s; 40 s of budget left after the original's run
    seconds = {f"c{i}": 300.0 for i in range(10)} | {"fix": 5.3}
    db = _Scripted(seconds)
    ch = MeasuredChooser(db, "s", timeout_ms=300_000, budget_s=60)
    ch.last = Trace(model_choice=model_choice)
    cands = {(f"r{i}",): _Query(f"c{i}") for i in range(10)} | {("fix", "arm"): _Query("fix")}
    done, ran_out = ch._measure(cands, 20.0, 20_000, _EngineClock(db, 40.0))
    return done, ran_out, db, ch


def test_the_models_choice_runs_first_under_the_originals_time():
    done, _, db, ch = _measure(("fix", "arm"))
    assert db.bounds[0] == ("fix", 21_050)
    assert [x.seq for x in done] == [("fix", "arm")] and ch.last.tried[("fix", "arm")] == 5.3
    assert all(sql != "fix" for sql, _ in db.bounds[1:])  # not run again in the passes


def test_without_a_model_the_passes_spend_the_budget_before_the_fix():
    # the passes' doubling bounds (1.25 s, 2.5 s, ...) over eleven candidates run out first
    done, _, db, _ = _measure(None)
    assert done == []
    assert max(b for _, b in db.bounds) < 5_300


def test_a_model_choice_slower_than_the_original_is_not_measured_again():
    done, _, db, ch = _measure(("r0",))
    assert db.bounds[0] == ("c0", 21_050) and ch.last.tried[("r0",)] is None
    assert done == [] and all(sql != "c0" for sql, _ in db.bounds[1:])
