"""`oxy test` results and `oxy run` workflow runs in the history (SQLite here; the store
itself is tested on PostgreSQL too, in tests/store)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from oxyeval.store import open_store
from oxyeval.suites.consistency import run_tests, run_tests_async
from oxyeval.suites.consistency.results import ConsistencyRun
from oxyeval.suites.workflows import run_workflow
from oxyeval.workflow.engine import WorkflowFailed

from ..conftest import MakeProject
from ..fakes import FakeServer, RecordedRequest, ResponseLike, openai_chat_response, stall

CONFIG = """\
models:
  - name: analyst
    vendor: mock
    outputs: {outputs}
  - name: judge
    vendor: mock
    rules:
      - match: "XYZ"
        output: "They differ.\\nAnswer: B"
      - match: "."
        output: "Same.\\nAnswer: A"
"""
SAME = '["Total: 42"]'
# n=4: runs 1-3 agree, run 4 differs -> pairs (1,2),(1,3),(2,3) A, three with run 4 B: 0.5
SPLIT = '["Total: 42", "Total is 42", "Total: 42.", "Total: 99 (XYZ)"]'
AGENT = """\
model: analyst
system_instructions: Be brief.
tests:
  - {type: consistency, name: totals, n: 4, task_description: "total?", model_ref: judge}
"""


def project(make_project: MakeProject, outputs: str = SAME) -> Path:
    return make_project(CONFIG.replace("{outputs}", outputs), {"agents/a.agent.yml": AGENT})


def db(root: Path) -> Path:
    return root / ".oxy" / "oxyeval.db"


def test_each_result_is_stored_under_one_consistency_run(make_project: MakeProject) -> None:
    root = project(make_project, SPLIT)
    run = run_tests([root / "agents" / "a.agent.yml"])
    (note,) = run.history
    assert note.error is None and note.stored == 1 and note.db == str(db(root))
    with open_store(db(root), read_only=True) as store:
        stored = store.runs.get(note.run_id or "")
        assert stored is not None
        assert (stored.kind, stored.status, stored.total, stored.done) == (
            "consistency",
            "completed",
            1,
            1,
        )
        assert stored.subject == "agents/a.agent.yml" and stored.group_id is None
        (row,) = store.tests.for_run(stored.id)
    test = run.tests[0]
    # Identity: the file relative to the project (not to the working directory), the name.
    assert (row.file, row.name, row.status) == ("agents/a.agent.yml", "totals", "scored")
    assert row.accuracy == pytest.approx(0.5) == test.accuracy
    assert (row.n, row.runs_ok, row.pairing) == (4, 4, "all")
    assert (row.pairs_total, row.pairs_judged, row.judge_calls) == (6, 6, test.judge_calls)
    assert (row.model, row.judge_model) == ("analyst", "judge")
    assert row.selected_run == test.selected and row.selected_output == "Total: 42"
    assert row.run_errors == () and row.error is None and row.duration_ms >= 0


def test_previous_is_the_latest_earlier_scored_result(make_project: MakeProject) -> None:
    root = project(make_project, SAME)
    first = run_tests([root / "agents" / "a.agent.yml"])
    assert first.tests[0].previous is None  # nothing before it
    (root / "config.yml").write_text(CONFIG.replace("{outputs}", SPLIT))
    second = run_tests([root / "agents" / "a.agent.yml"])
    prev = second.tests[0].previous
    assert prev is not None and prev.accuracy == 1.0
    assert prev.run_id == first.history[0].run_id
    assert second.tests[0].change == pytest.approx(-50.0)
    with open_store(db(root), read_only=True) as store:
        (row,) = store.tests.for_run(first.history[0].run_id or "")
    assert prev.at == row.created_at
    third = run_tests([root / "agents" / "a.agent.yml"])
    assert third.tests[0].previous is not None
    assert third.tests[0].previous.run_id == second.history[0].run_id  # the latest one


def test_a_test_that_could_not_be_scored_is_stored_but_is_no_baseline(
    make_project: MakeProject,
) -> None:
    root = project(make_project, SAME)
    run_tests([root / "agents" / "a.agent.yml"])
    judge_down = CONFIG.replace("{outputs}", SPLIT).replace(
        '      - match: "XYZ"\n        output: "They differ.\\nAnswer: B"\n'
        '      - match: "."\n        output: "Same.\\nAnswer: A"\n',
        '      - {match: ".", error: "judge down"}\n',
    )
    (root / "config.yml").write_text(judge_down)
    failed = run_tests([root / "agents" / "a.agent.yml"])
    assert not failed.tests[0].ok
    (root / "config.yml").write_text(CONFIG.replace("{outputs}", SAME))
    again = run_tests([root / "agents" / "a.agent.yml"])
    prev = again.tests[0].previous
    assert prev is not None and prev.accuracy == 1.0  # the first run, not the failed one
    with open_store(db(root), read_only=True) as store:
        history = store.tests.history("agents/a.agent.yml", "totals")
        run = store.runs.get(failed.history[0].run_id or "")
    assert [r.status for r in history] == ["scored", "error", "scored"]
    assert "judge down" in (history[1].error or "")
    assert run is not None and run.status == "failed"  # a test could not be scored


def test_history_false_opens_and_writes_nothing(make_project: MakeProject) -> None:
    root = project(make_project)
    run = run_tests([root / "agents" / "a.agent.yml"], history=False)
    assert run.tests[0].ok and run.history == [] and run.tests[0].previous is None
    assert not (root / ".oxy").exists()


def test_db_option_puts_the_history_elsewhere(make_project: MakeProject, tmp_path: Path) -> None:
    root = project(make_project)
    elsewhere = tmp_path / "else" / "h.db"
    run = run_tests([root / "agents" / "a.agent.yml"], db=elsewhere)
    assert run.history[0].db == str(elsewhere) and elsewhere.is_file()
    assert not (root / ".oxy").exists()


def test_projects_with_their_own_histories_get_one_run_each_in_one_group(
    make_project: MakeProject, tmp_path: Path
) -> None:
    one = project(make_project)
    two = tmp_path / "two"
    two.mkdir()
    (two / "config.yml").write_text((one / "config.yml").read_text())
    (two / "b.agent.yml").write_text((one / "agents" / "a.agent.yml").read_text())
    run = run_tests([one / "agents" / "a.agent.yml", two / "b.agent.yml"])
    assert sorted(h.db for h in run.history) == sorted([str(db(one)), str(db(two))])
    groups = set()
    for note in run.history:
        with open_store(note.db, read_only=True) as store:
            stored = store.runs.get(note.run_id or "")
            assert stored is not None and stored.total == 1 and stored.done == 1
            groups.add(stored.group_id)
    assert len(groups) == 1 and None not in groups


def test_a_history_that_cannot_be_opened_loses_no_result(
    make_project: MakeProject, tmp_path: Path
) -> None:
    root = project(make_project)
    run = run_tests([root / "agents" / "a.agent.yml"], db=tmp_path)  # a folder, not a file
    assert run.tests[0].ok and run.tests[0].accuracy == 1.0
    (note,) = run.history
    assert note.stored == 0 and note.run_id is None and "is a directory" in (note.error or "")
    assert run.history_errors == [f"history not stored in {tmp_path}: {note.error}"]


def test_an_interrupted_run_keeps_what_finished_marked_interrupted(
    make_project: MakeProject,
) -> None:
    config = """\
    models:
      - name: fast
        vendor: mock
        outputs: ["one"]
      - name: slow
        vendor: openai
        model_ref: m
        api_url: {url}
        timeout: 60
        max_retries: 0
      - name: judge
        vendor: mock
        rules: [{match: ".", output: "Same.\\nAnswer: A"}]
    """
    quick = "model: fast\nsystem_instructions: x\ntests:\n  - {type: consistency, name: quick, n: 2, task_description: q, model_ref: judge}\n"
    slow = "model: slow\nsystem_instructions: x\ntests:\n  - {type: consistency, name: slow, n: 3, concurrency: 1, task_description: q, model_ref: judge}\n"
    seen: list[int] = []

    def respond(_request: RecordedRequest) -> ResponseLike:
        seen.append(1)
        return stall(60.0) if len(seen) > 1 else (200, openai_chat_response("answer"))

    run = ConsistencyRun()
    with FakeServer(respond) as server:
        root = make_project(
            config.replace("{url}", server.url), {"a.agent.yml": quick, "b.agent.yml": slow}
        )

        async def go() -> None:
            files = [root / "a.agent.yml", root / "b.agent.yml"]
            task = asyncio.ensure_future(run_tests_async(files, into=run))
            while len(server.requests) < 2:  # run 1 of "slow" answered, run 2 held open
                await asyncio.sleep(0.01)
            while not any(t.name == "quick" for t in run.tests):
                await asyncio.sleep(0.01)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

        asyncio.run(go())

    (note,) = run.history
    assert note.stored == 2 and note.error is None
    with open_store(db(root), read_only=True) as store:
        stored = store.runs.get(note.run_id or "")
        rows = {r.name: r for r in store.tests.for_run(note.run_id or "")}
    assert stored is not None and stored.status == "interrupted" and stored.done == 2
    assert rows["quick"].status == "scored" and rows["quick"].accuracy == 1.0
    assert rows["slow"].status == "interrupted" and rows["slow"].runs_ok == 1
    assert "1 of 3 run(s) finished" in (rows["slow"].error or "")


WORKFLOW_CONFIG = """\
models:
  - name: m
    vendor: mock
    rules:
      - {match: "fail please", error: "model down"}
      - {match: ".", output: "answer"}
"""
WORKFLOW = """\
variables:
  topic: {type: string, default: sales}
tasks:
  - {name: ask, type: agent, agent_ref: a.agent.yml, prompt: "about {{ topic }}"}
  - {name: report, type: formatter, template: "Report: {{ ask }}"}
"""


def test_workflow_runs_are_stored_with_their_tasks(make_project: MakeProject) -> None:
    root = make_project(
        WORKFLOW_CONFIG,
        {"a.agent.yml": "model: m\nsystem_instructions: x\n", "flows/w.workflow.yml": WORKFLOW},
    )
    result = asyncio.run(run_workflow(root / "flows" / "w.workflow.yml", {"topic": "costs"}))
    assert result.output == "Report: answer"
    with open_store(db(root), read_only=True) as store:
        (stored,) = store.workflows.history("flows/w.workflow.yml")
        record = store.workflows.get(stored.run.id)
    assert stored.run.kind == "workflow" and stored.run.status == "completed"
    assert stored.run.subject == "flows/w.workflow.yml"
    assert record is not None and record.output == "Report: answer"
    assert record.variables == {"topic": "costs"} and record.error is None
    assert [(t.path, t.status) for t in record.tasks] == [
        ("ask", "succeeded"),
        ("report", "succeeded"),
    ]
    assert record.tasks[0].output == "answer"


def test_a_failed_workflow_run_is_stored_failed_and_one_that_never_ran_is_not(
    make_project: MakeProject,
) -> None:
    failing = WORKFLOW.replace("about {{ topic }}", "fail please")
    root = make_project(
        WORKFLOW_CONFIG,
        {
            "a.agent.yml": "model: m\nsystem_instructions: x\n",
            "w.workflow.yml": failing,
            "bad.workflow.yml": "tasks:\n  - {name: x, type: agent, agent_ref: missing.agent.yml, prompt: q}\n",
        },
    )
    with pytest.raises(WorkflowFailed):
        asyncio.run(run_workflow(root / "w.workflow.yml"))
    with pytest.raises(Exception):  # noqa: B017  (a load error: nothing ran)
        asyncio.run(run_workflow(root / "bad.workflow.yml"))
    with open_store(db(root), read_only=True) as store:
        (stored,) = store.workflows.history("w.workflow.yml")
        assert store.workflows.history("bad.workflow.yml") == []
    assert stored.run.status == "failed" and "model down" in (stored.error or "")


def test_a_workflow_run_without_history_writes_nothing(make_project: MakeProject) -> None:
    root = make_project(
        WORKFLOW_CONFIG,
        {"a.agent.yml": "model: m\nsystem_instructions: x\n", "w.workflow.yml": WORKFLOW},
    )
    result = asyncio.run(run_workflow(root / "w.workflow.yml", history=False))
    assert result.output == "Report: answer" and not (root / ".oxy").exists()
