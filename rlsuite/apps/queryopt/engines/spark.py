"""Spark SQL as an :class:`~rlsuite.apps.queryopt.engines.base.Engine`: the only module of
rlsuite that imports pyspark.

A :class:`SparkEngine` is one Spark SQL session, embedded (``local[*]``, the
default) or on a cluster (``master="spark://host:7077"``). Everything Spark
writes goes under one private directory (``$RLSUITE_SPARK_DIR``, default
``/var/tmp/rlsuite-spark-<uid>``): the workloads' Parquet tables in ``data/``,
the warehouse, and per-session scratch space that :meth:`SparkEngine.close`
removes. The catalog is in memory (no Hive metastore, no ``derby.log``); each
session registers the Parquet tables it finds, so data loaded once is reused.

It answers the engine protocol as PostgreSQL's
:class:`~rlsuite.apps.queryopt.engines.postgres.Database` does, so the benchmark and the
rewriter's row checks take either. A query runs with its Spark settings
(``spark.sql.*``, set for that query and restored after it) and the app's own
``qopt.*`` knobs (``qopt.udf_cost`` re-registers the Python UDF with that cost).
A query past its timeout is cancelled (its job group) and reported as timed out.

Example::

    >>> eng = SparkEngine(master="local[2]")                                     # doctest: +SKIP
    >>> eng.load("qopt_joins", JoinsWorkload().columns(), key="...")             # doctest: +SKIP
    >>> eng.run("SELECT count(*) FROM r", "qopt_joins").rows                     # doctest: +SKIP
    [(1000,)]
    >>> eng.close()                                                               # doctest: +SKIP
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import socket
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rlsuite.apps.queryopt.engines.base import (
    APP_SCHEMA_PREFIX,
    DatabaseError,
    RunResult,
    check_app_schema,
)

JAVA_INSTALL = "sudo apt-get install -y openjdk-17-jre-headless"
MANIFEST = "_qopt.json"
_SETTING_RE = re.compile(r"^(spark\.sql\.[A-Za-z0-9_.]+|qopt\.[a-z_]+)$")


class SparkError(DatabaseError):
    """Spark could not start or a query failed; the message says what to do."""


def default_home() -> Path:
    """The private directory: ``$RLSUITE_SPARK_DIR`` or ``/var/tmp/rlsuite-spark-<uid>``."""
    env = os.environ.get("RLSUITE_SPARK_DIR")
    return Path(env) if env else Path(f"/var/tmp/rlsuite-spark-{os.geteuid()}")


def java_problem() -> str | None:
    """None when a Java runtime is there (``$JAVA_HOME`` or ``java`` on the PATH), else why not."""
    home = os.environ.get("JAVA_HOME")
    if home and os.access(os.path.join(home, "bin", "java"), os.X_OK):
        return None
    if shutil.which("java"):
        return None
    return (
        "Spark needs a Java runtime (17 or newer) and none was found (no $JAVA_HOME, no `java` "
        f"on the PATH). Install it with: {JAVA_INSTALL}  (`make install` as root does this)"
    )


def check_master(master: str, timeout_s: float = 5.0) -> None:
    """Refuse a ``spark://host:port`` master that does not answer, before Spark retries for a minute."""
    if master.startswith("local"):
        return
    m = re.fullmatch(r"spark://([^:/]+):(\d+)", master)
    if not m:
        if master.startswith(("yarn", "k8s://", "mesos://")):
            return
        raise SparkError(
            f"bad Spark master {master!r}: use local[*], local[N], spark://HOST:PORT, yarn or k8s://..."
        )
    host, port = m.group(1), int(m.group(2))
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            pass
    except OSError as e:
        raise SparkError(
            f"cannot reach the Spark master at {master} ({e}). Is the cluster up "
            "(`$SPARK_HOME/sbin/start-master.sh`)? Leave out --spark-master to use an "
            "embedded local Spark."
        ) from e


_LOG4J = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = spark: %p %c{1}: %m%n
"""
"""Spark's own log: errors only (the app reports failed queries itself)."""

_SHARED: dict[tuple[str, str], list[Any]] = {}
"""Spark allows one session per process: ``(master, home) -> [session, users]``."""
_LOCK = threading.Lock()


class SparkEngine:
    """One Spark SQL session over the app's Parquet tables (start lazily, :meth:`close` when done)."""

    label = "Spark"
    dialect = "spark"

    def __init__(
        self,
        master: str = "local[*]",
        home: str | os.PathLike | None = None,
        shuffle_partitions: int = 4,
        driver_memory: str = "2g",
    ):
        self.master = master
        self.home = Path(home) if home else default_home()
        self.shuffle_partitions = int(shuffle_partitions)
        self.driver_memory = driver_memory
        self._spark: Any = None
        self._registered: set[str] = set()
        self._udf_cost: int | None = None
        self._scratch: Path | None = None

    @property
    def dsn(self) -> str:
        """A name for this engine and its data (the rewriter's catalog cache key)."""
        return f"spark:{self.master}:{self.home}"

    @property
    def data_dir(self) -> Path:
        return self.home / "data"

    # ------------------------------------------------------------ session
    @property
    def spark(self) -> Any:
        if self._spark is None:
            self._spark = self._start()
        return self._spark

    def _start(self) -> Any:
        problem = java_problem()
        if problem:
            raise SparkError(problem)
        check_master(self.master)
        key = (self.master, str(self.home))
        with _LOCK:
            if key in _SHARED:
                _SHARED[key][1] += 1
                return _SHARED[key][0]
            if _SHARED:
                other = next(iter(_SHARED))
                raise SparkError(
                    f"this process already runs a Spark session ({other[0]}, {other[1]}); "
                    "Spark allows one per process"
                )
            self.home.mkdir(parents=True, exist_ok=True)
            self._scratch = Path(tempfile.mkdtemp(prefix="session-", dir=self.home))
            os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
            log4j = self._scratch / "log4j2.properties"
            log4j.write_text(_LOG4J)
            import warnings

            from pyspark.sql import SparkSession

            warnings.filterwarnings("ignore", message=".*PySpark does not yet fully support.*")
            b = (
                SparkSession.builder.master(self.master)
                .appName("rlsuite-queryopt")
                .config("spark.sql.warehouse.dir", str(self.home / "warehouse"))
                .config("spark.local.dir", str(self._scratch))
                .config("spark.sql.catalogImplementation", "in-memory")
                .config("spark.ui.enabled", "false")
                .config("spark.ui.showConsoleProgress", "false")
                .config("spark.sql.shuffle.partitions", str(self.shuffle_partitions))
                .config("spark.driver.memory", self.driver_memory)
                .config(
                    "spark.driver.extraJavaOptions",
                    f"-Djava.io.tmpdir={self._scratch} -Dderby.system.home={self._scratch} "
                    f"-Dlog4j2.configurationFile=file:{log4j}",
                )
            )
            try:
                spark = b.getOrCreate()
            except Exception as e:  # noqa: BLE001 - JVM start failures come in several kinds
                self._remove_scratch()
                raise SparkError(f"Spark did not start on {self.master}: {_first_line(e)}") from e
            spark.sparkContext.setLogLevel("FATAL")
            _quiet_python_loggers()
            _SHARED[key] = [spark, 1, self._scratch]
            return spark

    def close(self) -> None:
        """Stop the session when its last user closes (and the JVM this process started)."""
        if self._spark is None:
            return
        self._spark = None
        key = (self.master, str(self.home))
        with _LOCK:
            entry = _SHARED.get(key)
            if entry is None:
                return
            entry[1] -= 1
            if entry[1] > 0:
                return
            del _SHARED[key]
            spark, _, scratch = entry
        _stop(spark)
        shutil.rmtree(scratch, ignore_errors=True)

    def _remove_scratch(self) -> None:
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)

    def __enter__(self) -> SparkEngine:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def ping(self) -> str:
        return f"Spark {self.spark.version} on {self.master}"

    # ------------------------------------------------------------- data
    def manifest(self, schema: str) -> dict | None:
        """What :meth:`load` wrote for ``schema`` (its key, tables, columns, rows), or None."""
        p = self.data_dir / schema / MANIFEST
        if not p.exists():
            return None
        with open(p) as f:
            return json.load(f)

    def load(
        self,
        schema: str,
        tables: Mapping[str, Mapping[str, Any]],
        key: str,
    ) -> dict[str, int]:
        """Write ``{table: {column: array}}`` as Parquet under ``data/<schema>`` and register it.

        The manifest (``key`` = the data's identity) is written last, so a load killed
        half-way is never taken for loaded data. Returns rows per table.
        """
        import pyarrow as pa
        import pyarrow.parquet as pq

        check_app_schema(schema)
        final = self.data_dir / schema
        tmp = self.data_dir / f".{schema}.{uuid.uuid4().hex[:8]}"
        tmp.mkdir(parents=True)
        try:
            cols: dict[str, dict[str, str]] = {}
            rows: dict[str, int] = {}
            for name, data in tables.items():
                t = data if isinstance(data, pa.Table) else pa.table(dict(data))
                (tmp / name).mkdir()
                pq.write_table(t, tmp / name / "part-0.parquet")
                cols[name] = {f.name: _spark_type(f.type) for f in t.schema}
                rows[name] = t.num_rows
            with open(tmp / MANIFEST, "w") as f:
                json.dump({"key": key, "columns": cols, "rows": rows}, f, indent=1)
            if final.exists():
                shutil.rmtree(final)
            tmp.rename(final)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        self._registered.discard(schema)
        if self._spark is not None:
            self.spark.sql(f"DROP DATABASE IF EXISTS {schema} CASCADE")
        return rows

    def is_loaded(self, schema: str, key: str) -> bool:
        m = self.manifest(schema)
        return m is not None and m.get("key") == key

    def _use(self, schema: str) -> None:
        check_app_schema(schema)
        m = self.manifest(schema)
        if m is None:
            raise SparkError(
                f"{schema} is not loaded on Spark: run `qopt-bench setup --engine spark "
                f"--workload {schema[len(APP_SCHEMA_PREFIX) :]}`"
            )
        spark = self.spark
        if schema not in self._registered:
            spark.sql(f"CREATE DATABASE IF NOT EXISTS {schema}")
            for t in m["columns"]:
                loc = (self.data_dir / schema / t).as_posix()
                spark.sql(f"CREATE TABLE IF NOT EXISTS {schema}.{t} USING parquet LOCATION '{loc}'")
            self._registered.add(schema)
        spark.catalog.setCurrentDatabase(schema)

    def columns(self, schema: str) -> dict[str, dict[str, str]]:
        """``{table: {column: Spark type}}`` of a loaded schema."""
        m = self.manifest(schema)
        return {t: dict(c) for t, c in (m or {}).get("columns", {}).items()}

    def row_counts(self, schema: str) -> dict[str, float]:
        m = self.manifest(schema)
        return {t: float(n) for t, n in (m or {}).get("rows", {}).items()}

    def not_null_columns(self, schema: str) -> dict[str, frozenset[str]]:
        """None: the Parquet tables declare no NOT NULL column, so the rules that need one
        refuse here."""
        return {}

    def visible_schemas(self) -> list[str]:
        """The schemas loaded under the data directory."""
        if not self.data_dir.exists():
            return []
        return sorted(
            d.name
            for d in self.data_dir.iterdir()
            if not d.name.startswith(".") and (d / MANIFEST).exists()
        )

    def ensure_workload(self, workload: Any, seed: int = 0, force: bool = False) -> bool:
        """Load ``workload``'s data as Parquet unless this very data is there (:func:`ensure_workload`)."""
        return ensure_workload(self, workload, seed, force)

    def known_tables(self) -> list[str]:
        out = []
        if self.data_dir.exists():
            for d in sorted(self.data_dir.iterdir()):
                m = self.manifest(d.name) if not d.name.startswith(".") else None
                out += [f"{d.name}.{t}" for t in (m or {}).get("columns", {})]
        return out

    # ---------------------------------------------------------- queries
    def _apply(self, settings: Mapping[str, str]) -> dict[str, str | None]:
        """Set the query's settings; returns what to restore."""
        conf = self.spark.conf
        old: dict[str, str | None] = {}
        for k, v in settings.items():
            if not _SETTING_RE.match(k) or not re.fullmatch(r"[A-Za-z0-9_.,:\-]+", str(v)):
                raise ValueError(f"bad Spark setting {k}={v!r}")
            if k == "qopt.udf_cost":
                self._register_udf(int(v))
                continue
            if k.startswith("qopt."):
                continue
            old[k] = conf.get(k, None)
            conf.set(k, str(v))
        return old

    def _restore(self, old: Mapping[str, str | None]) -> None:
        conf = self.spark.conf
        for k, v in old.items():
            if v is None:
                conf.unset(k)
            else:
                conf.set(k, v)

    def _register_udf(self, cost: int) -> None:
        if cost == self._udf_cost:
            return
        from pyspark.sql.types import BooleanType

        from rlsuite.apps.queryopt.workloads.udf import udf_python

        def udf(x, _cost=cost):
            return None if x is None else udf_python(x, _cost)

        self.spark.udf.register("udf", udf, BooleanType())
        self._udf_cost = cost

    def _translate(self, e: Exception, sql: str) -> SparkError:
        msg = _first_line(e)
        name = type(e).__name__
        if "TABLE_OR_VIEW_NOT_FOUND" in msg:
            return SparkError(
                f"{msg}. Known tables: {', '.join(self.known_tables()) or 'none'}; run "
                "`qopt-bench setup --engine spark --workload W` to load a workload."
            )
        if name == "ParseException" or "PARSE_SYNTAX_ERROR" in msg:
            pos = str(e).strip().split("== SQL ==")
            where = ("\n" + pos[1].strip("\n")) if len(pos) > 1 else ""
            return SparkError(f"Spark cannot parse the query: {msg}{where}")
        if "SPARK_JOB_CANCELLED" in str(e) or "cancelled" in msg.lower():
            return SparkError(f"the Spark job was cancelled or killed mid-run: {msg}\nquery: {sql}")
        return SparkError(f"Spark query failed: {msg}\nquery: {sql}")

    def run(
        self,
        sql: str,
        schema: str,
        timeout_ms: int = 60_000,
        settings: Mapping[str, str] | None = None,
        fetch: bool = True,
    ) -> RunResult:
        """Run ``sql`` and time it (parse, plan, execute, collect); a timeout cancels the job."""
        self._use(schema)
        sc = self.spark.sparkContext
        group = f"qopt-{uuid.uuid4().hex[:12]}"
        fired = threading.Event()

        def cancel() -> None:
            fired.set()
            sc.cancelJobGroup(group)

        old = self._apply(dict(settings or {}))
        sc.setJobGroup(group, "qopt measured query", interruptOnCancel=True)
        timer = threading.Timer(timeout_ms / 1000.0, cancel)
        try:
            t0 = time.perf_counter()
            timer.start()
            try:
                df = self.spark.sql(sql)
                rows = [tuple(r) for r in df.collect()]
            except Exception as e:  # noqa: BLE001 - py4j / analysis / cancellation errors
                if fired.is_set():
                    return RunResult(None, timeout_ms / 1000.0, True)
                raise self._translate(e, sql) from e
            dt = time.perf_counter() - t0
            if fired.is_set():  # finished as the timer fired: still past the limit
                return RunResult(None, timeout_ms / 1000.0, True)
            return RunResult(rows if fetch else None, dt, False, list(df.columns))
        finally:
            timer.cancel()
            sc.setLocalProperty("spark.jobGroup.id", None)
            self._restore(old)

    def explain(
        self,
        sql: str,
        schema: str,
        settings: Mapping[str, str] | None = None,
        analyze: bool = False,
        timeout_ms: int = 60_000,
    ) -> dict:
        """Spark's plans of ``sql``: ``{"physical": text, "logical": text, "size_bytes": float,
        "operators": {name: count}}`` (``EXPLAIN COST``; nothing runs)."""
        self._use(schema)
        old = self._apply(dict(settings or {}))
        try:
            self.spark.sql(sql)  # parses and analyzes (nothing runs): Spark's own errors
            text = self.spark.sql(f"EXPLAIN COST {sql}").collect()[0][0]
        except Exception as e:  # noqa: BLE001
            raise self._translate(e, sql) from e
        finally:
            self._restore(old)
        return parse_explain(text)

    def estimated_cost(self, plan: Mapping[str, Any]) -> float:
        """Catalyst's estimated size in bytes of the optimized plan (its cost model's measure)."""
        return float(plan.get("size_bytes", math.nan))

    def plan_lines(self, plan: Mapping[str, Any]) -> list[str]:
        """The physical plan's lines."""
        return str(plan.get("physical", "")).splitlines()


def parse_explain(text: str) -> dict:
    """The parts of ``EXPLAIN COST`` output the app uses."""
    logical, physical = "", text
    if "== Physical Plan ==" in text:
        head, physical = text.split("== Physical Plan ==", 1)
        logical = head.split("== Optimized Logical Plan ==")[-1]
    m = re.search(r"sizeInBytes=([0-9.]+)\s*([KMGTPE]?i?B)", logical)
    size = float("nan")
    if m:
        mult = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40, "PiB": 2**50}
        size = float(m.group(1)) * mult.get(m.group(2), 2**60)
    rows = re.search(r"rowCount=([0-9.E+]+)", logical)
    ops: dict[str, int] = {}
    for line in physical.splitlines():
        m2 = re.match(r"^[\s:+\-]*([A-Z][A-Za-z]+)", line)
        if m2:
            ops[m2.group(1)] = ops.get(m2.group(1), 0) + 1
    return {
        "physical": physical.strip(),
        "logical": logical.strip(),
        "size_bytes": size,
        "row_count": float(rows.group(1)) if rows else math.nan,
        "operators": ops,
    }


def _spark_type(t: Any) -> str:
    import pyarrow as pa

    if pa.types.is_int32(t):
        return "int"
    if pa.types.is_int64(t):
        return "bigint"
    if pa.types.is_float64(t):
        return "double"
    if pa.types.is_decimal(t):
        return f"decimal({t.precision},{t.scale})"
    if pa.types.is_date(t):
        return "date"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "string"
    return str(t)


def _quiet_python_loggers() -> None:
    """PySpark logs every failed query's stack trace as JSON; the app reports the error itself."""
    import logging

    from pyspark.logger import PySparkLogger

    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        PySparkLogger.getLogger(name).setLevel(logging.CRITICAL)


def _first_line(e: Exception) -> str:
    s = str(e).strip()
    for line in s.splitlines():
        if line.strip():
            return line.strip()
    return type(e).__name__


def _stop(spark: Any) -> None:
    """Stop the session, then the JVM this process launched (so no Spark process outlives it)."""
    from pyspark import SparkContext

    try:
        spark.stop()
    except Exception:  # noqa: BLE001 - stopping a broken session must not raise
        pass
    gw = SparkContext._gateway
    proc = getattr(gw, "proc", None) if gw is not None else None
    if gw is not None:
        try:
            gw.shutdown()
        except Exception:  # noqa: BLE001
            pass
    if proc is not None:
        try:
            if proc.stdin:
                proc.stdin.close()
            proc.wait(timeout=15)
        except Exception:  # noqa: BLE001 - a JVM that does not exit on its own is ended
            proc.kill()
            proc.wait(timeout=5)
    SparkContext._gateway = None
    SparkContext._jvm = None


def ensure_workload(engine: SparkEngine, workload: Any, seed: int = 0, force: bool = False) -> bool:
    """Load ``workload``'s data as Parquet unless this very data is there; True when loaded now."""
    if not hasattr(workload, "columns"):
        raise SparkError(f"the {workload.name} workload cannot be loaded on Spark yet")
    key = workload.data_key(seed)
    if not force and engine.is_loaded(workload.schema, key):
        return False
    engine.load(workload.schema, workload.columns(seed), key)
    return True
