"""The default decision: measure the candidate rewrites within a time budget, verify, and
keep the original unless a verified candidate is faster.

:class:`MeasuredChooser` is what ``qopt-bench rewrite``, ``run``, ``serve`` and pg_qopt use
when no other chooser is named (Bao's lesson: a cost model's estimate is a hint, a
measured runtime is the answer). Per query:

1. **Candidates**: the shipped or given model's choice, the cost-greedy choice
   (:class:`~rlsuite.apps.queryopt.rewriter.GreedyByCost`), every rule that applies on its
   own, and every query-shape rule followed by each planner arm; each distinct rewrite
   once, those the engine cannot plan left out. After the model's and the greedy choice
   they run cheapest estimate first.
2. **Measure**: the original runs first under a third of the budget (twice when it is fast,
   the second run counting, so the candidates do not win on a warmer cache); the model's
   choice then runs once under the original's time (the learned guess gets one full try: on
   a slow original, passes over every candidate could spend the budget before reaching its
   time); each other candidate runs under the fastest time seen so far (plus 5% and 50 ms),
   within what is left of the budget, in passes under doubling bounds from a sixteenth of
   the original's time (a candidate the estimate calls cheap may be as slow as the original).
3. **Verify**: the fastest candidate at least 10% (and 10 ms) faster than the original is
   rerun once, and the original once more (when it finished and the budget allows), and the
   second time must be faster than the original's best too; then its
   rows are compared (:func:`~rlsuite.apps.queryopt.verify.check_rewrite`): with the
   original's on the same data when the original finished; else against a ``reference``
   (the original's answer on the same tables by DuckDB, :mod:`~rlsuite.apps.queryopt.duckref`:
   equality on the full data), and where that cannot run it, on the small copy
   (``check_schema``: equality there only). A candidate that fails makes way for the next
   fastest.
4. **Decide**: the verified candidate, or the original with the reason (the budget ran
   out, nothing was faster, nothing could be verified).

Other choosers by name (:data:`CHOOSERS`): ``cost`` (cost-greedy, no execution),
``rules`` (fixed rules, ``--rules``), ``model`` (a trained model alone, ``--model``).

Example::

    >>> ch = MeasuredChooser(db, "qopt_tpcds_sf1", budget_s=60,
    ...                      check_schema="qopt_tpcds_sf0_01")             # doctest: +SKIP
    >>> d = ch.rewrite(SLOW_CORRELATED_QUERY)                              # doctest: +SKIP
    >>> d.applied, d.checked_on                                            # doctest: +SKIP
    (('unnest_subqueries',), 'qopt_tpcds_sf0_01')
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rlsuite.apps.queryopt import rules as R
from rlsuite.apps.queryopt.engines.base import DatabaseError
from rlsuite.apps.queryopt.rewriter import Decision, GreedyByCost, Rewriter, apply_rules, catalog
from rlsuite.apps.queryopt.verify import check_rewrite

if TYPE_CHECKING:
    from rlsuite.apps.queryopt.engines.base import Engine, RunResult

CHOOSERS: dict[str, str] = {
    "measured": "measure the candidates within --budget-s, verify, keep the original unless "
    "a verified one is faster (the default)",
    "cost": "each step the rule PostgreSQL's cost estimate finds cheapest (runs nothing)",
    "rules": "the rules of --rules, in order",
    "model": "the trained model of --model alone",
}
"""The choosers by name, with what each does."""
DEFAULT_BUDGET_S = 60.0
"""The default budget: a one-off ``rewrite`` answers within about a minute."""
FASTER = 1.10
"""A candidate replaces the original only when at least 10% faster ..."""
FASTER_MARGIN_S = 0.010
"""... and at least 10 ms faster (one run of a millisecond query is mostly noise)."""
ARMS = ("arm_no_nestloop", "arm_no_hashjoin", "arm_no_mergejoin")
"""The planner arms each query-shape rule is paired with."""
DECORRELATING = ("unnest_subqueries", "decorrelate_scalar", "not_in_exact")
"""The rules whose refusals a decision that keeps the original reports (a user asks why a
subquery was not decorrelated: a volatile function in it, a LIMIT, ...)."""


FULL_DATA = "the full data, by DuckDB (postgres scanner)"
"""``checked_on`` of a rewrite whose rows were compared with DuckDB's answer to the original
on the same tables."""


class FullDataReference:
    """``reference(sql)``: the original's rows computed by DuckDB reading the same
    PostgreSQL tables (:mod:`~rlsuite.apps.queryopt.duckref`), opened on first use and
    interrupted after ``timeout_s``; raises when DuckDB cannot run the query."""

    def __init__(self, dsn: str, schema: str, timeout_s: float):
        self.dsn, self.schema, self.timeout_s = dsn, schema, timeout_s
        self._ctx = None
        self._run = None

    def __call__(self, sql: str) -> list[tuple]:
        if self._run is None:
            from rlsuite.apps.queryopt.duckref import duckdb_on_postgres

            self._ctx = duckdb_on_postgres(self.dsn, self.timeout_s)
            self._run = self._ctx.__enter__()
        return self._run(sql, self.schema)

    def close(self) -> None:
        if self._ctx is not None:
            self._ctx.__exit__(None, None, None)
            self._ctx = self._run = None


def full_data_reference(eng: Engine, schema: str, timeout_s: float) -> FullDataReference | None:
    """The DuckDB reference on ``eng``'s tables of ``schema``, or None without the scanner."""
    from rlsuite.apps.queryopt.duckref import available

    return FullDataReference(eng.dsn, schema, timeout_s) if available() else None


def refusals(q0: R.Query) -> dict[str, str]:
    """Why each of :data:`DECORRELATING` does not apply to ``q0``, where it found something
    to decorrelate (not "the query has no ..."): the reasons a kept original reports."""
    rules = tuple(r for r in R.ALL_RULES if r.name in DECORRELATING)
    return {
        n: why
        for n, why in R.applicable(q0, rules).items()
        if isinstance(why, str) and not why.startswith("the query has no")
    }


def check_chooser(name: str) -> str:
    """``name`` if it is a chooser, else a one-sentence error naming them."""
    if name not in CHOOSERS:
        raise ValueError(f"unknown chooser {name!r}; choosers: {', '.join(CHOOSERS)}")
    return name


def _faster(s: float, original_s: float) -> bool:
    return s * FASTER < original_s and original_s - s >= FASTER_MARGIN_S


@dataclass
class Trace:
    """What :meth:`MeasuredChooser.decide` measured, for a benchmark's record."""

    original_s: float | None = None
    """The original's time (the bound when it ran past it)."""
    original_timed_out: bool = False
    runs: int = 0
    """Candidate runs while measuring."""
    tried: dict[tuple[str, ...], float | None] = field(default_factory=dict)
    """Each measured candidate's last time, None when it ran past its last bound."""
    chosen_s: float | None = None
    """The chosen rewrite's time on its rerun (None: the original stays)."""
    model_choice: tuple[str, ...] | None = None
    """The model's choice, measured first under the original's time (None: no model)."""


class _Clock:
    def __init__(self, deadline: float):
        self.deadline = deadline

    def left_ms(self) -> int:
        return int((self.deadline - time.perf_counter()) * 1000)


@dataclass
class _Run:
    seq: tuple[str, ...]
    query: R.Query
    result: RunResult


class MeasuredChooser:
    """Measure, verify, keep the original unless a verified candidate is faster (module doc).

    ``check`` in :meth:`rewrite` is ignored: every rewrite this chooser returns has had its
    rows compared (``rows_match`` True, ``checked_on`` says where).
    """

    def __init__(
        self,
        db: Engine,
        schema: str,
        settings: Mapping[str, str] | None = None,
        timeout_ms: int = 60_000,
        check_schema: str | None = None,
        budget_s: float = DEFAULT_BUDGET_S,
        model: Rewriter | None = None,
        rules: Sequence[str] = (),
        reference: Callable[[str], Sequence[tuple]] | None = None,
        reference_label: str = "reference",
    ):
        if not budget_s > 0:
            raise ValueError(f"the budget must be > 0 seconds, got {budget_s}")
        for n in rules:
            R.get(n)  # unknown names fail here, with the list of rules
        self.db, self.schema = db, schema
        self.settings = dict(settings or {})
        self.timeout_ms = int(timeout_ms)
        self.check_schema = check_schema
        self.budget_s = float(budget_s)
        self.model = model
        self.rules = tuple(rules)
        self.reference, self.reference_label = reference, reference_label
        self.name = f"measured (budget {self.budget_s:g} s)"
        self.last = Trace()
        """What the last decision measured."""

    # ------------------------------------------------------------------ candidates
    def candidates(
        self,
        sql: str,
        q0: R.Query | None = None,
        sequences: Sequence[Sequence[str]] | None = None,
    ) -> dict[tuple[str, ...], R.Query]:
        """The candidate rewrites of ``sql`` in the order they are measured (module doc, 1);
        ``sequences``: these rule sequences instead, in their order (a benchmark's fixed
        candidate set), those that apply in full and plan."""
        q0 = q0 or R.Query.parse(sql, catalog(self.db, self.schema))
        if sequences is not None:
            first, rest = [tuple(s) for s in sequences], []
        else:
            first, rest = self._sequences(sql, q0)
        seen = {q0.key()}
        head: list[tuple[tuple[str, ...], R.Query]] = []
        tail: list[tuple[float, tuple[str, ...], R.Query]] = []
        for i, seq in enumerate(first + rest):
            if not seq:
                continue
            q, why = apply_rules(q0, seq)
            if why or q.applied != seq or q.key() in seen:
                continue
            seen.add(q.key())
            try:
                plan = self.db.explain(q.sql(), self.schema, {**self.settings, **q.settings_dict})
            except Exception:  # noqa: BLE001 - a rewrite the engine rejects is no candidate
                continue
            if i < len(first):
                head.append((seq, q))
            else:
                tail.append((self.db.estimated_cost(plan), seq, q))
        tail.sort(key=lambda t: t[0])
        return dict(head + [(seq, q) for _, seq, q in tail])

    def _sequences(
        self, sql: str, q0: R.Query
    ) -> tuple[list[tuple[str, ...]], list[tuple[str, ...]]]:
        """The model's and the greedy choice (or ``rules``), and the rest of the candidates."""
        first: list[tuple[str, ...]] = []
        if self.model is not None:
            try:
                first.append(tuple(self.model.rewrite(sql, check=False).applied))
                self.last.model_choice = first[-1] or None
            except Exception:  # noqa: BLE001 - a model error: its choice is no candidate
                pass
        if self.rules:
            return [*first, self.rules], [(n,) for n in self.rules]
        try:
            first.append(tuple(GreedyByCost(self.db, self.schema, self.settings).choose(sql)))
        except Exception:  # noqa: BLE001 - the engine cannot cost it: no greedy candidate
            pass
        alone = [n for n, q in R.applicable(q0, R.ALL_RULES).items() if isinstance(q, R.Query)]
        rest = [(n,) for n in alone]
        rest += [(n, a) for n in alone if n not in ARMS for a in ARMS]
        return first, rest

    # ------------------------------------------------------------------ decision
    def rewrite(self, sql: str, check: bool = True) -> Decision:
        return self.decide(sql)

    def decide(
        self,
        sql: str,
        sequences: Sequence[Sequence[str]] | None = None,
        original: RunResult | None = None,
    ) -> Decision:
        """The decision for ``sql`` (module doc); :attr:`last` says what was measured.

        ``sequences``: the candidates' rule sequences (:meth:`candidates`); ``original``: the
        original's run on ``schema`` under ``timeout_ms`` when the caller has it already
        (then it does not run again before the candidates)."""
        start = time.perf_counter()
        self.last = Trace()
        keep = Decision(sql, dict(self.settings))
        try:
            q0 = R.Query.parse(sql, catalog(self.db, self.schema))
            cands = self.candidates(sql, q0, sequences)
        except R.UnsupportedQuery as e:
            keep.reasons["*"] = str(e)
            return keep
        keep.reasons.update(refusals(q0))
        if not cands:
            keep.reasons["*"] = "no rewrite applies that PostgreSQL can plan; kept the original"
            return keep
        clock = _Clock(start + self.budget_s)
        cap = max(1, min(self.timeout_ms, int(self.budget_s * 1000 / 3)))
        if original is not None:
            orig, cap = original, self.timeout_ms
        else:
            try:
                orig = self.db.run(sql, self.schema, cap, self.settings)
                if (
                    not orig.timed_out
                    and orig.runtime_s * 1000 < cap / 4
                    and clock.left_ms() > cap / 2
                ):
                    orig = self.db.run(sql, self.schema, cap, self.settings)  # the warm run counts
            except DatabaseError as e:
                keep.reasons["*"] = f"the original fails: {e}"
                return keep
        orig_s = cap / 1000 if orig.timed_out else orig.runtime_s
        self.last.original_s, self.last.original_timed_out = orig_s, orig.timed_out
        done, ran_out = self._measure(cands, orig_s, cap, clock)
        spent = time.perf_counter() - start
        orig_text = f"past {orig_s:.3f} s" if orig.timed_out else f"{orig_s:.3f} s"
        note = (
            f"original {orig_text}; {len(cands)} candidates, {self.last.runs} runs in {spent:.1f} s"
        )
        faster = sorted(
            (x for x in done if orig.timed_out or _faster(x.result.runtime_s, orig_s)),
            key=lambda x: x.result.runtime_s,
        )
        if not faster:
            if not done and ran_out:
                keep.reasons["*"] = (
                    f"the budget of {self.budget_s:g} s ran out before any candidate was "
                    f"measured faster ({note}); kept the original"
                )
            else:
                keep.reasons["*"] = (
                    f"no candidate ran at least 10% faster ({note}); kept the original"
                )
            return keep
        d = self._verified(sql, faster, orig, cap, clock, note)
        if isinstance(d, str):
            keep.reasons["*"] = d
            return keep
        return d

    def _measure(
        self, cands: Mapping[tuple[str, ...], R.Query], orig_s: float, cap: int, clock: _Clock
    ) -> tuple[list[_Run], bool]:
        """Each candidate timed (module doc, 2): those that finished, and whether the budget
        ran out."""
        done: list[_Run] = []
        best_s = orig_s
        trusted = self.last.model_choice
        if trusted in cands and clock.left_ms() > 0:
            # the model's choice: one run under the original's time, not the passes' bounds
            q = cands[trusted]
            bound = min(self.timeout_ms, clock.left_ms(), int(best_s * 1050 + 50))
            self.last.runs += 1
            try:
                r = self.db.run(q.sql(), self.schema, bound, {**self.settings, **q.settings_dict})
                self.last.tried[trusted] = None if r.timed_out else r.runtime_s
                if not r.timed_out:
                    done.append(_Run(trusted, q, r))
                    best_s = min(best_s, r.runtime_s)
            except DatabaseError:
                pass
        # passes under doubling bounds, from a sixteenth of the original's time: the big wins
        # are found cheaply whatever the order (a candidate the estimate calls cheap may be as
        # slow as the original), and no later bound passes the fastest time seen
        passes = [max(50, int(orig_s * 1000 / 16))]
        while passes[-1] < cap:
            passes.append(min(cap, passes[-1] * 2))
        pending = [(seq, q, 0) for seq, q in cands.items() if seq not in self.last.tried]
        for pass_ms in passes:
            again = []
            for seq, q, before in pending:
                if clock.left_ms() <= 0:
                    return done, True
                bound = min(self.timeout_ms, clock.left_ms(), pass_ms, int(best_s * 1050 + 50))
                if bound <= before:
                    continue  # timed out at this bound already
                if bound < 1:
                    return done, True
                self.last.runs += 1
                try:
                    r = self.db.run(
                        q.sql(), self.schema, bound, {**self.settings, **q.settings_dict}
                    )
                except DatabaseError:
                    continue
                if r.timed_out:
                    self.last.tried[seq] = None
                    again.append((seq, q, bound))
                    continue
                self.last.tried[seq] = r.runtime_s
                done.append(_Run(seq, q, r))
                best_s = min(best_s, r.runtime_s)
            pending = again
            if not pending:
                break
        return done, False

    def _verified(
        self, sql: str, faster: list[_Run], orig: RunResult, cap: int, clock: _Clock, note: str
    ) -> Decision | str:
        """The first of the ``faster`` candidates (at most 3) that a rerun finds faster and
        whose rows match (module doc, 3), else why none."""
        orig_s = orig.runtime_s
        why = ""
        for x in faster[:3]:
            new_sql, new_settings = x.query.sql(), {**self.settings, **x.query.settings_dict}
            b = x.result
            if not orig.timed_out:
                # scored on a rerun, against the original run once more: a rewrite is
                # faster than the original's best time, not than one unlucky run of it
                b = self.db.run(new_sql, self.schema, cap, new_settings)
                if not b.timed_out and orig_s * 1000 < clock.left_ms():
                    again = self.db.run(sql, self.schema, cap, self.settings)
                    if not again.timed_out and again.runtime_s < orig_s:
                        orig, orig_s = again, again.runtime_s
                if b.timed_out or not _faster(b.runtime_s, orig_s):
                    why = f"{'+'.join(x.seq)} was not faster on a second run"
                    continue
            v = check_rewrite(
                self.db,
                self.schema,
                sql,
                new_sql,
                self.settings,
                new_settings,
                cap,
                self.check_schema,
                self.reference,
                self.reference_label,
                measured=(orig, b),
                reference_first=True,
            )
            if not v.keep:
                why = f"{'+'.join(x.seq)}: {v.reason}"
                continue
            self.last.chosen_s = b.runtime_s
            return Decision(
                new_sql,
                new_settings,
                x.query.applied,
                {"measured": f"{note}; chose {'+'.join(x.seq)} at {b.runtime_s:.3f} s"},
                rows_match=True,
                checked_on=v.checked_on,
            )
        return f"no faster candidate could be verified ({note}; {why}); kept the original"

    def close(self) -> None:
        if self.model is not None:
            self.model.close()
        close = getattr(self.reference, "close", None)
        if close is not None:
            close()
