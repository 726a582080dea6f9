"""``oxy history``'s runs, shown from their counts alone: a kind the report has never
heard of reads like any other, in the table and in JSON."""

from __future__ import annotations

from dataclasses import replace

import pytest

from oxyeval.report import render_history, run_json
from oxyeval.store import Run

from .test_cases_pretty import console

RUN = Run("r1", "toy-essay", None, "essays", None, None, "2026-01-02T03:04:05Z", None, "completed", 4, 4, None, None)  # fmt: skip


def _shown(run: Run) -> str:
    out, buffer = console()
    render_history([run], out)
    return " ".join(buffer.getvalue().split())


@pytest.mark.parametrize(
    ("counts", "line"),
    [
        (
            {"results": 4, "passed": 1, "failed": 2, "errors": 1, "scored": 3, "score_sum": 1.5},
            "1 passed, 2 failed, 1 error(s), avg score 0.500",
        ),
        ({"results": 2, "scored": 0}, "2 result(s)"),
        ({"results": 3, "pending": 3}, "3 result(s), 3 pending"),
        ({}, "-"),
    ],
)
def test_a_new_kinds_run_is_shown_from_its_counts(counts: dict, line: str) -> None:
    assert line in _shown(replace(RUN, **counts))


def test_its_json_has_the_counts_and_the_average() -> None:
    run = replace(RUN, results=4, passed=1, failed=2, errors=1, scored=3, score_sum=1.5)
    doc = run_json(run)
    assert (doc["results"], doc["passed"], doc["failed"], doc["errors"]) == (4, 1, 2, 1)
    assert doc["averageScore"] == pytest.approx(0.5) and "consistency" not in doc


def test_a_consistency_run_keeps_its_own_words() -> None:
    run = replace(
        RUN,
        kind="consistency",
        results=3,
        errors=2,
        scored=1,
        score_sum=0.6,
        statuses={"scored": 1, "error": 1, "interrupted": 1},
    )
    assert "accuracy 60.0% (1 scored, 1 not scored, 1 cut short)" in _shown(run)
    assert run_json(run)["consistency"] == {
        "tests": 3,
        "scored": 1,
        "errors": 1,
        "interrupted": 1,
        "averageAccuracy": pytest.approx(0.6),
    }
