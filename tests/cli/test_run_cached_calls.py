"""`oxy run` says how many model calls the cache served, as `oxy test` does: `cached_calls`
per agent task, in a consistency_run task's `consistency`, and for the whole run in JSON,
and a line in the pretty report. A fake server counts the requests, so a
rerun that reports cached verdicts is also seen not to ask the judge."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from oxyeval.cli._app import app

from ..conftest import MakeProject
from ..fakes import FakeServer, RecordedRequest, fake_openai

ANSWERS = ["The total is 42.", "Total: 42", "It is 42 in all."]
WORKFLOW = """\
tasks:
  - {name: say, type: agent, agent_ref: a.agent.yml, prompt: "What is the total?", consistency_run: 3}
  - {name: out, type: formatter, template: "{{ say }}"}
"""


class Script:
    """Agent answers in turn, a verdict for judge prompts; counts both."""

    def __init__(self) -> None:
        self.agent = self.judge = 0
        self._next = 0
        self._lock = threading.Lock()

    def __call__(self, request: RecordedRequest) -> str:
        last = str(request.body["messages"][-1]["content"])
        with self._lock:
            if "[Submission 1]" in last:
                self.judge += 1
                return "Same facts.\nAnswer: A"
            self.agent += 1
            answer = ANSWERS[self._next % len(ANSWERS)]
            self._next += 1
            return answer

    def rewind(self) -> None:
        """Run k gets answer k again (the judge then sees the same pairs)."""
        with self._lock:
            self._next = 0


@pytest.fixture
def script() -> Script:
    return Script()


@pytest.fixture
def server(script: Script):
    with fake_openai(script) as s:
        yield s


@pytest.fixture
def project(make_project: MakeProject, server: FakeServer, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("OXY_DB", raising=False)  # the project's own .oxy/oxyeval.db
    config = (
        "models:\n  - name: local\n    vendor: openai\n    model_ref: m\n"
        f"    api_url: {server.url}\n    max_retries: 0\n"
    )
    return make_project(
        config,
        {
            "a.agent.yml": "model: local\nsystem_instructions: Be brief.\n",
            "w.workflow.yml": WORKFLOW,
        },
    )


def run(project: Path, script: Script, *args: str) -> Any:
    script.rewind()
    # One unit of work at a time: run k is asked k-th, so it gets the same answer each run.
    return CliRunner().invoke(
        app, ["run", str(project / "w.workflow.yml"), "--concurrency", "1", *args]
    )


def summary(result: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    task = next(t for t in doc["tasks"] if t["name"] == "say")
    return doc, task


def test_a_rerun_reports_the_verdicts_it_replayed_and_asks_no_judge(
    project: Path, server: FakeServer, script: Script
) -> None:
    doc, task = summary(run(project, script, "--format", "json"))
    assert (script.agent, script.judge) == (3, 3)
    assert task["consistency"]["judgeCalls"] == 3
    assert task["consistency"]["cachedCalls"] == task["cachedCalls"] == 0
    assert doc["summary"]["cachedCalls"] == 0

    doc, task = summary(run(project, script, "--format", "json"))
    assert (script.agent, script.judge) == (6, 3)  # the answers again, not the judge
    judge_requests = [
        r for r in server.requests if "[Submission 1]" in str(r.body["messages"][-1]["content"])
    ]
    assert len(judge_requests) == 3  # all from the first run
    assert task["consistency"]["judgeCalls"] == 0
    assert task["consistency"]["cachedCalls"] == task["cachedCalls"] == 3
    assert doc["summary"]["cachedCalls"] == 3
    assert doc["output"] == "The total is 42."


def test_the_pretty_report_says_it_too(project: Path, script: Script) -> None:
    first = run(project, script)
    assert first.exit_code == 0, first.stderr
    assert "from the cache" not in first.stderr

    again = run(project, script)
    assert again.exit_code == 0, again.stderr
    assert script.judge == 3
    assert "say agent" in again.stderr and "consistency 100% · 3 calls from the cache" in (
        again.stderr
    )
    assert "3 model calls served from the cache (--no-cache to make every call)" in again.stderr
    assert again.stdout.strip() == "The total is 42."  # stdout stays the output alone


def test_a_cache_rerun_counts_answers_and_verdicts(
    project: Path, server: FakeServer, script: Script
) -> None:
    doc, _ = summary(run(project, script, "--format", "json", "--cache"))
    assert doc["summary"]["cachedCalls"] == 0 and len(server.requests) == 6
    doc, task = summary(run(project, script, "--format", "json", "--cache"))
    assert len(server.requests) == 6  # nothing asked
    assert task["consistency"]["cachedCalls"] == task["cachedCalls"] == 6  # 3 answers, 3 verdicts
    assert doc["summary"]["cachedCalls"] == 6


def test_no_cache_reports_none(project: Path, script: Script) -> None:
    summary(run(project, script, "--format", "json"))
    doc, task = summary(run(project, script, "--format", "json", "--no-cache"))
    assert (script.agent, script.judge) == (6, 6)
    assert task["consistency"]["cachedCalls"] == doc["summary"]["cachedCalls"] == 0


def test_asking_an_agent_reports_a_replayed_answer(project: Path, server: FakeServer) -> None:
    def ask(*args: str) -> Any:
        return CliRunner().invoke(
            app, ["run", str(project / "a.agent.yml"), "--question", "Total?", "--cache", *args]
        )

    first = ask("--format", "json")
    assert first.exit_code == 0, first.stderr
    assert json.loads(first.stdout)["summary"]["cachedCalls"] == 0 and len(server.requests) == 1
    again = ask("--format", "json")
    assert json.loads(again.stdout)["summary"]["cachedCalls"] == 1 and len(server.requests) == 1
    pretty = ask()
    assert pretty.exit_code == 0, pretty.stderr
    assert "1 model call served from the cache" in pretty.stderr
    assert len(server.requests) == 1


MOCKS = """\
models:
  - name: m
    vendor: mock
    outputs: ["Sales were 40.", "Sales totalled 40.", "Sales were 99."]
  - name: judge
    vendor: mock
    rules:
      - {match: "99", output: "Different.\\nAnswer: B"}
      - {match: ".", output: "Same.\\nAnswer: A"}
"""
NESTED = """\
tasks:
  - {name: say, type: agent, agent_ref: a.agent.yml, prompt: "Total?", consistency_run: 3, judge_model: judge}
tests:
  - {type: consistency, task_ref: say, n: 2, model_ref: judge}
"""


def test_oxy_test_of_a_workflow_counts_its_tasks_replayed_verdicts(
    make_project: MakeProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A consistency_run task counts its own cached calls, and the test that ran the
    workflow still counts them as its own (counting scopes nest)."""
    monkeypatch.delenv("OXY_DB", raising=False)
    root = make_project(
        MOCKS, {"a.agent.yml": "model: m\nsystem_instructions: brief\n", "w.workflow.yml": NESTED}
    )

    def test_run() -> dict[str, Any]:
        result = CliRunner().invoke(app, ["test", str(root / "w.workflow.yml"), "--format", "json"])
        assert result.exit_code == 0, result.stderr
        return json.loads(result.stdout)

    test_run()
    doc = test_run()
    test = doc["tests"][0]
    # Each of the 2 runs of the workflow replays its task's 3 verdicts.
    assert test["judgeCalls"] == 0
    assert test["cachedCalls"] == doc["summary"]["cachedCalls"] == 6
