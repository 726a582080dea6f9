"""oxy test's verdict as a library call: the code and the reasons a pytest plugin or a
notebook gets from ``decide`` are the ones the CLI prints."""

from __future__ import annotations

from oxyeval.errors import EXIT_FAILED, EXIT_INFRA, EXIT_INPUT, EXIT_OK, ConfigError
from oxyeval.report import Gates, decide
from oxyeval.suites.consistency.results import ConsistencyRun, OutputRecord

from .test_consistency import result, run_of


def test_no_gates_and_scored_tests_pass() -> None:
    verdict = decide(run_of(0.9, 0.7), Gates())
    assert verdict.passed and verdict.code == EXIT_OK and verdict.reasons == []


def test_a_threshold_failure_gives_its_message() -> None:
    verdict = decide(run_of(0.9, 0.7), Gates(min_accuracy=0.8, threshold_mode="all"))
    assert verdict.code == EXIT_FAILED and not verdict.passed
    assert verdict.reasons == ["1 test(s) below threshold 80.00%: Test 2: 70.00%"]


def test_a_threshold_with_nothing_to_gate_fails_unless_allowed() -> None:
    verdict = decide(ConsistencyRun(tests=[]), Gates(min_accuracy=0.8))
    assert verdict.code == EXIT_FAILED and verdict.threshold is None
    assert verdict.headline == "empty" and verdict.warnings == ()
    assert verdict.reasons[0].startswith("nothing was tested, so the gates (--min-accuracy 0.8)")
    allowed = decide(ConsistencyRun(tests=[]), Gates(min_accuracy=0.8, allow_empty=True))
    assert allowed.code == EXIT_OK and allowed.threshold is None and allowed.empty is None
    assert allowed.warnings == (
        "warning: --min-accuracy given but no accuracy metrics were produced; not gating",
    )
    # Interrupted before any test finished: the interruption speaks (3), not emptiness.
    cut = decide(ConsistencyRun(tests=[], interrupted=True), Gates(min_accuracy=0.8))
    assert cut.code == 3 and cut.empty is None


def test_strict_turns_run_errors_into_exit_3_and_says_so() -> None:
    flaky = result(
        "flaky",
        1.0,
        outputs=[
            OutputRecord(1, "a"),
            OutputRecord(2, None, error="HTTP 500"),
            OutputRecord(3, "a"),
        ],
    )
    run = ConsistencyRun(tests=[flaky])
    assert decide(run, Gates()).code == EXIT_OK  # reported, the score stands
    verdict = decide(run, Gates(strict=True))
    assert verdict.code == EXIT_INFRA
    assert verdict.strict_note is not None and "1 run error(s)" in verdict.strict_note
    assert verdict.reasons[0] == verdict.strict_note


def test_an_unscored_test_is_named_and_an_error_that_stopped_the_run_decides() -> None:
    run = run_of(0.9, None)
    verdict = decide(run, Gates())
    assert verdict.code == EXIT_INFRA
    assert verdict.unscored == ("not scored: Test 2: no valid verdicts",)
    stopped = decide(run, Gates(), error=ConfigError("bad file"))
    assert stopped.code == EXIT_INPUT
