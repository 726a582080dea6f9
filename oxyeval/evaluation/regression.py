"""Did the suite get worse than its baseline, or is the run too small to tell?

A gate that compares a pass rate with the previous run's fails a stable test that went
from 3/3 to 2/3 by chance, or hides a real drop in an average. Here each test is
compared with itself in the baseline (a paired design: the same tests, so the tests'
own difficulty cancels out), and the mean change comes with its interval. Three
outcomes, so that noise is never called either way:

* ``regressed``: the whole interval lies below zero (a significant drop);
* ``not_regressed``: the interval rules out a drop larger than ``margin``;
* ``inconclusive``: neither. The run is too small to tell at this margin; the
  minimum detectable drop says how large a drop this run could have seen.

Per test, the pass shares use the Agresti-Caffo adjustment (one pass and one failure
added to each side): at 3/3 or 0/3 the plain binomial variance is zero and would call
any change certain. Tests are independent of each other, so the variances add. Pure and
stdlib only, like :mod:`.stats`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any, Literal

from .stats import Interval, normal_quantile

__all__ = ["DEFAULT_MARGIN", "DEFAULT_POWER", "PairedChange", "paired_change"]

#: A drop up to this (5 points of pass rate) counts as no regression when ruled out.
DEFAULT_MARGIN = 0.05
#: The power at which :attr:`PairedChange.min_detectable_drop` is stated.
DEFAULT_POWER = 0.8

Verdict = Literal["regressed", "not_regressed", "inconclusive"]
#: (passes, samples) of one test in one run.
Tally = tuple[int, int]


@dataclass(frozen=True)
class PairedChange:
    """The mean change of the tests' pass shares from the baseline to this run."""

    outcome: Verdict
    tests: int
    #: Mean of the raw per-test changes (this run's share minus the baseline's).
    change: float
    #: The interval of the adjusted mean change (``mean`` is the adjusted estimate).
    interval: Interval
    #: The smallest true drop this run would detect with ``power`` at ``confidence``.
    min_detectable_drop: float
    margin: float
    confidence: float
    power: float

    @property
    def message(self) -> str:
        low, high = self.interval.low * 100, self.interval.high * 100
        said = (
            f"pass rate change {self.change * 100:+.1f} points over {self.tests} test(s) "
            f"({self.confidence:.0%} interval {low:+.1f} to {high:+.1f})"
        )
        if self.outcome == "regressed":
            return f"regressed: {said}"
        if self.outcome == "not_regressed":
            return f"not regressed: {said}; a drop over {self.margin * 100:.1f} points is ruled out"
        return (
            f"inconclusive: {said}; this run is too small to tell at a {self.margin * 100:.1f}"
            f"-point margin (it would detect a drop of {self.min_detectable_drop * 100:.1f} "
            "points)"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "outcome": self.outcome,
            "tests": self.tests,
            "change": round(self.change, 6),
            "interval": {
                "low": round(self.interval.low, 6),
                "high": round(self.interval.high, 6),
                "estimate": round(self.interval.mean, 6),
            },
            "minDetectableDrop": round(self.min_detectable_drop, 6),
            "margin": self.margin,
            "confidence": self.confidence,
            "power": self.power,
            "message": self.message,
        }


def _adjusted(tally: Tally) -> tuple[float, float]:
    passes, n = tally
    if n < 1 or not 0 <= passes <= n:
        raise ValueError(f"a tally needs 0 <= passes <= samples and samples >= 1: {tally}")
    p = (passes + 1) / (n + 2)
    return p, p * (1 - p) / (n + 2)


def paired_change(
    pairs: Sequence[tuple[Tally, Tally]],
    *,
    margin: float = DEFAULT_MARGIN,
    confidence: float = 0.95,
    power: float = DEFAULT_POWER,
) -> PairedChange | None:
    """Compare each test's ``(baseline, this run)`` tallies; None with no test in both."""
    if not 0 <= margin < 1:
        raise ValueError(f"margin must be in [0, 1), got {margin}")
    if not 0 < power < 1:
        raise ValueError(f"power must be between 0 and 1, got {power}")
    if not pairs:
        return None
    z = normal_quantile(confidence)
    changes, adjusted, variance = [], [], 0.0
    for base, head in pairs:
        pb, vb = _adjusted(base)
        ph, vh = _adjusted(head)
        changes.append(head[0] / head[1] - base[0] / base[1])
        adjusted.append(ph - pb)
        variance += vb + vh
    m = len(pairs)
    estimate = math.fsum(adjusted) / m
    se = math.sqrt(variance) / m
    interval = Interval(estimate - z * se, estimate + z * se, estimate)
    if interval.high < 0:
        outcome: Verdict = "regressed"
    elif interval.low >= -margin:
        outcome = "not_regressed"
    else:
        outcome = "inconclusive"
    return PairedChange(
        outcome=outcome,
        tests=m,
        change=math.fsum(changes) / m,
        interval=interval,
        min_detectable_drop=(z + NormalDist().inv_cdf(power)) * se,
        margin=margin,
        confidence=confidence,
        power=power,
    )
