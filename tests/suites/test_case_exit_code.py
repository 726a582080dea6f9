"""The one decision on a test-case run: its exit code and reasons, decided in the library
(``decide_run``) so a Python caller gates the same way ``oxy cases run`` does."""

from __future__ import annotations

from pathlib import Path

import pytest

from oxyeval.errors import EXIT_FAILED, EXIT_INFRA, EXIT_OK
from oxyeval.evaluation import Decision, Gates, decide_run
from oxyeval.redact import register_secret
from oxyeval.suites.cases import CaseResult, CaseRun


def case(name: str, **fields: object) -> CaseResult:
    return CaseResult(case_id=f"p::{name}", name=name, prompt_id="p", prompt_version=1, **fields)


PASSED = case("ok", passed=True, score=1.0)
FAILED = case("miss", passed=False, score=0.25, threshold=0.8)
PENDING = case("new", pending=True)
REGRESSED = case(
    "slower",
    passed=True,
    score=0.85,
    is_regression=True,
    regression_types=["SCORE_DROP"],
    regression_reasons=["score 0.850 < 0.9 x recent average 1.000"],
)
ERRORED = case("down", error="model 'm' failed: backend down")


def run_of(*results: CaseResult, interrupted: bool = False) -> CaseRun:
    return CaseRun(db=Path("h.db"), results=list(results), interrupted=interrupted)


def decided(run: CaseRun, *, fail_on_regression: bool = False) -> Decision:
    return decide_run(run, Gates(fail_on_regression=fail_on_regression))


@pytest.mark.parametrize(
    ("results", "interrupted", "on_regression", "code"),
    [
        ((PASSED,), False, False, EXIT_OK),
        ((PASSED, PENDING), False, False, EXIT_OK),  # no expected output yet: never a failure
        ((), False, False, EXIT_OK),
        ((PASSED, FAILED), False, False, EXIT_FAILED),
        ((PASSED, REGRESSED), False, False, EXIT_OK),  # a regression alone is reported only
        ((PASSED, REGRESSED), False, True, EXIT_FAILED),
        ((FAILED, ERRORED), False, False, EXIT_INFRA),  # the outcome is unknown: 3 wins
        ((PASSED,), True, False, EXIT_INFRA),
        ((FAILED,), True, True, EXIT_INFRA),
    ],
)
def test_exit_code(
    results: tuple[CaseResult, ...], interrupted: bool, on_regression: bool, code: int
) -> None:
    run = run_of(*results, interrupted=interrupted)
    assert decided(run, fail_on_regression=on_regression).code == code


def test_failure_reasons_name_each_case_and_why() -> None:
    run = run_of(PASSED, FAILED, PENDING, REGRESSED, ERRORED)
    assert decided(run).reasons == [
        "error: p::down: model 'm' failed: backend down",
        "failed: p::miss: score 0.250 below its threshold 0.8",
    ]
    assert decided(run, fail_on_regression=True).reasons[-1] == (
        "regression: p::slower: score 0.850 < 0.9 x recent average 1.000"
    )
    assert decided(run_of(PASSED, PENDING), fail_on_regression=True).reasons == []
    assert [r.name for r in run.passed] == ["ok", "slower"]


def test_a_regression_without_reasons_names_its_types() -> None:
    bare = case("b", passed=True, is_regression=True, regression_types=["LENGTH_CHANGE"])
    assert decided(run_of(bare), fail_on_regression=True).reasons == [
        "regression: p::b: LENGTH_CHANGE"
    ]


def test_failure_reasons_scrub_secrets() -> None:
    key = "sk-case-reason-secret-123"
    register_secret(key)
    leaky = case("leak", error=f"server said: bad key {key}")
    (line,) = decided(run_of(leaky)).reasons
    assert key not in line and line.endswith("bad key ***")


def test_a_case_run_is_the_evaluation_core_s_results_with_their_scores() -> None:
    judged = case("ok", passed=True, score=0.9, semantic_score=0.93, similarity_method="lexical")
    results = run_of(judged, PENDING, ERRORED).as_results()
    assert [(r.kind, r.subject, r.status, r.passed) for r in results] == [
        ("cases", "p::ok", "passed", True),
        ("cases", "p::new", "pending", None),
        ("cases", "p::down", "error", None),
    ]
    scores = {s.metric: s for s in results[0].scores}
    assert scores["score"].value == 0.9 and scores["score"].passed is True
    assert scores["score"].threshold == judged.threshold
    assert scores["similarity"].value == 0.93 and scores["similarity"].label == "lexical"
    assert results[1].scores == [] and results[2].scores == []  # nothing measured
