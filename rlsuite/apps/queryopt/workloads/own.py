"""A user's own database: any schema, read as it is, plus an optional file of queries.

The app never writes into such a schema (it has no ``setup``): the queries run
in read-only transactions, so a user with only ``USAGE`` on the schema and
``SELECT`` on its tables can ``rewrite`` and ``run``. A file of queries is split
at its top-level semicolons; each statement that is not a plain SELECT (an
INSERT, a ``SELECT ... INTO``, one that does not parse) is skipped with the
reason, and the rest are the workload's queries.

Example::

    >>> stmts, skipped = read_queries_text("SELECT 1; DELETE FROM t; SELECT 2")
    >>> stmts
    ['SELECT 1', 'SELECT 2']
    >>> skipped
    [(2, 'DELETE FROM t', 'not a SELECT (a DELETE statement); only queries are run')]
"""

from __future__ import annotations

import os

import numpy as np
import sqlglot
from sqlglot import exp
from sqlglot.tokens import Tokenizer, TokenType

from rlsuite.apps.queryopt.engines.postgres import Database
from rlsuite.apps.queryopt.workloads.base import Workload

PREFIX = "schema:"
"""Workload names ``schema:S`` name a user's schema ``S`` (what ``get`` resolves)."""


def read_queries_text(text: str) -> tuple[list[str], list[tuple[int, str, str]]]:
    """``(queries, skipped)``: the SELECT statements of ``text`` and ``(number, statement, why)``."""
    try:
        tokens = Tokenizer(dialect="postgres").tokenize(text)
    except Exception as e:  # noqa: BLE001 - an unterminated string, say
        raise ValueError(f"cannot split the queries into statements: {e}") from e
    cuts = [t.start for t in tokens if t.token_type == TokenType.SEMICOLON]
    pieces, start = [], 0
    for c in cuts:
        pieces.append(text[start:c])
        start = c + 1
    pieces.append(text[start:])
    out: list[str] = []
    skipped: list[tuple[int, str, str]] = []
    n = 0
    for raw in pieces:
        toks = Tokenizer(dialect="postgres").tokenize(raw)
        if not toks:  # blank or only comments
            continue
        stmt = raw[toks[0].start : toks[-1].end + 1].strip()  # without comments around it
        n += 1
        why = _not_a_query(stmt)
        if why:
            skipped.append((n, " ".join(stmt.split())[:80], why))
        else:
            out.append(stmt)
    return out, skipped


def _not_a_query(stmt: str) -> str | None:
    try:
        e = sqlglot.parse_one(stmt, read="postgres")
    except Exception as err:  # noqa: BLE001
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        return f"does not parse: {first}"
    if not isinstance(e, exp.Query):
        kind = type(e).__name__.upper() if type(e) is not exp.Command else e.name.upper()
        return f"not a SELECT (a {kind} statement); only queries are run"
    if any(s.args.get("into") for s in e.find_all(exp.Select)):
        return "SELECT ... INTO creates a table; only queries are run"
    if any(s.args.get("locks") for s in e.find_all(exp.Select)):
        return "SELECT ... FOR UPDATE/SHARE takes row locks; only plain queries are run"
    return None


def read_queries(path: str) -> tuple[list[str], list[tuple[int, str, str]]]:
    """:func:`read_queries_text` of a file; a missing or empty file is an error."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f"no query file {path!r}")
    with open(path, encoding="utf-8") as f:
        queries, skipped = read_queries_text(f.read())
    if not queries:
        why = "; ".join(f"#{n}: {w}" for n, _, w in skipped) or "it holds no statement"
        raise ValueError(f"{path} has no SELECT query to run ({why})")
    return queries, skipped


class OwnSchema(Workload):
    """A user's schema, read-only, with the queries of ``queries_file`` (if any)."""

    def __init__(self, schema: str, queries_file: str | None = None):
        if not schema:
            raise ValueError("--schema needs a schema name")
        self._schema = schema
        self.name = PREFIX + schema
        self.queries_file = queries_file
        self.skipped: list[tuple[int, str, str]] = []
        self._queries: list[str] = []
        if queries_file is not None:
            self._queries, self.skipped = read_queries(queries_file)

    @property
    def schema(self) -> str:
        return self._schema

    def tables(self) -> tuple[str, ...]:
        return ()

    def setup(self, db: Database, seed: int = 0) -> dict:
        raise ValueError(
            f"the app does not load or change your schema {self._schema!r}; setup is for its "
            "own workloads (--workload joins|udf|tpch|tpcds)"
        )

    def is_loaded(self, db: Database, seed: int = 0) -> bool:
        return db.schema_exists(self._schema)

    def ensure(self, db: Database, seed: int = 0) -> None:
        """Check that the schema is there and readable; never writes."""
        visible = db.visible_schemas()
        if self._schema not in visible:
            raise ValueError(
                f"schema {self._schema!r} does not exist or this user may not read it; "
                f"schemas it can see: {', '.join(visible) or 'none'}"
            )
        if not db.columns(self._schema):
            raise ValueError(f"schema {self._schema!r} has no table this user may read")

    def sample(self, rng: np.random.Generator, i: int) -> str:
        if not self._queries:
            raise ValueError("a schema of your own has no query generator: give --queries FILE.sql")
        return self._queries[int(rng.integers(len(self._queries)))]

    def queries(self, split: str, n: int, seed: int = 0) -> list[str]:
        """The file's queries, all of them, in order (``split`` and ``n`` do not apply)."""
        if not self._queries:
            raise ValueError("a schema of your own has no query generator: give --queries FILE.sql")
        return list(self._queries)
