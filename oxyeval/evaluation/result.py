"""What every kind of test produces: a :class:`Result` per subject, with named :class:`Score`s.

Kinds differ in what they run (a consistency test runs an agent n times, a test case
renders a prompt once, an A/B test runs branches); they agree on this shape, so one
decision (:mod:`.decision`), one history table and one JSON reader serve them all. What
a kind adds beyond these fields goes in ``details``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .._pickled import as_values

__all__ = ["Previous", "Result", "Score"]


def _round(value: float | None, digits: int = 6) -> float | None:
    return None if value is None else round(value, digits)


@dataclass(frozen=True)
class Score:
    """One named measurement of a result: ``accuracy`` 0.83, ``similarity`` 0.91, a judge's
    ``PASS``. ``passed`` is None when the metric has no threshold (reported, not gated)."""

    metric: str
    value: float | None
    label: str | None = None
    passed: bool | None = None
    threshold: float | None = None
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "value": _round(self.value),
            "label": self.label,
            "passed": self.passed,
            "threshold": self.threshold,
            "reason": self.reason,
        }


@as_values
@dataclass(frozen=True, slots=True)
class Previous:
    """The latest earlier scored result of the same subject in the history: what a drop is
    measured against. ``accuracy`` is its headline score (0..1), named as consistency
    tests' reports have always named it."""

    accuracy: float
    at: str  # when it was stored: ISO-8601 UTC
    run_id: str
    #: The subject's (passes, samples) in that run, all its repeats together: what
    #: ``--fail-on-regression`` pairs this run's tally with (None: not read).
    tally: tuple[int, int] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"accuracy": _round(self.accuracy), "at": self.at, "run_id": self.run_id}


@dataclass(slots=True)
class Result:
    """One subject's outcome in one run.

    ``status`` is one of its kind's statuses (:mod:`.kinds`); ``passed`` is the result's
    own check (a case's score against its threshold, a judged test's pass rate against
    its success threshold): None when it has none or could not be judged (pending, an
    error), so that run-wide gates (``--min-accuracy``) apply instead. ``score`` is the
    headline value 0..1 that gates, drops and trends use.
    """

    kind: str
    subject: str  # what was tested, as shown: "file.agent.yml::name", a case id
    status: str
    passed: bool | None = None
    score: float | None = None
    case: str | None = None
    branch: str | None = None
    repeat: int = 0
    latency_ms: float | None = None
    ttft_ms: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    output: str | None = None
    error: str | None = None
    scores: list[Score] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    #: The earlier result a drop is measured against (None: none, or no history).
    previous: Previous | None = None
    #: Why this result regressed against its history (empty: it did not).
    regressions: tuple[str, ...] = ()
    #: Errors inside a result that still has a score (a failed run among n, a judge that
    #: gave no verdict): reported, and fatal only under ``--strict``.
    run_errors: int = 0
    judge_errors: int = 0

    def to_dict(self) -> dict[str, Any]:
        """The one JSON shape of a result of any kind (live, read back from the history,
        and later the API's): camelCase like the Testing API, every key always present.
        Texts are scrubbed of secrets by whoever prints it (the history stores them
        scrubbed already)."""
        return {
            "kind": self.kind,
            "subject": self.subject,
            "caseId": self.case,
            "branch": self.branch,
            "repeat": self.repeat,
            "status": self.status,
            "passed": self.passed,
            "score": _round(self.score),
            "latencyMs": _round(self.latency_ms, 3),
            "timeToFirstTokenMs": _round(self.ttft_ms, 3),
            "inputTokens": self.input_tokens,
            "outputTokens": self.output_tokens,
            "costUsd": _round(self.cost_usd, 8),
            "output": self.output,
            "error": self.error,
            "scores": [s.to_dict() for s in self.scores],
            "details": dict(self.details),
        }
