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
import os
import shutil
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import EXIT_INFRA, ConfigError, OxyError

__all__ = ["Databases", "SqlError", "SqlResult", "check_statement"]

_SHOWN_ROWS = 200  # rows rendered into text; the data itself is never cut


class SqlError(OxyError):
    """A query that DuckDB rejected or that failed while running (a task failure, exit 3)."""

    exit_code = EXIT_INFRA


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

    def __init__(
        self,
        columns: list[str],
        rows: list[tuple[Any, ...]],
        sql: str = "",
        params: tuple[Any, ...] = (),
    ) -> None:
        self._columns = list(columns)
        self._rows = [tuple(r) for r in rows]
        self.sql = sql
        self._params = tuple(params)

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


# Statement kinds (DuckDB's StatementType names) by what they may do. Anything else
# (PREPARE, EXECUTE, TRANSACTION, SET, LOAD/INSTALL...) is refused everywhere.
READ_KINDS = frozenset({"SELECT", "EXPLAIN", "PRAGMA", "CALL", "MULTI"})
WRITE_KINDS = frozenset(
    {
        "INSERT",
        "UPDATE",
        "DELETE",
        "MERGE_INTO",
        "CREATE",
        "CREATE_FUNC",
        "DROP",
        "ALTER",
        "COPY",
        "EXPORT",
        "ATTACH",
        "DETACH",
        "COPY_DATABASE",
        "VACUUM",
        "ANALYZE",
    }
)
_FILE_WRITE_KINDS = frozenset({"COPY", "EXPORT", "ATTACH", "COPY_DATABASE"})
_SHOWN_ERROR_CHARS = 300

# Set before the configuration is locked, in this order (enable_external_access last but
# one: after it, only the allowed directories and paths can be opened).
# GLOBAL: a plain SET would hold for the first connection only, not the cursors queries use.
_SANDBOX = (
    "SET GLOBAL autoinstall_known_extensions = false",
    "SET GLOBAL autoload_known_extensions = false",
    "SET GLOBAL allow_community_extensions = false",
    "SET GLOBAL allow_persistent_secrets = false",
    "SET GLOBAL python_enable_replacements = false",  # no reading Python variables by name
    "SET GLOBAL enable_external_access = false",
    "SET GLOBAL lock_configuration = true",
)


def _first_line(exc: BaseException) -> str:
    """DuckDB's message, first line only and short: later lines quote the query or file."""
    text = str(exc).strip()
    first = text.splitlines()[0] if text else type(exc).__name__
    if len(first) > _SHOWN_ERROR_CHARS:
        first = first[: _SHOWN_ERROR_CHARS - 3] + "..."
    return first


def _cwd_paths(names: list[str]) -> frozenset[str]:
    """Where DuckDB puts bare names allowed by allowed_paths: the working directory."""
    cwd = os.getcwd()
    return frozenset(
        variant
        for n in names
        for variant in (
            os.path.normpath(os.path.join(cwd, n)),
            os.path.realpath(os.path.join(cwd, n)),
        )
    )


def _kind_name(statement: Any) -> str:
    return str(statement.type).rsplit(".", 1)[-1]


def check_statement(database: str, sql: str, *, writable: bool, select_only: bool = False) -> str:
    """The kind of the one statement in ``sql``, or an SqlError saying why it may not run.

    Used before every query, and by ``oxy validate`` on SQL written without templates.
    """
    import duckdb

    try:
        statements = duckdb.extract_statements(sql)
    except (duckdb.Error, ValueError) as exc:  # ValueError: a kind this client cannot name
        raise SqlError(f"database '{database}': {type(exc).__name__}: {_first_line(exc)}") from None
    kinds = [_kind_name(st) for st in statements]
    if select_only:
        if kinds != ["SELECT"]:
            raise SqlError(
                f"database '{database}': only one read-only SELECT statement is allowed here "
                f"(got {', '.join(kinds) or 'nothing'})"
            )
        return "SELECT"
    if len(kinds) != 1:
        raise SqlError(
            f"database '{database}': one SQL statement per task, got {len(kinds)}"
            + (f" ({', '.join(kinds)})" if kinds else "")
            + "; split them into separate execute_sql tasks"
        )
    kind = kinds[0]
    if kind in ("LOAD", "EXTENSION"):
        raise SqlError(
            f"database '{database}': installing or loading DuckDB extensions is not allowed "
            "(only the built-in ones are available: parquet, json, icu)"
        )
    if kind in ("SET", "VARIABLE_SET"):
        raise SqlError(
            f"database '{database}': SET/USE/RESET statements are not allowed (the sandbox's "
            "configuration is locked)"
        )
    if kind in WRITE_KINDS and not writable:
        raise SqlError(
            f"database '{database}' is read-only: {kind} statements need 'read_only: false' "
            "on the database in config.yml (writes then stay inside its dataset folder)"
        )
    if kind not in READ_KINDS and kind not in WRITE_KINDS:
        raise SqlError(f"database '{database}': {kind} statements are not allowed here")
    return kind


class Databases:
    """DuckDB connections for a project's databases, one each, opened on first use.

    Every query runs in a sandbox, whoever wrote it (a workflow's author, a
    model through a workflow task or an agent tool): files are reachable only in
    the database's ``dataset`` folder (absolute, ``~/``-relative or by the name
    of a file there), extensions can be neither installed nor loaded, and the
    configuration is locked so a query cannot lift those limits. One statement
    per query; statements that write need ``read_only: false`` on the database,
    and even then write only inside its dataset folder. Agent tools may run one
    SELECT only (``select_only``).
    """

    def __init__(self, databases: dict[str, dict[str, Any]], root: Path) -> None:
        self.databases = databases
        self.root = root
        self._connections: dict[str, Any] = {}
        self._relative: dict[str, frozenset[str]] = {}  # cwd paths DuckDB allows (bare names)
        self._shadowed: dict[str, list[str]] = {}  # ...not readable: the cwd has the same name
        self._lock = threading.Lock()
        self._spill: Path | None = None

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

    def writable(self, name: str) -> bool:
        return self._entry(name).get("read_only", True) is False

    def _dataset(self, name: str, entry: dict[str, Any]) -> Path | None:
        folder = entry.get("dataset") or entry.get("file_search_path")
        if not folder:
            return None
        search = (self.root / folder).resolve()
        if not search.is_dir():
            raise ConfigError(f"database '{name}': dataset folder {search} does not exist")
        return search

    @staticmethod
    def _readable_names(search: Path) -> tuple[list[str], list[str]]:
        """Dataset files a query may name bare (``FROM orders.csv``), and those it may not.

        DuckDB checks a relative name as written, then opens it from the working
        directory if it exists there, else from the dataset: a name that also
        exists in the working directory (as another file) is left out (shadowed),
        or the query would read that file instead.
        """
        cwd = Path.cwd()
        names: list[str] = []
        shadowed: list[str] = []
        for file in search.rglob("*"):
            if not file.is_file():
                continue
            real = file.resolve()
            if not real.is_relative_to(search):
                continue  # a link out of the dataset: DuckDB refuses it anyway
            relative = file.relative_to(search).as_posix()
            shadow = cwd / relative
            if shadow.exists() and shadow.resolve() != real:
                shadowed.append(relative)
                continue
            names.append(relative)
        return names, shadowed

    def _connect(self, name: str) -> Any:
        with self._lock:
            conn = self._connections.get(name)
            if conn is not None:
                return conn
            entry = self._entry(name)
            import duckdb

            path = entry.get("path")
            writable = entry.get("read_only", True) is False
            search = self._dataset(name, entry)
            try:
                conn = (
                    duckdb.connect(str(self.root / path), read_only=not writable)
                    if path
                    else duckdb.connect()
                )
            except duckdb.Error as exc:
                raise SqlError(
                    f"database '{name}': cannot open {path}: {_first_line(exc)}"
                ) from None
            try:
                names: list[str] = []
                if search is not None:
                    names, self._shadowed[name] = self._readable_names(search)
                # DuckDB shares one instance per database file in a process: another Databases
                # may have set up and locked this one already, with the same settings.
                locked = conn.execute("SELECT current_setting('lock_configuration')").fetchone()
                if locked and locked[0] is True:
                    self._connections[name] = conn
                    self._relative[name] = _cwd_paths(names)
                    return conn
                # Spill files go to a private folder (the default is .tmp in the working
                # directory, which the sandbox would then have to let queries write to).
                spill = self._spill = self._spill or Path(
                    tempfile.mkdtemp(prefix="oxyeval-duckdb-")
                )
                conn.execute(f"SET GLOBAL temp_directory = {_quote(str(spill / name))}")
                if search is not None:
                    folder = _quote(str(search))
                    conn.execute(f"SET GLOBAL file_search_path = {folder}")
                    conn.execute(f"SET GLOBAL home_directory = {folder}")  # '~/x' is in it
                    conn.execute(f"SET GLOBAL allowed_directories = [{_quote(str(search) + '/')}]")
                    if names:
                        conn.execute(
                            f"SET GLOBAL allowed_paths = [{', '.join(_quote(n) for n in names)}]"
                        )
                for statement in _SANDBOX:
                    conn.execute(statement)
            except duckdb.Error as exc:
                conn.close()
                raise SqlError(f"database '{name}': {_first_line(exc)}") from None
            except BaseException:
                conn.close()
                raise
            self._connections[name] = conn
            self._relative[name] = _cwd_paths(names)
            return conn

    def _check(self, name: str, sql: str, params: tuple[Any, ...], select_only: bool) -> str:
        """The one statement's kind, or an SqlError saying why it may not run."""
        kind = check_statement(name, sql, writable=self.writable(name), select_only=select_only)
        if kind in _FILE_WRITE_KINDS:
            # DuckDB allows a bare name (allowed_paths) as a path in the working directory,
            # where it also writes it: a write must not name one, however it is spelt.
            from .sqltemplate import string_literals

            allowed = self._relative.get(name, frozenset())
            cwd = os.getcwd()
            texts = string_literals(sql) + [p for p in params if isinstance(p, str)]
            for text in texts:
                if not text or text.startswith("~") or "\x00" in text:
                    continue
                path = os.path.normpath(os.path.join(cwd, text))
                if path in allowed or os.path.realpath(path) in allowed:
                    raise SqlError(
                        f"database '{name}': {kind} names {text!r}, which DuckDB would write in "
                        f"the working directory {cwd}; to write in the dataset folder, name it "
                        f"'~/{os.path.basename(path)}' (~ is the dataset folder)"
                    )
        return kind

    def _run(
        self,
        name: str,
        sql: str,
        params: tuple[Any, ...],
        limit: int | None,
        select_only: bool,
    ) -> SqlResult:
        import duckdb

        conn = self._connect(name)
        kind = self._check(name, sql, params, select_only)
        query = sql
        if limit is not None and kind == "SELECT":
            from .sqltemplate import strip_terminator

            query = f"SELECT * FROM (\n{strip_terminator(sql)}\n) AS oxy_limited LIMIT {int(limit)}"
        cursor = conn.cursor()  # one cursor per query: thread-safe
        try:
            result = cursor.execute(query, list(params) if params else None)
            columns = [d[0] for d in result.description or []]
            rows = result.fetchall() if columns else []
        except duckdb.Error as exc:
            message = f"database '{name}': {type(exc).__name__}: {_first_line(exc)}"
            shadowed = [n for n in self._shadowed.get(name, []) if f'"{n}"' in str(exc)]
            if isinstance(exc, duckdb.PermissionException) and shadowed:
                message += (
                    f"; the working directory {Path.cwd()} has a file named {shadowed[0]!r} too, "
                    f"which DuckDB would open instead: name the dataset's file '~/{shadowed[0]}'"
                )
            elif isinstance(exc, duckdb.PermissionException):
                message += (
                    "; SQL may open files only inside the database's dataset folder (by the "
                    "name of a file there, as '~/...', or by an absolute path inside it)"
                )
            elif "Parameter not supported" in str(exc) or 'at or near "$' in str(exc):
                message += (
                    "; a template value is bound as a parameter, which cannot stand for a name "
                    "here: print names with {{ name | sql_identifier }}"
                )
            raise SqlError(message) from None
        finally:
            cursor.close()
        return SqlResult(columns, rows, sql, params)

    async def query(
        self,
        database: str,
        sql: str,
        *,
        params: tuple[Any, ...] = (),
        limit: int | None = None,
        select_only: bool = False,
    ) -> SqlResult:
        return await asyncio.to_thread(self._run, database, sql, tuple(params), limit, select_only)

    def close(self) -> None:
        with self._lock:
            for conn in self._connections.values():
                conn.close()
            self._connections.clear()
            if self._spill is not None:
                shutil.rmtree(self._spill, ignore_errors=True)
                self._spill = None
