"""JUnit suite times are wall times: cases and tests run concurrently,
so three 2 s cases side by side make a 2 s suite, not a 6 s one; each case keeps its own
time, and a run read back from a saved report (no start times) sums as before."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from datetime import datetime
from pathlib import Path

import pytest

from oxyeval.report.junit import cases_junit, consistency_junit
from oxyeval.suites.cases.run import CaseResult, CaseRun
from oxyeval.suites.consistency.results import ConsistencyRun, ConsistencyTestResult

XSD = Path(__file__).with_name("JUnit.xsd")
WHEN = datetime(2026, 11, 20, 9, 30, 5)


@pytest.fixture(scope="module")
def schema():
    import xmlschema

    return xmlschema.XMLSchema(str(XSD))


def case(name: str, prompt: str, started: float | None, seconds: float) -> CaseResult:
    return CaseResult(
        case_id=f"{prompt}::{name}",
        name=name,
        prompt_id=prompt,
        prompt_version=1,
        actual_output="hi",
        expected_output="hi",
        passed=True,
        score=1.0,
        run_duration_ms=seconds * 1000,
        started=started,
    )


def consistency(
    name: str, file: str, started: float | None, seconds: float
) -> ConsistencyTestResult:
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
        accuracy=1.0,
        duration=seconds,
        started=started,
    )


def times(text: str) -> dict[str, str]:
    root = ET.fromstring(text)
    # The run's wall time: a property in every suite (the root may carry no attributes).
    runs = {p.get("value") for p in root.iter("property") if p.get("name") == "oxy.duration_s"}
    assert len(runs) == 1 and not root.attrib
    out = {"(all)": runs.pop()}
    out.update({s.get("name"): s.get("time") for s in root.iter("testsuite")})
    out.update({c.get("name"): c.get("time") for c in root.iter("testcase")})
    return out


def test_cases_run_side_by_side_make_a_suite_as_long_as_the_run(schema) -> None:
    run = CaseRun(
        db="h.db",
        planned=4,
        results=[
            case("a", "p", 100.0, 2.0),
            case("b", "p", 100.0, 2.05),
            case("c", "p", 100.5, 2.0),  # ends last: 102.5
            case("d", "q", 101.0, 0.5),
        ],
    )
    text = cases_junit(run, timestamp=WHEN, hostname="h")
    schema.validate(text)
    assert times(text) == {
        "(all)": "2.500",
        "p v1": "2.500",
        "q v1": "0.500",
        "a": "2.000",
        "b": "2.050",
        "c": "2.000",
        "d": "0.500",
    }


def test_consistency_tests_side_by_side_make_a_suite_as_long_as_the_run(schema) -> None:
    run = ConsistencyRun(
        tests=[
            consistency("one", "a.agent.yml", 10.0, 1.5),
            consistency("two", "a.agent.yml", 10.0, 1.25),
            consistency("three", "b.agent.yml", 10.0, 3.0),
        ]
    )
    text = consistency_junit(run, timestamp=WHEN, hostname="h")
    schema.validate(text)
    assert times(text) == {
        "(all)": "3.000",
        "a.agent.yml": "1.500",
        "b.agent.yml": "3.000",
        "one": "1.500",
        "two": "1.250",
        "three": "3.000",
    }


def test_without_start_times_a_suite_is_the_sum_of_its_cases(schema) -> None:
    run = ConsistencyRun(
        tests=[
            consistency("one", "a.agent.yml", None, 1.5),
            consistency("two", "a.agent.yml", None, 1.25),
        ]
    )
    text = consistency_junit(run, timestamp=WHEN, hostname="h")
    schema.validate(text)
    assert times(text)["a.agent.yml"] == times(text)["(all)"] == "2.750"


def test_a_real_cases_run_records_when_each_case_began(make_project) -> None:
    from oxyeval.suites.cases.run import run_cases

    root = make_project(
        "models:\n  - {name: m, vendor: mock, outputs: [hi]}\n",
        {
            "p.prompt.yml": "name: p\nmodel: m\ntemplate: '{{ x }}'\nsimilarity: lexical\n"
            "cases:\n  - {name: a, input: {x: 1}, expected_output: hi}\n"
            "  - {name: b, input: {x: 2}, expected_output: hi}\n"
        },
    )
    run = run_cases([root / "p.prompt.yml"])
    assert all(r.started is not None for r in run.results)


def test_a_real_oxy_test_run_records_when_each_test_began(make_project) -> None:
    from oxyeval.suites.consistency import run_tests

    root = make_project(
        files={
            "a.agent.yml": "model: agent_model\nsystem_instructions: hi\n"
            "tests:\n  - {type: consistency, n: 2, task_description: q}\n"
        }
    )
    run = run_tests([root / "a.agent.yml"])
    assert run.tests and all(t.started is not None for t in run.tests)
