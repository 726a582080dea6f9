"""config.yml's databases, checked at load: the folders and files they name.

Everything a query will need from the file system is checked here, so ``oxy validate``
reports it with its line and a run never fails on it after spending model calls: the
dataset folder exists and stays in the project; a database file stays in the project,
exists when it is read-only, and is a file DuckDB opens without an extension (an SQLite
file would need the ``sqlite`` extension, which the SQL sandbox never loads).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["database_problems"]

_SQLITE_MAGIC = b"SQLite format 3\x00"
_DUCKDB_MAGIC = b"DUCK"  # at offset 8 of every DuckDB file


def _leaves(root: Path, text: str) -> bool:
    """Whether a project-relative path points outside the project (links followed)."""
    try:
        return not (root / text).resolve().is_relative_to(root)
    except (OSError, ValueError):
        return True


def database_problems(entry: dict[str, Any], root: Path) -> list[tuple[str, str]]:
    """``(key, message)`` for each problem of one ``databases:`` entry."""
    name = entry.get("name")
    out: list[tuple[str, str]] = []
    for key in ("dataset", "file_search_path", "path"):
        # The sandbox opens the dataset folder to every query, model-written ones too.
        value = entry.get(key)
        if isinstance(value, str) and _leaves(root, value):
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
    path = entry.get("path")
    if isinstance(path, str):
        problem = _file_problem(root / path, path, writable=entry.get("read_only", True) is False)
        if problem:
            out.append(("path", f"database '{name}': {problem}"))
    return out


def _file_problem(path: Path, shown: str, *, writable: bool) -> str:
    try:
        with path.open("rb") as handle:
            head = handle.read(16)
    except FileNotFoundError:
        if writable:
            return ""  # SQL creates it
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
