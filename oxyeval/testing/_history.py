"""The SDK's evaluations in the project's history: one run per ``evaluate()`` or
``run_test_suite()`` call, one result per (test case, metric or evaluator), so ``oxy
history`` (and the dashboard) show them over time; a score lower than the same test
case's previous one under the same metric is flagged as a regression.

The history is the project's (the config.yml found from the working directory, its
``history:``, ``OXY_DB``); a script outside any project keeps none, and says nothing.
Storing never changes a result: a history that cannot be written is a warning.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..evaluation import Result, ResultKind, Score, register_kind
from ..project import find_config

__all__ = ["SDK", "Evaluated", "store_evaluations"]

log = logging.getLogger("oxyeval")

#: The result kind of an SDK evaluation: ``scored``, or ``error`` (the metric or the
#: evaluator failed: no score).
SDK = register_kind(
    ResultKind(
        name="sdk", statuses=("scored", "error", "interrupted"), metric="score", noun="evaluation"
    )
)


@dataclass
class Evaluated:
    """One (test case, metric) as the history keeps it."""

    case: str  # a test case's hash, or its input
    metric: str
    score: float | None
    passed: bool | None
    reason: str | None = None
    error: str | None = None
    duration_ms: float | None = None
    threshold: float | None = None
    #: Filled by :func:`store_evaluations`: why it regressed (empty: it did not).
    regressions: list[str] = field(default_factory=list)


def store_evaluations(suite: str, rows: Sequence[Evaluated], *, db: Any = None) -> str | None:
    """Keep ``rows`` as one run of ``suite``; flag each row whose score fell below the
    previous stored score of the same test case and metric. Returns the run id (None:
    no project, or the history could not be written, which is logged, never raised)."""
    from pathlib import Path

    if not rows or (db is None and find_config(Path.cwd()) is None):
        return None
    from ..errors import OxyError
    from ..suites import open_history

    try:
        _project, _where, store = open_history(None, db, write=True)
    except OxyError as exc:
        log.warning("warning: the evaluations were not stored in the history: %s", exc)
        return None
    if store is None:
        return None
    with store:
        results = []
        for row in rows:
            subject = f"{suite}::{row.case}::{row.metric}"
            earlier = [
                r for r in store.results.history("sdk", subject, limit=1) if r.score is not None
            ]
            if row.score is not None and earlier and row.score < earlier[0].score:  # type: ignore[operator]
                row.regressions.append(
                    f"score fell from {earlier[0].score:.3f} to {row.score:.3f} against "
                    f"{earlier[0].created_at}"
                )
            results.append(
                Result(
                    kind="sdk",
                    subject=subject,
                    status="error" if row.error else "scored",
                    passed=row.passed,
                    score=row.score,
                    latency_ms=row.duration_ms,
                    error=row.error,
                    scores=[
                        Score(
                            row.metric,
                            row.score,
                            passed=row.passed,
                            threshold=row.threshold,
                            reason=row.reason,
                        )
                    ],
                    details={
                        "suite": suite,
                        "case": row.case,
                        "metric": row.metric,
                        "regressions": list(row.regressions),
                    },
                    regressions=tuple(row.regressions),
                )
            )
        run_id = store.runs.start("sdk", subject=suite, total=len(results))
        store.results.add(run_id, results)
        failed = any(r.status == "error" for r in results)
        store.runs.finish(run_id, "failed" if failed else "completed")
        return run_id
