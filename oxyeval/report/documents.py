"""The one family of JSON documents every ``--format json`` prints.

Every member has ``schemaVersion`` (an integer, raised whenever any member's schema
changes, so a pipeline can tell what it reads) and ``document`` (which member it is);
its keys are camelCase (oxy's own top-level ``accuracy`` of ``oxy test`` aside), and a
key has one type wherever it appears. Each member has a JSON Schema in
``schemas/output/`` (``oxy schema NAME`` prints it).

A run of any kind (``oxy test``, ``oxy cases run``, ``oxy ab run``, ``oxy chattest``,
``oxy run``, ``oxy report``) is the member ``run``: its ``kind`` and that kind's own
body, then what every kind shares, built only here so no kind can drift from it:
``results`` (the GraphQL API's ``Result`` for each, with the decision's ``outcome``),
``decision``, ``summary``, ``history``, ``warnings`` and ``error``. A command that fails
before its document exists prints the member ``error`` instead, the same from every
path.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..evaluation import interval_dict
from ..redact import redact
from .streaming import Streamed, listed

if TYPE_CHECKING:
    from ..evaluation import (
        Decision,
        DropResult,
        Gates,
        PassRateResult,
        Previous,
        Result,
        ThresholdResult,
    )
    from ..suites import StoredRun

__all__ = [
    "DOCUMENTS",
    "ENVELOPE",
    "SCHEMA_VERSION",
    "camel",
    "camel_keys",
    "decision_json",
    "document",
    "error_document",
    "gates_json",
    "history_json",
    "previous_json",
    "result_json",
    "run_document",
    "with_decision",
]

#: The family's version: raised when any member's schema changes (a test holds each
#: schema's fingerprint per version, so a change without a raise fails).
SCHEMA_VERSION = 2

#: Every member: its ``document`` name -> the stem of its schema file in
#: ``schemas/output/`` (what ``oxy schema`` takes).
DOCUMENTS: dict[str, str] = {
    "run": "run",
    "error": "error",
    "validation": "validation",
    "history": "history",
    "runDetail": "run-detail",
    "comparison": "comparison",
    "testHistory": "test-history",
    "cacheStats": "cache-stats",
    "cacheCleared": "cache-cleared",
    "caseList": "case-list",
    "caseDetail": "case-detail",
    "branchList": "branch-list",
    "branchDetail": "branch-detail",
    "judgeCalibration": "judge-calibration",
    "judgeCalibrations": "judge-calibrations",
}

#: The keys every run document shares, after its kind's own body, in print order.
ENVELOPE = ("results", "decision", "summary", "history", "warnings", "error")

_WORD = re.compile(r"_([a-z0-9])")


def camel(key: str) -> str:
    """``task_description`` -> ``taskDescription`` (a camelCase key stays as it is)."""
    return _WORD.sub(lambda m: m.group(1).upper(), key)


def camel_keys(data: Mapping[str, Any]) -> dict[str, Any]:
    """The mapping's own keys in camelCase; values untouched (they may be a model's or a
    user's data, whose keys are theirs)."""
    return {camel(str(k)): v for k, v in data.items()}


def document(name: str, body: Mapping[str, Any]) -> dict[str, Any]:
    """A member of the family: its version and name first, then ``body``."""
    if name not in DOCUMENTS:
        raise KeyError(f"no document {name!r} in the family")
    return {"schemaVersion": SCHEMA_VERSION, "document": name, **body}


def error_document(error: str, code: int) -> dict[str, Any]:
    """What a command prints with ``--format json`` when it fails before its own
    document exists: the error (one line per problem) and the exit code."""
    return document("error", {"error": redact(error), "exitCode": code})


def _r(value: float | None, digits: int = 6) -> float | None:
    return None if value is None else round(value, digits)


def _previous(result: Result) -> dict[str, Any] | None:
    p = result.previous
    return None if p is None else previous_json(p)


def previous_json(p: Previous) -> dict[str, Any]:
    """A previous result as every document carries it; ``tally`` is the subject's
    (passes, samples) in that run, so ``oxy report`` can run the paired regression
    test again."""
    return {
        "accuracy": _r(p.accuracy),
        "at": p.at,
        "runId": p.run_id,
        "tally": None if p.tally is None else list(p.tally),
    }


def result_json(
    result: Result,
    outcome: str | None,
    *,
    run_id: str | None = None,
    stored_id: str | None = None,
    created_at: str | None = None,
) -> dict[str, Any]:
    """One result as the GraphQL API's ``Result`` (``Result.to_dict()`` with ``id``,
    ``runId`` and ``createdAt``, null where unknown, and ``outcome``: what the decision
    made of it), then what the decision read besides, so ``oxy report`` can decide again
    on the document alone: ``previous`` (what a drop is measured against),
    ``regressions``, ``runErrors`` and ``judgeErrors`` (``--strict``)."""
    body = result.to_dict()
    return {
        "id": stored_id,
        "runId": run_id,
        **body,
        "createdAt": created_at,
        "outcome": outcome,
        "previous": _previous(result),
        "regressions": [redact(r) for r in result.regressions],
        "runErrors": result.run_errors,
        "judgeErrors": result.judge_errors,
    }


def gates_json(gates: Gates) -> dict[str, Any]:
    return {
        "minAccuracy": gates.min_accuracy,
        "thresholdMode": gates.threshold_mode,
        "strict": gates.strict,
        "failOnDrop": gates.fail_on_drop,
        "failOnRegression": gates.fail_on_regression,
        "inconclusive": gates.inconclusive,
        "allowEmpty": gates.allow_empty,
        "minPassRate": gates.min_pass_rate,
    }


def _threshold(t: ThresholdResult | None) -> dict[str, Any] | None:
    if t is None:
        return None
    return {
        "minAccuracy": t.min_accuracy,
        "mode": t.mode,
        "passed": t.passed,
        "value": _r(t.value),
        "interval": interval_dict(t.interval),
        "failing": [{"name": n, "accuracy": _r(a)} for n, a in t.failing],
        "message": redact(t.message),
    }


def _pass_rate(p: PassRateResult | None) -> dict[str, Any] | None:
    if p is None:
        return None
    return {
        "minPassRate": p.min_pass_rate,
        "passed": p.passed,
        "value": _r(p.value),
        "interval": interval_dict(p.interval),
        "checked": p.checked,
        "failing": list(p.failing),
        "message": redact(p.message),
    }


def _drop(d: DropResult | None) -> dict[str, Any] | None:
    if d is None:
        return None
    return {
        "maxDrop": d.max_drop,
        "passed": d.passed,
        "checked": d.checked,
        "compared": d.compared,
        "dropped": [
            {
                "name": name,
                "accuracy": _r(accuracy),
                "previous": previous_json(prev),
                "change": round((accuracy - prev.accuracy) * 100, 4),
            }
            for name, accuracy, prev in d.dropped
        ],
        "message": redact(d.message),
    }


def decision_json(decision: Decision) -> dict[str, Any]:
    """The one decision on a run: its exit code and why, the gates it applied and their
    checks."""
    return {
        "exitCode": decision.code,
        "passed": decision.passed,
        "headline": decision.headline,
        "reasons": [redact(r) for r in decision.reasons],
        "warnings": list(decision.warnings),
        "gates": gates_json(decision.gates),
        "threshold": _threshold(decision.threshold),
        "passRate": _pass_rate(decision.pass_rate),
        "drop": _drop(decision.drop),
        "regression": None
        if decision.regression is None
        else {**decision.regression.to_dict(), "message": redact(decision.regression.message)},
    }


def history_json(notes: Iterable[StoredRun]) -> list[dict[str, Any]]:
    """Where a run's results went, one entry per history database (none: history off)."""
    return [
        {
            "db": n.db,
            "runId": n.run_id,
            "stored": n.stored,
            "error": None if n.error is None else redact(n.error),
            "readError": None if n.read_error is None else redact(n.read_error),
        }
        for n in notes
    ]


def _summary(decision: Decision, count: int, interrupted: bool, cached: int) -> dict[str, Any]:
    states = [o.state for o in decision.outcomes]
    return {
        "results": count,
        "passed": states.count("passed"),
        "failed": states.count("failed"),
        "unknown": states.count("unknown"),
        "neutral": states.count("neutral"),
        "interrupted": interrupted,
        "cachedCalls": cached,
        "exitCode": decision.code,
    }


def run_document(
    kind: str,
    body: Mapping[str, Any],
    results: Sequence[Result],
    decision: Decision,
    *,
    interrupted: bool,
    history: Iterable[StoredRun] = (),
    warnings: Iterable[str] = (),
    cached_calls: int = 0,
    error: str | None = None,
    run_ids: Sequence[str | None] | None = None,
) -> dict[str, Any]:
    """A run of ``kind`` as the family's ``run`` document: ``body`` (the kind's own
    keys, camelCase) between ``kind`` and the envelope every kind shares. ``run_ids``:
    each result's run in the history, where the kind knows it (else the run's one run
    id when it wrote to one history)."""
    notes = list(history)
    ids = {n.run_id for n in notes if n.run_id}
    only = next(iter(ids)) if len(ids) == 1 else None
    count = len(results)

    def shown_results() -> Iterator[dict[str, Any]]:
        states = [o.state for o in decision.outcomes]
        outcomes = {} if len(states) == count else {o.subject: o.state for o in decision.outcomes}
        for k, r in enumerate(results):
            state = states[k] if len(states) == count else outcomes.get(r.subject)
            run_id = run_ids[k] if run_ids is not None else only
            yield result_json(r, state, run_id=run_id)

    # A streamed run's results are written one at a time, as they are read back.
    shown: Any = listed(shown_results, count, stream=isinstance(results, Streamed))
    clash = set(body) & {"schemaVersion", "document", "kind", *ENVELOPE}
    if clash:
        raise ValueError(f"a {kind} run's body may not hold the envelope's {sorted(clash)}")
    return document(
        "run",
        {
            "kind": kind,
            **body,
            "results": shown,
            "decision": decision_json(decision),
            "summary": _summary(decision, count, interrupted, cached_calls),
            "history": history_json(notes),
            "warnings": [redact(w) for w in warnings],
            "error": None if error is None else redact(error),
        },
    )


def with_decision(doc: Mapping[str, Any], decision: Decision) -> dict[str, Any]:
    """A saved run document decided again (``oxy report``): the same document with its
    decision, each result's outcome and the summary's counts and exit code replaced."""
    out = dict(doc)
    states = [o.state for o in decision.outcomes]
    results = [dict(r) for r in doc.get("results", [])]
    if len(states) == len(results):
        for r, state in zip(results, states, strict=True):
            r["outcome"] = state
    out["results"] = results
    out["decision"] = decision_json(decision)
    summary = dict(doc.get("summary") or {})
    summary.update(
        _summary(
            decision,
            len(results),
            bool(summary.get("interrupted")),
            int(summary.get("cachedCalls") or 0),
        )
    )
    out["summary"] = summary
    return out
