"""``oxy test`` on oxy's ``*.test.yml`` files, against the offline examples: PASS/FLKY/FAIL
lines, the tool assertion, --tag and --case, the gates and exit codes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oxyeval.cli._app import app

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture
def examples(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    target = tmp_path / "examples"
    shutil.copytree(EXAMPLES, target, ignore=shutil.ignore_patterns("output", ".oxy", "chattest"))
    monkeypatch.chdir(target)
    return target


def invoke(*args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(app, list(args))


def test_the_example_test_file_passes_with_its_tool_called(examples: Path) -> None:
    result = invoke("test", "agents/sales.agent.test.yml", "--format", "json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    top = next(c for c in doc["cases"] if c["name"] == "top region")
    assert top["verdict"] == "PASS" and (top["passes"], top["runs"]) == (3, 3)
    assert all("query_orders" in r["tools"] for r in top["runsDetail"])
    assert doc["overall"]["score"] == 1.0 and doc["overall"]["consistency"] == 1.0
    pretty = invoke("test")  # no file: every *.test.yml of the project
    assert pretty.exit_code == 0 and "PASS  top region  (3/3)" in pretty.stdout


def test_a_run_that_did_not_call_the_tool_fails_without_the_judge(examples: Path) -> None:
    (examples / "agents" / "sales.agent.test.yml").write_text(
        "settings: {runs: 2, judge_model: grader}\n"
        "cases:\n"
        "  - {name: refunds, prompt: 'What is our refund policy?', "
        "expected: 'It only answers questions about regions.', tool: query_orders}\n"
    )
    result = invoke("test", "--format", "json", "--min-accuracy", "0.5")
    assert result.exit_code == 1, result.stderr
    (case,) = json.loads(result.stdout)["cases"]
    assert case["verdict"] == "FAIL" and case["passes"] == 0
    assert all("did not call the tool 'query_orders'" in r["reasoning"] for r in case["runsDetail"])
    assert json.loads(result.stdout)["judgeCalls"] == 0
    assert "below threshold" in result.stderr or "50.00%" in result.stderr


def test_tags_and_case_names_select_cases(examples: Path) -> None:
    only = json.loads(invoke("test", "--tag", "scope", "--format", "json").stdout)
    assert [c["name"] for c in only["cases"]] == ["stays on topic"]
    named = json.loads(invoke("test", "--case", "top region", "--format", "json").stdout)
    assert [c["name"] for c in named["cases"]] == ["top region"]
    wrong = invoke("test", "--case", "top regoin")
    assert wrong.exit_code == 2 and "did you mean 'top region'" in wrong.stderr


def test_mixing_kinds_or_finding_no_test_file_is_bad_input(
    examples: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mixed = invoke("test", "agents/sales.agent.test.yml", "agents/users.agent.yml")
    assert mixed.exit_code == 2 and "two calls" in mixed.stderr
    assert invoke("test", "agents/users.agent.yml", "--tag", "x").exit_code == 2
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "config.yml").write_text("models:\n  - {name: m, vendor: mock, outputs: [x]}\n")
    monkeypatch.chdir(empty)
    result = invoke("test", "--format", "json")
    assert result.exit_code == 2 and "no *.test.yml files" in result.stderr
    assert json.loads(result.stdout)["exitCode"] == 2


def test_a_test_file_may_bring_its_own_judge_prompt(examples: Path) -> None:
    path = examples / "agents" / "sales.agent.test.yml"
    text = path.read_text()
    own = text.replace(
        "  judge_model: grader",
        "  judge_model: grader\n  judge_prompt: 'Our rules. {{ output }} vs {{ criterion }}'",
    )
    path.write_text(own)
    result = invoke("test", "--case", "top region", "--format", "json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["cases"][0]["verdict"] == "PASS"
    path.write_text(
        text.replace(
            "  judge_model: grader",
            "  judge_model: grader\n  judge_prompt: 'Grade {{ criterion }}'",
        )
    )
    bad = invoke("test")
    assert bad.exit_code == 2 and "settings.judge_prompt" in bad.stderr
    assert "never uses {{ output }}" in bad.stderr
