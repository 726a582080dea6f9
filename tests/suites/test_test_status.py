"""A consistency test's status is decided once (``ConsistencyTestResult.status``) and said the same
in the JSON report, the JUnit properties and the history row."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from oxyeval.report.junit import consistency_junit
from oxyeval.store.kinds import CONSISTENCY_STATUSES
from oxyeval.suites.consistency import new_result
from oxyeval.suites.consistency.results import ConsistencyRun, ConsistencyTestResult


def _test(accuracy: float | None, error: str | None, interrupted: bool) -> ConsistencyTestResult:
    return ConsistencyTestResult(
        name="t",
        file="a.agent.yml",
        index=0,
        task_description="q",
        n=3,
        pairing="all",
        agent_model="m",
        judge_model="j",
        scores={"A": 1.0, "B": 0.0},
        accuracy=accuracy,
        error=error,
        interrupted=interrupted,
    )


@pytest.mark.parametrize(
    ("accuracy", "error", "interrupted", "expected"),
    [
        (1.0, None, False, "scored"),
        (None, "no valid verdicts", False, "error"),
        (0.5, "1 run failed", False, "error"),
        (0.5, "interrupted after 2 of 3 runs", True, "interrupted"),
    ],
)
def test_every_output_says_the_same_status(
    accuracy: float | None, error: str | None, interrupted: bool, expected: str
) -> None:
    test = _test(accuracy, error, interrupted)
    assert test.status == expected and expected in CONSISTENCY_STATUSES
    assert test.to_dict()["status"] == expected
    assert new_result("a.agent.yml", test).status == expected
    xml = consistency_junit(ConsistencyRun(tests=[test]), hostname="h")
    properties = {p.get("name"): p.get("value") for p in ET.fromstring(xml).iter("property")}
    assert [v for k, v in properties.items() if k.endswith(".status")] == [expected]
