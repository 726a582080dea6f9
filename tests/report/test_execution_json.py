"""One JSON shape for a test-case execution: what ``oxy cases run --format json`` prints of
an execution and what the history gives back of the same row have the same keys, and
every field both know has the same value (``executionId`` means the seed's reference to
the prompt execution in both, ``testCaseExecutionId`` the execution's own id)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oxyeval.cli._app import app
from oxyeval.report.cases import case_result_json, execution_json
from oxyeval.store import open_store
from oxyeval.suites.cases.results import CaseResult

from ..conftest import MakeProject

CONFIG = """\
models:
  - name: m
    vendor: mock
    rules:
      - {match: "explode", error: "backend down"}
      - {match: "love", output: "positive"}
      - {match: ".", output: "neutral"}
"""
PROMPT = """\
name: sentiment
model: m
template: "Feedback: {{ text }}"
similarity: lexical
cases:
  - {name: happy, input: {text: "I love it"}, expected_output: positive}
  - {name: meh, input: {text: "It is a thing"}, expected_output: negative}
  - {name: new, input: {text: "Brand new"}}
  - {name: boom, input: {text: "explode"}, expected_output: positive}
"""

#: What only the run knows of an execution: null when it is read back from the history.
LIVE_ONLY = {"name", "promptId", "threshold", "regressionReasons", "cached"}


@pytest.fixture
def root(make_project: MakeProject, monkeypatch: pytest.MonkeyPatch) -> Path:
    project = make_project(CONFIG, {"s.prompt.yml": PROMPT})
    monkeypatch.chdir(project)
    monkeypatch.delenv("OXY_DB", raising=False)
    return project


def test_a_live_execution_and_its_stored_row_have_one_shape(root: Path) -> None:
    result = CliRunner().invoke(app, ["cases", "run", "--format", "json"])
    assert result.exit_code == 3, result.output  # the case whose backend is down
    live = {e["name"]: e for e in json.loads(result.stdout)["executions"]}
    assert {n: e["status"] for n, e in live.items()} == {
        "happy": "passed",
        "meh": "failed",
        "new": "pending",
        "boom": "error",
    }
    with open_store(root / ".oxy" / "oxyeval.db", read_only=True) as store:
        for name, shown in live.items():
            row = store.executions.get(shown["id"])
            assert row is not None, name
            stored = execution_json(row)
            assert stored.keys() == shown.keys()
            for key, value in stored.items():
                if key in LIVE_ONLY:
                    assert value is None, (name, key)
                else:
                    assert shown[key] == value, (name, key)
            # The seed's meanings: the record's id, and the prompt execution it checked
            # (a cases run is its own prompt execution).
            assert shown["testCaseExecutionId"] == shown["id"] == row.id
            assert shown["executionId"] == row.execution_id
            assert shown["runId"] is not None and shown["createdAt"] is not None
    assert live["happy"]["passed"] is True and live["happy"]["cached"] is False
    assert live["boom"]["error"] and "backend down" in live["boom"]["error"]


def test_every_key_the_live_output_had_is_still_there() -> None:
    before = {
        "testCaseId", "name", "promptId", "testCaseExecutionId", "executionId", "passed",
        "score", "actualOutput", "expectedOutput", "outputDiff", "exactMatch",
        "semanticScore", "similarityMethod", "lengthDiff", "tokenDiff", "tokenMethod",
        "latencyMs", "costUsd", "inputTokens", "outputTokens", "isRegression",
        "regressionType", "regressionTypes", "regressionReasons", "promptVersion",
        "runDuration", "threshold", "error", "pending", "finishReason", "cached", "createdAt",
    }  # fmt: skip
    stored_before = {
        "id", "testCaseId", "runId", "executionId", "status", "passed", "score",
        "actualOutput", "expectedOutput", "outputDiff", "exactMatch", "semanticScore",
        "similarityMethod", "lengthDiff", "tokenDiff", "tokenMethod", "isRegression",
        "regressionType", "regressionTypes", "promptVersion", "runDuration", "latencyMs",
        "inputTokens", "outputTokens", "finishReason", "truncated", "error", "createdAt",
    }  # fmt: skip
    result = CaseResult(case_id="p::c", name="c", prompt_id="p", prompt_version=1)
    doc = case_result_json(result)
    assert before <= doc.keys() and stored_before <= doc.keys()
    # Not yet recorded: no id of any kind, rather than an empty one.
    assert doc["id"] is doc["testCaseExecutionId"] is doc["executionId"] is None
    assert doc["status"] == "failed" and doc["createdAt"] is None
