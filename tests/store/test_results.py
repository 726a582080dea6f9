"""Consistency-test results (oxy test) and workflow runs (oxy run): tables and repositories."""

from __future__ import annotations

import pytest

from oxyeval.redact import register_secret
from oxyeval.store import (
    NewConsistencyResult,
    NewWorkflowRun,
    NewWorkflowTask,
    NotFoundError,
    Store,
)


def test_consistency_results_by_test_identity(store: Store) -> None:
    secret = "sk-consistency-secret-42424242"
    register_secret(secret)
    older = store.runs.start(
        "consistency", subject="tests/a.test.yml", total=2, started_at="2026-01-01T00:00:00Z"
    )
    store.tests.record(
        older,
        NewConsistencyResult(
            file="tests/a.test.yml",
            name="totals",
            status="scored",
            accuracy=0.5,
            n=4,
            runs_ok=4,
            pairs_total=6,
            pairs_judged=6,
            judge_calls=6,
            selected_run=2,
            selected_output="The total is 42.",
            duration_ms=1200.0,
            created_at="2026-01-01T00:00:01Z",
        ),
    )
    store.runs.finish(older)
    newer = store.runs.start("consistency", total=2)
    got = store.tests.record(
        newer,
        NewConsistencyResult(
            file="tests/a.test.yml",
            name="totals",
            status="scored",
            accuracy=0.75,
            n=4,
            runs_ok=3,
            pairs_total=6,
            pairs_judged=3,
            judge_calls=4,
            selected_run=1,
            selected_output=f"The key {secret} totals 42.",
            run_errors=[{"run": 4, "error": f"HTTP 401 for key {secret}"}],
            model="agent",
            judge_model="judge",
            pairing="all",
        ),
    )
    store.tests.record(
        newer,
        NewConsistencyResult(
            file="tests/a.test.yml", name="other", status="error", error="no judged pair"
        ),
    )
    assert got.selected_output == "The key *** totals 42."
    assert got.run_errors == ({"run": 4, "error": "HTTP 401 for key ***"},)
    history = store.tests.history("tests/a.test.yml", "totals")
    assert [r.accuracy for r in history] == [0.75, 0.5]
    assert (history[0].pairs_total, history[0].pairs_judged, history[0].judge_calls) == (6, 3, 4)
    assert secret not in repr(history)
    assert [r.name for r in store.tests.for_run(newer)] == ["totals", "other"]
    assert store.runs.get(newer).done == 2  # type: ignore[union-attr]
    with pytest.raises(NotFoundError):
        store.tests.record("nope", NewConsistencyResult(file="f", name="n", status="scored"))
    with pytest.raises(ValueError):
        store.tests.record(
            newer, NewConsistencyResult(file="f", name="n", status="scored", accuracy=2.0)
        )
    with pytest.raises(ValueError):
        store.tests.record(newer, NewConsistencyResult(file="f", name="n", status="passed"))


def test_workflow_runs_with_tasks(store: Store) -> None:
    secret = "sk-workflow-secret-77777777"
    register_secret(secret)
    run = store.runs.start("workflow", subject="w.workflow.yml")
    store.workflows.record(
        run,
        NewWorkflowRun(
            workflow="w.workflow.yml",
            variables={"month": "2026-09"},
            output={"report": f"echoed {secret}"},
            duration_ms=812.5,
            status="failed",
            tasks=[
                NewWorkflowTask(
                    path="q",
                    name="q",
                    type="execute_sql",
                    status="succeeded",
                    started_ms=0.0,
                    duration_ms=3.0,
                    output=[{"n": 1}],
                ),
                NewWorkflowTask(
                    path="report",
                    name="report",
                    type="agent",
                    status="failed",
                    error=f"401 {secret}",
                ),
            ],
        ),
    )
    store.runs.finish(run, "failed")
    got = store.workflows.get(run)
    assert got is not None
    assert got.run.status == "failed" and got.run.kind == "workflow" and got.run.done == 2
    assert got.variables == {"month": "2026-09"} and got.output == {"report": "echoed ***"}
    assert [t.path for t in got.tasks] == ["q", "report"]
    assert got.tasks[0].output == [{"n": 1}] and got.tasks[1].error == "401 ***"
    assert [r.run.id for r in store.workflows.history("w.workflow.yml")] == [run]
    assert store.workflows.get("nope") is None
    with pytest.raises(NotFoundError):
        store.workflows.record("nope", NewWorkflowRun(workflow="w.workflow.yml", status="failed"))
    # How it ended is its suite's word: the store works none out of the tasks.
    with pytest.raises(ValueError, match="status is how its suite said it ended"):
        store.workflows.record(run, NewWorkflowRun(workflow="w.workflow.yml"))
