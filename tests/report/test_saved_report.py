"""`oxy report`: a saved `oxy test --format json` result gated again without a model call,
with the exit codes and messages of `oxy test` itself."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oxyeval import evaluation
from oxyeval.cli._app import app
from oxyeval.errors import ConfigError
from oxyeval.evaluation import Gates, decide_run
from oxyeval.report.json import to_json
from oxyeval.report.saved import load_saved_run, parse_saved_run
from oxyeval.suites.consistency import run_tests

from ..conftest import MakeProject

CONFIG = """\
models:
  - name: analyst
    vendor: mock
    outputs: ["Total: 42", "Total is 42", "Total: 99 (XYZ)"]
  - name: broken
    vendor: mock
    rules: [{match: ".", error: "backend down"}]
  - name: judge
    vendor: mock
    rules:
      - {match: "XYZ", output: "They differ.\\nAnswer: B"}
      - {match: ".", output: "Same.\\nAnswer: A"}
"""
# n=2: (1,2) A -> 1.0; n=3: (1,2) A, (1,3) B, (2,3) B -> 1/3
AGENT = """\
model: analyst
system_instructions: Be brief.
tests:
  - {type: consistency, name: two runs, n: 2, task_description: "total?", model_ref: judge}
  - {type: consistency, name: three runs, n: 3, concurrency: 1, task_description: "again?", model_ref: judge}
"""


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


@pytest.fixture
def root(make_project: MakeProject, monkeypatch: pytest.MonkeyPatch) -> Path:
    project = make_project(CONFIG, {"a.agent.yml": AGENT})
    monkeypatch.chdir(project)
    monkeypatch.delenv("OXY_DB", raising=False)
    return project


@pytest.fixture
def saved(root: Path) -> Path:
    result = invoke("test", "a.agent.yml", "--format", "json", "--no-history")
    assert result.exit_code == 0, result.stderr
    path = root / "results.json"
    path.write_text(result.stdout)
    return path


@pytest.mark.parametrize(
    ("gates", "code"),
    [
        (["--min-accuracy", "0.6"], 0),  # average (1 + 1/3) / 2 = 0.667
        (["--min-accuracy", "0.6", "--threshold-mode", "all"], 1),  # 1/3 < 0.6
        (["--min-accuracy", "0.9"], 1),
        (["--min-accuracy", "0.3", "--threshold-mode", "all"], 0),
    ],
)
def test_regating_gives_the_exit_code_and_messages_of_oxy_test(
    saved: Path, gates: list[str], code: int
) -> None:
    live = invoke("test", "a.agent.yml", "--no-history", *gates)
    again = invoke("report", str(saved), *gates)
    assert live.exit_code == again.exit_code == code
    assert again.stderr == live.stderr  # the same reasons, word for word
    first_line = live.stdout.splitlines()[0]
    assert again.stdout.splitlines()[0] == first_line  # the same headline
    as_json = invoke("report", str(saved), *gates, "--format", "json")
    live_json = json.loads(
        invoke("test", "a.agent.yml", "--no-history", *gates, "--format", "json").stdout
    )
    doc = json.loads(as_json.stdout)
    assert as_json.exit_code == code and doc["summary"]["exitCode"] == code
    assert doc["decision"] == live_json["decision"]
    assert doc["accuracy"] == live_json["accuracy"]


def test_a_saved_result_with_unscored_tests_or_run_errors(root: Path) -> None:
    agent = AGENT + (
        '  - {type: consistency, name: down, n: 2, task_description: "x", model_ref: judge}\n'
    )
    (root / "b.agent.yml").write_text(agent.replace("model: analyst", "model: broken"))
    result = invoke("test", "b.agent.yml", "--format", "json", "--no-history")
    assert result.exit_code == 3
    path = root / "down.json"
    path.write_text(result.stdout)
    again = invoke("report", str(path), "--min-accuracy", "0.1")
    assert again.exit_code == 3  # not scored stays not scored, whatever the threshold
    assert "not scored: down: only 0 of 2 runs succeeded" in again.stderr
    assert "backend down" in again.stderr


def test_strict_and_fail_on_drop_on_a_saved_result(saved: Path) -> None:
    doc = json.loads(saved.read_text())
    doc["tests"][0]["outputs"][0]["error"] = "HTTP 500"  # one failed run, still scored
    doc["results"][0]["runErrors"] = 1  # what the decision reads
    previous = {"accuracy": 0.9, "at": "2026-11-20T10:00:00.000Z", "runId": "r1"}
    doc["tests"][1]["previous"] = doc["results"][1]["previous"] = previous
    saved.write_text(json.dumps(doc))
    assert invoke("report", str(saved)).exit_code == 0
    strict = invoke("report", str(saved), "--strict")
    assert strict.exit_code == 3 and "strict: 1 run error(s)" in strict.stderr
    dropped = invoke("report", str(saved), "--fail-on-drop", "10")
    assert dropped.exit_code == 1
    assert "three runs: 90.0% -> 33.3% (-56.7 pts vs 2026-11-20 10:00 UTC)" in dropped.stderr
    assert "(−56.7 pts vs 2026-11-20 10:00 UTC)" in dropped.stdout
    assert invoke("report", str(saved), "--fail-on-drop", "60").exit_code == 0


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "bad.json:1:2: not valid JSON"),
        ("[\n" + "9" * 5000 + "]", "bad.json:2: an integer of 5000 digits is out of range"),
        ('{"tests": [],\n"x": NaN}', "bad.json:2: NaN is not a number JSON allows"),
        ("[" * 100_000, "bad.json:1: nested more than 100 levels deep"),
        ("[1, 2]", "the top level is list, not an object"),
        ('{"executions": [{"status": "passed"}]}', "executions[0].testCaseId: expected"),
        ('{"accuracy": 1.0}', "no 'tests' key"),
        ('{"tests": [{"accuracy": 1}], "summary": {}}', "tests[0].name: expected the test's name"),
        (
            '{"tests": [{"name": "t", "accuracy": 7}], "summary": {}}',
            "tests[0].accuracy: expected a number between 0 and 1",
        ),
        (
            '{"tests": [{"name": "t", "status": "won"}], "summary": {}}',
            "tests[0].status: expected scored, error or interrupted",
        ),
    ],
)
def test_a_file_that_is_not_a_saved_result_is_bad_input(
    root: Path, content: str, message: str
) -> None:
    path = root / "bad.json"
    path.write_text(content)
    result = invoke("report", str(path), "--min-accuracy", "0.5")
    assert result.exit_code == 2 and message in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
    as_json = invoke("report", str(path), "--format", "json")
    assert as_json.exit_code == 2 and json.loads(as_json.stdout)["exitCode"] == 2


def test_missing_file_folder_and_bad_options(root: Path, saved: Path) -> None:
    missing = invoke("report", "nope.json")
    assert missing.exit_code == 2 and "nope.json: file not found" in missing.stderr
    folder = invoke("report", str(root))
    assert folder.exit_code == 2 and "is a folder" in folder.stderr
    bad = invoke("report", str(saved), "--min-accuracy", "80")
    assert bad.exit_code == 2 and "between 0 and 1" in bad.stderr


def test_a_saved_run_that_failed_before_any_test_keeps_its_exit_code(root: Path) -> None:
    result = invoke("test", "missing.agent.yml", "--format", "json")
    assert result.exit_code == 2
    path = root / "failed.json"
    path.write_text(result.stdout)
    again = invoke("report", str(path), "--min-accuracy", "0.5")
    assert again.exit_code == 2 and "ended before any result finished" in again.stderr


def test_the_library_round_trip(root: Path) -> None:
    run = run_tests([root / "a.agent.yml"], history=False)
    back = parse_saved_run(to_json(run), "doc").run
    assert [(t.name, t.accuracy, t.ok) for t in back.tests] == [
        (t.name, round(t.accuracy or 0, 6), t.ok) for t in run.tests
    ]
    assert back.tests[1].failing and len(back.tests[1].failing) == len(run.tests[1].failing)
    for mode in ("average", "all"):
        live = evaluation.check_threshold(run.as_results(), 0.5, mode)
        again = evaluation.check_threshold(back.as_results(), 0.5, mode)
        assert live is not None and again is not None
        assert (again.passed, again.message) == (live.passed, live.message)
        gates = Gates(min_accuracy=0.5, threshold_mode=mode)
        assert decide_run(back, gates).code == decide_run(run, gates).code
    with pytest.raises(ConfigError, match="file not found"):
        load_saved_run(root / "nope.json")
