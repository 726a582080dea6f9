"""A run that stops on bad input before its first model call leaves no history behind: a missing API key (or a bad --var) exits 2 with its message, and neither
`.oxy/oxyeval.db` nor `.oxy/` is created; a history that was there is not changed. The
store still opens in the background, once the checks have passed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from oxyeval.cli._app import app

from ..conftest import MakeProject
from ..fakes import FakeServer, fake_openai

KEY = "OXY_BAD_INPUT_TEST_KEY"
FILES = {
    "x.agent.yml": """\
        model: gpt
        system_instructions: Be brief.
        tests:
          - {type: consistency, name: t, n: 2, task_description: "What is the total?"}
        """,
    "w.workflow.yml": """\
        variables:
          region: {type: string, default: North}
        tasks:
          - {name: say, type: agent, agent_ref: x.agent.yml, prompt: "{{ region }}?", consistency_run: 2}
        tests:
          - {type: consistency, task_ref: say, n: 2}
        """,
    "prompts/p.prompt.yml": """\
        name: p
        model: gpt
        template: "Say {{ x }}"
        similarity: lexical
        cases:
          - {name: a, input: {x: hi}, expected_output: hi}
        """,
}


@pytest.fixture
def server():
    with fake_openai("The total is 42.\nAnswer: A") as s:
        yield s


@pytest.fixture
def root(make_project: MakeProject, server: FakeServer, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("OXY_DB", raising=False)
    monkeypatch.delenv(KEY, raising=False)
    config = (
        "models:\n  - name: gpt\n    vendor: openai\n    model_ref: m\n"
        f"    api_url: {server.url}\n    key_var: {KEY}\n    max_retries: 0\n"
    )
    return make_project(config, FILES)


def oxy(root: Path, *args: str) -> Any:
    """The command, its project's files given by their paths under ``root``."""
    return CliRunner().invoke(app, [str(root / a) if a.endswith(".yml") else a for a in args])


def _runs(root: Path) -> list[dict[str, Any]]:
    result = oxy(root, "history", "--project", str(root), "--format", "json")
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)["runs"]


COMMANDS = [
    ["test", "x.agent.yml"],
    ["test", "x.agent.yml", "--cache"],
    ["test", "w.workflow.yml"],
    ["run", "w.workflow.yml"],
    ["run", "w.workflow.yml", "--cache"],
    ["run", "x.agent.yml", "--question", "hi", "--cache"],
    ["cases", "run", "prompts/p.prompt.yml"],
    ["cases", "run", "prompts/p.prompt.yml", "--cache"],
]


@pytest.mark.parametrize("args", COMMANDS, ids=[" ".join(c) for c in COMMANDS])
def test_a_missing_key_creates_no_history(root: Path, server: FakeServer, args: list[str]) -> None:
    result = oxy(root, *args)
    assert result.exit_code == 2, result.stderr
    assert f"environment variable {KEY}" in result.stderr and "which is not set" in result.stderr
    assert server.requests == []
    assert not (root / ".oxy").exists()


def test_the_json_document_says_why_and_no_history_either(root: Path) -> None:
    result = oxy(root, "test", "x.agent.yml", "--format", "json")
    assert result.exit_code == 2
    doc = json.loads(result.stdout)
    assert doc["exitCode"] == 2 and KEY in doc["error"]
    assert not (root / ".oxy").exists()


def test_an_existing_oxy_folder_stays_empty(root: Path) -> None:
    (root / ".oxy").mkdir()
    assert oxy(root, "test", "x.agent.yml").exit_code == 2
    assert list((root / ".oxy").iterdir()) == []


def test_a_bad_variable_creates_no_history(
    root: Path, server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY, "sk-test")
    result = oxy(root, "run", "w.workflow.yml", "--var", "regio=South")
    assert result.exit_code == 2 and "regio" in result.stderr
    assert server.requests == [] and not (root / ".oxy").exists()


def test_a_history_that_was_there_is_not_changed(
    root: Path, server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY, "sk-test")
    first = oxy(root, "test", "x.agent.yml")
    assert first.exit_code == 0, first.stderr
    ran = oxy(root, "run", "w.workflow.yml")
    assert ran.exit_code == 0, ran.stderr
    db = root / ".oxy" / "oxyeval.db"
    before = _runs(root)
    assert len(before) == 2
    requests = len(server.requests)
    monkeypatch.delenv(KEY)
    for args in COMMANDS:
        assert oxy(root, *args).exit_code == 2
    after = _runs(root)
    assert after == before and len(server.requests) == requests
    assert db.is_file()


def test_after_the_checks_the_history_is_created(
    root: Path, server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The deferred start still creates and fills the history once the run can start."""
    monkeypatch.setenv(KEY, "sk-test")
    assert oxy(root, "test", "x.agent.yml").exit_code == 0
    assert oxy(root, "run", "w.workflow.yml").exit_code == 0
    assert sorted(r["kind"] for r in _runs(root)) == ["consistency", "workflow"]
