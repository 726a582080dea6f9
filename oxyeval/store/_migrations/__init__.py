"""Schema migrations: Alembic, run programmatically when a store is opened.

Users never see Alembic: there is no alembic.ini to manage. Opening a store for writing
brings its schema to :data:`HEAD` in one transaction (SQLite: under the write lock;
PostgreSQL: under an advisory lock), so two processes opening an old database at once
migrate it exactly once, and an interrupted upgrade leaves the previous schema intact.

The version lives in the table ``oxyeval_schema_version`` (not Alembic's default name, so a
team database that also holds an application's own Alembic history is not confused).

A history file written by oxyeval 0.1.0 (the sqlite3 store, ``PRAGMA user_version`` 1 or 2)
is converted in the same transaction: see :mod:`._legacy`. SQLite files we manage carry
``user_version`` :data:`SQLITE_MARKER`, which 0.1.0 reads as "newer than I understand"
and so refuses to touch.

For developers, a new revision: add ``versions/NNNN_what.py`` (copy the last one, set
``down_revision``), update ``HEAD``/``REVISIONS`` here and ``_tables.py``, and regenerate the
new-file snapshot (``python -m oxyeval.store._fresh``); the test suite checks that the four
agree on SQLite and PostgreSQL.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING

from .._engine import Location, create_engine, missing_folder, translate
from .._errors import EmptyHistoryError, LocationError, OldSchemaError, StoreError

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection, Engine

__all__ = [
    "HEAD",
    "REVISIONS",
    "SQLITE_MARKER",
    "VERSION_TABLE",
    "open_engine",
    "schema_state",
    "upgrade",
]

HEAD = "0013"
REVISIONS = (
    "0001",
    "0002",
    "0003",
    "0004",
    "0005",
    "0006",
    "0007",
    "0008",
    "0009",
    "0010",
    "0011",
    "0012",
    "0013",
)
VERSION_TABLE = "oxyeval_schema_version"
APPLICATION_ID = 0x4F585945  # "OXYE": marks SQLite files as ours (0.1.0 set it too)
SQLITE_MARKER = 100  # PRAGMA user_version of files under Alembic; > 0.1.0's latest (2)
_PG_LOCK = 0x4F58594556414C  # advisory lock key ("OXYEVAL") serialising migrations
OUR_TABLES = frozenset(
    {
        "prompts",
        "prompt_versions",
        "test_cases",
        "runs",
        "executions",
        "case_daily",
        "case_baselines",
        "test_results",
        "workflow_runs",
        "workflow_tasks",
        "cache_entries",
        "results",
        "scores",
        "result_daily",
        "run_totals",
        "test_branches",
        "branch_outputs",
        "batches",
        "batch_requests",
        "run_group_shards",
        "judge_calibrations",
    }
)


def schema_state(conn: Connection) -> tuple[str, str | None]:
    """(state, detail): current, old, newer, legacy (0.1.0 file), empty, or foreign."""
    import sqlalchemy as sa

    tables = set(sa.inspect(conn).get_table_names())
    if VERSION_TABLE in tables:
        version = conn.execute(sa.text(f"SELECT version_num FROM {VERSION_TABLE}")).scalar()
        if version == HEAD:
            return "current", version
        if version in REVISIONS:
            return "old", version
        return "newer", version
    sqlite = conn.dialect.name == "sqlite"
    if sqlite:
        user_version = conn.exec_driver_sql("PRAGMA user_version").scalar() or 0
        if user_version in (1, 2) and "executions" in tables:
            app_id = conn.exec_driver_sql("PRAGMA application_id").scalar()
            if app_id == APPLICATION_ID:
                return "legacy", str(user_version)
            return "foreign", f"an SQLite database of another application (application_id {app_id})"
        if user_version > 2:
            return "newer", f"user_version {user_version}"
        if tables:
            return "foreign", "an SQLite database but not an oxyeval history database"
        return "empty", None
    clash = sorted(tables & OUR_TABLES)
    if clash:
        return "foreign", f"a database with a table '{clash[0]}' that oxyeval did not create"
    return "empty", None


def _refuse(state: str, detail: str | None, location: Location) -> StoreError:
    where = location.display
    if state == "newer":
        return StoreError(
            f"history database {where} has schema {detail}, newer than this oxyeval "
            f"understands (up to {HEAD}); upgrade oxyeval or point --db/OXY_DB elsewhere",
            path=where,
        )
    return StoreError(
        f"{where} is {detail}; refusing to modify it (point --db/OXY_DB at a database of its own)"
        if state == "foreign"
        else f"history database {where}: unexpected schema state {state}",
        path=where,
    )


def _alembic(conn: Connection, target: str) -> None:
    from alembic import command
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(Path(__file__).parent))
    cfg.attributes["connection"] = conn
    command.upgrade(cfg, target)


def _create_at_head(conn: Connection) -> None:
    """A new database: the schema of ``_tables.py`` at once, stamped HEAD (what Alembic's
    docs recommend; replaying every revision would cost a second on each new project).
    The tests check that this and replaying the revisions build the same schema."""
    import sqlalchemy as sa

    from .._tables import live_name_index, metadata

    if conn.dialect.name == "postgresql":
        live_name_index()
    metadata.create_all(conn)
    version = sa.Table(
        VERSION_TABLE,
        sa.MetaData(),
        sa.Column("version_num", sa.String(32), nullable=False),
        sa.PrimaryKeyConstraint("version_num", name=f"{VERSION_TABLE}_pkc"),
    )
    version.create(conn)
    conn.execute(version.insert().values(version_num=HEAD))


def upgrade(engine: Engine, location: Location, *, replay: bool = False) -> str:
    """Bring the schema to HEAD (converting a 0.1.0 file); returns the state found.
    ``replay`` runs every Alembic revision even on an empty database (for the tests)."""
    import sqlalchemy as sa

    with engine.connect() as conn, conn.begin():  # cheap check first: usually current
        state, detail = schema_state(conn)
    if state == "current":
        return state
    with engine.connect() as conn:
        conn = conn.execution_options(oxy_write=True)
        with conn.begin():
            if conn.dialect.name == "postgresql":
                conn.execute(sa.text("SELECT pg_advisory_xact_lock(:k)"), {"k": _PG_LOCK})
            state, detail = schema_state(conn)  # again, under the lock
            if state in ("newer", "foreign"):
                raise _refuse(state, detail, location)
            if state == "legacy":
                from ._legacy import convert

                convert(conn, lambda target: _alembic(conn, target))
            if state == "empty" and not replay:
                _create_at_head(conn)
            elif state != "current":
                _alembic(conn, "head")
            if conn.dialect.name == "sqlite":
                conn.exec_driver_sql(f"PRAGMA application_id = {APPLICATION_ID}")
                conn.exec_driver_sql(f"PRAGMA user_version = {SQLITE_MARKER}")
    return state


#: Bytes of an SQLite file with an older schema that a read-only open copies into memory
#: to upgrade and read; a larger one is copied to a private file beside it instead.
MEMORY_COPY_LIMIT = 128 * 1024 * 1024
#: Free bytes a copy on disk leaves on its file system, beyond its own size.
_DISK_MARGIN = 64 * 1024 * 1024


def _private_copy(location: Location, timeout: float) -> Engine:
    """A private copy of an SQLite file with an older schema, to upgrade and read without
    writing the file itself: in memory when it is small, else in a file beside it that is
    unlinked as soon as it is open (it lives as long as its connection, and leaves nothing
    behind). A history of gigabytes never goes into memory; when no copy can be made on
    disk either, :class:`OldSchemaError` says to let a writing command upgrade it."""
    import os
    import shutil
    import sqlite3
    import tempfile
    from urllib.parse import quote

    path = location.path
    assert path is not None
    size = path.stat().st_size
    uri = f"file:{quote(str(path))}?mode=ro"
    writable = os.access(path.parent, os.W_OK) and os.access(path, os.W_OK)
    if not writable:
        uri += "&immutable=1"  # a read-only folder cannot hold the WAL's shared-memory file
    target = ":memory:"
    if size > MEMORY_COPY_LIMIT:
        room = writable and os.name == "posix"
        room = room and shutil.disk_usage(path.parent).free > size + _DISK_MARGIN
        if not room:
            raise OldSchemaError(
                f"history database {location.display} has an older schema, and at "
                f"{size // (1024 * 1024)} MB it is too large to upgrade in memory for reading "
                "without writing it, with no room for a copy beside it; any writing command "
                "(oxy cases run, oxy test) upgrades it in place",
                path=location.display,
            )
        handle, target = tempfile.mkstemp(prefix=".oxyeval-read-", suffix=".db", dir=path.parent)
        os.close(handle)
    src = copy = None
    try:
        src = sqlite3.connect(uri, uri=True, timeout=timeout)
        copy = sqlite3.connect(target, isolation_level=None, check_same_thread=False)
        if target != ":memory:":
            copy.execute("PRAGMA journal_mode = MEMORY")  # no journal file beside it
        src.backup(copy)
        if target != ":memory:":
            copy.execute("PRAGMA journal_mode = MEMORY")  # the backup may have set WAL
    except BaseException as exc:
        if copy is not None:
            copy.close()
        if isinstance(exc, sqlite3.Error):  # a full disk, say: said, not a traceback
            raise StoreError(
                f"history database {location.display} has an older schema, and a private "
                f"copy to upgrade and read could not be made ({exc}); any writing command "
                "(oxy cases run, oxy test) upgrades it in place",
                path=location.display,
            ) from None
        raise
    finally:
        if src is not None:
            src.close()
        if target != ":memory:":
            for leftover in (target, f"{target}-wal", f"{target}-shm", f"{target}-journal"):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(leftover)
    # read_only: no WAL for a private copy (a file unlinked already must grow none beside it)
    return create_engine(location, timeout=timeout, read_only=True, creator=lambda: copy)


def open_engine(
    location: Location, *, read_only: bool, timeout: float, migrate: bool
) -> tuple[Engine, bool]:
    """An engine whose schema is at HEAD, or an error naming the database."""
    where = location.display
    path = location.path
    if path is not None:
        if read_only and (not path.is_file() or path.stat().st_size == 0):
            raise EmptyHistoryError(f"history database {where} does not exist", path=where)
        if not read_only:
            problem = missing_folder(location)
            if problem is not None:
                raise LocationError(problem, path=where)
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise LocationError(
                    f"history database {where}: cannot create folder {path.parent} "
                    f"({exc.strerror or exc})",
                    path=where,
                ) from exc
            if migrate and not path.exists():
                # A new file from the schema snapshot (the same schema, checked by the
                # tests): building it from the tables cost a first run 0.07 s it waited
                # for. Where that cannot be done, the migrations below create it.
                from .._fresh import create_from_snapshot

                create_from_snapshot(path)
    engine = create_engine(location, timeout=timeout, read_only=read_only)
    try:
        if read_only or not migrate:
            with engine.connect() as conn, conn.begin():
                state, detail = schema_state(conn)
            if state == "current":
                return engine, read_only
            if state == "empty":
                raise EmptyHistoryError(
                    f"history database {where} holds no history yet", path=where
                )
            if state in ("newer", "foreign"):
                raise _refuse(state, detail, location)
            if not read_only or location.backend != "sqlite" or path is None:
                raise (OldSchemaError if read_only else StoreError)(
                    f"history database {where} has an older schema ({detail}); any writing "
                    "command (oxy cases run) upgrades it",
                    path=where,
                )
            engine.dispose()
            engine = _private_copy(location, timeout)
            upgrade(engine, location)
            return engine, True
        upgrade(engine, location)
        return engine, False
    except BaseException as exc:
        engine.dispose()
        if isinstance(exc, StoreError) or not _is_db_error(exc):
            raise
        raise translate(exc, location, "opening") from exc


def _is_db_error(exc: BaseException) -> bool:
    from sqlalchemy.exc import SQLAlchemyError

    return isinstance(exc, SQLAlchemyError)
