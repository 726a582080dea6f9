"""JSON documents for machines: the one writer every command prints through, and
``oxy test``'s document.

JSON keeps oxy's top-level ``accuracy`` (a number for one test, a list for
several) so existing ``jq .accuracy`` pipelines keep working, and adds the detail
oxy never printed: per-test pairs, judge calls, errors and failing comparisons, and
each test's ``previous`` result from the history (``{accuracy, at, run_id}`` or null).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, TextIO

from ..inputs import finite_json
from ..redact import redact, redact_data

if TYPE_CHECKING:
    from ..evaluation import DropResult, ThresholdResult
    from ..suites.consistency.results import ConsistencyRun, ConsistencyTestResult
    from ..suites.validate import ValidationReport

__all__ = ["result_json", "to_json", "validation_json", "write_json"]


def result_json(test: ConsistencyTestResult) -> dict[str, Any]:
    """One test's entry: its result, and after its accuracy the previous run's (from the
    history; null when there is none or history is off)."""
    doc: dict[str, Any] = {}
    for key, value in test.to_dict().items():
        doc[key] = value
        if key == "accuracy":
            doc["previous"] = None if test.previous is None else test.previous.to_dict()
            doc["scores"] = dict(test.scores)  # what each verdict is worth (oxy report)
    return doc


def to_json(
    run: ConsistencyRun,
    threshold: ThresholdResult | None = None,
    *,
    code: int | None = None,
    error: str | None = None,
    drop: DropResult | None = None,
) -> dict[str, Any]:
    """``oxy test --format json``; ``code`` is the exit code the run ends with, ``error``
    what stopped it (a run that failed before any test finished still gets a document),
    ``drop`` the ``--fail-on-drop`` check. Every key is always present: ``threshold``,
    ``fail_on_drop`` and ``error`` are null when they do not apply, ``warnings`` empty."""
    accuracies = [None if a is None else round(a, 6) for a in run.accuracies]
    doc: dict[str, Any] = {
        "accuracy": accuracies[0] if len(accuracies) == 1 else accuracies,
        "tests": [result_json(t) for t in run.tests],
    }
    # Every key always there (null or empty when it does not apply), so a consumer
    # needs no guards: the gates given, the warnings, what stopped the run.
    doc["threshold"] = None if threshold is None else threshold.to_dict()
    doc["fail_on_drop"] = None if drop is None else drop.to_dict()
    doc["summary"] = {
        "tests": len(run.tests),
        "scored": sum(1 for t in run.tests if t.ok),
        "errors": sum(1 for t in run.tests if not t.ok),
        "run_errors": sum(len(t.run_errors) for t in run.tests),
        "judge_errors": sum(len(t.judge_errors) for t in run.tests),
        "judge_calls": sum(t.judge_calls for t in run.tests),
        "cached_calls": run.cached_calls,
        "interrupted": run.interrupted,
        "exit_code": code,
    }
    doc["history"] = [h.to_dict() for h in run.history]  # empty: history off
    doc["warnings"] = [redact(w) for w in run.warnings + run.skipped]
    doc["error"] = None if error is None else redact(error)
    return doc


def write_json(doc: dict[str, Any], out: TextIO) -> None:
    """Every JSON document a command prints, onto the stream it is given (the CLI's
    redacting stdout); secrets are scrubbed from the data first, so JSON escaping can
    never hide one from a stream's redaction. A value JSON has no type for is written as
    its text rather than lose the document (and with it the run's report); a number JSON
    cannot hold (``NaN``, an integer too long to print) as null, so what is written is
    always strict JSON."""
    data = finite_json(redact_data(doc))
    out.write(json.dumps(data, indent=2, ensure_ascii=False, default=str, allow_nan=False))
    out.write("\n")
    out.flush()


def validation_json(report: ValidationReport) -> dict[str, Any]:
    """``oxy validate --format json``: valid or not, the files checked, every diagnostic."""
    return {
        "valid": not report.errors,
        "files": report.files,
        "errors": [d.__dict__ for d in report.errors],
        "warnings": [d.__dict__ for d in report.warnings],
    }
