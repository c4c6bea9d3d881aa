"""The workload base class: what every workload provides (a schema, its data, a query generator)."""

from __future__ import annotations

import abc
import hashlib
import json
from collections.abc import Mapping

import numpy as np

from rlsuite.apps.queryopt.engines.postgres import Database


class Workload(abc.ABC):
    """A schema (``qopt_<name>``), its data, and a seeded query generator."""

    name: str = ""
    """Short name (``joins``)."""

    @property
    def schema(self) -> str:
        """The app schema holding this workload's tables."""
        return f"qopt_{self.name}"

    @abc.abstractmethod
    def setup(self, db: Database, seed: int = 0) -> dict:
        """(Re)create the schema and load the data; returns ``{table: rows}``."""

    def data_config(self) -> dict:
        """What the loaded data depends on (sizes, distinct values, scale), besides the seed."""
        return {}

    @property
    def shipped_model(self) -> str | None:
        """A model trained on this workload that ships with the sources (the measured chooser
        adds its choice to the candidates), or None."""
        return None

    def data_key(self, seed: int = 0) -> str:
        """The data's identity, stored as the schema's comment when it is loaded."""
        return json.dumps({"workload": self.name, "seed": int(seed), **self.data_config()})

    def is_loaded(self, db: Database, seed: int = 0) -> bool:
        """True when the schema holds every table of this workload, loaded with this config.

        A schema loaded with other sizes (say ``distinct_b=100`` where 55 is asked for) or
        by an older version without the key is not this workload's data: it is reloaded.
        """
        if not db.schema_exists(self.schema):
            return False
        if not set(self.tables()) <= set(db.columns(self.schema)):
            return False
        return db.schema_comment(self.schema) == self.data_key(seed)

    def ensure(self, db: Database, seed: int = 0) -> None:
        """Load the data unless this very data is already there (it is reused across runs)."""
        if not self.is_loaded(db, seed):
            self.setup(db, seed)

    @abc.abstractmethod
    def tables(self) -> tuple[str, ...]:
        """The tables of the schema."""

    @abc.abstractmethod
    def sample(self, rng: np.random.Generator, i: int) -> str:
        """One random query (``i`` counts the queries drawn so far)."""

    def queries(self, split: str, n: int, seed: int = 0) -> list[str]:
        """``n`` distinct queries of ``split`` (``train`` or ``test``).

        A query's split is fixed by a hash of its text (one in five is ``test``), so
        the two splits never share a query, whatever ``n`` and ``seed`` are.
        """
        rng = np.random.default_rng(seed + check_split(split))
        out: list[str] = []
        seen: set[str] = set()
        tries = 0
        while len(out) < n:
            tries += 1
            if tries > 200 * n + 1000:
                raise RuntimeError(
                    f"could not generate {n} distinct {split} queries of {self.name}"
                )
            q = self.sample(rng, len(out))
            if q in seen or split_of(q) != split:
                continue
            seen.add(q)
            out.append(q)
        return out

    def settings(self) -> Mapping[str, str]:
        """Session settings every query of this workload runs with (e.g. the UDF's cost)."""
        return {}


def check_split(split: str) -> int:
    """A seed offset per split, so train and test queries come from disjoint streams."""
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    return 0 if split == "train" else 1_000_003


def split_of(sql: str) -> str:
    """``test`` for one query text in five (by hash), else ``train``."""
    h = int.from_bytes(hashlib.sha1(sql.encode()).digest()[:4], "big")
    return "test" if h % 5 == 0 else "train"
