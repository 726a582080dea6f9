"""The SDK's results: one :class:`~oxyeval.evaluation.Result` of kind ``sdk`` per (test
case, metric or evaluator), the shape every kind of test shares.

A metric's or an evaluator's own check (score at least its threshold, a
:class:`Threshold`'s bounds) is :attr:`Result.passed`; whether a run, a test case or an
``assert_test`` passed is never worked out here but by the one decision
(:func:`oxyeval.evaluation.decide`) over these results. The kind's CI-log lines are the
messages ``assert_test`` raises with.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..evaluation import Result, ResultKind, Score, register_kind
from ..redact import clip, redact

if TYPE_CHECKING:
    from ..evaluation import Decision

__all__ = [
    "SDK",
    "Measured",
    "case_states",
    "decide_results",
    "regression_lines",
    "sdk_result",
    "shown_case",
]


def _named(result: Result) -> str:
    """``case / metric``: how a result is named in messages (the run's label left out)."""
    details = result.details
    return f"{details.get('case', result.subject)} / {details.get('metric', '?')}"


def _error_line(result: Result) -> str:
    return f"{_named(result)}: error: {result.error or result.status}"


def _failed_line(result: Result) -> str:
    score = result.scores[0] if result.scores else None
    if result.score is not None:
        value = f"{result.score:.2f}"
    else:  # a score outside 0..1 is reported as given, never kept as a score
        value = str(result.details.get("score", "none"))
    if score is not None and score.threshold is not None:
        line = f"{_named(result)}: score {value} < threshold {score.threshold:g}"
    else:
        bounds = result.details.get("threshold")
        line = f"{_named(result)}: score {value} fails its threshold" + (
            f" ({bounds})" if bounds else ""
        )
    if score is not None and score.reason:
        line += f" (reason: {score.reason})"
    return redact(line)


#: The result kind of an SDK evaluation: ``scored``, or ``error`` (the metric, the
#: evaluator or the function under test failed: no score).
SDK = register_kind(
    ResultKind(
        name="sdk",
        statuses=("scored", "error", "interrupted"),
        metric="score",
        noun="evaluation",
        unknown_line=_error_line,
        failed_line=_failed_line,
    )
)


@dataclass
class Measured:
    """What one metric or evaluator made of one test case: a score 0..1 and its own
    check (``passed``: None without a threshold, or on an error), or why there is none
    (``error``). ``value`` is what the caller reports (a ``MetricData``, an
    ``Evaluation``); ``details`` is kept with the result."""

    score: float | None = None
    passed: bool | None = None
    reason: str | None = None
    error: str | None = None
    threshold: float | None = None
    value: Any = None
    details: dict[str, Any] = field(default_factory=dict)


def shown_case(text: str) -> str:
    """A test case's name in the history when it is its input: one line, bounded."""
    return clip(" ".join(text.split()), 200)


def sdk_result(
    label: str, case: str, metric: str, measured: Measured, latency_ms: float | None = None
) -> Result:
    """The result of ``metric`` on test case ``case`` in the run ``label``; its subject,
    ``label::case::metric``, is what a later run's result is compared with."""
    error = measured.error
    score = None if error is not None else measured.score
    details: dict[str, Any] = {"suite": label, "case": case, "metric": metric, "regressions": []}
    details.update(measured.details)
    value = _unit(score)
    if score is not None and value is None:
        details["score"] = clip(repr(score), 100)  # reported, never kept as a score
    passed = None if error is not None else measured.passed
    return Result(
        kind=SDK.name,
        subject=f"{label}::{case}::{metric}",
        status="error" if error is not None else "scored",
        passed=passed,
        score=value,
        latency_ms=latency_ms,
        error=error,
        scores=[
            Score(
                metric, value, passed=passed, threshold=measured.threshold, reason=measured.reason
            )
        ],
        details=details,
    )


def _unit(score: Any) -> float | None:
    """``score`` as a number 0..1, or None: a metric written by hand may set anything."""
    if score is None or isinstance(score, bool):
        return None
    try:
        value = float(score)
    except (TypeError, ValueError):
        return None
    return value if 0.0 <= value <= 1.0 else None  # NaN fails both bounds


def decide_results(results: Sequence[Result]) -> Decision:
    """The one decision over SDK results, with no run-wide gate: a result that could not
    be scored fails it (exit 3), one that failed its own check fails it (exit 1)."""
    from ..evaluation import Gates
    from ..evaluation.decision import decide  # looked up now: the one decision's own

    return decide(results, Gates(), kind=SDK.name)


def case_states(decision: Decision, sizes: Sequence[int]) -> list[bool]:
    """Whether each test case passed, read off ``decision``: its results come in order,
    ``sizes[i]`` of them for case i, and it passed when none failed or was unknown."""
    states, start = [], 0
    for size in sizes:
        mine = decision.outcomes[start : start + size]
        states.append(all(o.state in ("passed", "neutral") for o in mine))
        start += size
    return states


def regression_lines(results: Sequence[Result]) -> list[str]:
    """Each regression of ``results`` as it is printed: ``case / metric: why``."""
    return [f"{_named(r)}: {why}" for r in results for why in r.regressions]
