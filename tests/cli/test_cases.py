"""`oxy cases ...` and `oxy history`: exit codes, JSON, baseline acceptance."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oxyeval.cli._app import app

from ..conftest import MakeProject
from ..suites.test_cases_run import CONFIG, PROMPT


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


@pytest.fixture
def root(make_project: MakeProject, monkeypatch: pytest.MonkeyPatch) -> Path:
    project = make_project(CONFIG, {"s.prompt.yml": PROMPT})
    monkeypatch.chdir(project)
    monkeypatch.delenv("OXY_DB", raising=False)
    return project


def test_run_exit_1_on_failure_with_diff(root: Path) -> None:
    result = invoke("cases", "run", "s.prompt.yml")
    assert result.exit_code == 1
    assert "3 case(s): 2 passed, 1 failed" in result.stdout
    assert "expected: negative" in result.stdout and "actual:   neutral" in result.stdout
    assert "lexical = word overlap, not semantic" in " ".join(result.stdout.split())  # wrapped


def test_run_exit_0_when_all_pass_and_json_is_pure(root: Path) -> None:
    result = invoke(
        "cases", "run", "s.prompt.yml", "--case", "happy", "--case", "sad", "--format", "json"
    )
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["summary"]["passed"] == 2 and doc["summary"]["exitCode"] == 0
    first = doc["executions"][0]
    for key in (
        "passed",
        "score",
        "actualOutput",
        "expectedOutput",
        "outputDiff",
        "exactMatch",
        "semanticScore",
        "lengthDiff",
        "tokenDiff",
        "isRegression",
        "regressionType",
        "promptVersion",
        "runDuration",
    ):
        assert key in first


def test_fail_on_regression(root: Path) -> None:
    for _ in range(2):
        invoke("cases", "run", "--case", "happy")
    config = (
        (root / "config.yml")
        .read_text()
        .replace('output: "positive"', 'output: "positive!!! positive!!!"')
    )
    (root / "config.yml").write_text(config)
    # Still passes (same words, same proportions: lexical 1.0) but the length regressed.
    plain = invoke("cases", "run", "--case", "happy", "--format", "json")
    doc = json.loads(plain.stdout)
    (execution,) = doc["executions"]
    assert execution["passed"] and execution["isRegression"]
    assert plain.exit_code == 0
    strict = invoke("cases", "run", "--case", "happy", "--fail-on-regression")
    assert strict.exit_code == 1
    assert "LENGTH_CHANGE" in strict.stdout


def test_bad_input_exit_2_and_provider_error_exit_3(
    make_project: MakeProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_project(CONFIG, {"s.prompt.yml": PROMPT.replace("template:", "templat:")})
    monkeypatch.chdir(root)
    bad = invoke("cases", "run", "s.prompt.yml", "--format", "json")
    assert bad.exit_code == 2
    assert "unknown key 'templat'" in bad.stderr
    assert json.loads(bad.stdout)["exitCode"] == 2
    (root / "s.prompt.yml").write_text(
        PROMPT + "  - {name: boom, input: {text: explode}, expected_output: x}\n"
    )
    broken = invoke("cases", "run", "s.prompt.yml", "--case", "boom")
    assert broken.exit_code == 3
    assert "backend down" in broken.stdout


def test_accept_latest_output_rewrites_the_file(root: Path) -> None:
    invoke("cases", "run", "--case", "meh")
    result = invoke("cases", "accept", "meh")
    assert result.exit_code == 0, result.stderr
    assert "set in s.prompt.yml" in result.stderr
    text = (root / "s.prompt.yml").read_text()
    assert '{name: meh, input: {text: "It is a thing"}, expected_output: neutral}' in text
    assert invoke("cases", "run", "--case", "meh").exit_code == 0


def test_accept_given_text_and_unknown_case(root: Path) -> None:
    assert invoke("cases", "accept", "meh", "--output", "neutral").exit_code == 0
    missing = invoke("cases", "accept", "mehh", "--output", "x")
    assert missing.exit_code == 2
    assert "no test case named 'mehh'; did you mean 'meh'?" in missing.stderr


def test_list_show_history_json(root: Path) -> None:
    invoke("cases", "run")
    invoke("cases", "run")
    listed = json.loads(invoke("cases", "list", "--json").stdout)["testCases"]
    assert {c["name"]: c["totalRuns"] for c in listed} == {"happy": 2, "sad": 2, "meh": 2}
    shown = json.loads(invoke("cases", "show", "meh", "--json").stdout)
    assert shown["stats"]["passRate"] == 0.0 and len(shown["stats"]["recentRuns"]) == 2
    assert shown["stats"]["trendData"][0]["totalRuns"] == 2
    pretty = invoke("cases", "show", "sentiment::happy")
    assert "pass rate 100.0%" in pretty.stdout and "pass rate by day" in pretty.stdout
    runs = json.loads(invoke("history", "--json").stdout)["runs"]
    assert len(runs) == 2 and all(r["status"] == "completed" and r["done"] == 3 for r in runs)


def test_db_option_and_env(root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    custom = tmp_path / "elsewhere" / "h.db"
    invoke("cases", "run", "--case", "happy", "--db", str(custom))
    assert custom.is_file() and not (root / ".oxy").exists()
    monkeypatch.setenv("OXY_DB", str(custom))
    runs = json.loads(invoke("history", "--json").stdout)["runs"]
    assert len(runs) == 1


def test_the_report_lists_failures_and_counts_the_passing_cases_past_a_screenful(
    make_project: MakeProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    from oxyeval.report.cases_pretty import SHOWN_PASSING

    many = SHOWN_PASSING + 5
    cases = "".join(
        f'  - {{name: ok{i}, input: {{text: "I love it {i}"}}, expected_output: positive}}\n'
        for i in range(many)
    )
    prompt = PROMPT.split("cases:\n")[0] + "cases:\n" + cases
    root = make_project(CONFIG, {"s.prompt.yml": prompt})
    monkeypatch.chdir(root)
    monkeypatch.delenv("OXY_DB", raising=False)
    calm = invoke("cases", "run")
    assert calm.exit_code == 0, calm.stderr
    assert calm.stdout.count("│ ok") == SHOWN_PASSING
    assert "… 5 more passed (not listed)" in calm.stdout
    assert "lexical = word overlap" not in calm.stdout  # nothing low to explain
    assert f"{many} case(s): {many} passed, 0 failed" in calm.stdout
    (root / "s.prompt.yml").write_text(prompt + PROMPT.split("cases:\n")[1], encoding="utf-8")
    quiet = invoke("cases", "run", "-q")
    assert quiet.exit_code == 1
    assert "│ meh" in quiet.stdout and "│ ok" not in quiet.stdout  # the failure only
    assert f"… {many + 2} more passed (not listed)" in quiet.stdout
    assert "expected: negative" not in quiet.stdout  # no diffs
    assert f"{many + 3} case(s): {many + 2} passed, 1 failed" in quiet.stdout


def test_an_interrupted_runs_summary_says_so(root: Path) -> None:
    import io

    from rich.console import Console

    from oxyeval.report.cases_pretty import render_case_run
    from oxyeval.suites.cases.run import run_cases

    run = run_cases([root / "s.prompt.yml"], cases=["happy"])
    run.interrupted, run.planned = True, 3
    out = io.StringIO()
    render_case_run(run, Console(file=out, width=200), quiet=True)
    assert "interrupted: 1 of 3 case(s) finished (2 not run): 1 passed, 0 failed" in out.getvalue()
