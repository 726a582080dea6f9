"""JSON documents for machines: the one writer every command prints through, and the
bodies of ``oxy test``'s and ``oxy validate``'s documents (:mod:`.documents` has the
family they belong to).

``oxy test`` keeps oxy's top-level ``accuracy`` (a number for one test, a list for
several) so existing ``jq .accuracy`` pipelines keep working, and adds the detail
oxy never printed: per-test pairs, judge calls, errors and failing comparisons, and
each test's ``previous`` result from the history (``{accuracy, at, runId}`` or null).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TextIO

from ..redact import redact_data
from .documents import camel, camel_keys, document, previous_json, run_document

if TYPE_CHECKING:
    from ..evaluation import Decision, Previous
    from ..suites.consistency.results import ConsistencyRun, ConsistencyTestResult
    from ..suites.validate import ValidationReport

__all__ = ["consistency_body", "result_json", "to_json", "validation_json", "write_json"]


def result_json(test: ConsistencyTestResult) -> dict[str, Any]:
    """One test's entry (camelCase): its result, and after its accuracy the previous
    run's (from the history; null when there is none or history is off) and what each
    verdict is worth (``verdictScores``, so ``oxy report`` scores a saved run alike)."""
    doc: dict[str, Any] = {}
    for key, value in test.to_dict().items():
        if key == "run_errors":
            doc["failedRuns"] = value
        elif key == "judge_errors":
            doc["failedJudgements"] = value
        elif key == "outputs":
            doc["outputs"] = [camel_keys(o) for o in value]
        elif key in ("comparisons", "failing_comparisons"):
            doc[camel(key)] = [camel_keys(c) for c in value]
        else:
            doc[camel(key)] = value
        if key == "accuracy":
            doc["previous"] = None if test.previous is None else _previous(test.previous)
            doc["verdictScores"] = dict(test.scores)
    return doc


def _previous(previous: Previous) -> dict[str, Any]:
    return previous_json(previous)


def consistency_body(run: ConsistencyRun, *, streamed: bool = False) -> dict[str, Any]:
    """``oxy test``'s own keys in its run document: oxy's ``accuracy`` (a number for one
    test, a list for several, as oxy prints it, so ``jq .accuracy`` keeps working), each
    test in full, and the run's judge calls and errors. ``streamed``: the tests written
    one by one as they are read back (a run kept on disk), not built as one list; what
    is counted over them is counted in one pass."""
    from .streaming import listed

    accuracies: list[float | None] = []
    scored = run_errors = judge_errors = judge_calls = 0
    for t in run.tests:
        accuracies.append(None if t.accuracy is None else round(t.accuracy, 6))
        scored += t.ok
        run_errors += len(t.run_errors)
        judge_errors += len(t.judge_errors)
        judge_calls += t.judge_calls

    def tests() -> Any:
        return (result_json(t) for t in run.tests)

    return {
        "accuracy": accuracies[0] if len(accuracies) == 1 else accuracies,
        "tests": listed(tests, len(accuracies), stream=streamed),
        "scored": scored,
        "runErrorCount": run_errors,
        "judgeErrorCount": judge_errors,
        "judgeCalls": judge_calls,
        "judgeAgreement": run.judge_agreement,
    }


def to_json(
    run: ConsistencyRun, decision: Decision | None = None, *, error: str | None = None
) -> dict[str, Any]:
    """``oxy test --format json``: the run document (:mod:`.documents`) of a consistency
    run under ``decision`` (by default the ungated one); ``error``: what stopped the run
    after some tests finished. Every key is always present (null or empty when it does
    not apply)."""
    from ..evaluation import decide_run

    if decision is None:
        decision = decide_run(run)
    return run_document(
        "consistency",
        consistency_body(run, streamed=run.spilled),
        run.as_results(),
        decision,
        interrupted=run.interrupted,
        history=run.history,
        warnings=run.warnings + run.skipped,
        cached_calls=run.cached_calls,
        error=error,
    )


def write_json(doc: dict[str, Any], out: TextIO) -> None:
    """Every JSON document a command prints, onto the stream it is given (the CLI's
    redacting stdout); secrets are scrubbed from the data first, so JSON escaping can
    never hide one from a stream's redaction. A value JSON has no type for is written as
    its text rather than lose the document (and with it the run's report); a number JSON
    cannot hold (``NaN``, an integer too long to print) as null, so what is written is
    always strict JSON."""
    from .streaming import write_streamed

    # A long list of a large run (:class:`~.streaming.Streamed`) is cleaned and written
    # an item at a time; everything else as one piece, as before.
    write_streamed(doc, out, redact_data)
    out.write("\n")
    out.flush()


def validation_json(report: ValidationReport, code: int) -> dict[str, Any]:
    """``oxy validate --format json``: valid or not, the files checked, every diagnostic
    (past LISTED_DIAGNOSTICS of a severity, one entry that counts the rest), and the exit
    code (``code``: the one verdict validation gives)."""
    from ..errors import LISTED_DIAGNOSTICS, listed

    errors = listed(report.errors, LISTED_DIAGNOSTICS)
    warnings = listed(report.warnings, LISTED_DIAGNOSTICS)
    return document(
        "validation",
        {
            "valid": not report.errors,
            "files": list(report.files),
            "errors": [camel_keys(d.__dict__) for d in errors],
            "warnings": [camel_keys(d.__dict__) for d in warnings],
            "exitCode": code,
        },
    )
