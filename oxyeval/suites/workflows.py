"""``oxy run`` on a workflow as a kind on the run pipeline (:class:`Workflow`).

The engine (:mod:`oxyeval.workflow`) runs a workflow and knows nothing of the store; the
suite run gives it the project's context (models, databases, the run's cache) and, when
the run ends (succeeded, failed or interrupted), keeps its output and every task under
one run row of kind ``workflow``. A history that cannot be opened or written is a logged
warning: it never fails, or loses, the run.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..evaluation import (
    EventSink,
    Result,
    ResultKind,
    SampleFinished,
    SubjectStarted,
    register_kind,
)
from ..project.config import load_project
from ..store import NewWorkflowRun, NewWorkflowTask
from ..workflow.outputs import to_jsonable
from ..workflow.records import TaskRecord, WorkflowRun
from .recorder import Handle, RunRow, Storage
from .status import StoredRun
from .suite import SuiteRun, run_kind

if TYPE_CHECKING:
    from ..workflow.context import RunContext
    from .history_store import RunStore

__all__ = [
    "Workflow",
    "WorkflowOutcome",
    "new_workflow_run",
    "run_workflow",
    "workflow_result",
]

log = logging.getLogger("oxyeval.history")

#: A workflow run as a kind of result (one per run, in the history's ``results``): it has
#: no score; a failed or interrupted run leaves its outcome unknown.
WORKFLOW = register_kind(
    ResultKind(
        "workflow",
        ("completed", "failed", "interrupted"),
        unknown=frozenset({"failed", "interrupted"}),
        noun="workflow",
    )
)


def _error(run: WorkflowRun) -> str | None:
    return run.summary() or ("interrupted" if run.interrupted else None) or None


def _duration_ms(run: WorkflowRun) -> float | None:
    return max(0.0, (run.ended - run.started) * 1000) if run.started else None


def new_workflow_run(
    file: str, variables: Mapping[str, Any], run: WorkflowRun, status: str = ""
) -> NewWorkflowRun:
    """The rows a workflow run becomes (``file`` relative to the project; ``status``: how
    it ended, the run row's and its result's)."""
    origin = run.started

    def ms(value: float | None) -> float | None:
        return None if value is None else round(value * 1000, 3)

    tasks = [
        NewWorkflowTask(
            path=r.path,
            name=r.name,
            type=r.type,
            status=r.status,
            started_ms=None if r.started is None else ms(r.started - origin),
            duration_ms=ms(r.duration),
            output=to_jsonable(r.output),
            error=r.error,
        )
        for r in run.records
    ]
    return NewWorkflowRun(
        workflow=file,
        variables=dict(to_jsonable(dict(variables))),
        output=to_jsonable(run.output),
        error=_error(run),
        duration_ms=_duration_ms(run) or 0.0,
        tasks=tasks,
        status=status,
    )


def _workflow_rows(store: RunStore, run_id: str, items: Sequence[tuple[Result, Any]]) -> list[None]:
    """A workflow run's rows: the run and every task (its result row with them)."""
    for _result, record in items:
        store.workflows.record(run_id, record)
    return [None] * len(items)


class WorkflowOutcome:
    """A workflow run as the one decision reads it: one result once it started (its
    status ``completed``, ``failed`` or ``interrupted``), none before."""

    kind = "workflow"

    def __init__(self, run: WorkflowRun, subject: str) -> None:
        self.run = run
        self.subject = subject
        self.status: str | None = None  # set once the run started
        #: One entry per history database written (empty: none kept).
        self.history: list[StoredRun] = []

    @property
    def interrupted(self) -> bool:
        return self.run.interrupted

    @interrupted.setter
    def interrupted(self, value: bool) -> None:
        self.run.interrupted = value

    @property
    def warnings(self) -> list[str]:
        return self.run.warnings

    def as_results(self) -> list[Result]:
        if self.status is None:
            return []
        return [workflow_result(self.subject, self.run, self.status)]


class Workflow:
    """One workflow run as a kind on the run pipeline: its tasks on the project's engine,
    the run and every task kept in the history when it ends (succeeded, failed or
    interrupted); each finished task is a sample of the run."""

    name = "workflow"
    storage = Storage(write=_workflow_rows)

    def __init__(
        self,
        path: str | Path,
        variables: Mapping[str, Any] | None,
        *,
        project_dir: str | None,
        concurrency: int,
        on_event: Callable[[TaskRecord], None] | None,
        run: WorkflowRun,
        outcome: WorkflowOutcome | None = None,
    ) -> None:
        self.path = path
        self.variables = dict(variables or {})
        self.project_dir = project_dir
        self.concurrency = concurrency
        self.on_event = on_event
        self.workflow_run = run
        self.subject = str(path)
        self.run = outcome if outcome is not None else WorkflowOutcome(run, self.subject)
        self._file = self.subject
        self._handle: Handle | None = None
        self._context: RunContext | None = None

    async def plan(self, suite: SuiteRun) -> list[Workflow]:
        """The workflow loaded and compiled, every model key found and the variables
        valid: a run that cannot start creates no database."""
        from ..errors import Diagnostic, LoadError
        from ..project.document import path_problem

        problem = path_problem(self.path)  # said with the path as given, as oxy test says it
        if problem is not None:
            raise LoadError([Diagnostic(str(self.path), problem)])
        project = load_project(self.path, project_dir=self.project_dir)
        self.run.history = suite.recorder.notes  # one entry per history, once it opens
        self._context = suite.context(
            project,
            concurrency=self.concurrency,
            on_event=_events(suite, self.subject, self.on_event),
        )
        engine = self._context.engine
        plan = engine.plan(Path(self.path).resolve())
        self._context.models.check(sorted(engine.models_used(plan)))
        self.workflow_run.warnings[:] = [w.format() for w in plan.all_warnings()]
        engine.resolve_variables(plan.workflow, self.variables)
        self._file = project.relative(Path(self.path))
        from ..workflow import walk_tasks

        tasks = len(walk_tasks(plan.workflow.tasks))
        self._handle = suite.add(project, RunRow(subject=self._file), count=tasks)
        return [self]

    async def execute(self, unit: Workflow, suite: SuiteRun) -> None:
        from ..workflow.engine import WorkflowFailed

        assert self._context is not None and self._handle is not None
        suite.emit(SubjectStarted(kind="workflow", subject=self.subject, label=self.subject))
        run = self.workflow_run
        status = "failed"
        try:
            await self._context.engine.run(Path(self.path), self.variables, into=run)
            status = "completed" if run.ok else "failed"
        except asyncio.CancelledError:
            status = "interrupted"
            raise
        finally:
            self.run.status = status
            record = new_workflow_run(self._file, self.variables, run, status)
            await suite.keep(self._handle, workflow_result(self.subject, run, status), record)
        if not run.ok:
            raise WorkflowFailed(run.summary(), run)

    def stopped(self, suite: SuiteRun) -> None:
        """An interrupted run keeps itself (``execute``'s own ``finally``)."""

    def finished(self, suite: SuiteRun) -> None:
        """A history that could not keep the run is a warning, never a lost run."""
        for note in suite.recorder.notes:
            if note.error is not None:
                log.warning("history not stored in %s: %s", note.db, note.error)


async def run_workflow(
    path: str | Path,
    variables: Mapping[str, Any] | None = None,
    *,
    project_dir: str | None = None,
    concurrency: int = 8,
    on_event: Callable[[TaskRecord], None] | None = None,
    environ: Mapping[str, str] | None = None,
    into: WorkflowRun | None = None,
    db: str | Path | None = None,
    history: bool = True,
    cache: bool | None = None,
    events: EventSink | None = None,
    outcome: WorkflowOutcome | None = None,
) -> WorkflowRun:
    """Run one workflow (raises :class:`~oxyeval.workflow.WorkflowFailed` with the run
    when a task fails) and store the run in its project's history (``db``: another SQLite
    file or a PostgreSQL URL; ``history=False``: nothing is stored and the store is never
    opened).

    ``cache`` is ``--cache`` (True: answers and verdicts replayed), ``--no-cache`` (False)
    or neither (None: verdicts replayed, answers kept), as for :func:`run_tests`; the cache
    lives in the same store as the run, and nothing is cached with ``history=False``.

    A run that never started (a file that does not load, a missing key, a bad variable)
    is not stored; one that failed or was interrupted is, with its status; a history
    that cannot be written is a logged warning, never a lost run. ``events`` hears the
    run as it happens (:mod:`oxyeval.evaluation.events`): each finished task is a sample.
    ``outcome`` (a :class:`WorkflowOutcome` of ``into``) is filled as the run goes: its
    status and where it was stored, what a report of the run needs besides the run.
    """
    run = into if into is not None else WorkflowRun()
    kind = Workflow(
        path,
        variables,
        project_dir=project_dir,
        concurrency=concurrency,
        on_event=on_event,
        run=run,
        outcome=outcome,
    )
    await run_kind(kind, db=db, environ=environ, history=history, cache=cache, events=events)
    return run


def workflow_result(subject: str, run: WorkflowRun, status: str) -> Result:
    """A workflow run as the evaluation core's result (kind ``workflow``)."""
    return Result(
        kind="workflow",
        subject=subject,
        status=status,
        output=None if run.output is None else str(run.output),
        error=_error(run),
        latency_ms=_duration_ms(run),
        details={"tasks": len(run.records)},
    )


def _events(
    suite: SuiteRun, subject: str, on_event: Callable[[TaskRecord], None] | None
) -> Callable[[TaskRecord], None]:
    """``on_event``, and each finished task a sample of the run."""

    def event(record: TaskRecord) -> None:
        if record.status not in ("running", "pending"):
            suite.emit(
                SampleFinished(
                    kind="workflow",
                    subject=subject,
                    index=0,
                    latency_ms=None if record.duration is None else record.duration * 1000,
                    error=record.error,
                    cached=record.status == "cached",
                )
            )
        if on_event is not None:
            on_event(record)

    return event
