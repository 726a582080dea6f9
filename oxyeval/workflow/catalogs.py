"""What a database tells agents about itself: its datasets and their DDL, as oxy's
``databases.<name>`` gives them to system_instructions (``oxyeval.project.agent_context``
holds that shape).

A database type implements :class:`Catalog` and is listed in :data:`CATALOGS`. DuckDB's
describes, through the database's sandboxed worker (its SQL limits hold), every data
file of its dataset folder as oxy does, ``-- orders.csv`` then ``CREATE TABLE
'orders.csv' ("id" BIGINT, ...);``, and the tables of its database file, all in one
dataset named ``duckdb``. A warehouse's (:class:`WarehouseCatalog`) reads its
information schema through its engine, read-only and within its limits: one dataset per
schema (BigQuery: per dataset), each table a ``CREATE TABLE``; when config.yml lists the
datasets (``datasets:``, ``schemas:``, BigQuery's ``dataset``), only those. A type
without a catalog has its name and dialect, and a read of its DDL stops the run saying
it is not available. :meth:`Databases.describe` keeps each answer for the rest of the
run.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..project import ContextMap, database_info, dataset_names

if TYPE_CHECKING:
    from .sql import Databases

__all__ = ["CATALOGS", "Catalog", "DuckDBCatalog", "WarehouseCatalog", "describe"]

#: The data files DuckDB reads by name (as ``FROM 'orders.csv'``), described as tables.
DATA_SUFFIXES = (".csv", ".tsv", ".parquet", ".json", ".jsonl", ".ndjson")
#: Files described at most: a folder of thousands describes the first ones and says so.
MAX_DESCRIBED_FILES = 200
#: Columns a warehouse's catalog describes at most (the DDL goes into prompts).
MAX_DESCRIBED_COLUMNS = 5000


class Catalog(Protocol):
    """A database's catalog, read once per run."""

    def ddl(self) -> dict[str, str]:
        """Each dataset's DDL (dataset as oxy keys it -> its ``CREATE`` statements).
        Raises an ``OxyError`` (e.g. ``SqlError``) when the database cannot be read."""
        ...


_DQ = '"'


def _quoted(text: str, quote: str) -> str:
    return quote + text.replace(quote, quote * 2) + quote


class DuckDBCatalog:
    """A DuckDB database's catalog: the data files of its dataset folder (top level, as
    oxy lists them) and the tables and views of its database file."""

    def __init__(self, databases: Databases, name: str, entry: dict[str, Any]) -> None:
        self.databases = databases
        self.name = name
        self.entry = entry

    def _files(self) -> list[str]:
        folder = self.entry.get("dataset") or self.entry.get("file_search_path")
        if not folder:
            return []
        path = Path(self.databases.root) / folder
        try:
            names = sorted(os.listdir(path))
        except OSError:
            return []
        return [
            n
            for n in names
            if not n.startswith(".") and n.lower().endswith(DATA_SUFFIXES) and (path / n).is_file()
        ]

    def ddl(self) -> dict[str, str]:
        from .sql import SqlError

        parts = []
        files = self._files()
        for file in files[:MAX_DESCRIBED_FILES]:
            name = _quoted(file, "'")
            query = f"SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM {name})"
            try:
                result = self.databases.query_sync(self.name, query)
            except SqlError as exc:  # one unreadable file: said in its place
                parts.append(f"-- {file}\n-- (not described: {' '.join(str(exc).split())})")
                continue
            names, types = result.column("column_name"), result.column("column_type")
            described = zip(names, types, strict=True)
            columns = ", ".join(_quoted(str(c), '"') + f" {t}" for c, t in described)
            parts.append(f"-- {file}\nCREATE TABLE {name} ({columns});")
        if len(files) > MAX_DESCRIBED_FILES:
            parts.append(f"-- ({len(files) - MAX_DESCRIBED_FILES} more files not described)")
        if self.entry.get("path"):
            query = (
                "SELECT sql FROM duckdb_tables() WHERE NOT internal UNION ALL "
                "SELECT sql FROM duckdb_views() WHERE NOT internal AND NOT temporary"
            )
            result = self.databases.query_sync(self.name, query)
            parts.extend(str(sql).strip() for sql in result.column("sql") if sql)
        return {"duckdb": "\n\n".join(parts)}


class WarehouseCatalog:
    """A warehouse's catalog: its tables and columns from its information schema, as
    ``CREATE TABLE`` statements grouped by dataset (schema)."""

    def __init__(self, databases: Databases, name: str, entry: dict[str, Any]) -> None:
        self.databases = databases
        self.name = name
        self.entry = entry

    def ddl(self) -> dict[str, str]:
        found = self.databases.warehouse_columns(self.name, MAX_DESCRIBED_COLUMNS + 1)
        listed = dataset_names(self.entry)
        tables: dict[str, dict[str, list[str]]] = {key: {} for key in listed or ()}
        for column in found[:MAX_DESCRIBED_COLUMNS]:
            if listed is not None and column.dataset not in tables:
                continue
            table = tables.setdefault(column.dataset, {}).setdefault(column.table, [])
            table.append(f"{_quoted(column.name, _DQ)} {column.type}")
        out: dict[str, str] = {}
        for dataset, described in tables.items():
            parts = [
                f"CREATE TABLE {_quoted(dataset, _DQ)}.{_quoted(table, _DQ)} "
                f"({', '.join(columns)});"
                for table, columns in described.items()
            ]
            if len(found) > MAX_DESCRIBED_COLUMNS:
                parts.append(f"-- (over {MAX_DESCRIBED_COLUMNS} columns: the rest not described)")
            out[dataset] = "\n".join(parts)
        return out


#: Catalog makers by database type: ``(databases, name, config entry) -> Catalog``.
CATALOGS: dict[str, Callable[[Databases, str, dict[str, Any]], Catalog]] = {
    "duckdb": DuckDBCatalog,
    **{
        kind: WarehouseCatalog
        for kind in ("postgres", "redshift", "mysql", "clickhouse", "bigquery", "snowflake")
    },
}


def describe(databases: Databases, name: str, entry: dict[str, Any]) -> ContextMap:
    """oxy's ``databases.<name>`` for one database, its DDL read through its catalog; a
    type without one gets its name and dialect, and its DDL says it is not available."""
    kind = entry.get("type")
    make = CATALOGS.get(str(kind))
    if make is None:
        return database_info(
            name,
            entry,
            None,
            f"DDL not available for {kind} yet: database '{name}' gives its name and "
            f"dialect; its datasets' ddl and its tables come with oxyeval's support for {kind} "
            "(oxyeval reads the tables of duckdb and warehouse databases)",
        )
    return database_info(name, entry, make(databases, name, entry).ddl())
