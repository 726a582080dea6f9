"""SQL on the embedded DuckDB engine, and the result object templates see.

A database's ``dataset`` folder is DuckDB's file search path, so queries read
``FROM 'orders.csv'`` or ``FROM orders.parquet`` with no loading step. Results
render as a readable table when dropped into a prompt, and expose ``rows``,
``columns`` and each column by name (``{{ q.amount }}`` is the list of amounts)
for loops and conditions.
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import decimal
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .errors import ConfigError, OxyError

__all__ = ["SqlError", "SqlResult", "SqlRunner"]

_SHOWN_ROWS = 200  # rows rendered into text; the data itself is never cut


class SqlError(OxyError):
    """A query that DuckDB rejected or that failed while running (a task failure, exit 3)."""

    exit_code = 3


def _plain(value: Any) -> Any:
    """JSON-friendly form of a DuckDB value."""
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, (_dt.date, _dt.datetime, _dt.time)):
        return value.isoformat()
    if isinstance(value, _dt.timedelta):
        return value.total_seconds()
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


class SqlResult:
    """Rows of a query; reads as a table in templates, and by column or row in code."""

    def __init__(self, columns: list[str], rows: list[tuple[Any, ...]], sql: str = "") -> None:
        self._columns = list(columns)
        self._rows = [tuple(r) for r in rows]
        self.sql = sql

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

    def to_json(self) -> list[dict[str, Any]]:
        return [{k: _plain(v) for k, v in row.items()} for row in self.rows]

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
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"SqlResult(columns={self._columns!r}, rows={len(self._rows)})"


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


class SqlRunner:
    """DuckDB connections for a project's databases, opened on first use.

    Queries written by a model (agent tools) go through a second, sandboxed
    connection per database: one SELECT statement at a time, file access limited
    to the database's own data files, and the configuration locked so the query
    cannot lift those limits. Workflow SQL, written by the project's authors, runs
    on the ordinary connection.
    """

    def __init__(self, databases: dict[str, dict[str, Any]], root: Path) -> None:
        self.databases = databases
        self.root = root
        self._connections: dict[tuple[str, bool], Any] = {}
        self._lock = threading.Lock()

    def _entry(self, name: str) -> dict[str, Any]:
        entry = self.databases.get(name)
        if entry is None:
            known = ", ".join(self.databases) or "none"
            raise ConfigError(f"unknown database '{name}'; databases in config.yml: {known}")
        if entry.get("type") != "duckdb":
            raise ConfigError(
                f"database '{name}' is of type {entry.get('type')}, which oxyeval cannot "
                "query yet (not supported yet: only duckdb runs embedded)"
            )
        return entry

    def _connect(self, name: str, sandboxed: bool = False) -> Any:
        with self._lock:
            conn = self._connections.get((name, sandboxed))
            if conn is not None:
                return conn
            entry = self._entry(name)
            import duckdb

            path = entry.get("path")
            conn = (
                duckdb.connect(str(self.root / path), read_only=True) if path else duckdb.connect()
            )
            folder = entry.get("dataset") or entry.get("file_search_path")
            search = None
            if folder:
                search = (self.root / folder).resolve()
                if not search.is_dir():
                    raise ConfigError(f"database '{name}': dataset folder {search} does not exist")
                conn.execute(f"SET GLOBAL file_search_path = {_quote(str(search))}")
            if sandboxed:
                files: list[str] = []
                if search is not None:
                    for file in search.rglob("*"):
                        if file.is_file():
                            files += [str(file), file.relative_to(search).as_posix()]
                    conn.execute(f"SET allowed_directories = [{_quote(str(search) + '/')}]")
                if files:
                    conn.execute(f"SET allowed_paths = [{', '.join(_quote(f) for f in files)}]")
                conn.execute("SET enable_external_access = false")
                conn.execute("SET lock_configuration = true")
            self._connections[(name, sandboxed)] = conn
            return conn

    def _run(self, name: str, sql: str, limit: int | None, sandboxed: bool) -> SqlResult:
        import duckdb

        query = sql.strip().rstrip(";")
        if sandboxed:
            try:
                statements = duckdb.extract_statements(query)
            except duckdb.Error as exc:
                raise SqlError(
                    f"database '{name}': {type(exc).__name__}: {str(exc).splitlines()[0]}"
                ) from None
            kinds = [str(st.type).rsplit(".", 1)[-1] for st in statements]
            if kinds != ["SELECT"]:
                raise SqlError(
                    f"database '{name}': only one read-only SELECT statement is allowed here "
                    f"(got {', '.join(kinds) or 'nothing'})"
                )
        cursor = self._connect(name, sandboxed).cursor()  # one cursor per query: thread-safe
        try:
            if limit is not None:
                query = f"SELECT * FROM ({query}) AS oxy_limited LIMIT {int(limit)}"
            result = cursor.execute(query)
            columns = [d[0] for d in result.description or []]
            rows = result.fetchall() if columns else []
        except duckdb.Error as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise SqlError(f"database '{name}': {type(exc).__name__}: {first}") from None
        finally:
            cursor.close()
        return SqlResult(columns, rows, sql)

    async def query(
        self, database: str, sql: str, *, limit: int | None = None, sandboxed: bool = False
    ) -> SqlResult:
        return await asyncio.to_thread(self._run, database, sql, limit, sandboxed)

    def close(self) -> None:
        with self._lock:
            for conn in self._connections.values():
                conn.close()
            self._connections.clear()
