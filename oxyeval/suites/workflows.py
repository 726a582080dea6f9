"""``oxy run`` on a workflow as a library call that also keeps the run in the history.

The engine (:func:`oxyeval.workflow.execute_workflow`) runs a workflow and knows
nothing of the store; this wraps it: the project's history opens in a worker thread as
the run begins (:class:`~oxyeval.suites.history.History`: the store the run's cache uses
too; the lean sqlite3 store once the project has a history), and when the run ends
(succeeded, failed or interrupted) its output and every task are stored under one run
row of kind ``workflow``. A history that cannot be opened or written is a logged
warning: it never fails, or loses, the run.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
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
from ..project.config import Project, load_project
from ..store import NewWorkflowRun, NewWorkflowTask, StoreError, utc_timestamp
from ..workflow.outputs import to_jsonable
from ..workflow.records import TaskRecord, WorkflowRun
from .cache import cache_factory
from .history import History
from .suite import SuiteRun

if TYPE_CHECKING:
    from ..workflow.ask import AgentAnswer
    from .history import RunStore

__all__ = ["ask", "new_workflow_run", "run_workflow"]

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


def _store_run(store: RunStore, started_at: str, file: str, record: NewWorkflowRun) -> str:
    """In a worker thread: the run row, its workflow rows, finished with its status."""
    run_id = store.runs.start(
        "workflow", total=len(record.tasks), subject=file, started_at=started_at
    )
    store.workflows.record(run_id, record)
    store.runs.finish(run_id, record.status)
    return run_id


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
) -> WorkflowRun:
    """Run one workflow (as :func:`oxyeval.workflow.execute_workflow`, same errors) and
    store the run in its project's history (``db``: another SQLite file or a PostgreSQL
    URL; ``history=False``: nothing is stored and the store is never opened).

    ``cache`` is ``--cache`` (True: answers and verdicts replayed), ``--no-cache`` (False)
    or neither (None: verdicts replayed, answers kept), as for :func:`run_tests`; the cache
    lives in the same store as the run, and nothing is cached with ``history=False``.

    A run that never started (a file that does not load, a missing key) is not stored;
    one that failed or was interrupted is, with its status. ``events`` hears the run as
    it happens (:mod:`oxyeval.evaluation.events`): each finished task is a sample.
    """
    from ..workflow.engine import execute_workflow as run_engine

    run = into if into is not None else WorkflowRun()
    async with SuiteRun(
        "workflow", db=db, environ=environ, history=history, cache=cache, events=events
    ) as suite:
        kept: tuple[History, Project] | None = None
        if history:
            project = load_project(path, project_dir=project_dir)
            book = suite.histories.for_project(project)  # a bad location: bad input, now
            assert book is not None
            kept = book, project
        subject = str(path)
        started_at = utc_timestamp()
        status = "failed"
        try:
            result = await run_engine(
                path,
                variables,
                project_dir=project_dir,
                concurrency=concurrency,
                on_event=_starting(suite, subject, on_event),
                environ=environ,
                into=run,
                cache=suite.caches,
            )
            status = "completed"
            return result
        except asyncio.CancelledError:
            status = "interrupted"
            raise
        finally:
            if kept is not None:
                await _keep(*kept, path, variables or {}, run, status, started_at)
            if suite.started:
                suite.record(workflow_result(subject, run, status))


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


def _starting(
    suite: SuiteRun, subject: str, on_event: Callable[[TaskRecord], None] | None
) -> Callable[[TaskRecord], None]:
    """``on_event``, and the suite starts as the first task starts: after the engine's
    checks (the workflow loaded, every model key found, the variables valid), so a run
    that cannot start creates no database, while the store still opens in the
    background during the first tasks. Each finished task is a sample of the run."""

    def event(record: TaskRecord) -> None:
        if not suite.started:
            suite.start(1)
            suite.emit(SubjectStarted(kind="workflow", subject=subject, label=subject))
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


async def _keep(
    book: History,
    project: Project,
    path: str | Path,
    variables: Mapping[str, Any],
    run: WorkflowRun,
    status: str,
    started_at: str,
) -> None:
    """Store the run if it started; say so (a warning) if the history fails."""
    if run.workflow is None or not run.records:
        return  # it never started (a file that does not load, a missing key)
    try:
        store = await book.store()
        assert store is not None
        file = project.relative(Path(path))
        record = new_workflow_run(file, variables, run, status)
        await asyncio.to_thread(_store_run, store, started_at, file, record)
    except Exception as exc:  # never lose the run over its history
        why = str(exc) if isinstance(exc, StoreError) else f"{type(exc).__name__}: {exc}"
        log.warning("history not stored in %s: %s", book.location, why)


async def ask(
    path: str | Path,
    question: str,
    *,
    project_dir: str | None = None,
    environ: Mapping[str, str] | None = None,
    into: AgentAnswer | None = None,
    cache: bool | None = None,
) -> AgentAnswer:
    """``oxy run AGENT --question``: ask an agent one question, its answers kept in (and,
    with ``cache=True``, replayed from) the project's history, as for every other run
    (:func:`oxyeval.workflow.ask_agent`, whose errors it raises)."""
    from ..workflow.ask import ask_agent

    return await ask_agent(
        path,
        question,
        project_dir=project_dir,
        environ=environ,
        into=into,
        cache=cache_factory(cache),
    )
