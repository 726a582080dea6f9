"""The gates a run may be held to, each checked on its own: ``--min-accuracy`` with
``--threshold-mode`` (:func:`check_threshold`), ``--fail-on-drop`` against each result's
previous one (:func:`check_drop`) and ``--min-pass-rate`` (:func:`check_pass_rate`); what
each found, with the sentence a CI log prints. :mod:`.decision` weighs them together into
the run's one exit code."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .kinds import result_kind
from .result import Previous, Result, _round
from .stats import Interval, clustered_interval, wilson_interval

__all__ = [
    "DropResult",
    "Gates",
    "PassRateResult",
    "ThresholdResult",
    "check_drop",
    "check_pass_rate",
    "check_threshold",
    "interval_dict",
    "moment",
    "percent",
]

_EPS = 1e-9


def moment(timestamp: str) -> str:
    """An ISO-8601 UTC timestamp as messages print it: to the minute, zone named
    (``2026-11-20 10:04 UTC``), so two runs of one day can be told apart."""
    return f"{timestamp[:16].replace('T', ' ')} UTC"


def percent(value: float) -> str:
    """A 0..1 score as reports print it (the pretty report's "Accuracy: 69.70%"): one
    unit in every message; JSON keeps 0..1 (``value``, ``min_accuracy``)."""
    return f"{value * 100:.2f}%"


@dataclass(frozen=True)
class Gates:
    """What a run must meet: ``--min-accuracy``/``--threshold-mode``, ``--min-pass-rate``,
    ``--strict``, ``--fail-on-drop`` (points), ``--fail-on-regression``."""

    min_accuracy: float | None = None
    threshold_mode: str = "average"
    strict: bool = False
    fail_on_drop: float | None = None
    fail_on_regression: bool = False
    #: ``--allow-empty``: a gate given with nothing to gate passes (with a warning);
    #: without it, an empty selection fails, so a typo in CI is never a green build.
    allow_empty: bool = False
    #: ``--min-pass-rate``: the share of results with a check of their own (a case's score
    #: against its threshold, a judged test's pass rate) that must pass it. Given, a
    #: result that failed its check fails the run only through it: some may fail.
    min_pass_rate: float | None = None
    #: ``--inconclusive``: whether ``--fail-on-regression``'s run too small to tell
    #: passes (the default, with a warning) or fails.
    inconclusive: str = "pass"

    @property
    def gating(self) -> bool:
        """A gate that needs something to gate was asked for: there must be results."""
        return (
            self.min_accuracy is not None
            or self.fail_on_drop is not None
            or self.min_pass_rate is not None
        )


@dataclass
class ThresholdResult:
    min_accuracy: float
    mode: str
    passed: bool
    value: float | None  # the mean (average mode) or the minimum (all mode)
    failing: list[tuple[str, float | None]]
    message: str
    #: The average's 95% interval, its standard error clustered by subject (average
    #: mode; None in all mode, or with no score).
    interval: Interval | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "min_accuracy": self.min_accuracy,
            "mode": self.mode,
            "passed": self.passed,
            "value": _round(self.value),
            "interval": interval_dict(self.interval),
            "failing": [{"name": n, "accuracy": _round(a)} for n, a in self.failing],
            "message": self.message,
        }


@dataclass
class DropResult:
    """``--fail-on-drop``: the results whose score fell by more than ``max_drop`` points
    against their previous run. ``checked`` is False when the history could not be read,
    so a drop cannot be ruled out."""

    max_drop: float
    passed: bool
    dropped: list[tuple[str, float, Previous]]  # subject, score now, the previous result
    checked: bool
    message: str
    #: Results that had an earlier score to compare with: 0 on a first run, when passing
    #: says nothing (no green tick for it).
    compared: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "max_drop": self.max_drop,
            "passed": self.passed,
            "checked": self.checked,
            "compared": self.compared,
            "dropped": [
                {
                    "name": name,
                    "accuracy": _round(accuracy),
                    "previous": previous.to_dict(),
                    "change": round((accuracy - previous.accuracy) * 100, 4),
                }
                for name, accuracy, previous in self.dropped
            ],
            "message": self.message,
        }


@dataclass
class PassRateResult:
    """``--min-pass-rate``: how many results with a check of their own passed it, against
    the share asked for; ``failing`` names those that did not."""

    min_pass_rate: float
    passed: bool
    value: float | None  # passed / checked; None when no result has a check of its own
    checked: int
    failing: list[str]
    message: str
    #: The pass rate's 95% Wilson interval (None when nothing was checked).
    interval: Interval | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "min_pass_rate": self.min_pass_rate,
            "passed": self.passed,
            "value": _round(self.value),
            "interval": interval_dict(self.interval),
            "checked": self.checked,
            "failing": list(self.failing),
            "message": self.message,
        }


def interval_dict(interval: Interval | None) -> dict[str, float] | None:
    """An interval as JSON carries it: 0..1 like the value it surrounds."""
    if interval is None:
        return None
    # 4 decimals: a saved report re-gated from its 6-decimal scores says the same.
    return {"low": round(interval.low, 4), "high": round(interval.high, 4)}


def _uncertainty(interval: Interval | None, count: int, noun: str) -> str:
    """What a gate's message adds so that a number is read with its noise."""
    if interval is None or count < 2:
        return ""
    return (
        f" (95% interval {percent(interval.low)} to {percent(interval.high)} over {count} {noun}s)"
    )


def check_pass_rate(
    results: Sequence[Result], min_pass_rate: float, *, kind: str | None = None
) -> PassRateResult:
    """Apply ``--min-pass-rate`` to the results that have a check of their own (and a known
    outcome: an error or a pending case is neither a pass nor a failure here)."""
    _metric, noun = _words(results, kind)
    own = [
        r
        for r in results
        if r.passed is not None
        and r.status not in result_kind(r.kind).unknown
        and r.status not in result_kind(r.kind).neutral
    ]
    failing = [r.subject for r in own if r.passed is False]
    if not own:
        message = f"--min-pass-rate {min_pass_rate:g}: no {noun} has a check of its own to pass"
        return PassRateResult(min_pass_rate, False, None, 0, [], message)
    value = (len(own) - len(failing)) / len(own)
    passed = value + _EPS >= min_pass_rate
    verb = "meets" if passed else "below"
    interval = wilson_interval(len(own) - len(failing), len(own))
    message = (
        f"Pass rate {percent(value)} ({len(own) - len(failing)} of {len(own)} {noun}(s) passed) "
        f"{verb} --min-pass-rate {percent(min_pass_rate)}"
    )
    if failing and not passed:
        shown = ", ".join(failing[:10]) + (
            f" and {len(failing) - 10} more" if len(failing) > 10 else ""
        )
        message += f"; failed: {shown}"
    return PassRateResult(min_pass_rate, passed, value, len(own), failing, message, interval)


def _words(results: Sequence[Result], kind: str | None) -> tuple[str, str]:
    """The metric and the noun messages use: the kind's (one kind per decision), named
    by the caller when there may be no results to tell it."""
    name = kind or (results[0].kind if results else None)
    if name is None:
        return "score", "result"
    found = result_kind(name)
    return found.metric, found.noun


def check_threshold(
    results: Sequence[Result],
    min_accuracy: float,
    mode: str = "average",
    *,
    kind: str | None = None,
) -> ThresholdResult | None:
    """Apply ``--min-accuracy`` to the results' scores; None when there is nothing to
    compare (a warning, not a failure)."""
    if mode not in ("average", "all"):
        raise ValueError(f"threshold mode must be 'average' or 'all', not {mode!r}")
    if not results:
        return None
    metric, noun = _words(results, kind)
    labelled = [(r.subject, r.score) for r in results]
    unscored = [(name, score) for name, score in labelled if score is None]
    scored = [score for _name, score in labelled if score is not None]
    failing = [(n, s) for n, s in labelled if s is None or s + _EPS < min_accuracy]

    def fmt(items: list[tuple[str, float | None]]) -> str:
        return ", ".join(
            f"{n}: {percent(s)}" if s is not None else f"{n}: no score" for n, s in items
        )

    if mode == "average":
        value = sum(scored) / len(scored) if scored else None
        passed = value is not None and value + _EPS >= min_accuracy and not unscored
        if value is None:
            message = f"No {noun} could be scored, threshold {percent(min_accuracy)} not met: {fmt(unscored)}"
        interval = _clustered(results)
        if value is not None:
            verb = "meets" if value + _EPS >= min_accuracy else "below"
            message = f"Average {metric} {percent(value)} {verb} threshold {percent(min_accuracy)}"
            message += _uncertainty(interval, len({r.subject for r in results}), noun)
            if unscored:
                message += f", but {len(unscored)} {noun}(s) could not be scored: {fmt(unscored)}"
        return ThresholdResult(min_accuracy, mode, passed, value, failing, message, interval)

    value = min(scored) if scored and not unscored else None
    passed = not failing
    if passed:
        message = f"All {len(labelled)} {noun}(s) meet threshold {percent(min_accuracy)}"
    else:
        message = (
            f"{len(failing)} {noun}(s) below threshold {percent(min_accuracy)}: {fmt(failing)}"
        )
    return ThresholdResult(min_accuracy, mode, passed, value, failing, message)


def _clustered(results: Sequence[Result]) -> Interval | None:
    """The scores' mean with its interval, the runs of one subject (a case's repeats)
    one cluster: they share the subject's difficulty, so they are not independent."""
    groups: dict[str, list[float]] = {}
    for r in results:
        if r.score is not None:
            groups.setdefault(r.subject, []).append(r.score)
    if len(groups) < 2:  # one subject says nothing of the spread between subjects
        return None
    return clustered_interval(groups.values())


def check_drop(
    results: Sequence[Result],
    max_drop: float,
    *,
    history_ok: bool = True,
    why: str | None = None,
    kind: str | None = None,
) -> DropResult:
    """Apply ``--fail-on-drop``: fail the results whose score is more than ``max_drop``
    points (0-100) below their previous run's. A result with no previous scored run, or
    without a score now (reported as not scored anyway), never counts as a drop.
    ``history_ok=False``: the earlier results could not be read (``why``), so drops
    cannot be ruled out. A history read but not written still decides."""
    if not 0.0 <= max_drop <= 100.0:
        raise ValueError(f"a drop is in points between 0 and 100, not {max_drop!r}")
    _metric, noun = _words(results, kind)
    dropped: list[tuple[str, float, Previous]] = []
    compared = 0
    for r in results:
        if r.score is None or r.previous is None or r.status == "interrupted":
            continue
        compared += 1
        if (r.previous.accuracy - r.score) * 100 > max_drop + _EPS:
            dropped.append((r.subject, r.score, r.previous))
    if not history_ok:
        message = (
            f"--fail-on-drop {max_drop:g}: cannot compare with the previous runs, the history "
            "could not be read" + (f" ({why})" if why else "")
        )
        return DropResult(max_drop, False, dropped, False, message, compared)
    if dropped:
        shown = ", ".join(
            f"{name}: {prev.accuracy * 100:.1f}% -> {score * 100:.1f}% "
            f"({(score - prev.accuracy) * 100:+.1f} pts vs {moment(prev.at)})"
            for name, score, prev in dropped
        )
        message = f"{len(dropped)} {noun}(s) dropped more than {max_drop:g} pts: {shown}"
    elif compared:
        message = f"No {noun} dropped more than {max_drop:g} pts ({compared} compared)"
    else:
        message = f"--fail-on-drop {max_drop:g}: no earlier run to compare with; nothing dropped"
    return DropResult(max_drop, not dropped, dropped, True, message, compared)
