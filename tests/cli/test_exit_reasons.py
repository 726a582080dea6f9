"""Every non-zero exit says why on stderr, whatever the format.

Each scenario runs through ``main()`` (the real entry point, with its JSON
fallback for command-line errors) with ``--format json``: stdout must be one
JSON document and stderr must carry the reason, not be left empty.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from oxyeval.cli._app import main

from ..conftest import MakeProject

CONFIG = """\
models:
  - name: good
    vendor: mock
    outputs: ["Total: 42", "Total is 42"]
  - name: flaky
    vendor: mock
    rules:
      - {match: ".", error: "backend down"}
  - name: judge
    vendor: mock
    rules:
      - {match: "Total: 42", output: "They differ.\\nAnswer: B"}
      - {match: ".", output: "Same.\\nAnswer: A"}
  - name: broken_judge
    vendor: mock
    rules:
      - {match: ".", error: "judge is down"}
"""

FILES = {
    # one judged pair, verdict B: accuracy 0.0
    "low.agent.yml": """\
        model: good
        system_instructions: x
        tests:
          - {type: consistency, name: low, n: 2, task_description: q, model_ref: judge}
        """,
    # every judge call fails: the test cannot be scored (exit 3)
    "unscored.agent.yml": """\
        model: good
        system_instructions: x
        tests:
          - {type: consistency, name: cannot score, n: 2, task_description: q, model_ref: broken_judge}
        """,
    "flaky.agent.yml": "model: flaky\nsystem_instructions: x\n",
    "bad.agent.yml": "model: good\nsystem_instruction: typo\n",
    "fails.workflow.yml": """\
        tasks:
          - {name: ask, type: agent, agent_ref: flaky.agent.yml, prompt: hi}
        """,
    "vars.workflow.yml": """\
        variables:
          n: {type: integer}
        tasks:
          - {name: t, type: formatter, template: "{{ n }}"}
        """,
    "s.prompt.yml": """\
        name: sentiment
        model: good
        template: "Say {{ text }}"
        similarity: lexical
        cases:
          - {name: miss, input: {text: a}, expected_output: "something else entirely"}
        """,
    "boom.prompt.yml": """\
        name: boom
        model: flaky
        template: "Say {{ text }}"
        similarity: lexical
        cases:
          - {name: down, input: {text: a}, expected_output: x}
        """,
}


@pytest.fixture
def root(make_project: MakeProject, monkeypatch: pytest.MonkeyPatch) -> Path:
    project = make_project(CONFIG, FILES)
    monkeypatch.chdir(project)
    monkeypatch.delenv("OXY_DB", raising=False)
    return project


def oxy(
    args: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "argv", ["oxy", *args])
    with pytest.raises(SystemExit) as info:
        main()
    out, err = capsys.readouterr()
    code = info.value.code
    return (code if isinstance(code, int) else 0), out, err


# (arguments, expected exit code, text the stderr reason must contain)
SCENARIOS = [
    (["test", "unscored.agent.yml"], 3, "not scored: cannot score: no valid verdicts"),
    (["test", "low.agent.yml", "--min-accuracy", "0.5"], 1, "below threshold 50.00%"),
    (["test", "low.agent.yml", "--min-accuracy", "7"], 2, "--min-accuracy must be between"),
    (["test", "missing.agent.yml"], 2, "file not found"),
    (["test", "bad.agent.yml"], 2, "system_instruction"),
    (["run", "fails.workflow.yml"], 3, "backend down"),
    (["run", "vars.workflow.yml"], 2, "no value for variable(s) n"),
    (["run", "flaky.agent.yml", "--question", "hi"], 3, "backend down"),
    (["validate", "bad.agent.yml"], 2, "system_instruction"),
    (["cases", "run", "s.prompt.yml"], 1, "failed: sentiment::miss: score"),
    (["cases", "run", "boom.prompt.yml"], 3, "error: boom::down: "),
    (["cases", "run", "s.prompt.yml", "--case", "nope"], 2, "no test case named 'nope'"),
    (["cases", "show", "nope"], 2, "nope"),
    (["cases", "list", "--project", "does-not-exist"], 2, "does-not-exist"),
    (["history", "--project", "does-not-exist"], 2, "does-not-exist"),
    (["compile", "fails.workflow.yml", "--mermaid", "--nope"], 2, "--nope"),
]


@pytest.mark.parametrize(
    ("args", "code", "reason"),
    SCENARIOS,
    ids=[" ".join(s[0][:2]) + f" ->{s[1]}" for s in SCENARIOS],
)
def test_a_failing_json_command_says_why_on_stderr(
    root: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    code: int,
    reason: str,
) -> None:
    got, out, err = oxy([*args, "--format", "json"], monkeypatch, capsys)
    assert got == code, err
    assert err.strip(), "non-zero exit with nothing on stderr"
    assert reason in err
    assert "Traceback" not in err
    doc = json.loads(out)  # one JSON document, nothing else
    assert isinstance(doc, dict)


def test_pretty_unscored_test_says_why_on_stderr_too(
    root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """stdout may go to a file or a CI artifact: the reason for exit 3 is on stderr."""
    got, _out, err = oxy(["test", "unscored.agent.yml"], monkeypatch, capsys)
    assert got == 3
    assert "not scored: cannot score: no valid verdicts" in err


def test_cases_accept_failure_says_why(
    root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    got, _out, err = oxy(["cases", "accept", "nope"], monkeypatch, capsys)
    assert got == 2 and "nope" in err


def test_an_unexpected_bug_is_one_paragraph_and_exit_3(
    root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import oxyeval.suites.validate

    def boom(*_args: object, **_kwargs: object) -> None:
        raise RuntimeError("something broke")

    monkeypatch.setattr(oxyeval.suites.validate, "validate_paths", boom)
    got, out, err = oxy(["validate", "bad.agent.yml", "--format", "json"], monkeypatch, capsys)
    assert got == 3
    assert "internal error: RuntimeError: something broke" in err
    assert "Traceback" not in err
    assert json.loads(out)["exitCode"] == 3


def test_each_unscored_test_is_named_once_on_stderr(
    make_project: MakeProject,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    config = (
        "models:\n  - {name: m, vendor: mock, rules: [{match: '.', error: down}]}\n"
        "  - {name: j, vendor: mock, outputs: ['Answer: A']}\n"
    )
    agent = (
        "model: m\nsystem_instructions: hi\ntests:\n"
        "  - {name: bad, type: consistency, n: 2, task_description: q, model_ref: j}\n"
    )
    root = make_project(config, {"a.agent.yml": agent})
    monkeypatch.chdir(root)
    code, _out, err = oxy(["test", "a.agent.yml", "--no-history"], monkeypatch, capsys)
    assert code == 3
    assert err.count("bad: only 0 of 2 runs succeeded") == 1, err
