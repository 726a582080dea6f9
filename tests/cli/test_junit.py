"""``--junit FILE`` on ``oxy test`` and ``oxy cases run``: the file validates against the
Ant/Jenkins schema, says what the exit code says, and never changes the exit code."""

from __future__ import annotations

import json
import signal
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oxyeval.cli._app import app

from ..conftest import MakeProject
from ..fakes import FakeServer
from ..suites.test_cases_run import CONFIG as CASES_CONFIG
from ..suites.test_cases_run import PROMPT
from .test_cli import AGENT, CONFIG
from .test_interrupts import CONFIG as SLOW_CONFIG
from .test_interrupts import answer_first, signal_when, start

XSD = Path(__file__).resolve().parents[1] / "report" / "JUnit.xsd"


@pytest.fixture(scope="module")
def schema():
    import xmlschema

    return xmlschema.XMLSchema(str(XSD))


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


def read(schema, path: Path) -> ET.Element:
    text = path.read_text("utf-8")
    schema.validate(text)
    return ET.fromstring(text)


def outcomes(root: ET.Element) -> dict[str, str | None]:
    found = {}
    for case in root.iter("testcase"):
        child = next((c for c in case if c.tag in ("error", "failure", "skipped")), None)
        found[case.get("name")] = None if child is None else child.tag
    return found


@pytest.mark.parametrize(
    ("flags", "code"),
    [([], 0), (["--min-accuracy", "0.9", "--threshold-mode", "all"], 1)],
    ids=["pass", "below"],
)
def test_oxy_test_exit_code_is_the_same_with_junit(
    make_project: MakeProject, schema, flags: list[str], code: int
) -> None:
    agent = make_project(CONFIG, {"a.agent.yml": AGENT}) / "a.agent.yml"
    plain = invoke("test", str(agent), "--format", "json", *flags)
    report = agent.parent / "reports" / "junit.xml"  # its folder is created
    with_junit = invoke("test", str(agent), "--format", "json", *flags, "--junit", str(report))
    assert plain.exit_code == with_junit.exit_code == code, with_junit.output
    doc = json.loads(with_junit.stdout)  # stdout stays one JSON document
    assert doc["summary"]["exitCode"] == code
    root = read(schema, report)
    expected = {"two runs": None, "three runs": "failure" if code else None}
    assert outcomes(root) == expected
    values = {p.get("name"): p.get("value") for p in root.iter("property")}
    assert values["three runs.accuracy"] == f"{doc['tests'][1]['accuracy']:.6g}"
    assert values["oxy.exit_code"] == str(code)


def test_oxy_test_bad_input_still_writes_a_report(make_project: MakeProject, schema) -> None:
    root = make_project(CONFIG, {"a.agent.yml": "model: nope\nsystem_instructions: hi\n"})
    report = root / "junit.xml"
    result = invoke("test", str(root / "a.agent.yml"), "--junit", str(report))
    assert result.exit_code == 2
    xml = read(schema, report)
    case = xml.find("testsuite/testcase")
    assert case.get("name") == "oxy test"
    message = case.find("error").get("message")
    assert "unknown model 'nope'" in message
    assert message.startswith(f"{root / 'a.agent.yml'}:1:8: model: ")  # file:line: key
    assert "error(s) in" not in message and not message.startswith("error:")


def test_junit_path_that_is_a_folder_is_bad_input_before_any_call(
    make_project: MakeProject,
) -> None:
    agent = make_project(CONFIG, {"a.agent.yml": AGENT}) / "a.agent.yml"
    result = invoke("test", str(agent), "--format", "json", "--junit", str(agent.parent))
    assert result.exit_code == 2
    doc = json.loads(result.stdout)
    assert "is a folder" in doc["error"] and doc["document"] == "error"
    assert "--junit" in result.stderr
    nested = invoke("cases", "run", "--junit", str(agent / "x.xml"), "--project", str(agent.parent))
    assert nested.exit_code == 2 and "is a file, not a folder" in nested.stderr
    assert agent.read_text("utf-8") == AGENT  # nothing was written over it


def test_oxy_cases_run_exit_code_is_the_same_with_junit(
    make_project: MakeProject, schema, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_project(CASES_CONFIG, {"s.prompt.yml": PROMPT})
    monkeypatch.chdir(root)
    plain = invoke("cases", "run", "--fail-on-regression", "--format", "json")
    report = root / "cases.xml"
    with_junit = invoke("cases", "run", "--fail-on-regression", "--junit", str(report))
    assert plain.exit_code == with_junit.exit_code == 1, with_junit.output
    xml = read(schema, report)
    assert outcomes(xml) == {"happy": None, "sad": None, "meh": "failure"}
    assert xml.find("testsuite").get("name") == "sentiment v1"


def test_oxy_cases_run_with_no_cases_writes_an_error_report(
    make_project: MakeProject, schema
) -> None:
    root = make_project(CASES_CONFIG, {})
    report = root / "cases.xml"
    result = invoke("cases", "run", "--project", str(root), "--junit", str(report))
    assert result.exit_code == 2
    xml = read(schema, report)
    assert outcomes(xml) == {"oxy cases run": "error"}


def test_interrupted_oxy_test_report(make_project: MakeProject, schema) -> None:
    """A real SIGTERM: the finished test passes, the one cut short is an error, exit 3."""
    fast = """\
    model: fast
    system_instructions: Be brief.
    tests:
      - {type: consistency, name: quick, n: 2, task_description: q, model_ref: judge}
    """
    slow = """\
    model: slow
    system_instructions: Be brief.
    tests:
      - {type: consistency, name: slow one, n: 3, concurrency: 1, task_description: q, model_ref: judge}
    """
    with FakeServer(answer_first(2), latency=0.2) as server:
        root = make_project(
            SLOW_CONFIG.format(url=server.url), {"a.agent.yml": fast, "b.agent.yml": slow}
        )
        args = ["test", "a.agent.yml", "b.agent.yml", "-q", "--junit", "out/junit.xml"]
        proc = start(args, root)
        code, _out, err = signal_when(proc, lambda: len(server.requests) >= 3, signal.SIGTERM)
    assert code == 3, err
    xml = read(schema, root / "out" / "junit.xml")
    assert outcomes(xml) == {"quick": None, "slow one": "error"}
    error = next(c for c in xml.iter("testcase") if c.get("name") == "slow one").find("error")
    assert error.get("type") == "Interrupted" and "2 of 3 run(s) finished" in error.get("message")
