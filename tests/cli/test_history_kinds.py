"""``oxy history --kind`` offers and accepts the store's run kinds (``store.kinds``), which
are exactly the kinds the commands write (review 4, finding 10)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oxyeval.cli._app import app
from oxyeval.store.kinds import RESERVED_RUN_KINDS, RUN_KIND_ALIASES, RUN_KINDS

from ..conftest import MakeProject
from ..suites.test_cases_run import PROMPT
from .test_history_cli import AGENT, CONFIG, SAME, WORKFLOW


def invoke(*args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(app, list(args))


@pytest.fixture
def root(make_project: MakeProject, monkeypatch: pytest.MonkeyPatch) -> Path:
    project = make_project(
        CONFIG.replace("{outputs}", SAME),
        {
            "a.agent.yml": AGENT,
            "s.prompt.yml": PROMPT,
            "w.workflow.yml": WORKFLOW,
            "ab.cases.yml": "prompt: s.prompt.yml\ncases:\n  - name: compared\n"
            "    input: {text: hi}\n    branches: [{name: A, model: m}, {name: B, model: analyst}]\n",
            "ct/prompts/p.json": '{"key": "p", "prompt": "hi", "models": ["bot"], '
            '"tests": ["it greets"], "testModel": "grader"}',
            "ct/models/bot.json": '{"key": "bot", "url": "mock:", "outputs": ["hello"]}',
            "ct/models/grader.json": '{"key": "grader", "url": "mock:", '
            '"outputs": ["Fine.\\nVerdict: PASS"]}',
        },
    )
    monkeypatch.chdir(project)
    monkeypatch.delenv("OXY_DB", raising=False)
    return project


def test_the_kinds_offered_are_the_kinds_the_commands_write(root: Path) -> None:
    assert invoke("cases", "run", "--case", "happy").exit_code == 0
    assert invoke("test", "a.agent.yml").exit_code == 0
    assert invoke("run", "w.workflow.yml", "-q").exit_code == 0
    assert invoke("ab", "run", "--case", "compared", "-q").exit_code == 0
    assert invoke("chattest", "ct", "-q").exit_code == 0
    from oxyeval.testing import ExactMatchMetric, LLMTestCase, evaluate

    case = LLMTestCase(input="hi", actual_output="hello", expected_output="hello")
    evaluate([case], [ExactMatchMetric()], print_results=False)
    every = json.loads(invoke("history", "--json").stdout)["runs"]
    assert sorted(r["kind"] for r in every) == sorted(RUN_KINDS)  # one run of each
    for kind in RUN_KINDS:
        only = invoke("history", "--kind", kind, "--json")
        assert only.exit_code == 0, only.stderr
        assert [r["kind"] for r in json.loads(only.stdout)["runs"]] == [kind]
    for alias, kind in RUN_KIND_ALIASES.items():
        aliased = json.loads(invoke("history", "--kind", alias, "--json").stdout)["runs"]
        assert [r["kind"] for r in aliased] == [kind]


@pytest.mark.parametrize("kind", [*RESERVED_RUN_KINDS, "nope"])
def test_a_kind_no_command_writes_is_bad_input_naming_the_kinds(root: Path, kind: str) -> None:
    result = invoke("history", "--kind", kind, "--json")
    assert result.exit_code == 2
    message = json.loads(result.stdout)["error"]
    assert f"--kind must be one of {', '.join(RUN_KINDS)} (or test), not '{kind}'" in message
    assert not (root / ".oxy").exists()  # checked before any history is opened or made


def test_the_help_lists_the_kinds_from_the_store(root: Path) -> None:
    result = invoke("history", "--help")
    assert result.exit_code == 0
    text = " ".join(result.stdout.split())
    match = re.search(r"Only runs of this kind: (.*?) \((.*?)\)\.", text)
    assert match, text
    assert match.group(1).split(", ") == list(RUN_KINDS)
    assert match.group(2) == ", ".join(f"{a}: {k}" for a, k in RUN_KIND_ALIASES.items())
    for reserved in RESERVED_RUN_KINDS:
        assert reserved not in match.group(0)
