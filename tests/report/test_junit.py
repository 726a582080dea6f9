"""JUnit XML (``--junit``): valid against the Ant/Jenkins schema, and saying what the exit
code says, whatever the results hold (failures, errors, interruptions, control characters,
secrets)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from datetime import datetime
from pathlib import Path

import pytest

from oxyeval.evaluation import Decision, Outcome, decide_run
from oxyeval.redact import register_secret
from oxyeval.report.junit import cases_junit, consistency_junit, xml_text
from oxyeval.report.verdict import Gates, decide
from oxyeval.suites.cases.run import CaseResult, CaseRun
from oxyeval.suites.consistency.results import ConsistencyRun, ConsistencyTestResult, OutputRecord

XSD = Path(__file__).with_name("JUnit.xsd")  # windyroad/JUnit-Schema, vendored
WHEN = datetime(2026, 11, 20, 9, 30, 5)


@pytest.fixture(scope="module")
def schema():
    import xmlschema

    return xmlschema.XMLSchema(str(XSD))


def check(schema, text: str) -> ET.Element:
    """Validate against the XSD, and check the counts the schema cannot."""
    schema.validate(text)
    root = ET.fromstring(text)
    for suite in root.iter("testsuite"):
        cases = suite.findall("testcase")
        assert int(suite.get("tests")) == len(cases)
        assert int(suite.get("failures")) == sum(1 for c in cases if c.find("failure") is not None)
        assert int(suite.get("errors")) == sum(1 for c in cases if c.find("error") is not None)
        assert int(suite.get("skipped")) == sum(1 for c in cases if c.find("skipped") is not None)
    assert root.attrib == {}  # the common schema allows no totals on <testsuites>
    return root


def outcome(root: ET.Element, name: str) -> tuple[str | None, ET.Element | None]:
    case = next(c for c in root.iter("testcase") if c.get("name") == name)
    for tag in ("error", "failure", "skipped"):
        found = case.find(tag)
        if found is not None:
            return tag, found
    return None, None


def props(root: ET.Element) -> dict[str, str]:
    return {p.get("name"): p.get("value") for p in root.iter("property")}


def result(
    name: str, accuracy: float | None, file: str = "agents/a.agent.yml", **kw
) -> ConsistencyTestResult:
    kw.setdefault("error", None if accuracy is not None else "no valid verdicts")
    return ConsistencyTestResult(
        name=name,
        file=file,
        index=0,
        task_description="q",
        n=3,
        pairing="all",
        agent_model="m",
        judge_model="j",
        scores={"A": 1.0, "B": 0.0},
        accuracy=accuracy,
        duration=1.25,
        **kw,
    )


def test_the_schema_rejects_what_ant_does_not_allow(schema) -> None:
    """The XSD is a real check: a testcase with two outcomes, properties inside a testcase
    and a timestamp with a time zone are all invalid."""
    good = consistency_junit(ConsistencyRun(tests=[result("t", 1.0)]), timestamp=WHEN, hostname="h")
    schema.validate(good)
    two = good.replace(
        'time="1.250" />', 'time="1.250"><failure type="x"/><error type="y"/></testcase>'
    )
    inner = good.replace('time="1.250" />', 'time="1.250"><properties/></testcase>')
    zone = good.replace('timestamp="2026-11-20T09:30:05"', 'timestamp="2026-11-20T09:30:05Z"')
    untyped = good.replace('time="1.250" />', 'time="1.250"><failure message="m"/></testcase>')
    totals = good.replace("<testsuites>", '<testsuites tests="1" failures="0" errors="0">')
    for bad in (two, inner, zone, untyped, totals):
        assert bad != good
        assert not schema.is_valid(bad)


def test_consistency_run_with_every_outcome(schema) -> None:
    run = ConsistencyRun(
        tests=[
            result("passes", 0.95),
            result("below", 0.5),
            result("unscored", None),
            result("other file", 0.9, file="workflows/w.workflow.yml"),
        ]
    )
    decision = decide(run, Gates(min_accuracy=0.8, threshold_mode="all"))
    assert decision.code == 3  # the unscored test
    root = check(schema, consistency_junit(run, decision, timestamp=WHEN, hostname="ci"))
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == ["agents/a.agent.yml", "workflows/w.workflow.yml"]
    assert suites[0].get("timestamp") == "2026-11-20T09:30:05" and suites[0].get("hostname") == "ci"
    assert outcome(root, "passes") == (None, None)
    kind, below = outcome(root, "below")
    assert kind == "failure" and below.get("type") == "BelowThreshold"
    assert below.get("message") == "accuracy 50.00% below threshold 80.00%"
    kind, unscored = outcome(root, "unscored")
    assert kind == "error" and unscored.get("type") == "NotScored"
    assert unscored.get("message") == "no valid verdicts"
    case = next(c for c in root.iter("testcase") if c.get("name") == "other file")
    assert case.get("classname") == "workflows.w_workflow" and case.get("time") == "1.250"
    values = props(root)
    assert values["below.accuracy"] == "0.5" and values["passes.accuracy"] == "0.95"
    assert values["unscored.status"] == "error" and values["unscored.accuracy"] == ""
    assert values["oxy.exit_code"] == "3" and values["oxy.threshold.mode"] == "all"


def test_average_mode_fails_the_tests_below_only_when_the_average_fails(schema) -> None:
    run = ConsistencyRun(tests=[result("high", 1.0), result("low", 0.7)])
    passed = decide(run, Gates(min_accuracy=0.8))  # mean 0.85: the run passes
    root = check(schema, consistency_junit(run, passed, timestamp=WHEN, hostname="h"))
    assert outcome(root, "low") == (None, None)
    failed = decide(run, Gates(min_accuracy=0.9))  # mean 0.85: the run fails
    root = check(schema, consistency_junit(run, failed, timestamp=WHEN, hostname="h"))
    kind, element = outcome(root, "low")
    assert kind == "failure" and "Average accuracy 85.00% below threshold" in element.get("message")
    assert outcome(root, "high") == (None, None)


def test_strict_makes_run_and_judge_errors_failures(schema) -> None:
    judged = result(
        "flaky judge",
        1.0,
        comparisons=[
            {"runs": [1, 2], "weight": 1, "verdict": None, "score": 0.0, "error": "judge down"}
        ],
    )
    run = ConsistencyRun(tests=[judged])
    lenient = check(schema, consistency_junit(run, timestamp=WHEN, hostname="h"))
    assert outcome(lenient, "flaky judge") == (None, None)
    assert props(lenient)["flaky judge.judge_errors"] == "1"
    decision = decide(run, Gates(strict=True))
    strict = check(schema, consistency_junit(run, decision, timestamp=WHEN, hostname="h"))
    kind, element = outcome(strict, "flaky judge")
    assert kind == "failure" and element.get("type") == "JudgeErrors"
    assert "judge down" in strict.find("testsuite/system-err").text


def test_caller_reasons_are_failures_and_every_reason_is_in_the_text(schema) -> None:
    run = ConsistencyRun(tests=[result("dropped", 0.5)])
    gated = decide(run, Gates(min_accuracy=0.8, threshold_mode="all"))
    (found,) = gated.outcomes
    dropped = Outcome(
        found.subject,
        "failed",
        dropped="accuracy fell 30.0 pts against the previous run",
        below=found.below,
    )
    decision = Decision(code=1, threshold=gated.threshold, outcomes=(dropped,))
    root = check(schema, consistency_junit(run, decision, timestamp=WHEN, hostname="h"))
    kind, element = outcome(root, "dropped")
    assert kind == "failure" and element.get("type") == "BelowThreshold"
    assert "accuracy fell 30.0 pts" in element.text and "below threshold" in element.text


def test_interrupted_runs(schema) -> None:
    cut = result("cut short", 0.5, error="interrupted: 2 of 3 run(s) finished", interrupted=True)
    run = ConsistencyRun(tests=[result("finished", 1.0), cut], interrupted=True)
    decision = decide(run, Gates())
    assert decision.code == 3
    root = check(schema, consistency_junit(run, decision, timestamp=WHEN, hostname="h"))
    kind, element = outcome(root, "cut short")
    assert kind == "error" and element.get("type") == "Interrupted"
    assert outcome(root, "finished") == (None, None)
    assert props(root)["oxy.interrupted"] == "true"
    # Stopped between tests (or before any finished): the interruption is a testcase itself.
    between = check(
        schema, consistency_junit(ConsistencyRun(interrupted=True), timestamp=WHEN, hostname="h")
    )
    kind, element = outcome(between, "interrupted")
    assert kind == "error" and element.get("type") == "Interrupted"


def test_a_run_that_failed_before_any_test_still_gets_a_report(schema) -> None:
    root = check(
        schema,
        consistency_junit(
            ConsistencyRun(),
            Decision(code=2),
            error="a.agent.yml:3: unknown model 'gpt'",
            timestamp=WHEN,
            hostname="h",
        ),
    )
    kind, element = outcome(root, "oxy test")
    assert kind == "error" and element.get("message") == "a.agent.yml:3: unknown model 'gpt'"
    # No tests and nothing wrong: an empty suite, still valid.
    empty = check(schema, consistency_junit(ConsistencyRun(), timestamp=WHEN, hostname="h"))
    assert [s.get("tests") for s in empty.iter("testsuite")] == ["0"]


CONTROL = "ansi \x1b[31mred\x1b[0m nul \x00 bell \x07 vt \x0b ff \x0c \ufffe end"


def test_control_characters_unicode_and_markup_survive_as_valid_xml(schema) -> None:
    text = f"Ünïcødé ✓ 日本語 😀 <b>&amp;</b> \"quoted\" 'single' {CONTROL}"
    outputs = [
        OutputRecord(run=1, text=text, consistency=1.0),
        OutputRecord(run=2, text=None, error=f"boom {CONTROL}"),
    ]
    run = ConsistencyRun(
        tests=[result(f"name {CONTROL} ✓ <&>", 0.9, outputs=outputs, selected=1)],
        warnings=[f"warning {CONTROL}"],
    )
    xml = consistency_junit(run, timestamp=WHEN, hostname="h")
    root = check(schema, xml)
    case = root.find("testsuite/testcase")
    escaped = "ansi \\x1b[31mred\\x1b[0m nul \\x00 bell \\x07 vt \\x0b ff \\x0c \\ufffe end"
    assert case.get("name") == f"name {escaped} ✓ <&>"
    out = root.find("testsuite/system-out").text
    assert 'Ünïcødé ✓ 日本語 😀 <b>&amp;</b> "quoted"' in out and "\\x1b[31mred" in out
    assert "\x1b" not in xml and "\x00" not in xml and "\ufffe" not in xml
    assert "boom ansi" in root.find("testsuite/system-err").text


def test_secrets_never_reach_the_file(schema) -> None:
    key = "sk-junit-secret-0123456789"
    register_secret(key)
    outputs = [OutputRecord(run=1, text=f"the key is {key}", consistency=1.0)]
    tests = [
        result(f"echo {key}", 0.9, outputs=outputs, selected=1),
        result("broken", None, error=f"401 for key {key}"),
    ]
    run = ConsistencyRun(tests=tests, warnings=[f"warn {key}"])
    xml = consistency_junit(run, error=f"stopped {key}", timestamp=WHEN, hostname="h")
    check(schema, xml)
    assert key not in xml and "***" in xml
    cases = CaseRun(
        db="postgresql://u@h/db",
        results=[case_result("c", actual=key, expected=key, passed=True, score=1.0)],
    )
    xml = cases_junit(cases, timestamp=WHEN, hostname="h")
    check(schema, xml)
    assert key not in xml


def test_xml_text_escapes_every_invalid_character() -> None:
    # A carriage return is legal XML but rewrites a terminal line: shown everywhere.
    assert xml_text("a\x00b\x1fc\td\ne\rf") == "a\\x00b\\x1fc\td\ne\\x0df"
    assert xml_text("\ud800") == "\\ud800"


def case_result(name: str, **kw) -> CaseResult:
    actual = kw.pop("actual", "out")
    expected = kw.pop("expected", "exp")
    return CaseResult(
        case_id=f"p::{name}",
        name=name,
        prompt_id=kw.pop("prompt_id", "p"),
        prompt_version=2,
        actual_output=actual,
        expected_output=expected,
        run_duration_ms=kw.pop("ms", 250.0),
        **kw,
    )


def case_run(**kw) -> CaseRun:
    results = [
        case_result("ok", passed=True, score=1.0, exact_match=True),
        case_result("low", passed=False, score=0.25),
        case_result("broke", actual=None, error="provider error: 503 after 4 retries"),
        case_result("new", expected=None, pending=True),
        case_result(
            "slower",
            passed=True,
            score=0.9,
            is_regression=True,
            regression_types=["length"],
            regression_reasons=["output 3x longer than recent runs"],
        ),
        case_result("other", prompt_id="q", passed=True, score=1.0),
    ]
    return CaseRun(db=Path("/tmp/h.db"), results=results, planned=len(results), **kw)


def test_case_run_with_every_outcome(schema) -> None:
    run = case_run()
    root = check(schema, cases_junit(run, decide_run(run), timestamp=WHEN, hostname="h"))
    assert [s.get("name") for s in root.findall("testsuite")] == ["p v2", "q v2"]
    assert outcome(root, "ok") == (None, None)
    kind, low = outcome(root, "low")
    assert kind == "failure" and low.get("message") == "score 0.250 below its threshold 0.8"
    assert "expected: exp" in low.text and "actual:   out" in low.text
    kind, broke = outcome(root, "broke")
    assert kind == "error" and broke.get("type") == "CaseError" and "503" in broke.get("message")
    assert outcome(root, "new")[0] == "skipped"
    assert outcome(root, "slower") == (None, None)  # a regression fails only with the flag
    values = props(root)
    assert values["slower.regression"] == "true" and values["low.score"] == "0.25"
    assert values["oxy.exit_code"] == "3"
    case = next(c for c in root.iter("testcase") if c.get("name") == "ok")
    assert case.get("time") == "0.250" and case.get("classname") == "p"


def test_fail_on_regression_makes_a_regression_a_failure(schema) -> None:
    run = case_run()
    decision = decide_run(run, Gates(fail_on_regression=True))
    root = check(schema, cases_junit(run, decision, timestamp=WHEN, hostname="h"))
    kind, element = outcome(root, "slower")
    assert kind == "failure" and element.get("type") == "Regression"
    assert "output 3x longer" in element.get("message")


def test_interrupted_or_failed_case_runs(schema) -> None:
    run = case_run(interrupted=True)
    run.planned = 9
    root = check(schema, cases_junit(run, decide_run(run), timestamp=WHEN, hostname="h"))
    kind, element = outcome(root, "interrupted")
    assert kind == "error" and element.get("message") == (
        "interrupted: 6 of 9 case(s) finished, 3 never ran"
    )
    nothing = CaseRun(db=Path("."))
    root = check(
        schema,
        cases_junit(
            nothing, Decision(code=2), error="no *.prompt.yml files", timestamp=WHEN, hostname="h"
        ),
    )
    kind, element = outcome(root, "oxy cases run")
    assert kind == "error" and element.get("message") == "no *.prompt.yml files"


def test_case_outputs_with_control_characters(schema) -> None:
    run = CaseRun(
        db=Path("."),
        results=[
            case_result(
                f"c {CONTROL}", actual=f"out {CONTROL}", expected="x", passed=False, score=0.0
            )
        ],
        warnings=[CONTROL],
    )
    xml = cases_junit(run, timestamp=WHEN, hostname="h")
    check(schema, xml)
    assert "\x1b" not in xml and "\\x1b[31mred" in xml


def test_the_timestamp_is_the_start_in_utc_without_a_zone(schema) -> None:
    from datetime import timedelta, timezone

    paris = datetime(2026, 11, 20, 10, 30, 5, tzinfo=timezone(timedelta(hours=1)))
    root = check(
        schema, consistency_junit(ConsistencyRun(tests=[result("t", 1.0)]), timestamp=paris)
    )
    suite = root.find("testsuite")
    assert suite.get("timestamp") == "2026-11-20T09:30:05"
    assert suite.get("hostname")  # this machine's name when none is given
