"""What a workflow run produced: one record per task, and the errors a run raises.

Kept apart from the engine so callers (the CLI, ``oxy test``, the store) can read
runs without importing the scheduler.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import EXIT_INFRA, EXIT_INPUT, OxyError
from .outputs import to_jsonable

if TYPE_CHECKING:
    from .spec import Workflow

__all__ = ["TaskFailed", "TaskRecord", "WorkflowFailed", "WorkflowRun"]


class TaskFailed(OxyError):
    """A task could not produce its output (provider, SQL, template or data problem);
    ``bad_input``: because of the project's files or values (a template over a sandbox
    limit, a file that cannot be read), which running again will not change."""

    exit_code = EXIT_INFRA

    def __init__(self, message: str, *, bad_input: bool = False) -> None:
        super().__init__(message)
        self.bad_input = bad_input
        if bad_input:
            self.exit_code = EXIT_INPUT


class WorkflowFailed(OxyError):
    """One or more tasks failed; the message names them and why.

    Exit 2 when a task failed on bad input (a template over a sandbox limit, a loop
    over too many values): running again will not help, the file must change.
    """

    exit_code = EXIT_INFRA

    def __init__(self, message: str, run: WorkflowRun) -> None:
        super().__init__(message)
        self.run = run
        if any(r.bad_input for r in run.failed):
            self.exit_code = EXIT_INPUT


@dataclass(repr=False)
class TaskRecord:
    def __repr__(self) -> str:  # short: asyncio may repr results (3.11 SIGINT check)
        return f"TaskRecord({self.path!r})"

    path: str  # e.g. "report", "per_region[2].summary"
    name: str
    type: str
    status: str = "pending"  # succeeded | failed | skipped | cached | interrupted
    started: float | None = None
    ended: float | None = None
    error: str | None = None
    output: Any = None
    details: dict[str, Any] = field(default_factory=dict)
    #: It failed on bad input (see :class:`TaskFailed`): the whole run is bad input.
    bad_input: bool = False
    #: An agent task's prompt as rendered and sent: what a test of the workflow tells
    #: its judge was asked (the template as written may hold ``{{ month }}``).
    asked: str | None = None

    @property
    def finished(self) -> bool:
        """Done with an output: run now (``succeeded``) or replayed from the cache."""
        return self.status in ("succeeded", "cached")

    @property
    def duration(self) -> float | None:
        if self.started is None or self.ended is None:
            return None
        return self.ended - self.started

    def to_dict(self, origin: float = 0.0) -> dict[str, Any]:
        return {
            "path": self.path,
            "name": self.name,
            "type": self.type,
            "status": self.status,
            "started_s": None if self.started is None else round(self.started - origin, 4),
            "duration_s": None if self.duration is None else round(self.duration, 4),
            "error": self.error,
            "output": to_jsonable(self.output),
            **self.details,
        }


@dataclass(repr=False)
class WorkflowRun:
    """What a workflow run produced; filled in as tasks finish, so an interrupted run
    (``execute_workflow(..., into=run)``) still holds every finished task.

    ``workflow`` is None only for an empty run handed to ``into=`` that was
    interrupted before its workflow was even loaded.
    """

    def __repr__(self) -> str:  # short: asyncio may repr results (3.11 SIGINT check)
        return f"WorkflowRun({self.workflow.name if self.workflow else None!r})"

    workflow: Workflow | None = None
    records: list[TaskRecord] = field(default_factory=list)
    output: Any = None
    outputs: dict[str, Any] = field(default_factory=dict)  # top-level task name -> output
    started: float = 0.0
    ended: float = 0.0
    interrupted: bool = False
    #: Load warnings of the workflow and its sub-workflows (keys accepted but not used...),
    #: as ``oxy validate`` prints them; known before the first task starts.
    warnings: list[str] = field(default_factory=list)

    @property
    def failed(self) -> list[TaskRecord]:
        return [r for r in self.records if r.status == "failed"]

    @property
    def skipped(self) -> list[TaskRecord]:
        return [r for r in self.records if r.status == "skipped"]

    @property
    def unfinished(self) -> list[TaskRecord]:
        """Tasks an interruption stopped (running) or kept from starting."""
        return [r for r in self.records if r.status == "interrupted"]

    @property
    def ok(self) -> bool:
        return not self.failed and not self.interrupted

    @property
    def cached_calls(self) -> int:
        """Model calls a cache served instead of the model, in every task (agent tasks
        count theirs, a sub-workflow's tasks are among the records)."""
        return sum(r.details.get("cached_calls", 0) for r in self.records)

    def mark_interrupted(self) -> None:
        """Every task that had not finished is listed as interrupted, none left 'running'."""
        self.interrupted = True
        now = time.perf_counter()
        for record in self.records:
            if record.status == "running":
                record.status, record.error = "interrupted", "interrupted before it finished"
                record.ended = record.ended or now
            elif record.status == "pending":
                record.status, record.error = "interrupted", "interrupted before it started"

    def events(self) -> list[tuple[str, str, float]]:
        """(path, "start"|"end", time) in time order: what overlap tests read."""
        out = []
        for r in self.records:
            if r.started is not None:
                out.append((r.path, "start", r.started))
            if r.ended is not None:
                out.append((r.path, "end", r.ended))
        return sorted(out, key=lambda e: e[2])

    def summary(self, *, brief: bool = False) -> str:
        """Which tasks failed and why, and which were skipped. ``brief``: without the
        errors, for a reader who has just seen each one on its task's own line."""
        lines = []
        by_error: dict[str, list[str]] = {}
        for r in self.failed:
            by_error.setdefault("" if brief else r.error or "", []).append(r.path)
        for error, paths in by_error.items():
            shown = ", ".join(f"'{p}'" for p in paths[:5]) + (", ..." if len(paths) > 5 else "")
            head = (
                f"task {shown} failed"
                if len(paths) == 1
                else f"{len(paths)} tasks ({shown}) failed"
            )
            if brief:
                lines.append(
                    f"{head} (see {'its error' if len(paths) == 1 else 'their errors'} above)"
                )
            else:
                lines.append(f"{head}: {error}")
        if self.skipped:
            lines.append(
                "skipped because a dependency failed: " + ", ".join(r.path for r in self.skipped)
            )
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        status = "interrupted" if self.interrupted else ("succeeded" if self.ok else "failed")
        return {
            "workflow": None if self.workflow is None else self.workflow.doc.display,
            "status": status,
            "duration_s": round(self.ended - self.started, 4),
            "output": to_jsonable(self.output),
            "tasks": [r.to_dict(self.started) for r in self.records],
            "errors": [{"task": r.path, "error": r.error} for r in self.failed],
            "cached_calls": self.cached_calls,
            "warnings": list(self.warnings),
        }
