from __future__ import annotations

import io
import json

import pytest
from rich.console import Console

from oxyeval import evaluation
from oxyeval.errors import EXIT_FAILED, EXIT_INFRA, EXIT_OK
from oxyeval.evaluation import ThresholdResult, decide_run
from oxyeval.report import Gates, decide, render_pretty, to_json, write_json
from oxyeval.suites.consistency.results import ConsistencyRun, ConsistencyTestResult, OutputRecord


def check_threshold(
    run: ConsistencyRun, min_accuracy: float, mode: str = "average"
) -> ThresholdResult | None:
    return evaluation.check_threshold(run.as_results(), min_accuracy, mode, kind="consistency")


def result(
    name: str, accuracy: float | None, file: str = "a.agent.yml", **kw
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
        accuracy=accuracy,
        error=None if accuracy is not None else "no valid verdicts",
        **kw,
    )


def run_of(*accuracies: float | None) -> ConsistencyRun:
    return ConsistencyRun(tests=[result(f"Test {k + 1}", a) for k, a in enumerate(accuracies)])


def test_average_mode_uses_the_mean() -> None:
    verdict = check_threshold(run_of(0.85, 0.92, 0.78), 0.8, "average")
    assert verdict is not None and verdict.passed
    assert verdict.value == pytest.approx(0.85)
    assert verdict.message == (
        "Average accuracy 85.00% meets threshold 80.00% (95% interval 78.53% to 91.47% over 3 tests)"
    )
    assert verdict.interval is not None and round(verdict.interval.low, 4) == 0.7853


def test_all_mode_lists_every_failing_test_correctly() -> None:
    verdict = check_threshold(run_of(0.9, 0.7, 0.78), 0.8, "all")
    assert verdict is not None and not verdict.passed
    assert verdict.message == "2 test(s) below threshold 80.00%: Test 2: 70.00%, Test 3: 78.00%"
    assert [n for n, _a in verdict.failing] == ["Test 2", "Test 3"]


def test_exactly_at_threshold_passes_despite_float_noise() -> None:
    verdict = check_threshold(run_of(0.1 + 0.2, 0.3), 0.3, "all")
    assert verdict is not None and verdict.passed


def test_unscored_test_never_passes() -> None:
    avg = check_threshold(run_of(1.0, None), 0.5, "average")
    assert avg is not None and not avg.passed
    assert "could not be scored: Test 2: no score" in avg.message
    every = check_threshold(run_of(1.0, None), 0.5, "all")
    assert every is not None and not every.passed
    assert every.message == "1 test(s) below threshold 50.00%: Test 2: no score"


def test_no_tests_means_no_threshold() -> None:
    assert check_threshold(ConsistencyRun(), 0.8) is None


def test_exit_code_precedence() -> None:
    gate = Gates(min_accuracy=0.8)
    assert decide_run(run_of(0.9)).code == EXIT_OK
    assert decide_run(run_of(0.5), gate).code == EXIT_FAILED
    # unscored beats below-threshold
    assert decide_run(run_of(0.5, None), gate).code == EXIT_INFRA
    partial = ConsistencyRun(
        tests=[result("t", 1.0, outputs=[OutputRecord(run=1, text=None, error="x")])]
    )
    assert decide_run(partial).code == EXIT_OK
    assert decide_run(partial, Gates(strict=True)).code == EXIT_INFRA
    assert decide_run(ConsistencyRun(interrupted=True)).code == EXIT_INFRA


def test_json_accuracy_shape_and_labels_across_files() -> None:
    one = to_json(run_of(0.5))
    assert one["accuracy"] == 0.5
    many = ConsistencyRun(
        tests=[result("Test 1", 0.5, "a.agent.yml"), result("Test 1", None, "b.agent.yml")]
    )
    doc = to_json(many, decide_run(many, Gates(min_accuracy=0.4, threshold_mode="all")))
    assert doc["accuracy"] == [0.5, None]
    failing = doc["decision"]["threshold"]["failing"]
    assert failing == [{"name": "b.agent.yml: Test 1", "accuracy": None}]
    buf = io.StringIO()
    write_json(doc, buf)
    assert json.loads(buf.getvalue())["summary"]["exitCode"] == 3


def test_secrets_are_scrubbed_from_json_and_pretty() -> None:
    from oxyeval.redact import register_secret

    register_secret("sk-report-secret-999")
    bad = result(
        "t", None, outputs=[OutputRecord(run=1, text=None, error="401 for sk-report-secret-999")]
    )
    run = ConsistencyRun(tests=[bad])
    assert "sk-report-secret-999" not in json.dumps(to_json(run))
    console = Console(file=io.StringIO(), width=120)
    render_pretty(run, None, console)
    text = console.file.getvalue()
    assert "sk-report-secret-999" not in text and "401 for ***" in text


def test_pretty_shows_accuracy_line_like_oxy() -> None:
    console = Console(file=io.StringIO(), width=100)
    render_pretty(
        run_of(0.855), decide(run_of(0.855), Gates(min_accuracy=0.9)), console, quiet=True
    )
    text = console.file.getvalue()
    assert "Accuracy: 85.50%" in text
    assert "Average accuracy 85.50% below threshold 90.00%" in text


def test_identical_run_errors_print_once_naming_the_runs() -> None:
    hint = "timed out after 120s; lower concurrency, set max_tokens or raise timeout"
    outputs = [OutputRecord(run=r, text=None, error=hint) for r in range(1, 8)]
    outputs.append(OutputRecord(run=8, text=None, error="HTTP 500"))
    console = Console(file=io.StringIO(), width=400)
    render_pretty(ConsistencyRun(tests=[result("t", None, outputs=outputs)]), None, console)
    text = console.file.getvalue()
    assert text.count(hint) == 1
    assert "run 1, run 2, run 3, run 4, run 5 and 2 more: " + hint in text
    assert "run 8: HTTP 500" in text


@pytest.mark.parametrize("width", [100, 30])
def test_quiet_keeps_the_header_of_the_full_report(width: int) -> None:
    """``-q`` printed ``file: name`` where the full report printed
    ``file · name``; one header, whichever the detail and the width."""
    run = run_of(0.855)

    def first_line(quiet: bool) -> str:
        console = Console(file=io.StringIO(), width=width)
        render_pretty(run, None, console, quiet=quiet)
        return next(line for line in console.file.getvalue().splitlines() if "·" in line)

    full, quiet = first_line(False), first_line(True)
    assert full == quiet
    assert f"{run.tests[0].file} · " in full
