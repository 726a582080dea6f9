"""Files a task reads and writes besides its inputs: its cache, and its exports.

Both paths are templates rendered at run time and must stay inside the project;
this module is the one writer of either, so secrets are scrubbed in one place.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..inputs import JSONProblem, loads, valid_text
from ..project.files import inside_project, outside_project
from ..project.templates import render
from ..redact import redact, redact_data
from .outputs import ConsistentOutput, to_jsonable
from .records import TaskFailed, TaskRecord
from .sql import SqlResult

if TYPE_CHECKING:
    from .spec import Task

__all__ = [
    "UNUSABLE",
    "cache_path",
    "export",
    "project_path",
    "read_cache",
    "write_output",
]

#: What :func:`read_cache` returns for a file that cannot stand for the task's output.
UNUSABLE: Any = object()


def project_path(root: Path, task: Task, text: str, what: str) -> Path:
    """A rendered path, resolved; a task fails rather than touch a file outside ``root``."""
    path = inside_project(root, text)
    if path is None:
        raise TaskFailed(f"{task.where}: {outside_project(what, text, root)}")
    return path


def cache_path(root: Path, task: Task, context: Mapping[str, Any]) -> Path | None:
    """Where an enabled cache keeps the task's output (rendered now), else None."""
    if task.cache is None or not task.cache.enabled or "cache.path" not in task.templates:
        return None
    text = render(task.templates["cache.path"], context).strip()
    return project_path(root, task, text, "cache")


def read_cache(path: Path, task: Task) -> Any:
    """The stored output, or ``UNUSABLE`` when the file cannot stand for it (then the task
    runs and rewrites it): a corrupt cache must never change what a task outputs.

    A secret in the file (one written before secrets were scrubbed, or by hand) is
    redacted as it is read, so it never reaches a prompt or a report; should that break
    the file's JSON, the task simply runs again."""
    try:
        text = redact(path.read_text("utf-8"))
    except (OSError, UnicodeDecodeError):
        return UNUSABLE
    if path.suffix == ".json":
        try:  # bounded: a cache file nested 100,000 deep is unusable, not a RecursionError
            data = loads(text, str(path))
        except JSONProblem:
            return UNUSABLE
        if isinstance(data, dict) and set(data) == {"columns", "rows"}:
            columns, rows = data["columns"], data["rows"]
            if not (
                isinstance(columns, list)
                and isinstance(rows, list)
                and all(isinstance(r, dict) for r in rows)
            ):
                return UNUSABLE
            return SqlResult(columns, [tuple(r.get(c) for c in columns) for r in rows])
        if isinstance(data, dict) and set(data) == {"value", "score"}:
            return ConsistentOutput(str(data["value"]), data["score"], {"cached": True})
        return UNUSABLE if task.type == "execute_sql" else data
    if task.type == "execute_sql":
        if path.suffix != ".csv":
            return UNUSABLE
        return SqlResult.from_csv(text)
    return text


def write_output(path: Path, output: Any, fmt: str | None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "json":
        text = json.dumps(
            redact_data(to_jsonable(output)), indent=2, ensure_ascii=False, default=str
        )
    elif fmt == "csv":
        if isinstance(output, SqlResult):
            text = output.to_csv()
        else:
            raise TaskFailed(
                f"csv export needs a SQL result, got {type(output).__name__}; use txt or json"
            )
    elif isinstance(output, SqlResult) and path.suffix == ".csv":
        text = output.to_csv()
    else:
        text = str(output)
    # The one writer of cache and export files; valid text, so a surrogate is never an error.
    path.write_text(valid_text(redact(text)), "utf-8")


def export(
    root: Path, task: Task, context: Mapping[str, Any], output: Any, record: TaskRecord
) -> None:
    """Write the task's ``export:`` file, if it has one oxyeval writes."""
    if task.export is None or "export.path" not in task.templates:
        return
    text = render(task.templates["export.path"], context).strip()
    path = project_path(root, task, text, "export")
    if task.export.format == "sql":
        sql = output.sql_text() if isinstance(output, SqlResult) else str(output)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(valid_text(redact(sql)), "utf-8")
    else:
        write_output(path, output, task.export.format)
    record.details.setdefault("exports", []).append(str(path))
