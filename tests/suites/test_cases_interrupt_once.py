"""`oxy cases run` interrupted while a case's execution is being committed.

The history row is written by a worker thread, which a cancellation cannot stop: a
case cancelled during that write was in the history (and counted in the run's `done`)
but missing from the report, so the report said fewer cases finished than the history
did. The write is held on a threading.Event until the cancellation has been asked for,
so the test does not depend on timing.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from oxyeval.store import open_store
from oxyeval.store._executions import Executions
from oxyeval.suites.cases.run import CaseRun, run_cases_async

from ..conftest import MakeProject

CONFIG = """\
models:
  - name: m
    vendor: mock
    rules:
      - {match: "a", output: "alpha"}
      - {match: ".", output: "other"}
"""
PROMPT = """\
name: p
model: m
template: "{{ word }}"
similarity: lexical
cases:
  - {name: one, input: {word: a}, expected_output: alpha}
  - {name: two, input: {word: b}, expected_output: beta}
"""


def test_a_case_committed_as_the_run_is_cancelled_is_reported_too(
    make_project: MakeProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_project(CONFIG, {"p.prompt.yml": PROMPT})
    release = threading.Event()
    record = Executions.record_many
    writing: list[str] = []

    def held_record(self: Executions, batch: Any) -> Any:
        batch = list(batch)
        writing.extend(execution.test_case_id for execution in batch)
        release.wait(30)  # the first write waits until the run has been cancelled
        return record(self, batch)

    monkeypatch.setattr(Executions, "record_many", held_record)
    run = CaseRun(db=Path("."))

    async def go() -> None:
        task = asyncio.ensure_future(
            run_cases_async([root / "p.prompt.yml"], concurrency=1, into=run)
        )
        while not writing:  # the first case is being written (its thread holds)
            await asyncio.sleep(0.01)
        task.cancel()
        await asyncio.sleep(0)  # the cancellation reaches the case's task
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await task

    try:
        asyncio.run(go())
    finally:
        release.set()

    assert writing[0] == "p::one"  # held while the run was cancelled
    with open_store(root / ".oxy" / "oxyeval.db", read_only=True) as store:
        (stored_run,) = store.runs.list(5)
        stored = store.executions.for_run(stored_run.id)
    assert stored_run.status == "interrupted"
    # The report and the history agree: every case whose row was written is reported
    # (the second one, scored while the first was written, is written after it).
    assert [e.test_case_id for e in stored] == writing
    assert sorted((r.case_id, r.execution_id) for r in run.results) == sorted(
        (e.test_case_id, e.id) for e in stored
    )
    assert run.interrupted
