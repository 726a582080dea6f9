"""config.yml's databases, checked at load: the folders and files they name.

Everything a query will need from the file system is checked here, so ``oxy validate``
reports it with its line and a run never fails on it after spending model calls: the
dataset folder exists and stays in the project; a database file stays in the project,
exists when it is read-only, and is a file DuckDB opens without an extension (an SQLite
file would need the ``sqlite`` extension, which the SQL sandbox never loads).

A database file that is only absent (:func:`database_absences`) does not make the
project invalid: oxy's own examples name a ``db.duckdb`` that a deployment creates. It is
a warning of ``oxy validate``, and the command that would query that database stops on it
before anything runs (``oxyeval.workflow.sql``'s refusal).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .files import inside_project

__all__ = ["database_absences", "database_problems", "database_use_problem"]

_SQLITE_MAGIC = b"SQLite format 3\x00"
_DUCKDB_MAGIC = b"DUCK"  # at offset 8 of every DuckDB file


def database_problems(entry: dict[str, Any], root: Path) -> list[tuple[str, str]]:
    """``(key, message)`` for each problem of one ``databases:`` entry."""
    name = entry.get("name")
    out: list[tuple[str, str]] = []
    for key in ("dataset", "file_search_path", "path"):
        # The sandbox opens the dataset folder to every query, model-written ones too.
        value = entry.get(key)
        if isinstance(value, str) and inside_project(root, value) is None:
            out.append(
                (
                    key,
                    f"database '{name}': {key} {value!r} leaves the project folder {root}; "
                    "SQL can read everything in it, so it must stay inside the project",
                )
            )
    if out or entry.get("type") != "duckdb":
        return out
    for key in ("dataset", "file_search_path"):
        value = entry.get(key)
        if isinstance(value, str) and not (root / value).is_dir():
            what = "is not a folder" if (root / value).exists() else "does not exist"
            out.append((key, f"database '{name}': dataset folder {value!r} {what} in {root}"))
    for key in ("dataset", "file_search_path"):
        value = entry.get(key)
        if isinstance(value, str) and (root / value).resolve() == root:
            out.append(
                (
                    key,
                    f"database '{name}': the dataset folder is the project folder itself; SQL "
                    "(model-written SQL too) could read every file in it (.env, config.yml) and, "
                    "with read_only: false, rewrite them. Put the data files in a folder of "
                    "their own (dataset: data)",
                )
            )
    path = entry.get("path")
    if isinstance(path, str) and "://" in path:
        out.append(("path", f"database '{name}': path {path!r} is not a local DuckDB file"))
    elif isinstance(path, str):
        problem = _file_problem(root / path, path, writable=entry.get("read_only", True) is False)
        if problem:
            out.append(("path", f"database '{name}': {problem}"))
    return out


def database_absences(entry: dict[str, Any], root: Path) -> set[str]:
    """The keys of those :func:`database_problems` that say only that a read-only DuckDB
    database file is not there (yet): a warning at load, a refusal of the command that
    queries the database. A deployment creates such a file (oxy's examples name a
    ``db.duckdb`` they do not ship); a dataset folder is the project's own, and its
    absence stays an error."""
    path = entry.get("path")
    if (
        entry.get("type") == "duckdb"
        and isinstance(path, str)
        and "://" not in path
        and entry.get("read_only", True) is not False
        and not os.path.lexists(root / path)
    ):
        return {"path"}
    return set()


def database_use_problem(databases: dict[str, dict[str, Any]], name: str, config: str) -> str:
    """Why a task or tool cannot name database ``name`` ('' when it can): config.yml has
    no such database. Said where the file names it, before any model call. A database
    that oxyeval cannot query here (a type without an engine, a driver not installed) is no
    problem of the file (oxy runs it): the command that would query it refuses it then
    (``oxyeval.workflow.sql``)."""
    from .schema import did_you_mean

    if name in databases:
        return ""
    names = list(databases)
    return (
        f"unknown database '{name}'{did_you_mean(name, names)}; databases in "
        f"{config}: {', '.join(names) or 'none'}"
    )


def _file_problem(path: Path, shown: str, *, writable: bool) -> str:
    try:
        with path.open("rb") as handle:
            head = handle.read(16)
    except FileNotFoundError:
        if writable and path.parent.is_dir():
            return ""  # SQL creates it
        if writable:
            return f"the folder of {shown} does not exist (SQL creates the file, not its folder)"
        return (
            f"{shown} does not exist (a read-only database must exist; set read_only: false "
            "to let SQL create it)"
        )
    except IsADirectoryError:
        return f"{shown} is a folder, not a DuckDB database file"
    except OSError as exc:
        return f"cannot read {shown}: {exc.strerror}"
    if head.startswith(_SQLITE_MAGIC):
        return (
            f"{shown} is an SQLite database; DuckDB reads those only through its sqlite "
            "extension, which oxyeval never loads (extensions are off in the SQL sandbox). "
            "Convert it to a DuckDB file, or export its tables to CSV or Parquet in the "
            "dataset folder"
        )
    if head and head[8:12] != _DUCKDB_MAGIC:
        return f"{shown} is not a DuckDB database file"
    return ""
