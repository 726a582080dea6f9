"""A workflow run's ``done`` counts the tasks that ended, not those cut short: an
interrupted run of three tasks of which one finished reads 1/3 in ``oxy history``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from oxyeval.store import open_results, open_store
from oxyeval.store._engine import resolve_location
from oxyeval.store._result_rows import NewWorkflowRun, NewWorkflowTask


def _writer(kind: str, path: Path) -> Any:
    if kind == "lean":
        lite = open_results(resolve_location(str(path), environ={}))
        assert lite is not None
        return lite
    return open_store(path)


@pytest.mark.parametrize("kind", ["lean", "full"])
def test_done_counts_only_tasks_that_ended(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "h.db"
    statuses = ["succeeded", "interrupted", "interrupted", "cached", "skipped", "failed"]
    with _writer(kind, path) as store:
        run_id = store.runs.start("workflow", total=len(statuses), subject="w.workflow.yml")
        store.workflows.record(
            run_id,
            NewWorkflowRun(
                workflow="w.workflow.yml",
                status="interrupted",
                tasks=[
                    NewWorkflowTask(path=f"t{i}", name=f"t{i}", type="agent", status=s)
                    for i, s in enumerate(statuses)
                ],
            ),
        )
        store.runs.finish(run_id, "interrupted")
    with open_store(path, read_only=True) as store:
        (run,) = store.runs.list(kind="workflow")
    assert (run.done, run.total, run.status) == (4, 6, "interrupted")


@pytest.mark.parametrize("kind", ["lean", "full"])
def test_a_run_recorded_without_how_it_ended_is_refused(tmp_path: Path, kind: str) -> None:
    """How a workflow run ended is its suite's word; neither store works one out."""
    path = tmp_path / "h.db"
    with _writer(kind, path) as store:
        run_id = store.runs.start("workflow", total=1, subject="w.workflow.yml")
        with pytest.raises(ValueError, match="completed, failed, interrupted, not ''"):
            store.workflows.record(run_id, NewWorkflowRun(workflow="w.workflow.yml"))
        store.runs.finish(run_id, "failed")
    with open_store(path, read_only=True) as store:
        (run,) = store.runs.list(kind="workflow")
        assert (run.done, run.results) == (0, 0)
