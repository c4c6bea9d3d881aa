"""What the rewrite MDP needs from each engine: its actions, featurizer, queries and checks.

The env (:class:`~rlsuite.apps.queryopt.envs.rewrite.QueryRewriteEnv`), the trainer
and :class:`~rlsuite.apps.queryopt.train.LearnedRewriter`, and ``qopt-bench`` are each
written once over the :class:`~rlsuite.apps.queryopt.engines.base.Engine` protocol;
what differs between engines is one :class:`RewriteSpace` each, here:

- PostgreSQL (:class:`PostgresSpace`): the rules of :mod:`~rlsuite.apps.queryopt.rules`
  (planner arms included) and the ``EXPLAIN (FORMAT JSON)`` featurizer; a rewrite's rows
  are compared when asked (``--check``);
- Spark (:class:`SparkSpace`): the actions of :mod:`~rlsuite.apps.queryopt.spark_rules`
  (the rules through Spark's dialect, join hints, AQE switches) and Spark's featurizer;
  every rewrite's rows are compared with Spark's own answer (in training and in use), a
  rewrite Spark cannot plan is featurized with an empty plan.

On both, the trained policy takes its best action among STOP and those that apply.

Example::

    >>> space_of("postgres").defaults["reward"], space_of("spark").defaults["reward"]
    ('runtime', 'relative')
    >>> "hint_broadcast_1" in space_of("spark").names, "arm_no_nestloop" in space_of("spark").refused
    (True, True)
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from rlsuite.apps.queryopt import rewriter as RW
from rlsuite.apps.queryopt import rules as R
from rlsuite.apps.queryopt import spark_rules as S
from rlsuite.apps.queryopt.featurizer import Featurizer

if TYPE_CHECKING:
    from rlsuite.apps.queryopt.engines.base import Engine
    from rlsuite.apps.queryopt.rewriter import Decision, Rewriter


class RewriteSpace:
    """One engine's side of the rewrite MDP (see the module doc).

    The methods are written once here over the engine's pieces, which each subclass names:
    its parser, catalog, rule set, SQL printer, query generator and featurizer class, and
    the few steps that really differ (``_refuse``, ``_server``, ``_check``, ``_rules``).
    """

    engine: ClassVar[str]
    """The engine's name in :data:`~rlsuite.apps.queryopt.engines.ENGINES`."""
    label: ClassVar[str]
    """The engine's name in messages."""
    rewards: ClassVar[tuple[str, ...]]
    """The env's reward kinds on this engine."""
    workloads: tuple[str, ...]
    """The workloads this engine can load."""
    check_rows: ClassVar[bool]
    """Whether every final query's rows are compared with the original's (the env's reward
    and the learned rewriter's check)."""
    defaults: ClassVar[Mapping[str, Any]]
    """The env's and the trainer's defaults on this engine (``num_queries``, ``timeout_ms``,
    ``reward``, ``repeat``, ``max_steps``, ``iterations``, ``num_env_runners``,
    ``epsilon_timesteps``, ``env_steps_per_iteration``)."""
    title: ClassVar[str]
    """Title of ``qopt-bench rules``."""
    env_id: ClassVar[str]
    """The env this engine trains on."""
    replay_env_id: ClassVar[str | None]
    """The env that replays served decisions of an experience store (None: no store)."""
    learned_name: ClassVar[str]
    """How a trained rewriter is named in tables (the checkpoint follows)."""
    names: ClassVar[tuple[str, ...]]
    """The actions' names; action ``i`` is ``names[i]``, STOP is ``len(names)``."""
    refused: ClassVar[Mapping[str, str]]
    """Rules of the other engines this one refuses, with the reason."""
    choosers: ClassVar[tuple[str, ...]]
    """The choosers of :data:`~rlsuite.apps.queryopt.choosers.CHOOSERS` this engine has."""
    default_chooser: ClassVar[str]
    """The chooser of ``rewrite``, ``run`` and ``serve`` when none is named."""

    # The engine's pieces, as plain functions of the engine's own modules.
    _parse: ClassVar[Callable[[str, Any], R.Query]]
    _catalog: ClassVar[Callable[[Engine, str], Any]]
    _applicable: ClassVar[Callable[[R.Query], dict[str, R.Query | str]]]
    _key: ClassVar[Callable[[R.Query], str]]
    _sql: ClassVar[Callable[[R.Query], str]]
    _queries: ClassVar[Callable[[Any, str, int, int], list[str]]]
    _featurizer: ClassVar[type]

    def descriptions(self) -> list[tuple[str, str]]:
        """``(name, what it does)`` per action, in order."""
        raise NotImplementedError

    def more_rules(self) -> list[tuple[str, str]]:
        """``(name, what it does)`` of the rules that are not (yet) actions of the MDP."""
        return []

    def check_options(self, dsn: str, master: str | None, spark_dir: str | None) -> None:
        """Refuse a trainer's engine options that are not this engine's (or missing)."""
        self._refuse(dsn, master, spark_dir)

    def open(
        self, dsn: str | None = None, master: str | None = None, spark_dir: str | None = None
    ) -> Engine:
        """A new session on the engine (connects on first use)."""
        raise NotImplementedError

    def env_options(self, eng: Engine) -> dict[str, Any]:
        """The options that open another session like ``eng`` (what a trainer's envs and a
        learned rewriter are given)."""
        raise NotImplementedError

    @contextlib.contextmanager
    def session(
        self,
        dsn: str | None = None,
        master: str | None = None,
        spark_dir: str | None = None,
        say: Callable[[str], None] = print,
    ) -> Iterator[Engine]:
        """A session for one command, closed after it (PostgreSQL: the embedded server
        without ``dsn``, started if needed and stopped again if started here)."""
        with self._server(dsn, say) as dsn:
            eng = self.open(dsn, master, spark_dir)
            self._opened(eng, say)
            try:
                yield eng
            finally:
                eng.close()

    def parse(self, eng: Engine, schema: str, sql: str) -> R.Query:
        return self._parse(sql, self._catalog(eng, schema))

    def actions(self, names: Sequence[str] | None = None) -> tuple[str, ...]:
        """The MDP's actions: the engine's (:attr:`names`), or a model's own set ``names``,
        checked (PostgreSQL only)."""
        if not names or tuple(names) == self.names:
            return tuple(self.names)
        raise ValueError(f"{self.label}'s actions are fixed: {', '.join(self.names)}")

    def applicable(
        self, q: R.Query, actions: tuple[str, ...] | None = None
    ) -> dict[str, R.Query | str]:
        """Each action's rewrite of ``q`` or why it does not apply (``actions``: a model's
        own set of :meth:`actions`; default the engine's)."""
        return self._applicable(q)

    def key(self, q: R.Query) -> str:
        """Identifies ``q`` with its settings on this engine (the env's cache key)."""
        return self._key(q)

    def sql(self, q: R.Query) -> str:
        """``q`` as this engine's SQL."""
        return self._sql(q)

    def queries(self, workload: Any, split: str, n: int, seed: int = 0) -> list[str]:
        """``n`` generated queries of ``split`` in this engine's SQL."""
        return self._queries(workload, split, n, seed)

    def plan(self, eng: Engine, q: R.Query, schema: str, settings: Mapping[str, str]) -> dict:
        """The engine's plan of ``q`` for the featurizer."""
        return eng.explain(self.sql(q), schema, settings)

    def featurizer(self, max_steps: int, actions: tuple[str, ...] | None = None) -> Any:
        """The engine's featurizer (over ``actions``, checked by :meth:`actions`, when given)."""
        if actions is None or tuple(actions) == self.names:
            return self._featurizer(max_steps=max_steps)
        return self._featurizer(max_steps=max_steps, rules=self.actions(actions))

    def featurizer_from(self, description: Mapping[str, Any]) -> Any:
        return self._featurizer.from_description(description)

    def choose(
        self,
        policy: Any,
        obs: np.ndarray,
        applicable: Mapping[str, Any],
        names: Sequence[str] | None = None,
    ) -> int:
        """The trained policy's action in state ``obs``: the highest Q-value among STOP and
        the actions that apply now (``applicable``: a rule that changes the query, an arm not
        yet set); an action that would leave the query as it is is never taken. ``names``:
        the actions in order (a model's own set; default :attr:`names`)."""
        q = np.asarray(policy.action_values(obs), dtype=float)
        names = tuple(names or self.names)
        allowed = [i for i, n in enumerate(names) if isinstance(applicable.get(n), R.Query)]
        return max([*allowed, len(names)], key=lambda i: q[i])

    def validate(
        self,
        eng: Engine,
        schema: str,
        sql: str,
        q: R.Query,
        notes: dict[str, str],
        check: bool,
        timeout_ms: int,
        settings: Mapping[str, str],
        slower_than: float | None = 1.0,
        check_runs: int = 1,
    ) -> Decision:
        """Keep the chosen rewrite ``q`` of ``sql`` only when it passes this engine's checks
        (``check``: compare rows where the engine leaves that to the caller; ``slower_than``
        and ``check_runs``: how an engine that times rewrites judges them)."""
        checks = {"check": check, "slower_than": slower_than, "check_runs": check_runs}
        return self._check(eng, schema, sql, q, notes, timeout_ms, dict(settings), checks)

    def rewriter(
        self,
        eng: Engine,
        workload: Any,
        names: Sequence[str],
        timeout_ms: int,
        check_schema: str | None = None,
        chooser: str = "rules",
        budget_s: float = 60.0,
        model: Rewriter | None = None,
    ) -> Rewriter:
        """The rewriter of ``chooser`` (one of :attr:`choosers`, other than ``model``): the
        fixed rules ``names``, or a chooser over candidates (``names``, when given, are its
        only ones; ``model``'s choice is one more; ``budget_s`` bounds its measuring)."""
        if chooser not in self.choosers or chooser == "model":
            raise ValueError(
                f"{self.label} chooses with {', '.join(c for c in self.choosers if c != 'model')}"
                f" here, not {chooser!r}"
            )
        opts = {"chooser": chooser, "budget_s": budget_s, "model": model}
        return self._rules(eng, workload, list(names), timeout_ms, check_schema, opts)

    # What each engine does its own way.
    def _refuse(self, dsn: str | None, master: str | None, spark_dir: str | None) -> None:
        """Raise when another engine's options are given."""
        raise NotImplementedError

    def _server(self, dsn: str | None, say: Callable[[str], None]) -> Any:
        """A context giving the dsn to open (PostgreSQL: an embedded server's without one)."""
        return contextlib.nullcontext(dsn)

    def _opened(self, eng: Engine, say: Callable[[str], None]) -> None:
        """Tell the user what was opened."""

    def _check(self, eng, schema, sql, q, notes, timeout_ms, settings, checks) -> Decision:
        """:meth:`validate` with ``checks`` its ``check``, ``slower_than``, ``check_runs``."""
        raise NotImplementedError

    def _rules(self, eng, workload, names, timeout_ms, check_schema, opts) -> Rewriter:
        """:meth:`rewriter` with ``names`` a list, ``opts`` its ``chooser``, ``budget_s``
        and ``model``."""
        raise NotImplementedError


_DEFAULTS: dict[str, tuple[Any, Any]] = {
    # the env's and the trainer's defaults: (PostgreSQL's, Spark's)
    "num_queries": (50, 20),
    "timeout_ms": (1000, 10_000),
    "reward": ("runtime", "relative"),
    "repeat": (1, 2),
    "max_steps": (3, 2),
    "iterations": (20, 10),
    "num_env_runners": (2, 0),  # on Spark each env runner process would start its own JVM
    "epsilon_timesteps": (1000, 600),
    "env_steps_per_iteration": (1000, 100),
}


class PostgresSpace(RewriteSpace):
    """PostgreSQL's rules, featurizer and checks."""

    engine = "postgres"
    label = "PostgreSQL"
    rewards = ("runtime", "relative", "cost")
    check_rows = False
    defaults: Mapping[str, Any] = {k: v[0] for k, v in _DEFAULTS.items()}
    title = "rewrite rules (MDP actions)"
    env_id = "rlsuite/QueryRewrite-v0"
    replay_env_id = "rlsuite/QueryRewriteReplay-v0"
    learned_name = "learned"
    choosers = ("measured", "cost", "rules", "model")
    default_chooser = "measured"
    names = R.RULE_NAMES
    refused: Mapping[str, str] = {}
    _parse = staticmethod(R.Query.parse)
    _catalog = staticmethod(RW.catalog)
    _applicable = staticmethod(R.applicable)
    _key = staticmethod(R.Query.key)
    _sql = staticmethod(R.Query.sql)
    _featurizer = Featurizer

    @staticmethod
    def _queries(workload: Any, split: str, n: int, seed: int) -> list[str]:
        return workload.queries(split, n, seed)

    @property
    def workloads(self) -> tuple[str, ...]:
        from rlsuite.apps.queryopt.workloads import WORKLOAD_NAMES

        return tuple(WORKLOAD_NAMES)

    def actions(self, names: Sequence[str] | None = None) -> tuple[str, ...]:
        """The rules of :data:`~.rules.RULES`, or a model's own rules ``names`` (any of
        :data:`~.rules.ALL_RULES`, in its order)."""
        return tuple(r.name for r in R.named(tuple(names))) if names else self.names

    def applicable(
        self, q: R.Query, actions: tuple[str, ...] | None = None
    ) -> dict[str, R.Query | str]:
        return R.applicable(q, R.named(actions) if actions else R.RULES)

    def descriptions(self) -> list[tuple[str, str]]:
        return [(r.name, " ".join(r.description.split())) for r in R.RULES]

    def more_rules(self) -> list[tuple[str, str]]:
        """``(name, what it does)`` of the rules that are not (yet) actions of the MDP."""
        return [(r.name, " ".join(r.description.split())) for r in R.MORE_RULES]

    def check_options(self, dsn: str, master: str | None, spark_dir: str | None) -> None:
        self._refuse(dsn, master, spark_dir)
        if not dsn:
            raise ValueError("dsn is required (the embedded server's or --dsn)")

    def open(
        self, dsn: str | None = None, master: str | None = None, spark_dir: str | None = None
    ) -> Engine:
        from rlsuite.apps.queryopt.engines import open_engine
        from rlsuite.apps.queryopt.server import EmbeddedServer

        self._refuse(dsn, master, spark_dir)
        return open_engine("postgres", dsn=dsn or EmbeddedServer().dsn)

    def env_options(self, eng: Engine) -> dict[str, Any]:
        return {"dsn": eng.dsn}

    def _refuse(self, dsn: str | None, master: str | None, spark_dir: str | None) -> None:
        if master or spark_dir:
            raise ValueError("master and spark_dir are Spark's options, not PostgreSQL's")

    @contextlib.contextmanager
    def _server(self, dsn: str | None, say: Callable[[str], None]) -> Iterator[str | None]:
        from rlsuite.apps.queryopt.server import EmbeddedServer

        if dsn is not None:
            yield dsn
            return
        srv = EmbeddedServer()
        say(f"[dim]embedded PostgreSQL in {srv.root}[/]")
        srv.start()
        try:
            yield srv.dsn
        finally:
            if srv.started_here:
                srv.stop()

    def _check(self, eng, schema, sql, q, notes, timeout_ms, settings, checks) -> Decision:
        return RW.validate(eng, schema, sql, q, notes, checks["check"], timeout_ms, settings)

    def _rules(self, eng, workload, names, timeout_ms, check_schema, opts) -> Rewriter:
        from rlsuite.apps.queryopt import choosers as C

        base = {"timeout_ms": timeout_ms, "check_schema": check_schema}
        if opts["chooser"] == "measured":
            return C.MeasuredChooser(
                eng,
                workload.schema,
                workload.settings(),
                budget_s=opts["budget_s"],
                model=opts["model"],
                rules=names,
                reference=C.full_data_reference(eng, workload.schema, opts["budget_s"]),
                reference_label=C.FULL_DATA,
                **base,
            )
        if opts["chooser"] == "cost":
            return RW.GreedyByCost(eng, workload.schema, workload.settings(), **base)
        return RW.FixedRules(eng, workload.schema, names, workload.settings(), **base)


class SparkSpace(RewriteSpace):
    """Spark's actions, featurizer and row-checked rewrites."""

    engine = "spark"
    label = "Spark"
    rewards = ("runtime", "relative")
    workloads = ("joins", "udf", "tpch")
    check_rows = True
    defaults: Mapping[str, Any] = {k: v[1] for k, v in _DEFAULTS.items()}
    title = "Spark rewrites (MDP actions)"
    env_id = "rlsuite/SparkQueryRewrite-v0"
    replay_env_id = None
    learned_name = "learned on Spark"
    choosers = ("rules", "model")  # Spark compares every rewrite's rows and times it already
    default_chooser = "rules"
    names = S.ACTION_NAMES
    refused = S.REFUSED
    default_rules = ("eager_aggregation", "filter_after_aggregation")
    """What ``qopt-bench rewrite --engine spark`` applies without ``--rules`` or ``--model``."""
    _parse = staticmethod(S.parse)
    _catalog = staticmethod(S.spark_catalog)
    _applicable = staticmethod(S.applicable)
    _key = staticmethod(S.key)
    _sql = staticmethod(S.spark_sql)
    _queries = staticmethod(S.spark_queries)
    _featurizer = S.SparkFeaturizer

    def descriptions(self) -> list[tuple[str, str]]:
        return [(a.name, a.description) for a in S.ACTIONS]

    def open(
        self, dsn: str | None = None, master: str | None = None, spark_dir: str | None = None
    ) -> Engine:
        from rlsuite.apps.queryopt.engines import open_engine

        self._refuse(dsn, master, spark_dir)
        os.environ.setdefault("PYARROW_IGNORE_TIMEZONE", "1")
        return open_engine("spark", master=master or "local[*]", home=spark_dir)

    def env_options(self, eng: Engine) -> dict[str, Any]:
        return {"master": eng.master, "spark_dir": str(eng.home)}

    def plan(self, eng: Engine, q: R.Query, schema: str, settings: Mapping[str, str]) -> dict:
        try:
            return super().plan(eng, q, schema, settings)
        except Exception:  # noqa: BLE001 - a rewrite Spark cannot plan: featurized as empty
            return {}

    def _refuse(self, dsn: str | None, master: str | None, spark_dir: str | None) -> None:
        if dsn:
            raise ValueError("dsn names a PostgreSQL server; Spark takes master and spark_dir")

    def _opened(self, eng: Engine, say: Callable[[str], None]) -> None:
        say(f"[dim]Spark {eng.master}, files in {eng.home}[/]")

    def _check(self, eng, schema, sql, q, notes, timeout_ms, settings, checks) -> Decision:
        """:func:`~rlsuite.apps.queryopt.spark_rules.validate`: rows always compared."""
        slower, runs = checks["slower_than"], checks["check_runs"]
        return S.validate(
            eng, schema, sql, q, notes, timeout_ms, settings, slower_than=slower, check_runs=runs
        )

    def _rules(self, eng, workload, names, timeout_ms, check_schema, opts) -> Rewriter:
        if check_schema is not None and check_schema != workload.schema:
            raise ValueError(
                "--check-schema is PostgreSQL's: on Spark every rewrite's rows are compared "
                "on the query's own data"
            )
        names = names or list(self.default_rules)
        return S.SparkRules(eng, workload.schema, names, workload.settings(), timeout_ms=timeout_ms)


SPACES: dict[str, RewriteSpace] = {"postgres": PostgresSpace(), "spark": SparkSpace()}
"""The rewrite space of each engine of :data:`~rlsuite.apps.queryopt.engines.ENGINES`."""


def space_of(engine: str) -> RewriteSpace:
    """The rewrite space of engine ``engine``."""
    if engine not in SPACES:
        raise ValueError(f"unknown engine {engine!r}; engines: {', '.join(SPACES)}")
    return SPACES[engine]
