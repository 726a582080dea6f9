"""Warehouses: the SQL servers a database entry of config.yml may name besides DuckDB, each
behind one small interface (:class:`Warehouse` opening :class:`Session` objects).

DuckDB runs embedded, so oxyeval sandboxes it itself (``_sqlworker``). A warehouse runs
SQL on its own server, so the guarantees come from the server, asked for on every
statement: a read-only transaction or session (or the server's own classification of
the statement where the server has no such thing), a server-side timeout with a
server-side cancel behind it, a row limit, one statement per query, values bound as
parameters by the server. Each engine class says how, in its module:

* ``warehouse_postgres`` (psycopg 3), ``warehouse_mysql`` (mysql-connector-python),
  ``warehouse_clickhouse`` (its HTTP interface, through httpx), ``warehouse_bigquery``
  (its REST API, through httpx and google-auth), ``warehouse_snowflake`` (its SQL API,
  through httpx; PyJWT for key-pair sign-in).

Drivers are extras (``pip install 'oxyeval[postgres]'``), imported only when a database
of that type is queried; a missing one is a configuration error naming the pip command.
Credentials come from config.yml (``password``) or the environment (``password_var``),
are registered as secrets when config.yml loads (never printed, stored or sent to the
model), and are handed to the driver only.
"""

from __future__ import annotations

import importlib
import os
import re
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from ..redact import register_secret

__all__ = [
    "ENGINE_CLASSES",
    "Column",
    "Rows",
    "Session",
    "Warehouse",
    "WarehouseError",
    "connection_problem",
    "driver_problem",
    "make_warehouse",
    "positional",
    "register_database_secrets",
    "setting",
]

#: What one query hands back: column names, rows (tuples), and whether rows were cut.
Rows = tuple[list[str], list[tuple[Any, ...]], bool]


@dataclass(frozen=True)
class Column:
    """One column of the catalog: its dataset (schema), table, name and type as the
    warehouse names them."""

    dataset: str
    table: str
    name: str
    type: str


class WarehouseError(Exception):
    """A query the warehouse did not answer with rows. ``code``: ``timeout`` (stopped by
    its timeout and cancelled on the server), ``refused`` (not allowed here: a write on
    a read-only database, more than one statement), ``auth`` (the server refused the
    credentials), ``unreachable`` (no answer from the server), ``sql`` (the server's
    error about the statement), ``config`` (bad input: a missing variable or file)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


#: Engine classes by database type: (module, class, the extra that installs the driver,
#: the module the driver imports as). ``redshift`` speaks PostgreSQL's protocol.
ENGINE_CLASSES: dict[str, tuple[str, str, str, str]] = {
    "postgres": ("warehouse_postgres", "PostgresWarehouse", "postgres", "psycopg"),
    "redshift": ("warehouse_postgres", "PostgresWarehouse", "postgres", "psycopg"),
    "mysql": ("warehouse_mysql", "MySQLWarehouse", "mysql", "mysql.connector"),
    "clickhouse": ("warehouse_clickhouse", "ClickHouseWarehouse", "clickhouse", "httpx"),
    "bigquery": ("warehouse_bigquery", "BigQueryWarehouse", "bigquery", "google.oauth2"),
    "snowflake": ("warehouse_snowflake", "SnowflakeWarehouse", "snowflake", "httpx"),
}


def driver_problem(kind: str) -> str:
    """Why a database of type ``kind`` cannot be queried on this install ('' when it can):
    its driver is not installed. Said before anything runs, with the pip command."""
    found = ENGINE_CLASSES.get(kind)
    if found is None:
        return ""
    _module, _cls, extra, driver = found
    try:
        importlib.import_module(driver)
    except ImportError:
        return (
            f"its driver ({driver}) is not installed: pip install 'oxyeval[{extra}]' "
            f"installs what oxyeval needs to query {kind} databases"
        )
    return ""


#: The keys oxy reads a value of from an environment variable (``host_var``...).
_VAR_KEYS = ("host", "port", "user", "password", "database", "key_path")


def setting(entry: Mapping[str, Any], key: str, default: Any = None) -> Any:
    """A connection setting as oxy resolves it: the key itself, else the environment
    variable its ``<key>_var`` names, else ``default``."""
    value = entry.get(key)
    if value is not None and value != "":
        return value
    var = entry.get(f"{key}_var")
    if var:
        found = os.environ.get(str(var), "")
        if found != "":
            return found
    return default


def connection_problem(name: str, entry: Mapping[str, Any]) -> str:
    """A ``<key>_var`` that names an environment variable which is not set ('' when none
    is): bad input, said before the run, naming the key and the variable."""
    for key in _VAR_KEYS:
        var = entry.get(f"{key}_var")
        if var and entry.get(key) in (None, "") and os.environ.get(str(var), "") == "":
            return (
                f"database '{name}': {key}_var names the environment variable {var}, which "
                "is not set; set it, or write the value into config.yml"
            )
    return ""


def register_database_secrets(entry: Mapping[str, Any]) -> None:
    """Scrub a database entry's password from everything printed or stored, whether it
    is written in config.yml or read from ``password_var``."""
    register_secret(entry.get("password") if isinstance(entry.get("password"), str) else None)
    var = entry.get("password_var")
    if isinstance(var, str) and var:
        register_secret(os.environ.get(var))


class Session(ABC):
    """One connection (or, for an HTTP API, one client) running one query at a time."""

    @abstractmethod
    def run(
        self, sql: str, params: list[Any], *, writable: bool, timeout: float, max_rows: int
    ) -> Rows:
        """Run one statement; raise :class:`WarehouseError` (``timeout`` once the server
        stopped it)."""

    @abstractmethod
    def cancel(self) -> None:
        """Stop the statement this session is running, on the server (called from another
        thread, when the query is past its deadline or the run is interrupted)."""

    @abstractmethod
    def close(self) -> None: ...


class Warehouse(ABC):
    """A database of one type: opens sessions, and reads its catalog."""

    #: The SQL dialect, as oxy names it (``databases.<name>.dialect``).
    dialect: ClassVar[str] = ""

    def __init__(self, name: str, entry: Mapping[str, Any], root: Path) -> None:
        self.name = name
        self.entry = entry
        self.root = root

    @abstractmethod
    def open(self, timeout: float) -> Session:
        """A new session; ``timeout`` bounds connecting (and signing in)."""

    @abstractmethod
    def catalog_query(self) -> str:
        """One read-only SELECT returning ``dataset, table, column, type`` rows for the
        catalog, in order (a warehouse that needs several overrides :meth:`columns`)."""

    def columns(self, session: Session, timeout: float, limit: int) -> list[Column]:
        _names, rows, _ = session.run(
            self.catalog_query(), [], writable=False, timeout=timeout, max_rows=limit
        )
        return [Column(*(str(v) for v in row[:4])) for row in rows]


def make_warehouse(name: str, entry: Mapping[str, Any], root: Path) -> Warehouse:
    """The engine object of a database entry (its driver imported now)."""
    module, cls, _extra, _driver = ENGINE_CLASSES[str(entry["type"])]
    found = importlib.import_module(f"{__package__}.{module}")
    made: Warehouse = getattr(found, cls)(name, entry, root)
    return made


_PARAM = re.compile(r"\$([0-9]+)")


def positional(sql: str, params: list[Any], mark: Any) -> tuple[str, list[Any]]:
    """``sql`` with each ``$n`` parameter (a token, as DuckDB's tokenizer reads the text:
    never one inside a string or a comment) replaced by ``mark(i, value)``, ``i`` counting
    from 1 in order of appearance, and the values in that order. For drivers whose
    server-side placeholders are not PostgreSQL's numbered ones (``?``, ``@p1``)."""
    if not params:
        return sql, []
    from ._sqlsyntax import tokens

    found = tokens(sql)
    out: list[str] = []
    ordered: list[Any] = []
    at = 0
    for i, token in enumerate(found):
        following = found[i + 1] if i + 1 < len(found) else None
        if token.text(sql) != "$" or following is None or following.start != token.end:
            continue
        match = _PARAM.fullmatch(sql[token.start : following.end])
        if match is None:
            continue
        index = int(match.group(1))
        if not 1 <= index <= len(params):
            raise WarehouseError("sql", f"${index} has no value (the query has {len(params)})")
        ordered.append(params[index - 1])
        out.append(sql[at : token.start])
        out.append(str(mark(len(ordered), params[index - 1])))
        at = following.end
    out.append(sql[at:])
    return "".join(out), ordered
