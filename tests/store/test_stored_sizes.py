"""The history keeps at most MAX_STORED_CHARS of one output, saying so, through both
writers: a SQL task returning millions of rows must not grow every history by megabytes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from oxyeval.store import open_results, open_store
from oxyeval.store._engine import resolve_location
from oxyeval.store._result_rows import (
    MAX_STORED_CHARS,
    NewConsistencyResult,
    NewWorkflowRun,
    NewWorkflowTask,
)


def _writer(kind: str, path: Path) -> Any:
    if kind == "lean":
        lite = open_results(resolve_location(str(path), environ={}))
        assert lite is not None
        return lite
    return open_store(path)


@pytest.mark.parametrize("kind", ["lean", "full"])
def test_a_huge_task_output_is_stored_cut_and_a_small_one_whole(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "h.db"
    rows = [{"id": i, "name": f"row {i}"} for i in range(80_000)]  # ~2 MB of JSON
    with _writer(kind, path) as store:
        run_id = store.runs.start("workflow", total=2, subject="w.workflow.yml")
        store.workflows.record(
            run_id,
            NewWorkflowRun(
                workflow="w.workflow.yml",
                output="short",
                status="completed",
                tasks=[
                    NewWorkflowTask(
                        path="q", name="q", type="execute_sql", status="succeeded", output=rows
                    ),
                    NewWorkflowTask(
                        path="s",
                        name="s",
                        type="agent",
                        status="succeeded",
                        output={"answer": "fine"},
                    ),
                ],
            ),
        )
        store.runs.finish(run_id)
    with open_store(path, read_only=True) as store:
        record = store.workflows.get(run_id)
    assert record is not None and record.output == "short"
    big, small = record.tasks
    assert small.output == {"answer": "fine"}
    assert big.output["oxy_cut"] is True and big.output["chars"] > MAX_STORED_CHARS
    assert len(big.output["head"]) == MAX_STORED_CHARS
    assert big.output["head"].startswith('[{"id":0,"name":"row 0"}')


@pytest.mark.parametrize("kind", ["lean", "full"])
def test_a_huge_selected_answer_is_stored_cut(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "h.db"
    answer = "x" * (MAX_STORED_CHARS + 5)
    with _writer(kind, path) as store:
        run_id = store.runs.start("consistency", total=1)
        for name, text in (("big", answer), ("small", "ok")):
            store.tests.record(
                run_id,
                NewConsistencyResult(
                    file="a.agent.yml",
                    name=name,
                    status="scored",
                    accuracy=1.0,
                    selected_output=text,
                ),
            )
        store.runs.finish(run_id)
    with open_store(path, read_only=True) as store:
        big = store.tests.previous("a.agent.yml", "big")
        small = store.tests.previous("a.agent.yml", "small")
    assert big is not None and small is not None and small.selected_output == "ok"
    assert big.selected_output.startswith("x" * MAX_STORED_CHARS + "\n[... cut: ")
    assert f"{len(answer):,} characters" in big.selected_output


def test_a_huge_case_output_is_stored_cut_with_the_hash_of_the_whole(tmp_path: Path) -> None:
    import hashlib

    from ._helpers import make_case, new

    answer = "y" * (MAX_STORED_CHARS + 7)
    with open_store(tmp_path / "h.db") as store:
        make_case(store)
        run_id = store.runs.start(prompt_id="p1", prompt_version=1, total=2)
        big, small = store.executions.record_batch(
            [
                new(run_id=run_id, actual_output=answer, passed=False, score=0.0),
                new(run_id=run_id, actual_output="ok", passed=False, score=0.0),
            ]
        )
        (result, other) = store.results.for_run(run_id)
    digest = hashlib.sha256(answer.encode()).hexdigest()
    for text in (big.actual_output, result.output):
        assert text is not None and text.startswith("y" * MAX_STORED_CHARS + "\n[... cut: ")
        assert text.endswith(f"{len(answer):,} characters in all, sha256 {digest}]")
    assert small.actual_output == other.output == "ok"
    assert big.length_diff == len(answer) - len("positive")  # measured on the whole
