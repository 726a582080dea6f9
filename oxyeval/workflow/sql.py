"""SQL on the embedded DuckDB engine, and the result object templates see.

A database's ``dataset`` folder is where its SQL runs, so queries read
``FROM 'orders.csv'`` or ``FROM orders.parquet`` with no loading step. Results
render as a readable table when dropped into a prompt, and expose ``rows``,
``columns`` and each column by name (``{{ q.amount }}`` is the list of amounts)
for loops and conditions.

Queries run in a separate worker process per database (``_sqlworker``), sandboxed by
DuckDB's settings, by the statement checks of ``_sqlsyntax`` and, on Linux, by the
kernel (``_landlock``); see :class:`Databases`.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import json
import math
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import EXIT_INFRA, ConfigError, OxyError
from ..project import database_absences, database_problems, database_use_problem
from ..redact import clip

if TYPE_CHECKING:
    from ..project import ContextMap
    from ._sqlclient import SqlWorker
    from .warehouse_runner import WarehousePool
    from .warehouses import Column, WarehouseError

__all__ = [
    "ENGINES",
    "SQL_DEFAULTS",
    "Databases",
    "SqlError",
    "SqlResult",
    "check_statement",
    "engine_refusal",
    "missing_files",
]

_SHOWN_ROWS = 200  # rows rendered into text (the result keeps them all, up to max_rows)
_SHOWN_ERROR_CHARS = 300
#: A database's limits when config.yml does not set them (docs/guides/workflows.md, "SQL safety").
SQL_DEFAULTS: dict[str, Any] = {
    "timeout": 60,  # seconds per query, then DuckDB is interrupted (a warehouse: stopped)
    "memory_limit": "2GB",  # DuckDB's own limit; larger sorts and joins spill to disk
    "threads": 2,
    "max_rows": 10_000,  # rows a query hands to templates, models and exports
}
_MAX_CHARS = 64_000_000  # characters of text in one result, whatever its rows
_MAX_TEMP = "4GB"  # spill files of one database


class SqlError(OxyError):
    """A query that DuckDB rejected or that failed while running (a task failure, exit 3)."""

    exit_code = EXIT_INFRA


def _plain(value: Any) -> Any:
    """JSON-friendly form of a DuckDB value: numbers JSON can write (a NaN or an infinity
    is its name as a string: JSON has no such numbers, and Node's parser refuses them),
    text for anything else JSON has no type for (UUID, dates, blobs as hex)."""
    if isinstance(value, bool) or value is None or isinstance(value, (int, str)):
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, decimal.Decimal):
        return _plain(float(value)) if value.is_finite() else str(value)
    if isinstance(value, (_dt.date, _dt.datetime, _dt.time)):
        return value.isoformat()
    if isinstance(value, _dt.timedelta):
        return value.total_seconds()
    if isinstance(value, (bytes, bytearray)):  # a warehouse's driver may hand back either
        return bytes(value).hex()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return str(value)  # UUID, and whatever a later DuckDB hands back


class SqlResult:
    """Rows of a query; reads as a table in templates, and by column or row in code."""

    def __init__(
        self,
        columns: list[str],
        rows: list[tuple[Any, ...]],
        sql: str = "",
        params: tuple[Any, ...] = (),
        truncated: bool = False,
    ) -> None:
        self._columns = list(columns)
        self._rows = [tuple(r) for r in rows]
        self.sql = sql
        self._params = tuple(params)
        #: The query returned more rows than its database's ``max_rows``; these are the first.
        self.truncated = truncated

    def sql_text(self) -> str:
        """The query as exported: its ``$n`` parameters listed in a comment after it."""
        if not self._params:
            return self.sql
        shown = ", ".join(
            f"${i} = {' '.join(repr(_plain(p)).splitlines())}"
            for i, p in enumerate(self._params, 1)
        )
        return f"{self.sql.rstrip()}\n-- parameters: {shown.replace('*/', '* /')}\n"

    @property
    def columns(self) -> list[str]:
        return list(self._columns)

    @property
    def rows(self) -> list[dict[str, Any]]:
        return [dict(zip(self._columns, row, strict=False)) for row in self._rows]

    def column(self, name: str) -> list[Any]:
        try:
            index = self._columns.index(name)
        except ValueError:
            raise KeyError(f"no column {name!r}; columns: {', '.join(self._columns)}") from None
        return [row[index] for row in self._rows]

    def __getattr__(self, name: str) -> list[Any]:
        if name.startswith("_"):
            raise AttributeError(name)
        columns = self.__dict__.get("_columns", [])
        if name in columns:
            return self.column(name)
        raise AttributeError(f"query result has no column {name!r}; columns: {', '.join(columns)}")

    def __getitem__(self, key: int | str) -> Any:
        if isinstance(key, str):
            return self.column(key)
        return self.rows[key]

    def __len__(self) -> int:
        return len(self._rows)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.rows)

    def __bool__(self) -> bool:
        return bool(self._rows)

    def _template_missing(self, name: object) -> str:
        """What a template reading a missing column or row is told (see templates.py)."""
        if isinstance(name, int):
            count = len(self._rows)
            return (
                f"the SQL result has no row {name} (it has {count} row{'s' if count != 1 else ''})"
            )
        columns = ", ".join(self._columns) or "none"
        return f"the SQL result has no column or attribute {name!r} (columns: {columns})"

    def to_json(self) -> list[dict[str, Any]]:
        return [{k: _plain(v) for k, v in row.items()} for row in self.rows]

    def _template_json(self) -> list[dict[str, Any]]:
        """What ``{{ q | tojson }}`` writes: the rows, as a loop over ``q`` sees them."""
        return self.to_json()

    def to_csv(self) -> str:
        import csv
        import io

        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(self._columns)

        def cell(value: Any) -> Any:
            plain = _plain(value)
            return (
                json.dumps(plain, ensure_ascii=False) if isinstance(plain, (list, dict)) else plain
            )

        writer.writerows([[cell(v) for v in row] for row in self._rows])
        return buf.getvalue()

    @classmethod
    def from_csv(cls, text: str) -> SqlResult:
        import csv
        import io

        reader = list(csv.reader(io.StringIO(text)))
        if not reader:
            return cls([], [])
        return cls(reader[0], [tuple(r) for r in reader[1:]])

    def __str__(self) -> str:
        """A Markdown table: what an LLM reads best, and what a person can check."""
        if not self._columns:
            return "(no columns)"

        def cell(value: Any) -> str:
            text = "NULL" if value is None else str(_plain(value))
            return text.replace("|", "\\|").replace("\n", " ")

        shown = self._rows[:_SHOWN_ROWS]
        lines = [
            "| " + " | ".join(cell(c) for c in self._columns) + " |",
            "|" + "|".join("---" for _ in self._columns) + "|",
            *("| " + " | ".join(cell(v) for v in row) + " |" for row in shown),
        ]
        if len(self._rows) > len(shown):
            lines.append(f"({len(self._rows) - len(shown)} more rows not shown)")
        if not self._rows:
            lines.append("(0 rows)")
        if self.truncated:
            lines.append(f"(the query returned more than these {len(self._rows)} rows)")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"SqlResult(columns={self._columns!r}, rows={len(self._rows)})"


_UNITS = {"B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12}
_UNITS.update({"KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40})
#: What the worker may hold besides DuckDB's memory_limit: Python, the result being
#: converted, and the stacks of its threads.
WORKER_HEADROOM = 1536 * 2**20


def _address_space(memory_limit: str, threads: int) -> int:
    """The worker's address-space cap: memory_limit (as DuckDB reads it: "2GB", "512MiB")
    plus the headroom and 16 MB per DuckDB thread."""
    match = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([KMGT]?I?B)\s*", memory_limit.upper())
    size = int(float(match.group(1)) * _UNITS[match.group(2)]) if match else 2 * 10**9
    return size + WORKER_HEADROOM + threads * 16 * 2**20


def _short(text: str) -> str:
    """One line of an error, redacted before it is cut (a cut must not split a key)."""
    return clip(text, _SHOWN_ERROR_CHARS, total=True)


def check_statement(database: str, sql: str, *, writable: bool, select_only: bool = False) -> str:
    """The kind of the one statement in ``sql`` as DuckDB parses it, or an SqlError saying
    why it may not run. ``oxy validate`` uses it on SQL written without templates; the
    worker makes the same check before every query, whoever wrote it."""
    from ._sqlsyntax import Refused, statement_kind
    from ._sqlworker import permitted

    try:
        kind = statement_kind(sql)
    except Refused as exc:
        raise SqlError(_about(database, exc.worded(select_only))) from None
    problem = permitted(kind, {"writable": writable, "select_only": select_only})
    if problem:
        raise SqlError(_about(database, problem))
    return kind


def _about(database: str, problem: str) -> str:
    """``database 'x': why`` (``database 'x' is read-only: ...`` reads as one sentence),
    redacted and cut to one short line."""
    problem = _short(problem)
    return f"database '{database}'{'' if problem.startswith('is ') else ':'} {problem}"


def missing_files(entry: dict[str, Any], root: Path, sql: str) -> list[str]:
    """'database 'x': no file citys.csv in data/ (did you mean cities.csv?)' for each file a
    SELECT names that its dataset folder does not have: said at validate time, before
    the query (or any model call) could fail on it."""
    folder = entry.get("dataset") or entry.get("file_search_path")
    if not folder or entry.get("type") != "duckdb":
        return []
    dataset = (root / folder).resolve()
    if not dataset.is_dir():
        return []  # config.yml's own check says so
    from ._sqlsetup import absent_file
    from ._sqlsyntax import file_references

    out = []
    for name in file_references(sql):
        absent = absent_file(name, str(dataset), folder)
        if absent:
            out.append(f"database '{entry['name']}': {absent}")
    return out


#: The database types oxyeval can query: duckdb embedded, in its sandboxed worker; the
#: others on their own servers, through their drivers (``warehouses``).
ENGINES = frozenset(
    {"duckdb", "postgres", "redshift", "mysql", "clickhouse", "bigquery", "snowflake"}
)


def engine_refusal(name: str, entry: dict[str, Any], root: Path | None = None) -> str:
    """Why database ``name`` cannot be queried in this run ('' when it can): the one place
    that refuses a database before anything runs: a type oxyeval has no engine for, a
    read-only DuckDB file that does not exist yet (a deployment creates it; with the
    project's ``root``), a warehouse whose driver is not installed (with the pip
    command), a ``<key>_var`` whose environment variable is not set. Its files are valid
    (``oxy validate`` accepts them); the command that would query it stops with this
    (exit 2), before the query, or before an agent with a tool on it is asked."""
    kind = entry.get("type")
    if kind not in ENGINES:
        return (
            f"database '{name}' is of type {kind}, which oxyeval cannot query yet: it runs "
            f"{', '.join(sorted(ENGINES))} databases. The file is valid (oxy validate "
            "accepts it, and oxy runs it); here, what queries this database stops"
        )
    if kind == "duckdb":
        if root is not None and database_absences(entry, root.resolve()):
            return database_problems(entry, root.resolve())[0][1]
        return ""
    from .warehouses import connection_problem, driver_problem

    missing = driver_problem(str(kind))
    if missing:
        return f"database '{name}' is of type {kind}, and {missing}"
    return connection_problem(name, entry)


class Databases:
    """The project's databases, each queried through its own sandboxed worker process.

    Every query runs in the sandbox, whoever wrote it (a workflow's author, a model
    through a workflow task or an agent tool), in layers:

    * the statement as DuckDB parses it: one per query, of a kind the database allows
      (``EXPLAIN ANALYZE X`` is X; ``IMPORT DATABASE`` and PRAGMAs that are not reads
      are refused; writes need ``read_only: false``); agent tools may run one SELECT;
    * DuckDB's settings, fixed before the database file opens and then locked: files
      only inside the dataset folder, no extension installed or loaded;
    * the worker process: its working directory is the dataset folder (so a relative
      name is a dataset file, never one in the user's folder), its environment holds no
      secrets, and on Linux the kernel (Landlock) lets it write only inside the dataset
      and database folders of a writable database and make no TCP connection;
    * limits: a deadline per query (interrupted, then the worker killed), DuckDB's
      memory limit and threads, and at most ``max_rows`` rows handed back.
    """

    def __init__(self, databases: dict[str, dict[str, Any]], root: Path) -> None:
        self.databases = databases
        self.root = root
        self._workers: dict[str, SqlWorker] = {}
        self._pools: dict[str, WarehousePool] = {}
        self._lock = threading.Lock()
        self._closed = False
        self._described: dict[str, ContextMap] = {}
        self._describing: dict[str, threading.Lock] = {}

    def _entry(self, name: str) -> dict[str, Any]:
        problem = database_use_problem(self.databases, name, "config.yml")
        if problem:  # checked when the files load; here for entries built in code
            raise ConfigError(problem)
        refusal = engine_refusal(name, self.databases[name], self.root)
        if refusal:  # the callers that know the file say it at its line first
            raise ConfigError(refusal)
        return self.databases[name]

    def refusal(self, name: str) -> str:
        """Why ``name`` cannot be queried here ('' when it can; an unknown name is said by
        the query itself)."""
        entry = self.databases.get(name)
        return engine_refusal(name, entry, self.root) if entry is not None else ""

    def describe(self, name: str) -> ContextMap:
        """What agents read of the database (oxy's ``databases.<name>``: its dialect, and
        its datasets' DDL as its catalog reads them), read once per run (this object's
        life), whichever agent or thread asks first."""
        with self._lock:
            lock = self._describing.setdefault(name, threading.Lock())
        with lock:
            info = self._described.get(name)
            if info is None:
                from .catalogs import describe

                if name not in self.databases:
                    raise ConfigError(database_use_problem(self.databases, name, "config.yml"))
                info = self._described[name] = describe(self, name, self.databases[name])
            return info

    def writable(self, name: str) -> bool:
        return self._entry(name).get("read_only", True) is False

    def limit(self, name: str, key: str) -> Any:
        """One of the database's limits (``SQL_DEFAULTS`` unless config.yml sets it)."""
        return self._entry(name).get(key, SQL_DEFAULTS[key])

    def _setup(self, name: str) -> dict[str, Any]:
        """What the worker of this database is started with (paths absolute)."""
        entry = self._entry(name)
        problems = database_problems(entry, self.root.resolve())
        if problems:  # the load-time checks, for entries built in code or files since moved
            raise ConfigError(problems[0][1])
        folder = entry.get("dataset") or entry.get("file_search_path")
        dataset = str((self.root / folder).resolve()) if folder else None
        path = entry.get("path")
        db_file = (self.root / path).resolve() if path else None
        writable = entry.get("read_only", True) is False
        memory = str(entry.get("memory_limit", SQL_DEFAULTS["memory_limit"]))
        threads = int(entry.get("threads", SQL_DEFAULTS["threads"]))
        return {
            "database": name,
            "dataset": dataset,
            "dataset_shown": folder,
            "path": str(db_file) if db_file else None,
            "path_dir": str(db_file.parent) if db_file else None,
            "writable": writable,
            "memory_limit": memory,
            "threads": threads,
            "address_space": _address_space(memory, threads),
            "max_temp": _MAX_TEMP,
        }

    def _worker(self, name: str) -> SqlWorker:
        with self._lock:
            worker = self._workers.get(name)
            if worker is None:
                from ._sqlclient import acquire

                if self._closed:
                    raise SqlError(f"database '{name}': the run's databases are closed")
                worker = self._workers[name] = acquire(self._setup(name))
            return worker

    def warehouse_columns(self, name: str, limit: int) -> list[Column]:
        """The columns of warehouse ``name``'s catalog (at most ``limit``), read through
        its engine within its timeout."""
        from .warehouses import WarehouseError

        pool = self._pool(name)
        try:
            return pool.columns(float(self.limit(name, "timeout")), limit)
        except WarehouseError as exc:
            raise self._warehouse_error(name, exc) from None

    def _pool(self, name: str) -> WarehousePool:
        with self._lock:
            pool = self._pools.get(name)
            if pool is None:
                from .warehouse_runner import WarehousePool
                from .warehouses import (
                    WarehouseError,
                    make_warehouse,
                    register_database_secrets,
                )

                if self._closed:
                    raise SqlError(f"database '{name}': the run's databases are closed")
                entry = self._entry(name)
                register_database_secrets(entry)
                try:
                    warehouse = make_warehouse(name, entry, self.root)
                except WarehouseError as exc:
                    raise self._warehouse_error(name, exc) from None
                pool = self._pools[name] = WarehousePool(warehouse)
            return pool

    def _warehouse_error(self, database: str, exc: WarehouseError) -> OxyError:
        """A warehouse's refusal or failure, as this run reports it: bad input (exit 2)
        for a missing variable or file, else a failed query (exit 3)."""
        if exc.code == "config":
            return ConfigError(_about(database, exc.message))
        if exc.code == "timeout":
            return SqlError(
                _about(
                    database,
                    f"the query was stopped by its timeout of {self.limit(database, 'timeout'):g} s "
                    f"({exc.message}); set 'timeout' on the database in config.yml to change it",
                )
            )
        if exc.code == "auth":
            return SqlError(
                _about(
                    database,
                    f"the server refused its credentials ({exc.message}); check its user and "
                    "password (or password_var) in config.yml",
                )
            )
        if exc.code == "unreachable":
            return SqlError(_about(database, f"cannot reach the server: {exc.message}"))
        return SqlError(_about(database, exc.message))

    def _options(self, database: str, limit: int | None, select_only: bool) -> dict[str, Any]:
        max_rows = int(self.limit(database, "max_rows"))
        if limit is not None:
            max_rows = min(max_rows, int(limit))
        return {
            "writable": self.writable(database) and not select_only,
            "select_only": select_only,
            "timeout": float(self.limit(database, "timeout")),
            "max_rows": max_rows,
            "max_chars": _MAX_CHARS,
        }

    async def query(
        self,
        database: str,
        sql: str,
        *,
        params: tuple[Any, ...] = (),
        limit: int | None = None,
        select_only: bool = False,
    ) -> SqlResult:
        """Rows of one statement; ``limit`` keeps only the first rows (a dry run)."""
        from ._sqlclient import WorkerError, run_query

        options = self._options(database, limit, select_only)
        if self._entry(database).get("type") != "duckdb":
            from .warehouses import WarehouseError

            try:
                reply = await self._pool(database).run(sql, list(params), options)
            except WarehouseError as exc:
                raise self._warehouse_error(database, exc) from None
            return self._result(database, sql, params, limit, reply)
        worker = self._worker(database)
        try:
            try:
                reply = await run_query(worker, sql, list(params), options)
            except WorkerError as exc:
                # Cut short by another query's kill: on a read-only database every query
                # is a read, safe to run again, once, on the new worker.
                if exc.code != "killed" or options["writable"]:
                    raise
                reply = await run_query(worker, sql, list(params), options)
        except WorkerError as exc:
            raise SqlError(self._explain(database, exc)) from None
        return self._result(database, sql, params, limit, reply)

    def query_sync(self, database: str, sql: str, *, select_only: bool = True) -> SqlResult:
        """:meth:`query` for a caller that is not a coroutine (describing a database while
        a template renders): the same worker, sandbox and limits; it waits in this thread."""
        from ._sqlclient import WorkerError, run_query_sync

        options = self._options(database, None, select_only)
        if self._entry(database).get("type") != "duckdb":
            from .warehouses import WarehouseError

            try:
                reply = self._pool(database).run_sync(sql, [], options)
            except WarehouseError as exc:
                raise self._warehouse_error(database, exc) from None
            return self._result(database, sql, (), None, reply)
        try:
            reply = run_query_sync(self._worker(database), sql, [], options)
        except WorkerError as exc:
            raise SqlError(self._explain(database, exc)) from None
        return self._result(database, sql, (), None, reply)

    def _result(
        self,
        database: str,
        sql: str,
        params: tuple[Any, ...],
        limit: int | None,
        reply: tuple[Any, ...],
    ) -> SqlResult:
        columns, rows, truncated = reply
        max_rows = int(self.limit(database, "max_rows"))
        cut = truncated and (limit is None or int(limit) > max_rows)
        return SqlResult(columns, [tuple(r) for r in rows], sql, params, truncated=cut)

    def _explain(self, database: str, exc: Any) -> str:
        if exc.code == "timeout":
            return _about(
                database,
                f"{exc.message} (its timeout; set 'timeout' on the database in config.yml "
                "to change it)",
            )
        return _about(database, exc.message)

    def close(self) -> None:
        from ._sqlclient import release

        with self._lock:
            workers = list(self._workers.values())
            self._workers.clear()
            pools = list(self._pools.values())
            self._pools.clear()
            self._closed = True
        for worker in workers:
            release(worker)
        for pool in pools:
            pool.close()
