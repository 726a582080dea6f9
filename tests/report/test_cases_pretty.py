"""The ``oxy cases`` reports as library calls: a Python caller renders what the CLI prints."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from oxyeval.evaluation import decide_run
from oxyeval.report import (
    case_run_json,
    render_case_list,
    render_case_run,
    render_case_stats,
    render_history,
    sparkline,
)
from oxyeval.store import CaseStats, ExecutionSummary, Run, TestCase, TrendPoint
from oxyeval.suites.cases import CaseResult, CaseRun


def console() -> tuple[Console, io.StringIO]:
    buffer = io.StringIO()
    return Console(file=buffer, width=200, highlight=False, emoji=False), buffer


def a_run() -> CaseRun:
    miss = CaseResult(
        case_id="p::miss",
        name="miss",
        prompt_id="p",
        prompt_version=2,
        actual_output="cold day",
        expected_output="warm day",
        score=0.5,
        similarity_method="lexical",
        output_diff=[
            {"op": "delete", "text": "warm"},
            {"op": "insert", "text": "cold"},
            {"op": "equal", "text": " day"},
        ],
    )
    ok = CaseResult(
        case_id="p::ok", name="ok", prompt_id="p", prompt_version=2, passed=True, score=1.0
    )
    down = CaseResult(case_id="p::down", name="down", prompt_id="p", prompt_version=2, error="boom")
    return CaseRun(db=Path("h.db"), results=[ok, miss, down], versions={"p": 2}, planned=3)


def test_a_case_run_renders_rows_diffs_and_the_summary() -> None:
    out, buffer = console()
    render_case_run(a_run(), out)
    text = buffer.getvalue()
    assert "[-warm-]{+cold+} day" in text  # no colours off a terminal: markers
    assert "down: boom" in text
    assert "3 case(s): 1 passed, 1 failed, 0 regression(s), 1 error(s) · p v2" in text
    quiet, buffer = console()
    render_case_run(a_run(), quiet, quiet=True)
    assert "[-warm-]" not in buffer.getvalue() and "1 passed" in buffer.getvalue()


def test_the_json_document_carries_the_exit_code_it_is_given() -> None:
    run = a_run()
    doc = case_run_json(run, decide_run(run))
    assert doc["summary"]["exitCode"] == 3 and doc["summary"]["passed"] == 1
    assert [e["name"] for e in doc["executions"]] == ["ok", "miss", "down"]


def test_list_stats_and_history_render_from_the_store_rows() -> None:
    case = TestCase(
        "p::ok", "p", "ok", "a description", {}, "x", None, None, "t0", "t1",
        total_runs=4, pass_count=3, score_sum=3.5, scored_runs=4, last_run="2026-01-02T03:04:05Z",
        last_passed=True,
    )  # fmt: skip
    out, buffer = console()
    render_case_list([case], out)
    assert "75.0%" in buffer.getvalue() and "2026-01-02 03:04:05" in buffer.getvalue()

    summary = ExecutionSummary("e1", "passed", 0.9, 2, "2026-01-02T03:04:05Z")
    trend = (TrendPoint("2026-01-01", 2, 0, 0.0, 0), TrendPoint("2026-01-02", 2, 2, 2.0, 2))
    stats = CaseStats("p::ok", 4, 75.0, 0.875, (summary,), (), 0, trend)
    out, buffer = console()
    render_case_stats(case, stats, out)
    text = buffer.getvalue()
    assert "p::ok  a description" in text and "regressions 0" in text
    assert "2026-01-01 .. 2026-01-02: ▁█" in text

    run = Run("r1", "cases", None, None, "p", 2, "2026-01-02T03:04:05Z", None, "interrupted", 3, 1, None, None)  # fmt: skip
    out, buffer = console()
    render_history([run], out)
    assert "interrupted" in buffer.getvalue() and "1/3" in buffer.getvalue()
    out, buffer = console()
    render_history([], out)
    assert buffer.getvalue() == "no runs yet\n"


def test_sparkline_maps_shares_to_eight_heights_and_gaps_to_spaces() -> None:
    assert sparkline([0.0, 0.5, 1.0, None, 2.0, -1.0]) == "▁▄█ █▁"
