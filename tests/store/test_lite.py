"""The lean sqlite3 writer of `oxy test` results: used only on an SQLite file at the current
schema, and writing exactly the rows the SQLAlchemy repositories write and read."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from oxyeval.redact import register_secret
from oxyeval.store import (
    NewConsistencyResult,
    NewWorkflowRun,
    NewWorkflowTask,
    NotFoundError,
    StoreError,
    open_results,
    open_store,
    resolve_location,
)
from oxyeval.store._result_rows import CONSISTENCY_STATUSES
from oxyeval.store._tables import TEST_STATUSES

FIXTURE = Path(__file__).parent / "fixtures" / "history-v0.1.0.db"


def _history(tmp_path: Path) -> Path:
    path = tmp_path / "h" / "oxyeval.db"
    open_store(path).close()  # created and migrated by the full store
    return path


def test_only_an_sqlite_file_at_the_current_schema_is_written_this_way(tmp_path: Path) -> None:
    pg = resolve_location("postgresql://oxy@127.0.0.1:1/db", environ={})
    assert open_results(pg) is None  # never connects: the full store handles PostgreSQL
    old = tmp_path / "old.db"
    shutil.copyfile(FIXTURE, old)
    assert open_results(resolve_location(str(old), environ={})) is None  # needs a migration
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"not a database at all" * 100)
    assert open_results(resolve_location(str(garbage), environ={})) is None
    plain = tmp_path / "plain.db"
    conn = sqlite3.connect(plain)
    conn.execute("CREATE TABLE oxyeval_schema_version (version_num TEXT)")
    conn.execute("INSERT INTO oxyeval_schema_version VALUES ('0001')")
    conn.commit()
    conn.close()
    assert open_results(resolve_location(str(plain), environ={})) is None  # not in WAL mode
    with open_results(resolve_location(str(_history(tmp_path)), environ={})) as lite:
        assert lite is not None
    assert CONSISTENCY_STATUSES == TEST_STATUSES


def test_rows_written_here_read_back_identically_through_the_full_store(tmp_path: Path) -> None:
    secret = "sk-lite-secret-31313131"
    register_secret(secret)
    path = _history(tmp_path)
    location = resolve_location(str(path), environ={})
    with open_store(path) as store:  # an earlier run, written the usual way
        old = store.runs.start("consistency", started_at="2026-01-01T00:00:00Z")
        store.tests.record(
            old,
            NewConsistencyResult(
                file="a.agent.yml",
                name="totals",
                status="scored",
                accuracy=0.75,
                created_at="2026-01-01T00:00:01Z",
            ),
        )
        store.runs.finish(old)
    lite = open_results(location)
    assert lite is not None
    run = lite.runs.start(total=2, group_id="g1", subject="a.agent.yml")
    prev = lite.tests.previous("a.agent.yml", "totals", before_run=run)
    written = lite.tests.record(
        run,
        NewConsistencyResult(
            file="a.agent.yml",
            name="totals",
            status="scored",
            accuracy=0.5,
            n=4,
            runs_ok=3,
            pairing="all",
            model="m",
            judge_model="j",
            pairs_total=6,
            pairs_judged=3,
            identical_pairs=1,
            judge_calls=2,
            selected_run=2,
            selected_output=f"echo {secret}",
            run_errors=[{"run": 4, "error": f"401 {secret}"}],
            duration_ms=12.5,
        ),
    )
    lite.tests.record(
        run, NewConsistencyResult(file="a.agent.yml", name="other", status="error", error="x")
    )
    lite.runs.finish(run, "failed")
    lite.close()
    with open_store(path, read_only=True) as store:
        assert prev == store.tests.previous("a.agent.yml", "totals", before_run=run)
        assert prev is not None and prev.run_id == old
        rows = store.tests.for_run(run)
        stored = store.runs.get(run)
    assert rows[0] == written and [r.name for r in rows] == ["totals", "other"]
    assert written.selected_output == "echo ***" and secret not in repr(rows)
    assert stored is not None
    assert (stored.kind, stored.status, stored.total, stored.done) == (
        "consistency",
        "failed",
        2,
        2,
    )
    assert (stored.group_id, stored.subject, stored.finished_at is not None) == (
        "g1",
        "a.agent.yml",
        True,
    )


def test_errors_and_closing(tmp_path: Path) -> None:
    path = _history(tmp_path)
    lite = open_results(resolve_location(str(path), environ={}), timeout=0.2)
    assert lite is not None
    with pytest.raises(NotFoundError):
        lite.tests.record("nope", NewConsistencyResult(file="f", name="n", status="scored"))
    with pytest.raises(ValueError, match="test status"):
        lite.tests.record("nope", NewConsistencyResult(file="f", name="n", status="passed"))
    run = lite.runs.start(total=1)
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # another process writing
    with pytest.raises(StoreError, match="is locked by another process"):
        lite.tests.record(run, NewConsistencyResult(file="f", name="n", status="scored"))
    blocker.execute("ROLLBACK")
    blocker.close()
    lite.tests.record(run, NewConsistencyResult(file="f", name="n", status="scored"))  # usable
    lite.close()  # never finished: marked interrupted, as Store.close does
    lite.close()
    with open_store(path, read_only=True) as store:
        stored = store.runs.get(run)
    assert stored is not None and stored.status == "interrupted" and stored.done == 1
    with pytest.raises(StoreError, match="closed"):
        lite.runs.start()


def test_a_workflow_run_written_here_reads_back_as_the_full_store_writes_it(
    tmp_path: Path,
) -> None:
    secret = "sk-lite-workflow-27272727"
    register_secret(secret)
    record = NewWorkflowRun(
        workflow="w.workflow.yml",
        variables={"month": "2026-09"},
        output={"report": f"echoed {secret}"},
        error="task 'b' failed: boom",
        duration_ms=81.5,
        status="failed",
        tasks=[
            NewWorkflowTask(path="a", name="a", type="agent", status="succeeded", output="x"),
            NewWorkflowTask(path="b", name="b", type="agent", status="failed", error=secret),
        ],
    )
    path = _history(tmp_path)
    lite = open_results(resolve_location(str(path), environ={}))
    assert lite is not None
    mine = lite.runs.start("workflow", total=2, subject="w.workflow.yml")
    lite.workflows.record(mine, record)
    lite.runs.finish(mine, "failed")
    lite.close()
    with open_store(path) as store:
        theirs = store.runs.start("workflow", total=2, subject="w.workflow.yml")
        store.workflows.record(theirs, record)
        store.runs.finish(theirs, "failed")
        a, b = store.workflows.get(mine), store.workflows.get(theirs)
    assert a is not None and b is not None
    assert (a.workflow, a.variables, a.output, a.error, a.duration_ms, a.tasks) == (
        b.workflow,
        b.variables,
        b.output,
        b.error,
        b.duration_ms,
        b.tasks,
    )
    assert a.output == {"report": "echoed ***"} and a.tasks[1].error == "***"
    assert (a.run.kind, a.run.status, a.run.done, a.run.subject) == (
        "workflow",
        "failed",
        2,
        "w.workflow.yml",
    )


def test_a_run_that_did_more_steps_than_planned_finishes_with_its_total_at_them(
    tmp_path: Path,
) -> None:
    """A workflow's loop body runs once per item: planned once, done three times. Both
    writers finish the run at 3/3, not 3/1."""
    ran = NewWorkflowRun(
        workflow="w.workflow.yml",
        status="completed",
        tasks=[
            NewWorkflowTask(
                path=f"each.line[{i}]", name="line", type="formatter", status="succeeded"
            )
            for i in range(3)
        ],
    )
    path = _history(tmp_path)
    location = resolve_location(str(path), environ={})
    with open_results(location) as lite:
        assert lite is not None
        lean = lite.runs.start("workflow", subject="w.workflow.yml", total=1)
        lite.workflows.record(lean, ran)
        lite.runs.finish(lean)
    with open_store(path) as store:
        full = store.runs.start("workflow", subject="w.workflow.yml", total=1)
        store.workflows.record(full, ran)
        store.runs.finish(full)
        for run_id in (lean, full):
            got = store.runs.get(run_id)
            assert got is not None and (got.done, got.total) == (3, 3)
        planned = store.runs.start("workflow", subject="w.workflow.yml", total=5)
        store.runs.finish(planned)
        got = store.runs.get(planned)
        assert got is not None and (got.done, got.total) == (0, 5)  # fewer done: kept
