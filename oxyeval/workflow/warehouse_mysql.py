"""MySQL and MariaDB through mysql-connector-python.

Every statement runs in a transaction begun here with ``START TRANSACTION READ ONLY``,
right after the session is set read-only again (``SET SESSION TRANSACTION READ ONLY``),
and rolled back after it: a statement that switched the session back
(``SET SESSION transaction_read_only=0``, MariaDB's ``tx_read_only``) changed nothing
for the next one, and DDL, which MySQL would commit on its own, is refused inside a
read-only transaction. The connection is opened without the multi-statements flag, so
``COMMIT; DROP ...`` is a syntax error on the server. Values are bound by the server
(a prepared statement's ``?``), never quoted into the text by the driver. The server
stops a statement at the timeout (MariaDB's ``max_statement_time``, MySQL's
``max_execution_time``); past it, ``KILL QUERY`` from another connection stops it.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from .warehouses import Rows, Session, Warehouse, WarehouseError, positional, setting

__all__ = ["MySQLSession", "MySQLWarehouse"]

_SYSTEM_SCHEMAS = ("mysql", "information_schema", "performance_schema", "sys")
#: Server errors that mean the statement was stopped by its timeout or a KILL QUERY.
_STOPPED = {1969, 3024, 1317, 1028}
_READ_ONLY = {1792, 1836}  # a write in a read-only transaction, in read-only mode
_AUTH = {1045, 1044, 1698}


def _first(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class MySQLSession(Session):
    def __init__(self, warehouse: MySQLWarehouse, conn: Any) -> None:
        self.warehouse = warehouse
        self.conn = conn
        self.thread_id = int(conn.connection_id)
        self.mariadb = "mariadb" in str(conn.server_info).lower()

    def _limit(self, timeout: float) -> str:
        if self.mariadb:
            return f"SET SESSION max_statement_time = {max(timeout, 0.001):.3f}"
        return f"SET SESSION max_execution_time = {max(1, int(timeout * 1000))}"

    def run(
        self, sql: str, params: list[Any], *, writable: bool, timeout: float, max_rows: int
    ) -> Rows:
        from mysql.connector import Error

        mode = "READ WRITE" if writable else "READ ONLY"
        text, values = positional(sql, params, lambda _i, _v: "?")
        try:
            setup = self.conn.cursor()
            setup.execute(f"SET SESSION TRANSACTION {mode}")
            setup.execute(self._limit(timeout))
            setup.execute(f"START TRANSACTION {mode}")
            setup.close()
            try:
                cur = self.conn.cursor(prepared=True) if values else self.conn.cursor()
                cur.execute(text, tuple(values) if values else None)
                columns = [d[0] for d in cur.description or []]
                rows = [tuple(r) for r in cur.fetchmany(max_rows + 1)] if columns else []
                cur.close()
            finally:
                with contextlib.suppress(Error):
                    self.conn.cmd_query("COMMIT" if writable else "ROLLBACK")
        except Error as exc:
            errno = getattr(exc, "errno", None)
            if errno in _STOPPED:
                raise WarehouseError("timeout", _first(exc)) from None
            if errno in _READ_ONLY:
                raise WarehouseError(
                    "refused",
                    f"is read-only: the server refused the statement ({_first(exc)}); set "
                    "'read_only: false' on the database in config.yml to let workflow SQL write",
                ) from None
            if errno is None or errno >= 2000:  # the client's own: the connection is gone
                raise WarehouseError("unreachable", _first(exc)) from None
            raise WarehouseError("sql", _first(exc)) from None
        return columns, rows[:max_rows], len(rows) > max_rows

    def cancel(self) -> None:
        other = self.warehouse.open(10.0)
        try:
            other.conn.cmd_query(f"KILL QUERY {self.thread_id}")
        finally:
            other.close()

    def close(self) -> None:
        self.conn.close()


class MySQLWarehouse(Warehouse):
    dialect = "mysql"

    def __init__(self, name: str, entry: dict[str, Any], root: Path) -> None:
        super().__init__(name, entry, root)

    def open(self, timeout: float) -> MySQLSession:
        import mysql.connector
        from mysql.connector.constants import ClientFlag

        entry = self.entry
        try:
            conn = mysql.connector.connect(
                host=str(setting(entry, "host", "localhost")),
                port=int(setting(entry, "port", 3306)),
                user=str(setting(entry, "user", "root")),
                password=str(setting(entry, "password", "")),
                database=str(setting(entry, "database", "mysql")),
                connection_timeout=max(1, int(timeout)),
                autocommit=True,  # transactions are begun explicitly, one per statement
                client_flags=[-ClientFlag.MULTI_STATEMENTS],
                use_pure=True,
            )
        except mysql.connector.Error as exc:
            code = "auth" if getattr(exc, "errno", None) in _AUTH else "unreachable"
            raise WarehouseError(code, _first(exc)) from None
        except ValueError as exc:  # a port that is not a number
            raise WarehouseError("config", f"port: {exc}") from None
        return MySQLSession(self, conn)

    def catalog_query(self) -> str:
        excluded = ", ".join(f"'{s}'" for s in _SYSTEM_SCHEMAS)
        return (
            "SELECT table_schema, table_name, column_name, column_type "
            "FROM information_schema.columns "
            f"WHERE table_schema NOT IN ({excluded}) "
            "ORDER BY table_schema, table_name, ordinal_position"
        )
