"""``oxy report`` on a saved run of every kind: with no gate options the exit code is the
run's own (its document's gates), gate options replace them, the JSON answer is the same
document with its decision updated; documents of the earlier, unversioned shapes are
read too, and a malformed one is bad input said at its key."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from oxyeval.cli._app import app
from oxyeval.report import output_validator
from oxyeval.report.documents import SCHEMA_VERSION

RUNS = [
    "test",
    "test-gated",
    "test-files",
    "cases-run",
    "ab-run",
    "chattest",
    "run-workflow",
    "run-question",
]


def report(path: Path, *args: str) -> Any:
    return CliRunner().invoke(app, ["report", str(path), *args])


def save(tmp_path: Path, doc: dict[str, Any], name: str = "saved.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize("name", RUNS)
def test_a_saved_run_of_any_kind_keeps_its_exit_code_and_document(
    outputs: dict[str, Any], tmp_path: Path, name: str
) -> None:
    code, doc = outputs[name]
    path = save(tmp_path, doc)
    again = report(path, "--format", "json")
    assert again.exit_code == code, again.stderr
    assert json.loads(again.stdout) == doc  # the same decision on the same results
    assert report(path).exit_code == code  # pretty: the same verdict


def test_the_gated_run_keeps_its_gates_and_options_replace_them(
    outputs: dict[str, Any], tmp_path: Path
) -> None:
    code, doc = outputs["test-gated"]
    assert code == 1 and doc["decision"]["headline"] == "below"
    path = save(tmp_path, doc)
    assert report(path).exit_code == 1
    looser = report(path, "--min-accuracy", "0.2", "--format", "json")
    answer = json.loads(looser.stdout)
    assert looser.exit_code == 0 and answer["decision"]["gates"]["failOnDrop"] is None
    assert answer["summary"]["exitCode"] == answer["decision"]["exitCode"] == 0
    assert not output_validator("run").is_valid(doc | {"kind": "nope"})
    assert output_validator("run").is_valid(answer)


def test_a_cases_run_regated_with_its_own_failures_and_regressions(
    outputs: dict[str, Any], tmp_path: Path
) -> None:
    code, doc = outputs["cases-run"]
    assert code == 1
    doc = json.loads(json.dumps(doc))
    good, bad = doc["results"]
    bad.update(status="passed", passed=True, score=1.0)  # the failure fixed by hand
    assert report(save(tmp_path, doc)).exit_code == 0
    good["regressions"] = ["score fell from 1.0 to 0.9"]
    path = save(tmp_path, doc)
    assert report(path).exit_code == 0  # a regression reported, not gated
    regressed = report(path, "--fail-on-regression")
    assert regressed.exit_code == 1 and "regression: p::good" in regressed.stderr
    pretty = report(path, "--fail-on-regression").stdout
    assert "cases run: 2 result(s), failed (exit 1)" in pretty and "p::good" in pretty


def test_an_interrupted_run_and_an_unread_history_leave_the_outcome_unknown(
    outputs: dict[str, Any], tmp_path: Path
) -> None:
    _code, doc = outputs["chattest"]
    cut = json.loads(json.dumps(doc))
    cut["summary"]["interrupted"] = True
    assert report(save(tmp_path, cut)).exit_code == 3
    _code, doc = outputs["test"]
    unread = json.loads(json.dumps(doc))
    unread["history"][0]["readError"] = "database is locked"
    path = save(tmp_path, unread)
    assert report(path).exit_code == 0  # no drop check: nothing needs the history
    dropped = report(path, "--fail-on-drop", "5")
    assert dropped.exit_code == 3 and "database is locked" in dropped.stderr


def test_what_stopped_a_run_after_some_results_keeps_deciding(
    outputs: dict[str, Any], tmp_path: Path
) -> None:
    _code, doc = outputs["ab-run"]
    stopped = json.loads(json.dumps(doc))
    stopped["error"] = "provider down"
    path = save(tmp_path, stopped)
    again = report(path, "--format", "json")
    assert again.exit_code == 3 and "provider down" in again.stderr
    assert json.loads(again.stdout)["error"] == "provider down"


# -- the earlier, unversioned shapes ----------------------------------------------------

OLD_CASES = {
    "executions": [
        {
            "id": "e1",
            "testCaseId": "p::a",
            "status": "passed",
            "passed": True,
            "score": 1.0,
            "threshold": 0.8,
        },
        {
            "id": "e2",
            "testCaseId": "p::b",
            "status": "failed",
            "passed": False,
            "score": 0.2,
            "threshold": 0.8,
        },
    ],
    "summary": {"cases": 2, "interrupted": False, "db": "x.db", "exit_code": 1},
}
OLD_AB = {
    "results": [
        {
            "testCaseId": "p::a",
            "caseName": "a",
            "winner": None,
            "branches": [
                {"branchId": "p::a@one", "runs": 1, "errors": 0, "qualityScore": 1.0},
                {
                    "branchId": "p::a@two",
                    "runs": 1,
                    "errors": 1,
                    "execution": {"error": "HTTP 500"},
                },
            ],
        }
    ],
    "criteria": "best_quality",
    "iterations": 1,
    "warnings": [],
    "interrupted": False,
    "exitCode": 3,
}
OLD_CHATTEST = {
    "prompts": [
        {
            "key": "c",
            "results": [
                {"test": "greets", "model": "m", "passes": 1, "runs": 2, "passRate": 0.5,
                 "passed": False, "threshold": 0.8, "judgeErrors": 0, "runErrors": 0},
            ],
            "outputs": {"m": ["hi", "go away"]},
        }
    ],
    "warnings": [],
    "summary": {"tests": 1, "interrupted": False, "exitCode": 1},
}  # fmt: skip
OLD_TEST_FILES = {
    "cases": [
        {"file": "a.agent.test.yml", "name": "says", "passes": 1, "runs": 2, "passRate": 0.5,
         "passed": False, "threshold": 1.0, "verdict": "FLKY", "runsDetail": []},
    ],
    "overall": {"score": 0.5, "consistency": 1.0, "answerRate": 1.0, "tokens": 9, "durationS": 0.1},
    "warnings": [],
    "summary": {"interrupted": False, "exitCode": 1},
    "threshold": 0.9,
}  # fmt: skip


@pytest.mark.parametrize(
    ("doc", "code", "line"),
    [
        (OLD_CASES, 1, "failed: p::b: score 0.200 below its threshold 0.8"),
        (OLD_AB, 3, "error: case p::a · branch p::a@two: HTTP 500"),
        (OLD_CHATTEST, 1, "failed: c on m: greets: pass rate 50% (needs 80%)"),
        (OLD_TEST_FILES, 1, "Average pass rate 50.00% below threshold 90.00%"),
        (
            {"error": "x.agent.yml: file not found", "exit_code": 2},
            2,
            "x.agent.yml: file not found",
        ),
    ],
)
def test_a_document_of_an_earlier_shape_keeps_its_exit_code(
    tmp_path: Path, doc: dict[str, Any], code: int, line: str
) -> None:
    path = save(tmp_path, doc)
    again = report(path)
    assert again.exit_code == code and line in again.stderr, again.stderr
    as_json = json.loads(report(path, "--format", "json").stdout)
    if "error" in doc:
        assert as_json["document"] == "error" and as_json["exitCode"] == code
    else:
        assert output_validator("run").is_valid(as_json), as_json
        assert as_json["schemaVersion"] == SCHEMA_VERSION and as_json["summary"]["exitCode"] == code


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d["results"][1].update(score="high"), "results[1].score: expected a number"),
        (lambda d: d["results"][0].update(score=7), "results[0].score: expected a number between 0 and 1"),
        (lambda d: d["results"][0].pop("subject"), "results[0].subject: expected what the result is of"),
        (lambda d: d["results"][0].update(status="won"), "results[0].status: expected one of passed"),
        (lambda d: d["summary"].update(interrupted="no"), "summary.interrupted: expected true or false"),
        (lambda d: d["decision"]["gates"].update(thresholdMode="most"), "decision.gates.thresholdMode: expected average or all"),
        (lambda d: d.update(kind="nope"), "kind: expected one of consistency"),
        (lambda d: d.update(schemaVersion=99), f"schemaVersion: expected a version up to {SCHEMA_VERSION}"),
        (lambda d: d.update(document="history"), "a 'history' document; oxy report decides again on run"),
    ],
)  # fmt: skip
def test_a_malformed_document_is_bad_input_at_its_key(
    outputs: dict[str, Any], tmp_path: Path, change: Any, message: str
) -> None:
    doc = json.loads(json.dumps(outputs["cases-run"][1]))
    change(doc)
    path = save(tmp_path, doc)
    again = report(path)
    assert again.exit_code == 2 and message in again.stderr, again.stderr
    assert "Traceback" not in again.stderr
    as_json = report(path, "--format", "json")
    assert as_json.exit_code == 2 and json.loads(as_json.stdout)["document"] == "error"


def test_a_fresh_process_knows_every_kind_it_reads(tmp_path: Path) -> None:
    """``oxy report`` runs nothing: the kinds of the results it reads register
    themselves (here in a process of its own, where no test imported them first)."""
    for name, doc in (("cases.json", OLD_CASES), ("chattest.json", OLD_CHATTEST)):
        path = save(tmp_path, doc, name)
        done = subprocess.run(
            [sys.executable, "-m", "oxyeval", "report", str(path)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 1, done.stderr
        assert "internal error" not in done.stderr


def test_a_saved_run_s_junit_names_each_test_as_the_run_s_own_did(
    outputs: dict[str, Any], documents_root: Path, tmp_path: Path
) -> None:
    """A CI system that reads a run's report and ``oxy report``'s (a shard's and the
    merged one) counts each test once: same suite, package, classname and name."""
    from xml.etree import ElementTree

    from .shared_project import JUNIT

    def tests(path: Path) -> list[tuple[str | None, ...]]:
        root = ElementTree.parse(path).getroot()
        return sorted(
            (s.get("name"), s.get("package"), c.get("classname"), c.get("name"))
            for s in root.iter("testsuite")
            for c in s.iter("testcase")
        )

    for name in JUNIT:
        code, doc = outputs[name]
        again = report(save(tmp_path, doc), "--junit", str(tmp_path / f"{name}.xml"))
        assert again.exit_code == code, again.stderr
        own = tests(documents_root / f"{name}.junit.xml")
        assert own and tests(tmp_path / f"{name}.xml") == own, name
