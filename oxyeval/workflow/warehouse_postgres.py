"""PostgreSQL (and Redshift, which speaks its protocol) through psycopg 3.

Every statement runs in a transaction begun here as ``READ ONLY`` (unless the entry says
``read_only: false``) and rolled back after it, so nothing a statement changes outlives
it: not a write (the server refuses it, a ``DELETE`` hidden in a ``WITH`` too), not a
``SET SESSION CHARACTERISTICS ... READ WRITE`` or ``set_config(...)`` (a rolled-back
transaction takes its SETs with it). The transaction takes its snapshot before the
statement runs, so ``SET TRANSACTION READ WRITE`` is refused by the server. The
statement is sent with the extended query protocol, which carries exactly one statement:
``COMMIT; DROP ...`` is a syntax error on the server, never two statements. Values are
bound by the server (``$1``, PostgreSQL's own placeholders). The server stops a
statement at ``statement_timeout`` (set for this transaction only); past it, a cancel
request stops it from here.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from .warehouses import Rows, Session, Warehouse, WarehouseError, setting

__all__ = ["PostgresSession", "PostgresWarehouse"]

_SYSTEM_SCHEMAS = ("pg_catalog", "information_schema", "pg_toast")


class PostgresSession(Session):
    def __init__(self, conn: Any, name: str) -> None:
        self.conn = conn
        self.name = name

    def run(
        self, sql: str, params: list[Any], *, writable: bool, timeout: float, max_rows: int
    ) -> Rows:
        import psycopg

        conn = self.conn
        try:
            with conn.cursor() as cur:
                cur.execute("BEGIN READ WRITE" if writable else "BEGIN READ ONLY")
                try:
                    # A SELECT: it takes the transaction's snapshot (so its read-only mode
                    # can no longer be changed) and sets both for this transaction only.
                    cur.execute(
                        "SELECT set_config('statement_timeout', $1, true), "
                        "set_config('standard_conforming_strings', 'on', true)",
                        [str(max(1, int(timeout * 1000)))],
                    )
                    # binary=True: the extended protocol even without values (one statement)
                    cur.execute(sql, params or None, binary=True)
                    columns = [d.name for d in cur.description or []]
                    rows = [tuple(r) for r in cur.fetchmany(max_rows + 1)] if columns else []
                finally:
                    with contextlib.suppress(psycopg.Error):
                        conn.execute("COMMIT" if writable else "ROLLBACK")
        except psycopg.errors.QueryCanceled as exc:
            raise WarehouseError("timeout", _first(exc)) from None
        except psycopg.errors.ReadOnlySqlTransaction as exc:
            raise WarehouseError("refused", _read_only(exc)) from None
        except psycopg.OperationalError as exc:
            raise WarehouseError("unreachable", _first(exc)) from None
        except psycopg.Error as exc:
            raise WarehouseError("sql", _first(exc)) from None
        return columns, rows[:max_rows], len(rows) > max_rows

    def cancel(self) -> None:
        cancel = getattr(self.conn, "cancel_safe", None)
        if cancel is not None:
            cancel(timeout=5.0)
        else:
            self.conn.cancel()

    def close(self) -> None:
        self.conn.close()


def _first(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _read_only(exc: BaseException) -> str:
    return (
        f"is read-only: the server refused the statement ({_first(exc)}); set "
        "'read_only: false' on the database in config.yml to let workflow SQL write"
    )


class PostgresWarehouse(Warehouse):
    dialect = "postgres"

    def __init__(self, name: str, entry: dict[str, Any], root: Path) -> None:
        super().__init__(name, entry, root)
        if entry.get("type") == "redshift":
            self.dialect = "postgres"  # oxy's dialect for Redshift

    def open(self, timeout: float) -> Session:
        import psycopg

        entry = self.entry
        default_port = "5439" if entry.get("type") == "redshift" else "5432"
        try:
            conn = psycopg.connect(
                host=str(setting(entry, "host", "localhost")),
                port=str(setting(entry, "port", default_port)),
                user=str(setting(entry, "user", "postgres")),
                password=setting(entry, "password"),
                dbname=str(setting(entry, "database", "postgres")),
                connect_timeout=max(2, int(timeout)),
                autocommit=True,  # transactions are begun explicitly, one per statement
                application_name="oxyeval",
                cursor_factory=psycopg.RawCursor,  # $1 placeholders, bound by the server
            )
        except psycopg.OperationalError as exc:
            text = _first(exc)
            code = "auth" if "authentication failed" in text or "password" in text else ""
            raise WarehouseError(code or "unreachable", text) from None
        return PostgresSession(conn, self.name)

    def catalog_query(self) -> str:
        excluded = ", ".join(f"'{s}'" for s in _SYSTEM_SCHEMAS)
        return (
            "SELECT table_schema, table_name, column_name, data_type "
            "FROM information_schema.columns "
            f"WHERE table_schema NOT IN ({excluded}) AND table_schema NOT LIKE 'pg_temp%' "
            "AND table_schema NOT LIKE 'pg_toast%' "
            "ORDER BY table_schema, table_name, ordinal_position"
        )
