"""Review 2, L5: runs an interruption cut off are not counted as failed runs."""

from __future__ import annotations

import io

from rich.console import Console

from oxyeval.report import render_pretty, to_json
from oxyeval.report.saved import parse_saved_run
from oxyeval.suites.consistency.results import ConsistencyRun, ConsistencyTestResult, OutputRecord


def cut_test(finished: int, *, interrupted: bool = True, failed: int = 0) -> ConsistencyTestResult:
    outputs = [OutputRecord(run=r, text=f"answer {r}") for r in range(1, finished + 1)]
    outputs += [
        OutputRecord(run=finished + k, text=None, error="HTTP 500") for k in range(1, failed + 1)
    ]
    return ConsistencyTestResult(
        name="slow",
        file="a.agent.yml",
        index=0,
        task_description="q",
        n=8,
        pairing="all",
        agent_model="m",
        judge_model="j",
        scores={"A": 1.0, "B": 0.0},
        total_pairs=28,
        outputs=outputs,
        interrupted=interrupted,
        error="interrupted: 2 of 8 run(s) finished; not scored (runs still going, none judged)"
        if interrupted
        else "only 2 of 8 runs succeeded",
    )


def pretty(test: ConsistencyTestResult) -> str:
    console = Console(file=io.StringIO(), width=200, no_color=True)
    render_pretty(ConsistencyRun(tests=[test], interrupted=test.interrupted), None, console)
    return console.file.getvalue()  # type: ignore[attr-defined]


def test_the_run_line_says_how_many_runs_were_cut_short() -> None:
    out = pretty(cut_test(2))
    assert "8 runs (2 ok, 6 cut short) · 0/28 pairs judged" in out


def test_runs_that_failed_before_the_interrupt_are_neither_ok_nor_cut_short() -> None:
    test = cut_test(2, failed=1)
    assert test.unfinished_runs == 5
    assert "8 runs (2 ok, 5 cut short)" in pretty(test)


def test_a_test_that_was_not_interrupted_has_no_cut_short_runs() -> None:
    test = cut_test(2, interrupted=False, failed=6)
    assert test.unfinished_runs == 0
    out = pretty(test)
    assert "8 runs (2 ok) ·" in out and "cut short" not in out


def test_json_says_how_many_runs_did_not_finish_and_a_saved_report_keeps_it() -> None:
    doc = to_json(ConsistencyRun(tests=[cut_test(2, failed=1)], interrupted=True))
    assert doc["summary"]["exitCode"] == 3
    (test,) = doc["tests"]
    assert (test["n"], test["successfulRuns"], test["unfinishedRuns"]) == (8, 2, 5)
    assert len(test["failedRuns"]) == 1  # the run that failed, not the ones cut short
    (again,) = parse_saved_run(doc).run.tests
    assert again.unfinished_runs == 5
    finished = to_json(ConsistencyRun(tests=[cut_test(2, interrupted=False, failed=6)]))["tests"][0]
    assert finished["unfinishedRuns"] == 0


def test_a_stopped_cases_run_says_how_many_are_stored_when_not_all_finished_ones_are() -> None:
    """A second signal can cut the last writes short: the line then says both counts,
    as the document's history entry does, instead of calling every finished case stored."""
    from types import SimpleNamespace

    from oxyeval.report import reporter

    cases = reporter("cases")
    run = SimpleNamespace(results=[1, 2, 3], planned=5, db="h.db", history=[])
    run.history = [SimpleNamespace(stored=2)]
    assert cases.interrupted_line(run, "interrupted (SIGINT)") == (
        "interrupted (SIGINT): 3 of 5 case(s) finished; 2 of them are stored in h.db"
    )
    run.history = [SimpleNamespace(stored=3)]
    assert cases.interrupted_line(run, "interrupted (SIGINT)") == (
        "interrupted (SIGINT): 3 of 5 case(s) finished and are stored in h.db"
    )
