"""``--fail-on-regression`` as a statistical gate: this run against its baseline run.

Each subject's (passes, samples) tally here is paired with its tally in the run its
previous result came from (the baseline, read from the history with that previous
result), and :func:`.regression.paired_change` tells a significant drop (exit 1) from
no regression and from a run too small to tell (inconclusive: decided by
``--inconclusive pass|fail``, pass by default with a warning, so a small suite does not
fail CI on noise and the minimum detectable drop says how much larger it should be).

What a sample is, by kind (:func:`tally_of`): a test case's repeat passes or fails; a
pass/fail criterion's judged runs (``passes`` over ``runs``); a consistency test's
answers that fall in the largest answer cluster over its answers (the majority answer
rate as a tally); any other result with a check of its own counts as one sample.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from .kinds import result_kind
from .regression import PairedChange, Tally, paired_change
from .result import Result

__all__ = [
    "INCONCLUSIVE_POLICIES",
    "RegressionCheck",
    "add_tallies",
    "check_regression",
    "subject_tallies",
    "tally_of",
    "tally_of_row",
]

#: What ``--inconclusive`` accepts: whether a run too small to tell passes or fails.
INCONCLUSIVE_POLICIES = ("pass", "fail")


def tally_of(result: Result) -> Tally | None:
    """(passes, samples) of one result, or None when it has none (unscored, pending)."""
    return tally_of_row(result.kind, result.status, result.passed, result.details)


def tally_of_row(
    kind: str, status: str, passed: bool | None, details: dict[str, Any] | None
) -> Tally | None:
    """:func:`tally_of` from the fields it reads, as the history stores them (a run
    reads thousands of baselines this way, without making each a result)."""
    if status in result_kind(kind).unknown:
        return None
    details = details or {}
    given = details.get("tally")
    if isinstance(given, list | tuple) and len(given) == 2:
        passes, samples = int(given[0]), int(given[1])
        return (passes, samples) if samples > 0 else None
    passes, runs = details.get("passes"), details.get("runs")
    if isinstance(passes, int) and isinstance(runs, int) and not isinstance(passes, bool):
        return (passes, runs) if runs > 0 else None
    if passed is None:
        return None
    return (1 if passed else 0, 1)


def add_tallies(tallies: Iterable[Tally | None]) -> Tally | None:
    """The sum of tallies (None when none is known)."""
    known = [t for t in tallies if t is not None]
    if not known:
        return None
    return (sum(t[0] for t in known), sum(t[1] for t in known))


def subject_tallies(results: Sequence[Result]) -> dict[str, Tally]:
    """Each subject's tally in this run: a case's repeats add up."""
    by_subject: dict[str, list[Tally | None]] = {}
    for r in results:
        if r.status != "interrupted":
            by_subject.setdefault(r.subject, []).append(tally_of(r))
    out: dict[str, Tally] = {}
    for subject, tallies in by_subject.items():
        total = add_tallies(tallies)
        if total is not None:
            out[subject] = total
    return out


def _baselines(results: Sequence[Result]) -> dict[str, Tally]:
    found: dict[str, Tally] = {}
    for r in results:
        if r.previous is not None and r.previous.tally is not None:
            found.setdefault(r.subject, r.previous.tally)
    return found


Outcome = Literal["regressed", "not_regressed", "inconclusive", "no_baseline", "unread"]


@dataclass(frozen=True)
class RegressionCheck:
    """What ``--fail-on-regression``'s paired test found, and whether the run passes it."""

    outcome: Outcome
    passed: bool
    #: False when the history could not be read: a regression cannot be ruled out.
    checked: bool
    policy: str
    message: str
    change: PairedChange | None = None
    #: Subjects paired with their baseline (those only in one run are left out).
    compared: int = 0
    baseline_runs: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "outcome": self.outcome,
            "passed": self.passed,
            "checked": self.checked,
            "inconclusive": self.policy,
            "compared": self.compared,
            "baselineRuns": list(self.baseline_runs),
            "change": None if self.change is None else self.change.to_dict(),
            "message": self.message,
        }


def check_regression(
    results: Sequence[Result],
    *,
    inconclusive: str = "pass",
    history_ok: bool = True,
    why: str | None = None,
) -> RegressionCheck:
    """Pair each subject's tally with its baseline's and test the mean change."""
    if inconclusive not in INCONCLUSIVE_POLICIES:
        raise ValueError(f"--inconclusive is pass or fail, not {inconclusive!r}")
    if not history_ok:
        return RegressionCheck(
            "unread",
            False,
            False,
            inconclusive,
            "--fail-on-regression: cannot compare with the baseline run, the history could "
            "not be read" + (f" ({why})" if why else ""),
        )
    now, before = subject_tallies(results), _baselines(results)
    paired = sorted(s for s in now if s in before)
    runs = tuple(sorted({r.previous.run_id for r in results if r.previous and r.subject in paired}))
    change = paired_change([(before[s], now[s]) for s in paired])
    if change is None:
        return RegressionCheck(
            "no_baseline",
            True,
            True,
            inconclusive,
            "--fail-on-regression: no result has a baseline in the history to compare with",
        )
    passed = change.outcome == "not_regressed" or (
        change.outcome == "inconclusive" and inconclusive == "pass"
    )
    message = f"--fail-on-regression: {change.message}"
    if change.outcome == "inconclusive":
        message += f" (--inconclusive {inconclusive}: {'passing' if passed else 'failing'})"
    return RegressionCheck(
        change.outcome, passed, True, inconclusive, message, change, len(paired), runs
    )
