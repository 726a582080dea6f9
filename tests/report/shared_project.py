"""One small project with mock models on which every command that prints a JSON document
runs once per test session (:data:`COMMANDS`), shared by the tests of the documents
(``test_documents``) and of ``oxy report`` on each kind (``test_saved_kinds``)."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from oxyeval.cli import main
from oxyeval.cli._app import app

__all__ = ["COMMANDS", "run_commands"]

CONFIG = """\
models:
  - name: agent_model
    vendor: mock
    outputs: ["The total is 42.", "The total is 42.", "It is 41."]
  - name: classifier
    vendor: mock
    rules: [{match: "love", output: "positive"}, {match: ".", output: "negative"}]
  - name: judge
    vendor: mock
    rules:
      - {match: "41", output: "They differ.\\nAnswer: B"}
      - {match: "(?i)verdict", output: "Fine.\\nVerdict: PASS"}
      - {match: ".", output: "Same facts.\\nAnswer: A"}
"""
FILES = {
    "a.agent.yml": (
        "model: agent_model\nsystem_instructions: Be brief.\ntests:\n"
        "  - {type: consistency, name: total, n: 3, task_description: 'total?', model_ref: judge}\n"
    ),
    "a.agent.test.yml": (
        "settings: {runs: 2, judge_model: judge}\n"
        "cases:\n  - {name: says total, prompt: 'total?', expected: 'The total is 42.'}\n"
    ),
    "p.prompt.yml": (
        "name: p\nmodel: classifier\ntemplate: '{{ text }}'\nthreshold: 0.8\nsimilarity: lexical\n"
        "branches:\n  - {name: one, model: classifier, control: true}\n"
        "  - {name: two, model: agent_model}\n"
        "cases:\n  - {name: good, input: {text: I love it}, expected_output: positive}\n"
        "  - {name: bad, input: {text: broken}, expected_output: positive}\n"
    ),
    "w.workflow.yml": (
        "tasks:\n  - {name: say, type: agent, agent_ref: a.agent.yml, prompt: 'total?'}\n"
        "  - {name: out, type: formatter, template: 'said: {{ say }}'}\n"
    ),
    "chat/prompts/c.json": (
        '{"key": "c", "prompt": "Say hi", "models": ["m"], "tests": ["it greets"],'
        ' "runVolume": 2, "testModel": "j"}'
    ),
    "chat/models/m.json": '{"key": "m", "url": "mock:", "outputs": ["hello there"]}',
    "chat/models/j.json": (
        '{"key": "j", "url": "mock:", "rules": [{"match": "(?s).*", "output": "Ok.\\nVerdict: PASS"}]}'
    ),
}

#: Every command whose --format json is checked: its arguments (``{root}`` is the
#: project), and the document it prints.
COMMANDS: dict[str, tuple[list[str], str]] = {
    "test": (["test", "{root}/a.agent.yml"], "run"),
    "test-gated": (
        ["test", "{root}/a.agent.yml", "--min-accuracy", "0.9", "--fail-on-drop", "5"],
        "run",
    ),
    "test-files": (["test", "{root}/a.agent.test.yml"], "run"),
    "cases-run": (["cases", "run", "{root}/p.prompt.yml"], "run"),
    "ab-run": (["ab", "run", "{root}/p.prompt.yml"], "run"),
    "chattest": (["chattest", "{root}/chat"], "run"),
    "run-workflow": (["run", "{root}/w.workflow.yml"], "run"),
    "run-question": (["run", "{root}/a.agent.yml", "--question", "total?"], "run"),
    "report": (["report", "{root}/saved.json", "--min-accuracy", "0.5"], "run"),
    "report-cases": (["report", "{root}/saved-cases.json"], "run"),
    "validate": (["validate", "{root}"], "validation"),
    "history": (["history", "--project", "{root}"], "history"),
    "history-run": (["history", "--project", "{root}", "--run", "{run_id}"], "runDetail"),
    "history-compare": (
        ["history", "--project", "{root}", "--compare", "{run_id}", "{run_id2}"],
        "comparison",
    ),
    "history-test": (["history", "--project", "{root}", "--test", "total"], "testHistory"),
    "cache-stats": (["cache", "stats", "--project", "{root}"], "cacheStats"),
    "cases-list": (["cases", "list", "--project", "{root}"], "caseList"),
    "cases-show": (["cases", "show", "good", "--project", "{root}"], "caseDetail"),
    "ab-list": (["ab", "list", "--project", "{root}"], "branchList"),
    "ab-show": (["ab", "show", "p::good@one", "--project", "{root}"], "branchDetail"),
    "cache-clear": (["cache", "clear", "--project", "{root}", "--kind", "verdict"], "cacheCleared"),
    # Errors: the driver's (before any test), a read command's, the command line's,
    # oxy report's and oxy run's.
    "error-test": (["test", "{root}/missing.agent.yml"], "error"),
    "error-read": (["cases", "show", "nope", "--project", "{root}"], "error"),
    "error-usage": (["history", "--limit", "0"], "error"),
    "error-report": (["report", "{root}/missing.json"], "error"),
    "error-run": (["run", "{root}/missing.workflow.yml"], "error"),
    "error-validate": (["validate", "--project", "{root}/nowhere"], "error"),
}


#: The runs that also write their JUnit report (``<name>.junit.xml`` in the project).
JUNIT = ("cases-run", "ab-run", "chattest", "test-files")


def _invoke(args: list[str]) -> tuple[int, str]:
    result = CliRunner().invoke(app, [*args, "--format", "json"])
    return result.exit_code, result.stdout


def _main(args: list[str]) -> tuple[int, str]:
    """Through ``main()``, where a command-line error is answered (the app alone raises)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        try:
            main([*args, "--format", "json"])
        except SystemExit as exc:
            return int(exc.code or 0), out.getvalue()
    raise AssertionError("main() always exits")


def run_commands(root: Path) -> dict[str, tuple[int, dict[str, Any]]]:
    """Every command of :data:`COMMANDS` run once on the project written into ``root``:
    name -> (exit code, the parsed document)."""
    (root / "config.yml").write_text(CONFIG)
    for name, text in FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    found: dict[str, Any] = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("OXY_DB", raising=False)
        mp.chdir(root)
        _code, first = _invoke(["test", f"{root}/a.agent.yml"])  # what --compare starts from
        (root / "saved.json").write_text(first)
        values = {"root": str(root), "run_id": json.loads(first)["history"][0]["runId"]}
        for name, (args, _document) in COMMANDS.items():
            if name == "report-cases":
                (root / "saved-cases.json").write_text(json.dumps(found["cases-run"][1]))
            if name == "history-run":
                values["run_id2"] = found["test"][1]["history"][0]["runId"]
            run = _main if name == "error-usage" else _invoke
            extra = ["--junit", f"{root}/{name}.junit.xml"] if name in JUNIT else []
            code, stdout = run([*(a.format(**values) for a in args), *extra])
            try:
                found[name] = (code, json.loads(stdout))
            except json.JSONDecodeError:
                pytest.fail(f"oxy {' '.join(args)}: not one JSON document: {stdout!r}")
    return found
