"""The Store: one open history (an engine plus its state) and its repositories.

Calls are synchronous and short, each one transaction: a crash loses at most the row being
written. Async callers run them with ``asyncio.to_thread``; the engine's pool gives each
thread its own connection. Separate processes each open their own Store; the database
(SQLite's write lock, PostgreSQL's row locks) keeps their writes apart.

State that used to be global is owned here: the runs this Store started and has not
finished. Closing a Store marks those runs interrupted, so a run left behind by a closed
Store is never mistaken for a live one, and a crashed process's runs are found by probing
its pid (see :mod:`._runs`).
"""

from __future__ import annotations

import re
import socket
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext, suppress
from functools import cached_property, lru_cache, partial
from operator import itemgetter
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from ._engine import DEFAULT_TIMEOUT, Location, resolve_location, translate
from ._errors import LocationError, StoreError
from ._util import valid_params

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection, Engine

    from ._batches import Batches
    from ._branches import Branches
    from ._cache import Caches, Sql
    from ._calibrations import Calibrations
    from ._cases import Cases
    from ._consistency import ConsistencyResults
    from ._executions import Executions
    from ._prompts import Prompts
    from ._results_read import Results
    from ._run_groups import RunGroups
    from ._runs import Runs
    from ._stats import Stats
    from ._workflows import WorkflowRuns
    from ._writer import ProcessWriter

__all__ = ["Store", "open_store"]


def _valid_statement(
    _conn: Any, _cursor: Any, statement: str, parameters: Any, context: Any, _many: bool
) -> tuple[str, Any]:
    if context is not None and context.execution_options.get("oxy_unchecked"):
        return statement, parameters  # see executemany: the driver checks these itself
    return statement, valid_params(parameters)


class Store:
    """An open history database. Use :func:`open_store`; close it (or use ``with``)."""

    def __init__(
        self, engine: Engine, location: Location, *, read_only: bool, timeout: float
    ) -> None:
        from sqlalchemy import event

        # Every statement's text parameters made valid (see _util.valid_params).
        if not event.contains(engine, "before_cursor_execute", _valid_statement):
            event.listen(engine, "before_cursor_execute", _valid_statement, retval=True)
        self._engine: Engine | None = engine
        self.location = location
        self.read_only = read_only
        self.timeout = timeout
        self.host = socket.gethostname()
        self._lock = threading.Lock()
        # SQLite has one writer at a time: this process's writers (a run's results, its
        # cache) queue here, handed the lock the moment it is free, instead of in
        # SQLite's busy handler, which sleeps in steps of up to 100 ms.
        self._writer: AbstractContextManager[Any] = (
            threading.RLock() if self.backend == "sqlite" else nullcontext()
        )
        self._my_runs: set[str] = set()  # started here, not finished yet
        self._process: ProcessWriter | None = None  # see write_elsewhere

    # ----------------------------------------------------------------- repositories
    # Each made (and its module imported) on first use: a run that only reads the cache
    # (oxy test, opening the store in a worker thread while models answer) does not pay
    # for the test-case repositories and their row types.

    @cached_property
    def prompts(self) -> Prompts:
        from ._prompts import Prompts

        return Prompts(self)

    @cached_property
    def cases(self) -> Cases:
        from ._cases import Cases

        return Cases(self)

    @cached_property
    def branches(self) -> Branches:
        from ._branches import Branches

        return Branches(self)

    @cached_property
    def executions(self) -> Executions:
        from ._executions import Executions

        return Executions(self)

    @cached_property
    def runs(self) -> Runs:
        from ._runs import Runs

        return Runs(self)

    @cached_property
    def calibrations(self) -> Calibrations:
        from ._calibrations import Calibrations

        return Calibrations(self)

    @cached_property
    def run_groups(self) -> RunGroups:
        from ._run_groups import RunGroups

        return RunGroups(self)

    @cached_property
    def stats(self) -> Stats:
        from ._stats import Stats

        return Stats(self)

    @cached_property
    def tests(self) -> ConsistencyResults:
        from ._consistency import ConsistencyResults

        return ConsistencyResults(self)

    @cached_property
    def workflows(self) -> WorkflowRuns:
        from ._workflows import WorkflowRuns

        return WorkflowRuns(self)

    @cached_property
    def results(self) -> Results:
        from ._results_read import Results

        return Results(partial(_as_sql, self.read), partial(_as_sql, self.write), self.path)

    @cached_property
    def batches(self) -> Batches:
        from ._batches import Batches

        return Batches(partial(_as_sql, self.read), partial(_as_sql, self.write))

    @cached_property
    def cache(self) -> Caches:
        from ._cache import Caches

        return Caches(
            partial(_as_sql, self.read),
            partial(_as_sql, self.write),
            elsewhere=partial(self.write_elsewhere, "cache"),
        )

    # ----------------------------------------------------------------- state

    @property
    def path(self) -> str:
        """What messages call this database (a path, or a URL without its password)."""
        return self.location.display

    @property
    def backend(self) -> str:
        return self.location.backend

    @property
    def engine(self) -> Engine:
        if self._engine is None:
            raise StoreError(f"history database {self.path} is closed", path=self.path)
        return self._engine

    def own_run(self, run_id: str) -> None:
        with self._lock:
            self._my_runs.add(run_id)

    def release_run(self, run_id: str) -> None:
        with self._lock:
            self._my_runs.discard(run_id)

    def owns_run(self, run_id: str) -> bool:
        with self._lock:
            return run_id in self._my_runs

    # ----------------------------------------------------------------- transactions

    @contextmanager
    def read(self, action: str) -> Iterator[Connection]:
        """One read transaction, so a multi-query answer comes from one snapshot."""
        try:
            with self.engine.connect() as conn:
                if self.backend == "postgresql":
                    conn = conn.execution_options(isolation_level="REPEATABLE READ")
                with conn.begin():
                    yield conn
        except StoreError:
            raise
        except Exception as exc:
            if _is_db_error(exc):
                raise translate(exc, self.location, action) from exc
            raise

    @contextmanager
    def write(self, action: str) -> Iterator[Connection]:
        """One committed write transaction (SQLite: BEGIN IMMEDIATE, queued by the busy
        timeout; PostgreSQL: READ COMMITTED with row locks)."""
        if self.read_only:
            raise StoreError(
                f"history database {self.path} is open read-only (while {action})", path=self.path
            )
        try:
            with self._writer, self.engine.connect() as conn:
                if self._process is not None:  # after what the writer process was sent
                    self._process.drain()
                conn = conn.execution_options(oxy_write=True)
                with conn.begin():
                    yield conn
        except StoreError:
            raise
        except Exception as exc:
            if _is_db_error(exc):
                raise translate(exc, self.location, action) from exc
            raise

    def expect_executions(self, count: int) -> None:
        """Start the writer process now if ``count`` executions are enough for one (a run
        about to write them: the process is ready by its first batch)."""
        from ._writer import START_AT, ProcessWriter, wanted

        if count < START_AT or not wanted(self.backend, self.location.path, self.read_only):
            return
        with self._lock:
            if self._process is None and self._engine is not None:
                self._process = ProcessWriter(str(self.location.path), self.path, self.timeout)

    def write_elsewhere(
        self, what: str, batch: Sequence[Any], fallback: Callable[[], int] | None = None
    ) -> int | None:
        """``batch`` written and committed by this store's writer process (:mod:`._writer`):
        ``what`` is ``"executions"``, ``"branches"`` (A/B executions) or ``"cache"`` (its
        entries). None when no process is ready, and the caller writes the batch
        itself; :class:`~._writer.Lost` when the
        process took it and gave no answer, and the caller writes it as one that may be
        stored already. A large enough batch of executions starts the process, for the
        batches after it. Inside :func:`~._deferred.deferred_writes`, a batch with a
        ``fallback`` (how its caller writes it after a lost answer) is only sent."""
        writer = self._process
        if writer is None:
            if what in ("executions", "branches"):
                self.expect_executions(len(batch))
            return None
        if not writer.ready():  # not yet, or no longer (broken)
            return None
        from ..redact import registered_secrets
        from ._deferred import Sent, deferring

        deferral = deferring() if fallback is not None else None
        with self._writer:  # this process's other writers queue here, not in SQLite
            if deferral is None:
                return writer.write(what, batch, registered_secrets())
            ticket = writer.send(what, batch, registered_secrets(), deferral.chain)
        assert fallback is not None
        deferral.sent.append(Sent(writer, ticket, fallback))
        return len(batch)

    def write_through(self, what: str, batch: Sequence[Any], here: Callable[..., int]) -> int:
        """``batch`` written by the writer process when it has one, else by ``here(batch,
        lost=False)`` in this process; after an answer that never came, by ``here(batch,
        lost=True)``, which looks first whether the process stored it (the batch's ids
        are chosen by the caller, so it can)."""
        from functools import partial

        from ._writer import Lost

        try:
            done = self.write_elsewhere(what, batch, partial(here, batch, lost=True))
        except Lost:
            return here(batch, lost=True)
        return here(batch, lost=False) if done is None else done

    def read_elsewhere(self, function: str, *args: Any) -> tuple[bool, Any]:
        """``(True, what function returned)`` when this store's writer process ran it on its
        own connection (``function``: ``"module:name"`` in oxyeval, called with the store
        and ``args``), so a large run's reads do not share this interpreter's lock with
        its cases; ``(False, None)`` when there is no process ready, or it was lost, and
        the caller reads itself. What the function raised is raised here."""
        from ._writer import Lost

        writer = self._process
        if writer is None or not writer.ready():
            return False, None
        try:
            return True, writer.wait(writer.call(function, args))
        except Lost:
            return False, None

    # ----------------------------------------------------------------- lifecycle

    def close(self) -> None:
        """Close; runs this Store started and never finished are marked interrupted."""
        with self._lock:
            engine, self._engine = self._engine, None
            mine = sorted(self._my_runs)
            self._my_runs.clear()
            process, self._process = self._process, None
        if process is not None:
            process.close()
        if engine is None:
            return
        if mine and not self.read_only:
            from ._runs import interrupt_runs

            # Best effort: never fail a close over bookkeeping.
            with suppress(Exception), engine.connect() as conn:
                conn = conn.execution_options(oxy_write=True)
                with conn.begin():
                    interrupt_runs(conn, mine)
        if self.backend == "sqlite" and not self.read_only:
            with suppress(Exception), engine.connect() as conn:
                conn.exec_driver_sql("PRAGMA optimize")
        engine.dispose()

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Store({self.path!r})"


class _SaSql:
    """A SQLAlchemy connection as the cache's :class:`~._cache.Sql` (plain SQL text)."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    # Run as the driver's own SQL: a text() construct is compiled on every call, which
    # cost more than the reads of a large run's regression inputs themselves.

    def rows(self, sql: str, params: Mapping[str, Any], *, lock: bool = False) -> list[Any]:
        """``lock``: the rows read stay locked until the transaction ends (``FOR UPDATE``
        on PostgreSQL; SQLite has one writer at a time)."""
        conn = self._conn
        if lock and conn.dialect.name == "postgresql":
            sql += " FOR UPDATE"
        return list(conn.exec_driver_sql(_driver_sql(sql, conn.dialect.name), dict(params)).all())

    def run(self, sql: str, params: Mapping[str, Any] | Sequence[Mapping[str, Any]]) -> int:
        if not isinstance(params, Mapping):
            return executemany(self._conn, sql, params)
        conn = self._conn
        done = conn.exec_driver_sql(_driver_sql(sql, conn.dialect.name), dict(params))
        return done.rowcount or 0


#: ``:name`` parameters of plain SQL text, not a PostgreSQL ``::cast``.
_NAMED = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")


@lru_cache(maxsize=256)
def _driver_sql(sql: str, dialect: str) -> str:
    """``sql`` with ``:name`` parameters in the driver's own style (SQLite takes them as
    they are; psycopg takes ``%(name)s``, and a literal ``%`` doubled)."""
    if dialect == "sqlite":
        return sql
    return _NAMED.sub(r"%(\1)s", sql.replace("%", "%%"))


def executemany(conn: Connection, sql: str, rows: Sequence[Mapping[str, Any]]) -> int:
    """One statement of plain SQL text (``:name`` parameters) run for every row by the
    driver's own executemany: SQLAlchemy's per-row parameter processing cost more than
    SQLite's insert of a row (a run's executions, results and scores; every parameter
    is still checked by the engine's ``before_cursor_execute`` hook). On SQLite the
    parameters go by position: binding a row by names cost twice as much as by place."""
    if not rows:
        return 0
    params: list[Any]
    if conn.dialect.name == "sqlite":
        text, pick = _positional(sql)
        params = [pick(r) for r in rows]
    else:
        text, params = _driver_sql(sql, conn.dialect.name), [dict(r) for r in rows]
    # Every value is sent unchecked first, inside a savepoint: the driver refuses text it
    # cannot encode (a lone surrogate) by itself, and looking at each of a large run's
    # values beforehand cost a sixth of writing them. Only refused rows are made valid
    # (by the engine's hook) and sent again; what the refused attempt wrote is undone.
    conn.exec_driver_sql("SAVEPOINT oxy_rows")
    try:
        done = conn.exec_driver_sql(text, params, execution_options={"oxy_unchecked": True})
    except Exception as exc:
        if not isinstance(getattr(exc, "orig", exc), UnicodeEncodeError):
            raise
        conn.exec_driver_sql("ROLLBACK TO SAVEPOINT oxy_rows")
        done = conn.exec_driver_sql(text, params)
    conn.exec_driver_sql("RELEASE SAVEPOINT oxy_rows")
    return done.rowcount or 0


@lru_cache(maxsize=256)
def _positional(sql: str) -> tuple[str, Callable[[Mapping[str, Any]], tuple[Any, ...]]]:
    """``sql`` with each ``:name`` a ``?``, and what picks a row's values in that order."""
    names = _NAMED.findall(sql)
    if len(names) == 1:
        (name,) = names
        return _NAMED.sub("?", sql), lambda row: (row[name],)
    return _NAMED.sub("?", sql), itemgetter(*names)


@contextmanager
def _as_sql(transaction: Callable[[str], Any], action: str) -> Iterator[Sql]:
    with transaction(action) as conn:
        yield _SaSql(conn)


def _is_db_error(exc: BaseException) -> bool:
    from sqlalchemy.exc import SQLAlchemyError

    return isinstance(exc, SQLAlchemyError)


def open_store(
    location: Location | str | Path | None = None,
    *,
    read_only: bool = False,
    timeout: float = DEFAULT_TIMEOUT,
    migrate: bool = True,
) -> Store:
    """Open the history at ``location`` (a :class:`Location`, a path, or a URL).

    Writable (the default): an SQLite file and its folders are created, and the schema is
    brought to the latest migration (a 0.1.0 history file is converted on the way).
    ``read_only``: nothing is created or written; a missing or empty history raises
    :class:`EmptyHistoryError`, and an SQLite file with an older schema is upgraded in a
    private in-memory copy, so an archived history can still be read.
    """
    from ._migrations import open_engine

    if not isinstance(location, Location):
        location = resolve_location(location) if location is not None else resolve_location()
    if location.backend == "sqlite" and location.path is not None:
        p = location.path
        if p.is_dir():
            raise LocationError(
                f"history database {p} is a directory, not a database file; "
                "point --db/OXY_DB at a file",
                path=str(p),
            )
    engine, read_only = open_engine(location, read_only=read_only, timeout=timeout, migrate=migrate)
    return Store(engine, location, read_only=read_only, timeout=timeout)
