"""Workflow runs (``oxy run``): the run row (kind 'workflow'), its output and its tasks."""

from __future__ import annotations

from typing import TYPE_CHECKING

import sqlalchemy as sa

from ._core import _SaSql
from ._errors import NotFoundError
from ._result_rows import NewWorkflowRun, finished_tasks, workflow_values
from ._results import workflow_result, workflow_status, write_results
from ._rows import WorkflowRunRecord, WorkflowTask
from ._runs import _run
from ._tables import runs, workflow_runs, workflow_tasks
from ._util import loads

if TYPE_CHECKING:
    from ._core import Store

__all__ = ["WorkflowRuns"]

_W = workflow_runs.c
_K = workflow_tasks.c


class WorkflowRuns:
    def __init__(self, store: Store) -> None:
        self._store = store

    def record(self, run_id: str, result: NewWorkflowRun) -> None:
        """Store a workflow run's output and tasks under its run (kind 'workflow').
        Outputs, variables and errors are redacted: a model may echo a secret."""
        row, tasks = workflow_values(run_id, result)
        status = workflow_status(result)
        with self._store.write("recording a workflow run") as conn:
            done = conn.execute(
                runs.update()
                .where(runs.c.id == run_id)
                .values(done=runs.c.done + finished_tasks(result))
            )
            if done.rowcount == 0:
                raise NotFoundError(
                    f"no run {run_id!r} in {self._store.path}", path=self._store.path
                )
            conn.execute(workflow_runs.insert().values(**row))
            if tasks:
                conn.execute(workflow_tasks.insert(), tasks)
            write_results(_SaSql(conn), [workflow_result(row, status=status)])

    def get(self, run_id: str) -> WorkflowRunRecord | None:
        with self._store.read("reading a workflow run") as conn:
            run = conn.execute(sa.select(runs).where(runs.c.id == run_id)).first()
            row = conn.execute(sa.select(workflow_runs).where(_W.run_id == run_id)).first()
            if run is None or row is None:
                return None
            tasks = conn.execute(
                sa.select(workflow_tasks).where(_K.run_id == run_id).order_by(_K.seq)
            ).all()
        return WorkflowRunRecord(
            run=_run(run, None),
            workflow=row.workflow,
            variables=loads(row.variables) or {},
            output=loads(row.output),
            error=row.error_message,
            duration_ms=row.duration_ms,
            tasks=tuple(
                WorkflowTask(
                    path=t.path,
                    name=t.name,
                    type=t.type,
                    status=t.status,
                    started_ms=t.started_ms,
                    duration_ms=t.duration_ms,
                    output=loads(t.output),
                    error=t.error_message,
                )
                for t in tasks
            ),
        )

    def history(self, workflow: str, limit: int = 20) -> list[WorkflowRunRecord]:
        """Runs of one workflow file, newest first (without their tasks' outputs)."""
        q = (
            sa.select(runs, _W.workflow, _W.variables, _W.output, _W.error_message, _W.duration_ms)
            .join(workflow_runs, _W.run_id == runs.c.id)
            .where(_W.workflow == workflow)
            .order_by(runs.c.started_at.desc(), runs.c.seq.desc())
            .limit(limit)
        )
        with self._store.read("reading workflow history") as conn:
            rows = conn.execute(q).all()
        return [
            WorkflowRunRecord(
                run=_run(r, None),
                workflow=r.workflow,
                variables=loads(r.variables) or {},
                output=loads(r.output),
                error=r.error_message,
                duration_ms=r.duration_ms,
                tasks=(),
            )
            for r in rows
        ]
