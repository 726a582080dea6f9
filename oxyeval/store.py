"""The SQLite history store: prompts, prompt versions, test cases, runs and executions.

Why SQLite: history must survive crashes, be shared by concurrent ``oxy`` processes
on one machine and cost nothing to set up, and the standard library already has it.

Design choices worth knowing before changing anything here:

* Every write is one short ``BEGIN IMMEDIATE`` transaction that commits at once, so a
  crash loses at most the execution being written, and two processes never deadlock
  upgrading a read lock (WAL + busy timeout makes them queue instead).
* Per-case aggregates and a per-day rollup are maintained in the same transaction as
  each execution, so ``get_test_case``/``list_test_cases``/``trendData`` never scan the
  executions table, however long the history grows.
* The schema is versioned with ``PRAGMA user_version``; migrations run in order, each in
  its own transaction, so an interrupted upgrade leaves a consistent older version.
* Every ``sqlite3`` error is turned into :class:`StoreError` naming the file, because a
  locked or corrupt database is an infrastructure problem the user must be able to act on.
* The Python API speaks the seed's camelCase field names (``passRate``, ``lastRun``, ...)
  so the GraphQL layer can return the dicts as they are; SQL stays snake_case.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import socket
import sqlite3
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from .errors import EXIT_INFRA, EXIT_INPUT, OxyError
from .redact import redact, redact_data

__all__ = [
    "APPLICATION_ID",
    "DEFAULT_TIMEOUT",
    "LATEST_VERSION",
    "MIGRATIONS",
    "RUN_STATUSES",
    "AlreadyExistsError",
    "Migration",
    "NotFoundError",
    "Store",
    "StoreError",
    "canonical_json",
    "content_hash",
    "default_db_path",
    "migrate",
    "utc_timestamp",
]

DEFAULT_TIMEOUT = 10.0  # seconds a writer waits for another process before giving up
APPLICATION_ID = 0x4F585945  # "OXYE": marks the file as ours, so we never migrate a stranger's DB
RUN_STATUSES = ("running", "completed", "interrupted", "failed")
REGRESSIONS_SHOWN = 50
# A run on another host cannot be probed for liveness; after this long it is presumed dead.
FOREIGN_RUN_STALE_AFTER = timedelta(hours=24)


# --------------------------------------------------------------------------- errors


class StoreError(OxyError):
    """The history database cannot be used (locked, corrupt, unwritable, too new)."""

    exit_code = EXIT_INFRA

    def __init__(self, message: str, *, path: str | Path | None = None) -> None:
        super().__init__(message)
        self.path = str(path) if path is not None else None


class NotFoundError(StoreError):
    """An id the caller passed does not exist: bad input, not broken infrastructure."""

    exit_code = EXIT_INPUT


class AlreadyExistsError(StoreError):
    """``create_test_case`` with an id already taken (``upsert_test_case`` is the sync path)."""

    exit_code = EXIT_INPUT


def _translate(exc: sqlite3.Error, path: str, action: str) -> StoreError:
    """Turn a raw sqlite3 error into one sentence a user can act on."""
    msg = str(exc)
    low = msg.lower()
    if "locked" in low or "busy" in low:
        text = (
            f"history database {path} is locked by another process (gave up while {action}); "
            "wait for the other oxy process to finish, or point --db/OXY_DB at another file"
        )
    elif "not a database" in low or "malformed" in low or "corrupt" in low:
        text = (
            f"history database {path} is not a valid SQLite database or is corrupt ({msg}); "
            "move it aside, or point --db/OXY_DB at another file"
        )
    elif "unable to open" in low or "cannot open" in low:
        text = (
            f"history database {path} cannot be opened ({msg}); check that the path is a file "
            "and that its folder exists and is writable"
        )
    elif "readonly" in low or "read-only" in low:
        text = f"history database {path} is read-only ({msg}); check file permissions"
    elif "disk" in low and ("full" in low or "i/o" in low):
        text = f"history database {path}: {msg} while {action}"
    else:
        text = f"history database {path}: {action} failed: {msg}"
    return StoreError(text, path=path)


# --------------------------------------------------------------------------- helpers


def utc_timestamp(value: str | datetime | date | None = None) -> str:
    """ISO-8601 UTC with milliseconds and ``Z``: one format so string order is time order."""
    if value is None:
        dt = datetime.now(timezone.utc)
    elif isinstance(value, datetime):
        dt = value
    elif isinstance(value, date):
        dt = datetime(value.year, value.month, value.day)
    elif isinstance(value, str):
        text = value.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            dt = datetime.fromisoformat(text)
        except ValueError:
            raise ValueError(f"not an ISO-8601 timestamp: {value!r}") from None
    else:
        raise TypeError(f"timestamp must be str, datetime or None, not {type(value).__name__}")
    dt = dt.replace(tzinfo=timezone.utc) if dt.tzinfo is None else dt.astimezone(timezone.utc)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


def _json_default(obj: Any) -> Any:
    # YAML loads unquoted dates as date objects; keep them hashable and round-trippable.
    if isinstance(obj, (datetime, date)):
        return obj.isoformat()
    if isinstance(obj, Path):
        return str(obj)
    if isinstance(obj, (set, frozenset)):
        return sorted(obj, key=repr)
    raise TypeError(f"cannot store {type(obj).__name__} as JSON")


def canonical_json(obj: Any) -> str:
    """Sorted keys, no whitespace: equal content must give equal text (and equal hashes)."""
    return json.dumps(
        obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_json_default
    )


def content_hash(content: Any) -> str:
    """sha256 of the canonical JSON; what makes 'same content -> same version' hold."""
    return hashlib.sha256(canonical_json(content).encode("utf-8")).hexdigest()


def _loads(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def _new_id() -> str:
    return uuid.uuid4().hex


def default_db_path(project_root: Path, environ: Mapping[str, str] | None = None) -> Path:
    """``OXY_DB`` wins (one history shared by several checkouts), else ``<root>/.oxy/oxyeval.db``.

    A relative ``OXY_DB`` stays relative to the working directory, like any path a user types.
    """
    env = os.environ if environ is None else environ
    value = (env.get("OXY_DB") or "").strip()
    if value:
        return Path(value).expanduser()
    return Path(project_root) / ".oxy" / "oxyeval.db"


def _pid_alive(pid: int) -> bool:
    """Whether a local process exists; used to tell a crashed run from a live one."""
    if pid <= 0:
        return False
    if os.name == "nt":  # os.kill(pid, 0) would terminate the process on Windows
        import ctypes
        from ctypes import wintypes

        kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)  # type: ignore[attr-defined]
        handle = kernel32.OpenProcess(0x1000, False, pid)  # PROCESS_QUERY_LIMITED_INFORMATION
        if not handle:
            return ctypes.get_last_error() == 5  # type: ignore[attr-defined]  # access denied
        try:
            code = wintypes.DWORD()
            if not kernel32.GetExitCodeProcess(handle, ctypes.byref(code)):
                return True
            return code.value == 259  # STILL_ACTIVE
        finally:
            kernel32.CloseHandle(handle)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    return True


# Runs started by Store objects that are still open in this process. A run row that says
# "running" with our pid but is not in here was abandoned (its Store closed or was dropped).
_LIVE_RUNS: set[str] = set()
_LIVE_RUNS_LOCK = threading.Lock()


# --------------------------------------------------------------------------- migrations


@dataclass(frozen=True)
class Migration:
    """One schema step; ``apply`` runs inside a transaction that also bumps user_version.

    Migrations are frozen history: never edit a released one, add the next number instead.
    """

    version: int
    description: str
    apply: Callable[[sqlite3.Connection], None] = field(repr=False)


def _run_all(conn: sqlite3.Connection, statements: Iterable[str]) -> None:
    # Not executescript(): it COMMITs first, which would break the one-transaction rule.
    for sql in statements:
        conn.execute(sql)


_M1_SQL = (
    f"PRAGMA application_id = {APPLICATION_ID}",
    """CREATE TABLE prompts (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        source TEXT NOT NULL DEFAULT '',
        created_at TEXT NOT NULL
    )""",
    """CREATE TABLE prompt_versions (
        prompt_id TEXT NOT NULL REFERENCES prompts(id),
        version INTEGER NOT NULL CHECK (version >= 1),
        content_hash TEXT NOT NULL,
        content TEXT NOT NULL,
        created_at TEXT NOT NULL,
        PRIMARY KEY (prompt_id, version),
        UNIQUE (prompt_id, content_hash)
    )""",
    """CREATE TABLE test_cases (
        id TEXT PRIMARY KEY,
        prompt_id TEXT NOT NULL REFERENCES prompts(id),
        name TEXT NOT NULL,
        description TEXT,
        input TEXT NOT NULL DEFAULT '{}',
        expected_output TEXT,
        threshold REAL,
        source_file TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        deleted_at TEXT,
        total_runs INTEGER NOT NULL DEFAULT 0,
        pass_count INTEGER NOT NULL DEFAULT 0,
        score_sum REAL NOT NULL DEFAULT 0,
        scored_runs INTEGER NOT NULL DEFAULT 0,
        length_sum INTEGER NOT NULL DEFAULT 0,
        last_run TEXT,
        last_passed INTEGER
    )""",
    "CREATE INDEX ix_test_cases_prompt ON test_cases(prompt_id)",
    """CREATE TABLE runs (
        id TEXT PRIMARY KEY,
        prompt_id TEXT,
        prompt_version INTEGER,
        started_at TEXT NOT NULL,
        finished_at TEXT,
        status TEXT NOT NULL DEFAULT 'running'
            CHECK (status IN ('running', 'completed', 'interrupted', 'failed')),
        total INTEGER NOT NULL DEFAULT 0,
        done INTEGER NOT NULL DEFAULT 0,
        pid INTEGER,
        host TEXT
    )""",
    "CREATE INDEX ix_runs_started ON runs(started_at)",
    "CREATE INDEX ix_runs_running ON runs(status) WHERE status = 'running'",
    """CREATE TABLE executions (
        id TEXT PRIMARY KEY,
        test_case_id TEXT NOT NULL REFERENCES test_cases(id),
        run_id TEXT REFERENCES runs(id),
        execution_id TEXT NOT NULL,
        passed INTEGER NOT NULL,
        score REAL,
        actual_output TEXT NOT NULL,
        expected_output TEXT,
        output_diff TEXT,
        exact_match INTEGER NOT NULL DEFAULT 0,
        semantic_score REAL,
        similarity_method TEXT NOT NULL DEFAULT '',
        length_diff INTEGER NOT NULL DEFAULT 0,
        token_diff INTEGER,
        token_method TEXT NOT NULL DEFAULT '',
        is_regression INTEGER NOT NULL DEFAULT 0,
        regression_type TEXT,
        prompt_version INTEGER NOT NULL,
        run_duration_ms REAL NOT NULL DEFAULT 0,
        latency_ms REAL,
        input_tokens INTEGER,
        output_tokens INTEGER,
        error TEXT,
        created_at TEXT NOT NULL
    )""",
    "CREATE INDEX ix_executions_case_created ON executions(test_case_id, created_at)",
    "CREATE INDEX ix_executions_run ON executions(run_id)",
)


def _migration_1(conn: sqlite3.Connection) -> None:
    _run_all(conn, _M1_SQL)


def _migration_2(conn: sqlite3.Connection) -> None:
    # Several regression types can fire at once; v1 kept only the last one.
    conn.execute("ALTER TABLE executions ADD COLUMN regression_types TEXT NOT NULL DEFAULT '[]'")
    kinds = [
        r[0]
        for r in conn.execute(
            "SELECT DISTINCT regression_type FROM executions WHERE regression_type IS NOT NULL"
        )
    ]
    for kind in kinds:  # few distinct values: one UPDATE each instead of one per row
        conn.execute(
            "UPDATE executions SET regression_types = ? WHERE regression_type = ?",
            (json.dumps([kind]), kind),
        )
    # Daily rollup so trendData reads ~one row per day instead of every execution.
    conn.execute(
        """CREATE TABLE case_daily (
            test_case_id TEXT NOT NULL REFERENCES test_cases(id),
            day TEXT NOT NULL,
            runs INTEGER NOT NULL,
            passes INTEGER NOT NULL,
            score_sum REAL NOT NULL,
            scored INTEGER NOT NULL,
            PRIMARY KEY (test_case_id, day)
        ) WITHOUT ROWID"""
    )
    conn.execute(
        """INSERT INTO case_daily (test_case_id, day, runs, passes, score_sum, scored)
           SELECT test_case_id, substr(created_at, 1, 10), count(*), sum(passed),
                  total(score), count(score)
           FROM executions GROUP BY test_case_id, substr(created_at, 1, 10)"""
    )
    # Partial index: regressions are rare, so listing/counting them stays cheap forever.
    conn.execute(
        "CREATE INDEX ix_executions_regressions ON executions(test_case_id, created_at) "
        "WHERE is_regression = 1"
    )


def _migration_3(conn: sqlite3.Connection) -> None:
    # Why the model stopped ("stop", "length"...): `cases accept` must not adopt a cut-off
    # answer as the expected output without --force. NULL for executions before v3.
    conn.execute("ALTER TABLE executions ADD COLUMN finish_reason TEXT")


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "initial schema", _migration_1),
    Migration(2, "regression_types column, case_daily rollup (backfilled)", _migration_2),
    Migration(3, "executions.finish_reason", _migration_3),
)
LATEST_VERSION = MIGRATIONS[-1].version


def _user_version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def migrate(conn: sqlite3.Connection, target: int | None = None, *, path: str = "") -> int:
    """Bring ``conn``'s database up to ``target`` (default: latest); return the version reached.

    Each step re-reads ``user_version`` under a write lock, so two processes opening an old
    database at once migrate it exactly once. ``target`` lower than latest exists so tests
    can build a genuinely old database.
    """
    target = LATEST_VERSION if target is None else target
    if not 0 <= target <= LATEST_VERSION:
        raise ValueError(f"target schema version must be 0..{LATEST_VERSION}, not {target}")
    where = path or "(database)"
    saved = conn.isolation_level
    conn.isolation_level = None  # we issue BEGIN/COMMIT ourselves
    try:
        current = _check_version(conn, where)
        while current < target:
            conn.execute("BEGIN IMMEDIATE")
            try:
                current = _check_version(conn, where)
                if current < target:
                    step = MIGRATIONS[current]  # versions are 1..N, in order
                    step.apply(conn)
                    conn.execute(f"PRAGMA user_version = {step.version}")
                    current = step.version
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        return current
    finally:
        conn.isolation_level = saved


_migrate = migrate  # Store.open has a parameter named ``migrate``


def _check_version(conn: sqlite3.Connection, where: str) -> int:
    version = _user_version(conn)
    if version > LATEST_VERSION:
        raise StoreError(
            f"history database {where} has schema version {version}, newer than this oxyeval "
            f"understands (up to {LATEST_VERSION}); upgrade oxyeval or point --db/OXY_DB "
            "at another file",
            path=where,
        )
    if version == 0:
        tables = conn.execute(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        ).fetchone()[0]
        if tables:
            raise StoreError(
                f"{where} is an SQLite database but not an oxyeval history database "
                "(it has tables but no oxyeval schema version); refusing to modify it",
                path=where,
            )
    else:
        app_id = int(conn.execute("PRAGMA application_id").fetchone()[0])
        if app_id != APPLICATION_ID:
            raise StoreError(
                f"{where} is an SQLite database of another application "
                f"(application_id {app_id}); refusing to modify it",
                path=where,
            )
    return version


# --------------------------------------------------------------------------- row shapes

_CASE_COLUMNS = (
    "id, prompt_id, name, description, input, expected_output, threshold, source_file, "
    "created_at, updated_at, deleted_at, total_runs, pass_count, score_sum, scored_runs, "
    "length_sum, last_run, last_passed"
)

_EXEC_COLUMNS = (
    "id, test_case_id, run_id, execution_id, passed, score, actual_output, expected_output, "
    "output_diff, exact_match, semantic_score, similarity_method, length_diff, token_diff, "
    "token_method, is_regression, regression_type, regression_types, prompt_version, "
    "run_duration_ms, latency_ms, input_tokens, output_tokens, error, created_at, finish_reason"
)

# Fields update_test_case accepts, under either spelling (GraphQL inputs are camelCase).
_CASE_FIELDS = {
    "prompt_id": "prompt_id",
    "promptId": "prompt_id",
    "name": "name",
    "description": "description",
    "input": "input",
    "expected_output": "expected_output",
    "expectedOutput": "expected_output",
    "threshold": "threshold",
    "source_file": "source_file",
    "sourceFile": "source_file",
}


def _pass_rate(passes: int, runs: int) -> float | None:
    return None if runs == 0 else 100.0 * passes / runs


def _avg(total: float, count: int) -> float | None:
    return None if count == 0 else total / count


def _check_case_fields(**fields: Any) -> None:
    """The spec's types, enforced here so every caller (CLI, API, GraphQL) gets them."""
    if "input" in fields and not isinstance(fields["input"], dict):
        raise TypeError(
            f"input must be a mapping of template variables, not {type(fields['input']).__name__}"
        )
    expected = fields.get("expected_output")
    if expected is not None and not isinstance(expected, str):
        raise TypeError(f"expected_output must be a string or None, not {type(expected).__name__}")
    threshold = fields.get("threshold")
    if threshold is not None and not (
        isinstance(threshold, (int, float)) and 0.0 <= threshold <= 1.0
    ):
        raise ValueError(f"threshold must be between 0 and 1, got {threshold!r}")


def _history_filter(
    case_id: str, baseline: tuple[str | None, str] | None
) -> tuple[str, tuple[Any, ...]]:
    """WHERE clause for a case's history; with a baseline, only its judged executions."""
    if baseline is None:
        return "test_case_id = ?", (case_id,)
    expected, method = baseline
    return (
        "test_case_id = ? AND error IS NULL AND expected_output IS ? AND similarity_method = ?",
        (case_id, expected, method),
    )


def _case_dict(r: sqlite3.Row) -> dict[str, Any]:
    total = r["total_runs"]
    return {
        "id": r["id"],
        "promptId": r["prompt_id"],
        "name": r["name"],
        "description": r["description"],
        "input": _loads(r["input"]),
        "expectedOutput": r["expected_output"],
        "threshold": r["threshold"],
        "sourceFile": r["source_file"],
        "totalRuns": total,
        "passRate": _pass_rate(r["pass_count"], total),
        "avgScore": _avg(r["score_sum"], r["scored_runs"]),
        "avgLength": _avg(r["length_sum"], total),
        "lastRun": r["last_run"],
        "lastPassed": None if r["last_passed"] is None else bool(r["last_passed"]),
        "createdAt": r["created_at"],
        "updatedAt": r["updated_at"],
        "deletedAt": r["deleted_at"],
    }


def _exec_dict(r: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "id": r["id"],
        "testCaseId": r["test_case_id"],
        "runId": r["run_id"],
        "executionId": r["execution_id"],
        "passed": bool(r["passed"]),
        "score": r["score"],
        "actualOutput": r["actual_output"],
        "expectedOutput": r["expected_output"],
        "outputDiff": _loads(r["output_diff"]),
        "exactMatch": bool(r["exact_match"]),
        "semanticScore": r["semantic_score"],
        "similarityMethod": r["similarity_method"],
        "lengthDiff": r["length_diff"],
        "tokenDiff": r["token_diff"],
        "tokenMethod": r["token_method"],
        "isRegression": bool(r["is_regression"]),
        "regressionType": r["regression_type"],
        "regressionTypes": _loads(r["regression_types"]) or [],
        "promptVersion": r["prompt_version"],
        "runDuration": r["run_duration_ms"],
        "latencyMs": r["latency_ms"],
        "inputTokens": r["input_tokens"],
        "outputTokens": r["output_tokens"],
        "error": r["error"],
        "createdAt": r["created_at"],
        "finishReason": r["finish_reason"],
    }


def _run_dict(r: sqlite3.Row) -> dict[str, Any]:
    return {
        "id": r["id"],
        "promptId": r["prompt_id"],
        "promptVersion": r["prompt_version"],
        "startedAt": r["started_at"],
        "finishedAt": r["finished_at"],
        "status": r["status"],
        "total": r["total"],
        "done": r["done"],
        "passed": r["passed"],
        "failed": r["failed"],
        "errors": r["errors"],
        "regressions": r["regressions"],
    }


# --------------------------------------------------------------------------- the store

_F = TypeVar("_F", bound=Callable[..., Any])


def _op(action: str) -> Callable[[_F], _F]:
    """Serialise calls on one connection and turn sqlite3 errors into StoreError."""

    def deco(fn: _F) -> _F:
        @functools.wraps(fn)
        def wrapper(self: Store, *args: Any, **kwargs: Any) -> Any:
            with self._lock:
                if self._conn is None:
                    raise StoreError(f"history database {self.path} is closed", path=self.path)
                try:
                    return fn(self, *args, **kwargs)
                except sqlite3.Error as exc:
                    raise _translate(exc, self.path, action) from exc

        return wrapper  # type: ignore[return-value]

    return deco


class Store:
    """One connection to the history database. Open it with :meth:`Store.open`.

    Calls are synchronous and short; a lock makes one Store safe to share between the event
    loop thread and worker threads. Separate processes each open their own Store.
    """

    def __init__(self, conn: sqlite3.Connection, path: str, timeout: float) -> None:
        self._conn: sqlite3.Connection | None = conn
        self.path = path
        self.timeout = timeout
        self._lock = threading.RLock()
        self._my_runs: set[str] = set()
        self._host = socket.gethostname()

    # ----------------------------------------------------------------- lifecycle

    @classmethod
    def open(
        cls,
        path: str | Path,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        migrate: bool = True,
        read_only: bool = False,
    ) -> Store:
        """Open (creating file and folders) and migrate to the latest schema.

        ``read_only`` opens an existing file without writing anything to it (no WAL switch,
        no migration), so an archived or read-only history can still be inspected.
        """
        if read_only:
            return cls._open_read_only(Path(path).expanduser(), timeout)
        memory = str(path) == ":memory:"
        where = str(path) if memory else str(Path(path).expanduser())
        if not memory:
            p = Path(where)
            if p.is_dir():
                raise StoreError(
                    f"history database {where} is a directory, not a database file; "
                    "point --db/OXY_DB at a file",
                    path=where,
                )
            try:
                p.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(
                    f"history database {where}: cannot create folder {p.parent} "
                    f"({exc.strerror or exc})",
                    path=where,
                ) from exc
        conn: sqlite3.Connection | None = None
        try:
            conn = sqlite3.connect(
                where, timeout=timeout, isolation_level=None, check_same_thread=False
            )
            conn.row_factory = sqlite3.Row
            conn.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
            # Reading the schema first surfaces "not a database" before we try to change it.
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
            conn.execute("PRAGMA journal_mode = WAL").fetchone()
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")
            if migrate:
                _migrate(conn, path=where)
            else:
                _check_version(conn, where)
        except sqlite3.Error as exc:
            if conn is not None:
                conn.close()
            raise _translate(exc, where, "opening") from exc
        except BaseException:
            if conn is not None:
                conn.close()
            raise
        return cls(conn, where, timeout)

    @classmethod
    def _open_read_only(cls, path: Path, timeout: float) -> Store:
        where = str(path)
        if not path.is_file():
            raise StoreError(f"history database {where} does not exist", path=where)
        from urllib.parse import quote

        # immutable: a read-only file (or folder) cannot hold the WAL's shared-memory file.
        immutable = (
            "&immutable=1"
            if not os.access(path.parent, os.W_OK) or not os.access(path, os.W_OK)
            else ""
        )
        try:
            conn = sqlite3.connect(
                f"file:{quote(where)}?mode=ro{immutable}",
                uri=True,
                timeout=timeout,
                isolation_level=None,
                check_same_thread=False,
            )
            conn.row_factory = sqlite3.Row
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
            _check_version(conn, where)
        except sqlite3.Error as exc:
            raise _translate(exc, where, "opening") from exc
        store = cls(conn, where, timeout)
        store.read_only = True
        return store

    read_only: bool = False

    def close(self) -> None:
        """Close; runs this Store started and never finished become stale (see mark_stale_runs)."""
        with self._lock:
            if self._conn is None:
                return
            with _LIVE_RUNS_LOCK:
                _LIVE_RUNS.difference_update(self._my_runs)
            self._my_runs.clear()
            with suppress(sqlite3.Error):  # best effort; never fail a close over statistics
                self._conn.execute("PRAGMA optimize")
            self._conn.close()
            self._conn = None

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

    @property
    def conn(self) -> sqlite3.Connection:
        """The raw connection, for tests and maintenance scripts; not part of the stable API."""
        if self._conn is None:
            raise StoreError(f"history database {self.path} is closed", path=self.path)
        return self._conn

    @property
    @_op("reading the schema version")
    def schema_version(self) -> int:
        return _user_version(self.conn)

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One IMMEDIATE transaction: take the write lock up front so WAL readers never deadlock."""
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        """A read transaction, so multi-query answers (stats) come from one snapshot."""
        conn = self.conn
        conn.execute("BEGIN")
        try:
            yield conn
        finally:
            if conn.in_transaction:
                conn.execute("COMMIT")

    # ----------------------------------------------------------------- prompts

    @_op("saving a prompt")
    def upsert_prompt(self, prompt_id: str, name: str, source: str = "") -> dict[str, Any]:
        now = utc_timestamp()
        with self._write() as c:
            # UPDATE-then-INSERT rather than UPSERT: works on SQLite older than 3.24.
            cur = c.execute(
                "UPDATE prompts SET name = ?, source = ? WHERE id = ?",
                (name, source or "", prompt_id),
            )
            if cur.rowcount == 0:
                c.execute(
                    "INSERT INTO prompts (id, name, source, created_at) VALUES (?, ?, ?, ?)",
                    (prompt_id, name, source or "", now),
                )
        return self._prompt(prompt_id) or {}

    @_op("reading a prompt")
    def get_prompt(self, prompt_id: str) -> dict[str, Any] | None:
        return self._prompt(prompt_id)

    def _prompt(self, prompt_id: str) -> dict[str, Any] | None:
        r = self.conn.execute(
            "SELECT id, name, source, created_at FROM prompts WHERE id = ?", (prompt_id,)
        ).fetchone()
        if r is None:
            return None
        return {"id": r["id"], "name": r["name"], "source": r["source"], "createdAt": r[3]}

    @_op("listing prompts")
    def list_prompts(self) -> list[dict[str, Any]]:
        rows = self.conn.execute(
            "SELECT id, name, source, created_at FROM prompts ORDER BY id"
        ).fetchall()
        return [
            {"id": r["id"], "name": r["name"], "source": r["source"], "createdAt": r[3]}
            for r in rows
        ]

    @staticmethod
    def _ensure_prompt_row(c: sqlite3.Connection, prompt_id: str, now: str) -> None:
        # Test cases may be declared before the prompt is registered; keep the FK satisfied.
        c.execute(
            "INSERT OR IGNORE INTO prompts (id, name, source, created_at) VALUES (?, ?, '', ?)",
            (prompt_id, prompt_id, now),
        )

    @_op("saving a prompt version")
    def ensure_version(
        self, prompt_id: str, content: Mapping[str, Any], *, created_at: str | None = None
    ) -> int:
        """Same content (canonically) -> same version; new content -> previous max + 1."""
        text = canonical_json(content)
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
        now = utc_timestamp(created_at)
        with self._write() as c:
            self._ensure_prompt_row(c, prompt_id, now)
            row = c.execute(
                "SELECT version FROM prompt_versions WHERE prompt_id = ? AND content_hash = ?",
                (prompt_id, digest),
            ).fetchone()
            if row is not None:
                return int(row[0])
            version = int(
                c.execute(
                    "SELECT coalesce(max(version), 0) + 1 FROM prompt_versions WHERE prompt_id = ?",
                    (prompt_id,),
                ).fetchone()[0]
            )
            c.execute(
                "INSERT INTO prompt_versions (prompt_id, version, content_hash, content, "
                "created_at) VALUES (?, ?, ?, ?, ?)",
                (prompt_id, version, digest, text, now),
            )
            return version

    @_op("reading a prompt version")
    def get_version(self, prompt_id: str, version: int) -> dict[str, Any] | None:
        row = self.conn.execute(
            "SELECT content FROM prompt_versions WHERE prompt_id = ? AND version = ?",
            (prompt_id, version),
        ).fetchone()
        return None if row is None else json.loads(row[0])

    @_op("reading prompt versions")
    def latest_version(self, prompt_id: str) -> int | None:
        row = self.conn.execute(
            "SELECT max(version) FROM prompt_versions WHERE prompt_id = ?", (prompt_id,)
        ).fetchone()
        return None if row[0] is None else int(row[0])

    @_op("listing prompt versions")
    def list_versions(self, prompt_id: str) -> list[dict[str, Any]]:
        rows = self.conn.execute(
            "SELECT version, content_hash, created_at FROM prompt_versions "
            "WHERE prompt_id = ? ORDER BY version",
            (prompt_id,),
        ).fetchall()
        return [
            {"version": r[0], "contentHash": r[1], "createdAt": r[2], "promptId": prompt_id}
            for r in rows
        ]

    # ----------------------------------------------------------------- test cases

    def _case_row(self, case_id: str, *, include_deleted: bool) -> sqlite3.Row | None:
        sql = f"SELECT {_CASE_COLUMNS} FROM test_cases WHERE id = ?"
        if not include_deleted:
            sql += " AND deleted_at IS NULL"
        row: sqlite3.Row | None = self.conn.execute(sql, (case_id,)).fetchone()
        return row

    @_op("creating a test case")
    def create_test_case(
        self,
        prompt_id: str,
        name: str,
        input: Any,
        expected_output: str | None = None,
        description: str | None = None,
        *,
        id: str | None = None,
        threshold: float | None = None,
        source_file: str | None = None,
        created_at: str | None = None,
    ) -> dict[str, Any]:
        """Insert a new case; an existing id (even soft-deleted) is an error, not an overwrite."""
        if not name:
            raise ValueError("a test case needs a non-empty name")
        case_id = id or _new_id()
        now = utc_timestamp(created_at)
        with self._write() as c:
            if c.execute("SELECT 1 FROM test_cases WHERE id = ?", (case_id,)).fetchone():
                raise AlreadyExistsError(
                    f"test case {case_id!r} already exists in {self.path}", path=self.path
                )
            self._ensure_prompt_row(c, prompt_id, now)
            c.execute(
                "INSERT INTO test_cases (id, prompt_id, name, description, input, "
                "expected_output, threshold, source_file, created_at, updated_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    case_id,
                    prompt_id,
                    name,
                    description,
                    canonical_json(input),
                    expected_output,
                    threshold,
                    source_file,
                    now,
                    now,
                ),
            )
            row = self._case_row(case_id, include_deleted=True)
        assert row is not None
        return _case_dict(row)

    def _apply_changes(
        self,
        c: sqlite3.Connection,
        row: sqlite3.Row,
        changes: Mapping[str, Any],
        now: str,
        *,
        undelete: bool = False,
    ) -> bool:
        """Write only fields that really differ; bump updated_at only if something did."""
        sets: dict[str, Any] = {}
        for column, value in changes.items():
            if column == "input":
                value = canonical_json(value)
                if value != canonical_json(_loads(row["input"])):
                    sets[column] = value
            elif row[column] != value:
                sets[column] = value
        if undelete and row["deleted_at"] is not None:
            sets["deleted_at"] = None
        if not sets:
            return False
        if "prompt_id" in sets:
            self._ensure_prompt_row(c, sets["prompt_id"], now)
        sets["updated_at"] = now
        assignments = ", ".join(f"{col} = ?" for col in sets)
        c.execute(f"UPDATE test_cases SET {assignments} WHERE id = ?", (*sets.values(), row["id"]))
        return True

    @_op("updating a test case")
    def update_test_case(self, case_id: str, **fields: Any) -> dict[str, Any]:
        """Partial update (snake_case or seed camelCase names); unknown id -> NotFoundError."""
        changes: dict[str, Any] = {}
        for key, value in fields.items():
            if key not in _CASE_FIELDS:
                raise TypeError(f"update_test_case() got an unknown field {key!r}")
            changes[_CASE_FIELDS[key]] = value
        if "name" in changes and not changes["name"]:
            raise ValueError("a test case needs a non-empty name")
        _check_case_fields(
            **{k: v for k, v in changes.items() if k in ("input", "expected_output", "threshold")}
        )
        now = utc_timestamp()
        with self._write() as c:
            row = self._case_row(case_id, include_deleted=False)
            if row is None:
                raise NotFoundError(f"no test case {case_id!r} in {self.path}", path=self.path)
            self._apply_changes(c, row, changes, now)
            row = self._case_row(case_id, include_deleted=False)
        assert row is not None
        return _case_dict(row)

    def update_expected_output(self, case_id: str, output: str) -> dict[str, Any]:
        """Accept new behaviour as the baseline (the seed's updateExpectedOutput)."""
        return self.update_test_case(case_id, expected_output=output)

    @_op("saving a test case")
    def upsert_test_case(
        self,
        id: str,
        prompt_id: str,
        name: str,
        input: Any,
        expected_output: str | None = None,
        description: str | None = None,
        *,
        threshold: float | None = None,
        source_file: str | None = None,
    ) -> dict[str, Any]:
        """Sync a YAML-declared case: keep id, createdAt and history; touch updatedAt on change.

        Re-declaring a soft-deleted case brings it back (with its history).
        """
        if not id or not name:
            raise ValueError("a synced test case needs a non-empty id and name")
        now = utc_timestamp()
        with self._write() as c:
            row = self._case_row(id, include_deleted=True)
            if row is None:
                self._ensure_prompt_row(c, prompt_id, now)
                c.execute(
                    "INSERT INTO test_cases (id, prompt_id, name, description, input, "
                    "expected_output, threshold, source_file, created_at, updated_at) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        id,
                        prompt_id,
                        name,
                        description,
                        canonical_json(input),
                        expected_output,
                        threshold,
                        source_file,
                        now,
                        now,
                    ),
                )
            else:
                changes = {
                    "prompt_id": prompt_id,
                    "name": name,
                    "description": description,
                    "input": input,
                    "expected_output": expected_output,
                    "threshold": threshold,
                    "source_file": source_file,
                }
                self._apply_changes(c, row, changes, now, undelete=True)
            row = self._case_row(id, include_deleted=True)
        assert row is not None
        return _case_dict(row)

    @_op("deleting a test case")
    def delete_test_case(self, case_id: str) -> bool:
        """Soft delete: hidden from lists, executions kept. False if unknown or already deleted."""
        now = utc_timestamp()
        with self._write() as c:
            cur = c.execute(
                "UPDATE test_cases SET deleted_at = ?, updated_at = ? "
                "WHERE id = ? AND deleted_at IS NULL",
                (now, now, case_id),
            )
            return cur.rowcount == 1

    @_op("reading a test case")
    def get_test_case(
        self, case_id: str, *, include_deleted: bool = False
    ) -> dict[str, Any] | None:
        row = self._case_row(case_id, include_deleted=include_deleted)
        return None if row is None else _case_dict(row)

    @_op("listing test cases")
    def list_test_cases(
        self, prompt_id: str | None = None, *, include_deleted: bool = False
    ) -> list[dict[str, Any]]:
        """Reads only the maintained aggregates: cost does not grow with history."""
        where: list[str] = []
        params: list[Any] = []
        if prompt_id is not None:
            where.append("prompt_id = ?")
            params.append(prompt_id)
        if not include_deleted:
            where.append("deleted_at IS NULL")
        sql = f"SELECT {_CASE_COLUMNS} FROM test_cases"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY prompt_id, created_at, rowid"  # rowid: creation order within a ms
        return [_case_dict(r) for r in self.conn.execute(sql, params)]

    # ----------------------------------------------------------------- runs

    @_op("starting a run")
    def start_run(
        self,
        prompt_id: str | None,
        prompt_version: int | None,
        total: int,
        *,
        started_at: str | None = None,
    ) -> str:
        run_id = _new_id()
        with self._write() as c:
            c.execute(
                "INSERT INTO runs (id, prompt_id, prompt_version, started_at, status, total, "
                "done, pid, host) VALUES (?, ?, ?, ?, 'running', ?, 0, ?, ?)",
                (
                    run_id,
                    prompt_id,
                    prompt_version,
                    utc_timestamp(started_at),
                    total,
                    os.getpid(),
                    self._host,
                ),
            )
        self._my_runs.add(run_id)
        with _LIVE_RUNS_LOCK:
            _LIVE_RUNS.add(run_id)
        return run_id

    @_op("finishing a run")
    def finish_run(self, run_id: str, status: str = "completed") -> None:
        if status not in RUN_STATUSES or status == "running":
            raise ValueError(
                f"finish_run status must be completed/interrupted/failed, not {status!r}"
            )
        with self._write() as c:
            cur = c.execute(
                "UPDATE runs SET status = ?, finished_at = ? WHERE id = ?",
                (status, utc_timestamp(), run_id),
            )
            if cur.rowcount == 0:
                raise NotFoundError(f"no run {run_id!r} in {self.path}", path=self.path)
        self._my_runs.discard(run_id)
        with _LIVE_RUNS_LOCK:
            _LIVE_RUNS.discard(run_id)

    @_op("checking for interrupted runs")
    def mark_stale_runs(self) -> list[str]:
        """Mark 'running' runs whose process is gone as 'interrupted'; return their ids.

        Liveness, not age, decides on this host (a long run is not a dead run): our own pid
        counts only while a Store in this process still owns the run; another local pid is
        probed. Runs from other hosts cannot be probed and are presumed dead after 24 h.
        """
        me = os.getpid()
        cutoff = utc_timestamp(datetime.now(timezone.utc) - FOREIGN_RUN_STALE_AFTER)
        with _LIVE_RUNS_LOCK:
            live = set(_LIVE_RUNS)
        with self._write() as c:
            rows = c.execute(
                "SELECT id, pid, host, started_at FROM runs WHERE status = 'running'"
            ).fetchall()
            stale: list[str] = []
            for r in rows:
                pid = r["pid"] or 0
                if r["host"] == self._host:
                    dead = r["id"] not in live if pid == me else not _pid_alive(pid)
                else:
                    dead = r["started_at"] < cutoff
                if dead:
                    stale.append(r["id"])
            now = utc_timestamp()
            c.executemany(
                "UPDATE runs SET status = 'interrupted', finished_at = ? "
                "WHERE id = ? AND status = 'running'",
                [(now, run_id) for run_id in stale],
            )
        return stale

    @_op("listing runs")
    def list_runs(self, limit: int = 20) -> list[dict[str, Any]]:
        """Newest first, with passed/failed/errors/regressions counted from that run's executions."""
        rows = self.conn.execute(
            """WITH r AS (SELECT rowid AS rid, * FROM runs ORDER BY started_at DESC, rowid DESC
                          LIMIT ?)
               SELECT r.id, r.prompt_id, r.prompt_version, r.started_at, r.finished_at,
                      r.status, r.total, r.done,
                      coalesce(sum(e.passed), 0) AS passed,
                      coalesce(sum(CASE WHEN e.error IS NULL AND e.passed = 0 THEN 1 ELSE 0 END), 0)
                          AS failed,
                      count(e.error) AS errors,
                      coalesce(sum(e.is_regression), 0) AS regressions
               FROM r LEFT JOIN executions e ON e.run_id = r.id
               GROUP BY r.id
               ORDER BY r.started_at DESC, r.rid DESC""",
            (limit,),
        ).fetchall()
        return [_run_dict(r) for r in rows]

    @_op("reading a run")
    def get_run(self, run_id: str) -> dict[str, Any] | None:
        row = self.conn.execute(
            """SELECT r.id, r.prompt_id, r.prompt_version, r.started_at, r.finished_at,
                      r.status, r.total, r.done,
                      coalesce(sum(e.passed), 0) AS passed,
                      coalesce(sum(CASE WHEN e.error IS NULL AND e.passed = 0 THEN 1 ELSE 0 END), 0)
                          AS failed,
                      count(e.error) AS errors,
                      coalesce(sum(e.is_regression), 0) AS regressions
               FROM runs r LEFT JOIN executions e ON e.run_id = r.id
               WHERE r.id = ? GROUP BY r.id""",
            (run_id,),
        ).fetchone()
        return None if row is None else _run_dict(row)

    # ----------------------------------------------------------------- executions

    def _prepare_execution(self, c: sqlite3.Connection, f: Mapping[str, Any]) -> dict[str, Any]:
        """Validate and fill defaults for one execution (column names -> values)."""
        unknown = set(f) - _EXEC_ARGS
        if unknown:
            raise TypeError(f"record_execution() got unknown field(s) {sorted(unknown)}")
        for required in ("test_case_id", "passed", "actual_output", "prompt_version"):
            if f.get(required) is None:
                raise TypeError(f"record_execution() needs {required}")
        case_id = f["test_case_id"]
        score_value = f.get("score")
        if score_value is not None and not (
            isinstance(score_value, (int, float)) and 0.0 <= float(score_value) <= 1.0
        ):
            raise ValueError(f"score must be between 0 and 1 (or None), got {score_value!r}")
        expected = f.get("expected_output")
        if expected is None:  # snapshot the baseline the execution was judged against
            row = c.execute(
                "SELECT expected_output FROM test_cases WHERE id = ?", (case_id,)
            ).fetchone()
            expected = None if row is None else row[0]
        actual = redact(f["actual_output"])  # no key a model echoed is ever stored
        length_diff = f.get("length_diff")
        if length_diff is None:
            length_diff = len(actual) - len(expected or "")
        rtype = f.get("regression_type")
        rtypes = list(f.get("regression_types") or ([rtype] if rtype else []))
        if rtype is None and rtypes:
            rtype = rtypes[0]
        exec_id = f.get("id") or _new_id()
        diff = f.get("output_diff")
        return {
            "id": exec_id,
            "test_case_id": case_id,
            "run_id": f.get("run_id"),
            "execution_id": f.get("execution_id") or exec_id,
            "passed": 1 if f["passed"] else 0,
            "score": None if f.get("score") is None else float(f["score"]),
            "actual_output": actual,
            "expected_output": expected,
            "output_diff": None if diff is None else canonical_json(redact_data(diff)),
            "exact_match": 1 if f.get("exact_match") else 0,
            "semantic_score": f.get("semantic_score"),
            "similarity_method": f.get("similarity_method") or "",
            "length_diff": int(length_diff),
            "token_diff": f.get("token_diff"),
            "token_method": f.get("token_method") or "",
            "is_regression": 1 if (f.get("is_regression") or rtypes) else 0,
            "regression_type": rtype,
            "regression_types": json.dumps(rtypes),
            "prompt_version": int(f["prompt_version"]),
            "run_duration_ms": float(f.get("run_duration_ms") or 0.0),
            "latency_ms": f.get("latency_ms"),
            "input_tokens": f.get("input_tokens"),
            "output_tokens": f.get("output_tokens"),
            "error": None if f.get("error") is None else redact(f["error"]),
            "created_at": utc_timestamp(f.get("created_at")),
            "finish_reason": f.get("finish_reason"),
        }

    def _insert_execution(self, c: sqlite3.Connection, e: dict[str, Any]) -> None:
        """Execution + case aggregates + daily rollup + run progress; caller owns the transaction."""
        created = e["created_at"]
        passed = e["passed"]
        score = e["score"]
        if e["error"] is not None:
            # Not judged (no expected output yet, or no score could be computed): kept for
            # the record and for `accept`, but never counted as a pass or a failure.
            if (
                c.execute("SELECT 1 FROM test_cases WHERE id = ?", (e["test_case_id"],)).fetchone()
                is None
            ):
                raise NotFoundError(
                    f"no test case {e['test_case_id']!r} in {self.path}", path=self.path
                )
            if e["run_id"] is not None:
                c.execute("UPDATE runs SET done = done + 1 WHERE id = ?", (e["run_id"],))
            c.execute(_INSERT_EXECUTION, e)
            return
        cur = c.execute(
            """UPDATE test_cases SET
                 total_runs = total_runs + 1,
                 pass_count = pass_count + ?,
                 score_sum = score_sum + ?,
                 scored_runs = scored_runs + ?,
                 length_sum = length_sum + ?,
                 last_passed = CASE WHEN last_run IS NULL OR ? >= last_run
                                    THEN ? ELSE last_passed END,
                 last_run = CASE WHEN last_run IS NULL OR ? >= last_run
                                 THEN ? ELSE last_run END
               WHERE id = ?""",
            (
                passed,
                score or 0.0,
                0 if score is None else 1,
                len(e["actual_output"]),
                created,
                passed,
                created,
                created,
                e["test_case_id"],
            ),
        )
        if cur.rowcount == 0:
            raise NotFoundError(
                f"no test case {e['test_case_id']!r} in {self.path}", path=self.path
            )
        if e["run_id"] is not None:
            cur = c.execute("UPDATE runs SET done = done + 1 WHERE id = ?", (e["run_id"],))
            if cur.rowcount == 0:
                raise NotFoundError(f"no run {e['run_id']!r} in {self.path}", path=self.path)
        c.execute(_INSERT_EXECUTION, e)
        day = created[:10]
        daily = (1, passed, score or 0.0, 0 if score is None else 1, e["test_case_id"], day)
        cur = c.execute(
            "UPDATE case_daily SET runs = runs + ?, passes = passes + ?, "
            "score_sum = score_sum + ?, scored = scored + ? "
            "WHERE test_case_id = ? AND day = ?",
            daily,
        )
        if cur.rowcount == 0:  # plain UPDATE-then-INSERT: works on SQLite without UPSERT
            c.execute(
                "INSERT INTO case_daily (runs, passes, score_sum, scored, test_case_id, day) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                daily,
            )

    @_op("recording an execution")
    def record_execution(self, **fields: Any) -> dict[str, Any]:
        """Insert one execution and update everything derived from it, in one committed transaction.

        Fields (snake_case): test_case_id, passed, actual_output, prompt_version (required);
        run_id, execution_id, score, expected_output (default: the case's current one),
        output_diff (JSON), exact_match, semantic_score, similarity_method, length_diff
        (default: len(actual) - len(expected)), token_diff, token_method, is_regression,
        regression_type, regression_types, run_duration_ms, latency_ms, input_tokens,
        output_tokens, error, created_at, id, finish_reason (the model's, as the vendor spelled it).
        Soft-deleted cases still accept executions: a run in flight should not lose results.
        """
        with self._write() as c:
            e = self._prepare_execution(c, fields)
            self._insert_execution(c, e)
        return _exec_dict(e)

    @_op("recording executions")
    def record_executions(self, rows: Iterable[Mapping[str, Any]]) -> int:
        """Bulk import (history from elsewhere, benchmarks): same bookkeeping, one transaction."""
        n = 0
        with self._write() as c:
            for fields in rows:
                self._insert_execution(c, self._prepare_execution(c, fields))
                n += 1
        return n

    @_op("reading executions")
    def executions(
        self, test_case_id: str, limit: int = 50, offset: int = 0
    ) -> list[dict[str, Any]]:
        """Newest first (the seed's testCaseExecutions), JSON fields parsed."""
        rows = self.conn.execute(
            f"SELECT {_EXEC_COLUMNS} FROM executions WHERE test_case_id = ? "
            "ORDER BY created_at DESC, rowid DESC LIMIT ? OFFSET ?",
            (test_case_id, limit, offset),
        ).fetchall()
        return [_exec_dict(r) for r in rows]

    @_op("reading an execution")
    def get_execution(self, execution_id: str) -> dict[str, Any] | None:
        row = self.conn.execute(
            f"SELECT {_EXEC_COLUMNS} FROM executions WHERE id = ?", (execution_id,)
        ).fetchone()
        return None if row is None else _exec_dict(row)

    def _recent(
        self,
        c: sqlite3.Connection,
        case_id: str,
        limit: int,
        baseline: tuple[str | None, str] | None = None,
    ) -> list[dict[str, Any]]:
        where, args = _history_filter(case_id, baseline)
        rows = c.execute(
            "SELECT id, passed, score, length(actual_output), length_diff, exact_match, "
            "semantic_score, is_regression, prompt_version, error, created_at "
            f"FROM executions WHERE {where} "
            "ORDER BY created_at DESC, rowid DESC LIMIT ?",
            (*args, limit),
        ).fetchall()
        return [
            {
                "id": r[0],
                "passed": bool(r[1]),
                "score": r[2],
                "actualLength": r[3],
                "lengthDiff": r[4],
                "exactMatch": bool(r[5]),
                "semanticScore": r[6],
                "isRegression": bool(r[7]),
                "promptVersion": r[8],
                "error": r[9],
                "createdAt": r[10],
            }
            for r in rows
        ]

    @_op("reading recent executions")
    def recent_executions(self, test_case_id: str, limit: int = 10) -> list[dict[str, Any]]:
        """Newest first, only what regression detection needs (no output text)."""
        return self._recent(self.conn, test_case_id, limit)

    @_op("reading test history")
    def history_for_case(
        self, case_id: str, recent: int = 10, *, baseline: tuple[str | None, str] | None = None
    ) -> dict[str, Any]:
        """Regression-detection inputs in one snapshot: passRate here is a 0..1 fraction.

        With ``baseline=(expected_output, similarity_method)`` only comparable earlier
        executions count: judged against that expected output with that method, so
        accepting a new baseline or switching lexical -> embedding scores starts afresh.
        Call it before record_execution, so the current execution is not its own baseline.
        """
        with self._read() as c:
            if baseline is None:
                row = c.execute(
                    "SELECT total_runs, pass_count, score_sum, scored_runs, length_sum "
                    "FROM test_cases WHERE id = ?",
                    (case_id,),
                ).fetchone()
                total, passes = (0, 0) if row is None else (row[0], row[1])
                avg_score = None if row is None else _avg(row[2], row[3])
                avg_length = None if not total else row[4] / total
            else:
                where, args = _history_filter(case_id, baseline)
                total, passes, score_sum, scored, length_sum = c.execute(
                    "SELECT count(*), coalesce(sum(passed), 0), total(score), count(score), "
                    f"coalesce(sum(length(actual_output)), 0) FROM executions WHERE {where}",
                    args,
                ).fetchone()
                avg_score = _avg(score_sum, scored)
                avg_length = None if not total else length_sum / total
            items = self._recent(c, case_id, recent, baseline)
        return {
            "totalRuns": total,
            "historicalPassRate": None if not total else passes / total,
            "avgScore": avg_score,
            "avgLength": avg_length,
            "recent": items,
        }

    # ----------------------------------------------------------------- stats

    @_op("reading test case statistics")
    def test_case_stats(
        self, test_case_id: str, recent: int = 10, *, trend_days: int | None = None
    ) -> dict[str, Any] | None:
        """The seed's testCaseStats; None for an unknown id. Soft-deleted cases still answer.

        Touches the case row, ``recent`` + 50 index rows and one rollup row per day, never
        the whole history. ``trend_days`` limits trendData to the last N days with data.
        """
        with self._read() as c:
            case = c.execute(
                "SELECT total_runs, pass_count, score_sum, scored_runs FROM test_cases "
                "WHERE id = ?",
                (test_case_id,),
            ).fetchone()
            if case is None:
                return None
            recent_rows = c.execute(
                "SELECT id, passed, score, prompt_version, created_at FROM executions "
                "WHERE test_case_id = ? ORDER BY created_at DESC, rowid DESC LIMIT ?",
                (test_case_id, recent),
            ).fetchall()
            reg_rows = c.execute(
                "SELECT id, passed, score, regression_type, regression_types, prompt_version, "
                "created_at FROM executions INDEXED BY ix_executions_regressions "
                "WHERE test_case_id = ? AND is_regression = 1 "
                "ORDER BY created_at DESC, rowid DESC LIMIT ?",
                (test_case_id, REGRESSIONS_SHOWN),
            ).fetchall()
            reg_count = c.execute(
                "SELECT count(*) FROM executions INDEXED BY ix_executions_regressions "
                "WHERE test_case_id = ? AND is_regression = 1",
                (test_case_id,),
            ).fetchone()[0]
            if trend_days is None:
                daily = c.execute(
                    "SELECT day, runs, passes, score_sum, scored FROM case_daily "
                    "WHERE test_case_id = ? ORDER BY day",
                    (test_case_id,),
                ).fetchall()
            else:
                daily = c.execute(
                    "SELECT * FROM (SELECT day, runs, passes, score_sum, scored FROM case_daily "
                    "WHERE test_case_id = ? ORDER BY day DESC LIMIT ?) ORDER BY day",
                    (test_case_id, trend_days),
                ).fetchall()
        total = case[0]
        return {
            "testCaseId": test_case_id,
            "totalRuns": total,
            "passRate": _pass_rate(case[1], total),
            "avgScore": _avg(case[2], case[3]),
            "recentRuns": [
                {
                    "id": r[0],
                    "passed": bool(r[1]),
                    "score": r[2],
                    "promptVersion": r[3],
                    "createdAt": r[4],
                }
                for r in recent_rows
            ],
            "regressions": [
                {
                    "id": r[0],
                    "passed": bool(r[1]),
                    "score": r[2],
                    "regressionType": r[3],
                    "regressionTypes": json.loads(r[4]),
                    "promptVersion": r[5],
                    "createdAt": r[6],
                }
                for r in reg_rows
            ],
            "regressionCount": reg_count,
            "trendData": [
                {
                    "date": r[0],
                    "totalRuns": r[1],
                    "passRate": _pass_rate(r[2], r[1]),
                    "avgScore": _avg(r[3], r[4]),
                }
                for r in daily
            ],
        }

    # ----------------------------------------------------------------- maintenance

    @_op("rebuilding aggregates")
    def rebuild_aggregates(self) -> None:
        """Recompute every derived number from executions (repair after manual edits)."""
        with self._write() as c:
            c.execute(
                """UPDATE test_cases SET
                     total_runs = (SELECT count(*) FROM executions e WHERE e.test_case_id = test_cases.id AND e.error IS NULL),
                     pass_count = (SELECT coalesce(sum(passed), 0) FROM executions e
                                   WHERE e.test_case_id = test_cases.id AND e.error IS NULL),
                     score_sum = (SELECT total(score) FROM executions e
                                  WHERE e.test_case_id = test_cases.id AND e.error IS NULL),
                     scored_runs = (SELECT count(score) FROM executions e
                                    WHERE e.test_case_id = test_cases.id AND e.error IS NULL),
                     length_sum = (SELECT coalesce(sum(length(actual_output)), 0) FROM executions e
                                   WHERE e.test_case_id = test_cases.id AND e.error IS NULL),
                     last_run = (SELECT created_at FROM executions e
                                 WHERE e.test_case_id = test_cases.id AND e.error IS NULL
                                 ORDER BY created_at DESC, rowid DESC LIMIT 1),
                     last_passed = (SELECT passed FROM executions e
                                    WHERE e.test_case_id = test_cases.id AND e.error IS NULL
                                    ORDER BY created_at DESC, rowid DESC LIMIT 1)"""
            )
            c.execute("DELETE FROM case_daily")
            c.execute(
                """INSERT INTO case_daily (test_case_id, day, runs, passes, score_sum, scored)
                   SELECT test_case_id, substr(created_at, 1, 10), count(*), sum(passed),
                          total(score), count(score)
                   FROM executions WHERE error IS NULL GROUP BY test_case_id, substr(created_at, 1, 10)"""
            )
            c.execute(
                "UPDATE runs SET done = (SELECT count(*) FROM executions e WHERE e.run_id = runs.id)"
            )


_EXEC_ARGS = frozenset(
    {
        "id",
        "test_case_id",
        "run_id",
        "execution_id",
        "passed",
        "score",
        "actual_output",
        "expected_output",
        "output_diff",
        "exact_match",
        "semantic_score",
        "similarity_method",
        "length_diff",
        "token_diff",
        "token_method",
        "is_regression",
        "regression_type",
        "regression_types",
        "prompt_version",
        "run_duration_ms",
        "latency_ms",
        "input_tokens",
        "output_tokens",
        "error",
        "created_at",
        "finish_reason",
    }
)

_INSERT_EXECUTION = (
    f"INSERT INTO executions ({_EXEC_COLUMNS}) VALUES ("
    + ", ".join(":" + col.strip() for col in _EXEC_COLUMNS.split(","))
    + ")"
)
