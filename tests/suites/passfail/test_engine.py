"""The pass/fail engine on the offline mock vendor: runs, verdicts per criterion,
identical answers judged once, judge errors excluded, results stored."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from oxyeval.evaluation import decide_run
from oxyeval.project.config import load_project
from oxyeval.store import open_store
from oxyeval.suites.passfail import Criterion, PassFailRun, Subject, pass_fail_judge, run_passfail
from oxyeval.suites.targets import TextTarget

from ...conftest import MakeProject

CONFIG = """\
models:
  - name: bot
    vendor: mock
    outputs: [ANSWER-OK, ANSWER-OK, ANSWER-BAD, ANSWER-OK, ANSWER-GARBLED, ANSWER-OK]
  - name: judge
    vendor: mock
    rules:
      - {match: "ANSWER-BAD", output: "It names the wrong city.\\nVerdict: FAIL"}
      - {match: "ANSWER-OK", output: "It names the capital.\\nVerdict: PASS"}
      - {match: ".", output: "I cannot tell."}
"""


def _run(root: Path, runs: int = 6, threshold: float = 0.5, **options: object) -> PassFailRun:
    project = load_project(root)

    def build(context):  # type: ignore[no-untyped-def]
        return [
            Subject(
                key="capital::bot",
                label="capital on bot",
                target=TextTarget(context, "bot", "What is the capital of France?"),
                criteria=[Criterion("names it", "The answer names the capital of France")],
                runs=runs,
                threshold=threshold,
                judge=pass_fail_judge(context, "judge"),
                question="What is the capital of France?",
            )
        ]

    return asyncio.run(run_passfail(project, build, label="capital", **options))  # type: ignore[arg-type]


def test_each_answer_is_judged_and_counted_per_run(make_project: MakeProject) -> None:
    root = make_project(CONFIG)
    run = _run(root)
    (result,) = run.results
    rate = result.rate
    # 6 runs: 4 OK (PASS), 1 BAD (FAIL), 1 garbled (no verdict after one re-ask: excluded)
    assert (rate.passes, rate.runs, rate.judge_errors) == (4, 5, 1)
    assert rate.pass_rate == pytest.approx(0.8)
    assert rate.flaky and result.passed is True  # 0.8 >= 0.5
    garbled = next(c for c in result.checks if c.passed is None)
    assert garbled.error and "no verdict" in garbled.error
    # identical answers judged once: OK, BAD, and GARBLED asked twice (the re-ask)
    assert run.judge_calls == 4 and run.model_calls == 6
    assert decide_run(run).code == 0


def test_a_pass_rate_under_the_threshold_fails_and_exits_1(make_project: MakeProject) -> None:
    root = make_project(CONFIG)
    run = _run(root, threshold=0.9)
    (result,) = run.results
    assert result.passed is False and decide_run(run).code == 1
    assert result.as_result().status == "scored"


def test_results_are_stored_on_the_spine(make_project: MakeProject) -> None:
    root = make_project(CONFIG)
    _run(root)
    with open_store(root / ".oxy" / "oxyeval.db", read_only=True) as store:
        (stored_run,) = store.runs.list(5)
        assert stored_run.kind == "passfail" and stored_run.status == "completed"
        (row,) = store.results.for_run(stored_run.id)
        assert row.kind == "passfail" and row.subject == "capital::bot::names it"
        assert row.score == pytest.approx(0.8) and row.passed is True
        assert row.details["passes"] == 4 and row.details["judgeErrors"] == 1


def test_a_subject_whose_every_run_failed_is_an_error_exit_3(make_project: MakeProject) -> None:
    broken = CONFIG.replace(
        "    outputs: [ANSWER-OK, ANSWER-OK, ANSWER-BAD, ANSWER-OK, ANSWER-GARBLED, ANSWER-OK]",
        "    rules: [{match: '.', error: the server is down}]",
    )
    run = _run(make_project(broken), runs=3)
    (result,) = run.results
    assert result.status == "error" and result.run_errors == 3 and result.passed is None
    assert decide_run(run).code == 3
    assert "the server is down" in run.subjects[0].samples[0].error  # type: ignore[operator]


def test_adaptive_stops_sampling_once_the_decision_is_settled(make_project: MakeProject) -> None:
    always = CONFIG.replace(
        "    outputs: [ANSWER-OK, ANSWER-OK, ANSWER-BAD, ANSWER-OK, ANSWER-GARBLED, ANSWER-OK]",
        "    outputs: [ANSWER-OK]",
    )
    run = _run(make_project(always), runs=50, threshold=0.8, adaptive=True, concurrency=5)
    (result,) = run.results
    assert result.settled == "pass" and result.passed is True
    used = len(run.subjects[0].samples)
    assert used < 50 and used % 5 == 0  # whole waves of the concurrency
    assert run.saved_calls == 50 - used and run.model_calls == used
    assert result.rate.runs <= used  # verdicts past the decision are not counted


def test_an_interrupted_subject_keeps_and_stores_the_runs_that_finished(
    make_project: MakeProject,
) -> None:
    slow = CONFIG.replace(
        "    vendor: mock\n    outputs: [ANSWER-OK,",
        "    vendor: mock\n    latency_ms: 300\n    outputs: [ANSWER-OK,",
        1,
    )
    root = make_project(slow)
    project = load_project(root)
    run = PassFailRun()
    judged = asyncio.Event()

    def build(context):  # type: ignore[no-untyped-def]
        return [
            Subject(
                key="capital::bot",
                label="capital on bot",
                target=TextTarget(context, "bot", "What is the capital of France?"),
                criteria=[Criterion("names it", "The answer names the capital of France")],
                runs=3,
                threshold=0.5,
                judge=pass_fail_judge(context, "judge"),
            )
        ]

    def sink(event: object) -> None:
        if type(event).__name__ == "SampleFinished":
            judged.set()

    async def go() -> None:
        task = asyncio.ensure_future(
            run_passfail(project, build, label="capital", concurrency=1, into=run, events=sink)
        )
        await judged.wait()
        await asyncio.sleep(0.05)  # the first verdict lands; the second run is in flight
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(asyncio.wait_for(go(), 20))
    assert run.interrupted and decide_run(run).code == 3
    (subject,) = run.subjects
    assert subject.interrupted and len(subject.samples) == 1
    (result,) = subject.results
    assert result.status == "interrupted" and result.rate.runs == 1
    with open_store(root / ".oxy" / "oxyeval.db", read_only=True) as store:
        (stored_run,) = store.runs.list(5)
        assert stored_run.status == "interrupted"
        (row,) = store.results.for_run(stored_run.id)
        assert row.status == "interrupted" and row.details["runs"] == 1
