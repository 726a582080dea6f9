"""What ``oxy test`` and ``oxy run`` read and write in the history, on the standard
library's sqlite3: the same rows, without SQLAlchemy.

Why a second writer: ``oxy test`` and ``oxy run`` store a handful of rows per run and
read and write their cache, and importing SQLAlchemy costs a quarter of a second of CPU,
which under the GIL lengthens a 2-second run by about as much
(``benchmarks/bench_oxy_test.py``, ``bench_workflow.py``), however early it starts. So
for the common case, an SQLite history file already at the current schema,
:func:`open_results` gives a small store with just what they need (start and finish a
run, the previous scored result of a test, record a test result or a workflow run, the
cache of answers and verdicts) and the same behaviour:

* the same values (``_rows.consistency_values``, ``_rows.workflow_values``: checks,
  redaction, timestamps) and, for the cache, the very same repository
  (``_cache.Caches``: its SQL text runs on this connection);
* the same per-connection settings as ``_engine`` (busy timeout, foreign keys,
  synchronous NORMAL, WAL, ``BEGIN IMMEDIATE`` for writes);
* the same errors (``_engine.translate``), and runs left unfinished marked interrupted
  on close, as :meth:`Store.close` does.

A project's first run creates the file from a schema snapshot (:mod:`._fresh`). Anything
else (an older or newer schema, PostgreSQL, a file not in WAL mode) returns None and the
caller opens the full store, which migrates it or says why it cannot.
``tests/store/test_lite.py`` and ``test_lite_cache.py`` check that rows written here read
back identically through the SQLAlchemy repositories, and the other way round.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from functools import cached_property
from typing import TYPE_CHECKING, Any

from ._cache import Caches
from ._engine import DEFAULT_TIMEOUT, Location, translate
from ._errors import NotFoundError, StoreError
from ._lockwait import begin_write
from ._owner import current_owner
from ._result_rows import (
    ConsistencyResult,
    NewConsistencyResult,
    NewWorkflowRun,
    consistency_from_row,
    consistency_values,
    finished_tasks,
    workflow_values,
)
from ._results import (
    check_run_kind,
    consistency_result,
    workflow_result,
    workflow_status,
    write_results,
)
from ._util import insert_sql, new_id, utc_timestamp, valid_params
from .kinds import FINISHED_RUN_STATUSES

if TYPE_CHECKING:
    import sqlite3

    from ._results_read import Results

__all__ = ["LiteStore", "open_results"]

#: The kinds of run this store starts: of :data:`~oxyeval.store.kinds.RUN_KINDS`, those
#: whose results it has a writer for (``oxy test``'s and ``oxy run``'s), and any kind
#: registered with the evaluation core (its results go to ``results`` alone).
_LEAN_KINDS = ("consistency", "workflow")
RUN_KINDS_ELSEWHERE = ("cases",)


class _Runs:
    def __init__(self, store: LiteStore) -> None:
        self._store = store

    def start(
        self,
        kind: str = "consistency",
        *,
        total: int = 0,
        group_id: str | None = None,
        subject: str | None = None,
        started_at: str | None = None,
    ) -> str:
        if kind not in _LEAN_KINDS:
            check_run_kind(kind, RUN_KINDS_ELSEWHERE)
        run_id = new_id()
        with self._store.write("starting a run") as cur:
            cur.execute(
                "INSERT INTO runs (id, kind, group_id, subject, prompt_id, prompt_version, "
                "started_at, status, total, done, pid, host, owner) "
                "VALUES (?, ?, ?, ?, NULL, NULL, ?, 'running', ?, 0, ?, ?, ?)",
                (
                    run_id,
                    kind,
                    group_id,
                    subject,
                    utc_timestamp(started_at),
                    total,
                    os.getpid(),
                    self._store.host,
                    current_owner().text(),
                ),
            )
        self._store.own(run_id)
        return run_id

    def finish(self, run_id: str, status: str = "completed") -> None:
        if status not in FINISHED_RUN_STATUSES:
            raise ValueError(
                f"finish status must be one of {', '.join(FINISHED_RUN_STATUSES)}, not {status!r}"
            )
        with self._store.write("finishing a run") as cur:
            cur.execute(
                # A run that did more steps than it planned (a workflow's loop bodies
                # run once per item) finishes with its total at what it did.
                "UPDATE runs SET status = ?, finished_at = ?, "
                "total = CASE WHEN done > total THEN done ELSE total END WHERE id = ?",
                (status, utc_timestamp(), run_id),
            )
            if cur.rowcount == 0:
                raise NotFoundError(
                    f"no run {run_id!r} in {self._store.path}", path=self._store.path
                )
        self._store.release(run_id)


class _Tests:
    def __init__(self, store: LiteStore) -> None:
        self._store = store

    def record(self, run_id: str, result: NewConsistencyResult) -> ConsistencyResult:
        values = consistency_values(run_id, result)
        with self._store.write("recording a test result") as cur:
            cur.execute("UPDATE runs SET done = done + 1 WHERE id = ?", (run_id,))
            if cur.rowcount == 0:
                raise NotFoundError(
                    f"no run {run_id!r} in {self._store.path}", path=self._store.path
                )
            cur.execute(insert_sql("test_results", values), values)
            write_results(_LiteSql(cur), [consistency_result(values, tally=result.tally)])
        return consistency_from_row(_Row(values))

    def previous(
        self, file: str, name: str, *, before_run: str | None = None
    ) -> ConsistencyResult | None:
        query = (
            "SELECT * FROM test_results WHERE file = ? AND name = ? AND status = 'scored' "
            "AND accuracy IS NOT NULL AND run_id != ? ORDER BY created_at DESC, seq DESC LIMIT 1"
        )
        with self._store.read("reading the previous test result") as cur:
            cur.execute(query, (file, name, before_run or ""))
            row = cur.fetchone()
            names = [d[0] for d in cur.description or ()]
        return (
            None if row is None else consistency_from_row(_Row(dict(zip(names, row, strict=True))))
        )


class _Workflows:
    def __init__(self, store: LiteStore) -> None:
        self._store = store

    def record(self, run_id: str, result: NewWorkflowRun) -> None:
        row, tasks = workflow_values(run_id, result)
        status = workflow_status(result)
        with self._store.write("recording a workflow run") as cur:
            cur.execute(
                "UPDATE runs SET done = done + ? WHERE id = ?", (finished_tasks(result), run_id)
            )
            if cur.rowcount == 0:
                raise NotFoundError(
                    f"no run {run_id!r} in {self._store.path}", path=self._store.path
                )
            cur.execute(insert_sql("workflow_runs", row), row)
            if tasks:
                cur.executemany(insert_sql("workflow_tasks", tasks[0]), tasks)
            write_results(_LiteSql(cur), [workflow_result(row, status=status)])


class _LiteSql:
    """A sqlite3 cursor as the cache's :class:`~._cache.Sql`."""

    def __init__(self, cur: sqlite3.Cursor) -> None:
        self._cur = cur

    def rows(self, sql: str, params: Mapping[str, Any]) -> list[Any]:
        return self._cur.execute(sql, params).fetchall()

    def run(self, sql: str, params: Mapping[str, Any] | Sequence[Mapping[str, Any]]) -> int:
        if isinstance(params, Mapping):
            self._cur.execute(sql, params)
        else:
            self._cur.executemany(sql, params)
        return max(self._cur.rowcount, 0)


class _ValidCursor:
    """A cursor whose statements get valid text only (see ``_util.valid_params``)."""

    def __init__(self, cur: sqlite3.Cursor) -> None:
        self._cur = cur

    def execute(self, sql: str, params: Any = ()) -> sqlite3.Cursor:
        return self._cur.execute(sql, valid_params(params))

    def executemany(self, sql: str, rows: Any) -> sqlite3.Cursor:
        return self._cur.executemany(sql, (valid_params(r) for r in rows))

    def __getattr__(self, name: str) -> Any:  # fetchone, fetchall, rowcount...
        return getattr(self._cur, name)


class _Row:
    def __init__(self, values: dict[str, Any]) -> None:
        self.__dict__.update(values)


class LiteStore:
    """The part of :class:`Store` that ``oxy test`` and ``oxy run`` use (``runs.start``,
    ``runs.finish``, ``tests.record``, ``tests.previous``, ``workflows.record``,
    ``cache``, ``close``), on one sqlite3 connection shared by worker threads under a
    lock."""

    def __init__(
        self, conn: sqlite3.Connection, location: Location, timeout: float = DEFAULT_TIMEOUT
    ) -> None:
        self._conn: sqlite3.Connection | None = conn
        self.location = location
        self.timeout = timeout  # seconds a write waits for another process's lock
        self.host = socket.gethostname()
        self._lock = threading.Lock()
        self._mine: set[str] = set()
        self.runs = _Runs(self)
        self.tests = _Tests(self)
        self.workflows = _Workflows(self)
        self.cache = Caches(self._sql(self.read), self._sql(self.write))

    @cached_property
    def results(self) -> Results:
        """Every kind's results (read lazily: ``oxy test`` only writes them, through
        ``tests.record``, and never imports the reading side)."""
        from ._results_read import Results

        return Results(self._sql(self.read), self._sql(self.write), self.path)

    @property
    def path(self) -> str:
        return self.location.display

    def own(self, run_id: str) -> None:
        self._mine.add(run_id)

    def release(self, run_id: str) -> None:
        self._mine.discard(run_id)

    @contextmanager
    def _transaction(self, write: bool, action: str) -> Iterator[sqlite3.Cursor]:
        import sqlite3

        with self._lock:
            if self._conn is None:
                raise StoreError(f"history database {self.path} is closed", path=self.path)
            cur = self._conn.cursor()
            try:
                if write:
                    begin_write(cur.execute, self.timeout)
                else:
                    cur.execute("BEGIN")
                try:
                    yield _ValidCursor(cur)
                except BaseException:
                    cur.execute("ROLLBACK")
                    raise
                cur.execute("COMMIT")
            except sqlite3.Error as exc:
                with suppress(sqlite3.Error):
                    if self._conn.in_transaction:
                        self._conn.execute("ROLLBACK")
                raise translate(exc, self.location, action) from exc
            finally:
                cur.close()

    def write(self, action: str) -> Any:
        return self._transaction(True, action)

    def read(self, action: str) -> Any:
        return self._transaction(False, action)

    @staticmethod
    def _sql(transaction: Any) -> Any:
        @contextmanager
        def sql(action: str) -> Iterator[_LiteSql]:
            with transaction(action) as cur:
                yield _LiteSql(cur)

        return sql

    def close(self) -> None:
        """Close; runs started here and never finished are marked interrupted."""
        with self._lock:
            conn, self._conn = self._conn, None
            mine = sorted(self._mine)
            self._mine.clear()
        if conn is None:
            return
        try:
            if mine:
                with suppress(Exception):  # best effort, as Store.close
                    begin_write(conn.execute, self.timeout)
                    conn.executemany(
                        "UPDATE runs SET status = 'interrupted', finished_at = ? "
                        "WHERE id = ? AND status = 'running'",
                        [(utc_timestamp(), run_id) for run_id in mine],
                    )
                    conn.execute("COMMIT")
        finally:
            conn.close()

    def __enter__(self) -> LiteStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_results(location: Location, *, timeout: float = DEFAULT_TIMEOUT) -> LiteStore | None:
    """A lean writer for ``location`` when it is an SQLite file in WAL mode at the latest
    schema, or no file yet (created from the schema snapshot, :mod:`._fresh`); else None
    (open the full store instead: it migrates, or says why it cannot)."""
    from ._migrations import HEAD, VERSION_TABLE

    if location.backend != "sqlite" or location.path is None:
        return None
    if not location.path.exists():
        if not location.make_folders and not location.path.parent.is_dir():
            return None  # the full store refuses it, saying why (missing_folder)
        from ._fresh import create_from_snapshot

        if not create_from_snapshot(location.path):
            return None
    if not location.path.is_file():
        return None
    import sqlite3

    try:
        conn = sqlite3.connect(
            str(location.path), timeout=timeout, isolation_level=None, check_same_thread=False
        )
    except sqlite3.Error:
        return None  # the full store says why, in its words
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
        conn.execute("PRAGMA foreign_keys = ON")
        mode = conn.execute("PRAGMA journal_mode").fetchone()
        version = conn.execute(f"SELECT version_num FROM {VERSION_TABLE}").fetchone()
        if mode is None or str(mode[0]).lower() != "wal" or version is None or version[0] != HEAD:
            conn.close()
            return None
        conn.execute("PRAGMA synchronous = NORMAL")
    except sqlite3.Error:
        conn.close()
        return None
    return LiteStore(conn, location, timeout)
