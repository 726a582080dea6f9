"""The pretty headline and the JUnit writer render the Decision they are given: they
never work pass or fail out again from the run, so a Decision that says failed shows as
failed even when the run's figures alone would look fine (and the other way round)."""

from __future__ import annotations

import io
import xml.etree.ElementTree as ET
from pathlib import Path

from rich.console import Console

from oxyeval.errors import EXIT_FAILED, EXIT_INFRA, EXIT_OK
from oxyeval.evaluation import Decision, Outcome, Previous, decide_run
from oxyeval.report.junit import cases_junit, consistency_junit
from oxyeval.report.pretty import render_pretty
from oxyeval.report.verdict import Gates, decide
from oxyeval.suites.cases.results import CaseResult, CaseRun
from oxyeval.suites.consistency.results import ConsistencyRun, ConsistencyTestResult


def _test(name: str, accuracy: float | None = 1.0) -> ConsistencyTestResult:
    return ConsistencyTestResult(
        name=name,
        file="a.agent.yml",
        index=0,
        task_description="q",
        n=2,
        pairing="all",
        agent_model="m",
        judge_model="j",
        scores={"A": 1.0, "B": 0.0},
        accuracy=accuracy,
        error=None if accuracy is not None else "no valid verdicts",
    )


def _headline(run: ConsistencyRun, decision: Decision) -> str:
    console = Console(file=io.StringIO(), width=200)
    render_pretty(run, decision, console, quiet=True)
    return console.file.getvalue().splitlines()[0]


def _outcomes(xml: str) -> dict[str, tuple[str | None, str | None]]:
    """Per testcase name: the tag of its outcome element and that element's type."""
    found = {}
    for case in ET.fromstring(xml).iter("testcase"):
        child = next((c for c in case if c.tag in ("error", "failure", "skipped")), None)
        found[case.get("name")] = (
            None if child is None else child.tag,
            None if child is None else child.get("type"),
        )
    return found


def test_a_failed_decision_is_a_cross_even_when_every_test_scored_full_marks() -> None:
    run = ConsistencyRun(tests=[_test("perfect", 1.0)])
    assert _headline(run, decide(run, Gates())).startswith("Eval finished with metrics")
    failed = Decision(code=EXIT_FAILED, outcomes=(Outcome("perfect", "failed", failed="x"),))
    line = _headline(run, failed)
    assert line.startswith("❌") and "1 of 1 test(s) failed" in line
    assert failed.headline == "failed"


def test_the_headline_follows_the_decision_not_the_run() -> None:
    run = ConsistencyRun(tests=[_test("fine", 1.0)])
    # The run alone scored every test; the decision says one could not be: ❌.
    unknown = Decision(code=EXIT_INFRA, outcomes=(Outcome("fine", "unknown"),))
    assert _headline(run, unknown) == "❌ Eval finished; 1 of 1 test(s) could not be scored:"
    # A code of 3 for another cause: the errors line, whatever the run's errors are.
    assert _headline(run, Decision(code=EXIT_INFRA)).startswith("❌ Eval finished with 0 run")
    # And the other way round: a run with an unscored test, decided passing, is no cross.
    bad = ConsistencyRun(tests=[_test("broken", None)])
    passing = Decision(code=EXIT_OK, outcomes=(Outcome("broken", "passed"),))
    assert _headline(bad, passing).startswith("Eval finished with metrics")


def test_the_headline_state_of_every_gate() -> None:
    run = ConsistencyRun(tests=[_test("t", 0.9)])
    cases = {
        "met": Gates(min_accuracy=0.5),
        "below": Gates(min_accuracy=0.95),
        "no_baseline": Gates(fail_on_drop=5),  # no earlier run: nothing proven
        "ungated": Gates(),
    }
    for state, gates in cases.items():
        decision = decide(run, gates)
        assert decision.headline == state
    assert (
        decide(ConsistencyRun(tests=run.tests, interrupted=True), Gates()).headline == "interrupted"
    )
    assert _headline(run, decide(run, Gates(min_accuracy=0.95))).startswith("❌")
    assert _headline(run, decide(run, Gates(min_accuracy=0.5))).startswith("✅")
    # --fail-on-drop on a first run is no green tick; with an earlier run to compare, it is.
    first = _headline(run, decide(run, Gates(fail_on_drop=5)))
    assert "✅" not in first and "no earlier run" in first
    earlier = ConsistencyRun(tests=[_test("t", 0.9)])
    earlier.tests[0].previous = Previous(0.92, "2026-11-25T10:00:00.000Z", "r0")
    compared = decide(earlier, Gates(fail_on_drop=5))
    assert compared.headline == "no_drop" and compared.drop is not None
    assert compared.drop.compared == 1
    assert _headline(earlier, compared).startswith("✅ Eval finished; no accuracy dropped")


def test_junit_writes_the_failure_the_decision_names_on_a_test_that_scored_full_marks() -> None:
    run = ConsistencyRun(tests=[_test("perfect", 1.0), _test("also", 1.0)])
    assert _outcomes(consistency_junit(run, decide(run, Gates()), hostname="h")) == {
        "perfect": (None, None),
        "also": (None, None),
    }
    decision = Decision(
        code=EXIT_FAILED,
        outcomes=(
            Outcome("perfect", "failed", regression="regression: perfect: worse than before"),
            Outcome("also", "unknown"),
        ),
    )
    xml = consistency_junit(run, decision, hostname="h")
    assert _outcomes(xml) == {"perfect": ("failure", "Regression"), "also": ("error", "NotScored")}
    assert 'name="oxy.exit_code" value="1"' in xml
    assert "worse than before" in xml


def test_junit_shows_no_failure_the_decision_does_not_make() -> None:
    # An unscored test decided passing (say by a caller that knows better) is no error.
    run = ConsistencyRun(tests=[_test("broken", None)])
    passing = Decision(code=EXIT_OK, outcomes=(Outcome("broken", "passed"),))
    assert _outcomes(consistency_junit(run, passing, hostname="h")) == {"broken": (None, None)}


def _case(name: str, **kw: object) -> CaseResult:
    return CaseResult(
        case_id=f"p::{name}",
        name=name,
        prompt_id="p",
        prompt_version=1,
        actual_output="out",
        expected_output="out",
        **kw,  # type: ignore[arg-type]
    )


def test_cases_junit_follows_the_decision_s_outcomes() -> None:
    run = CaseRun(
        db=Path("h.db"),
        results=[_case("fine", passed=True, score=1.0), _case("also", passed=True, score=1.0)],
    )
    assert decide_run(run).code == EXIT_OK
    decision = Decision(
        code=EXIT_FAILED,
        outcomes=(
            Outcome("p::fine", "failed", failed="failed: p::fine"),
            Outcome("p::also", "neutral"),
        ),
    )
    xml = cases_junit(run, decision, hostname="h")
    assert _outcomes(xml) == {"fine": ("failure", "BelowThreshold"), "also": ("skipped", None)}
    assert 'name="oxy.exit_code" value="1"' in xml
    # The rule applied is the decision's too.
    gated = decide_run(run, Gates(fail_on_regression=True))
    assert 'name="oxy.fail_on_regression" value="true"' in cases_junit(run, gated, hostname="h")
