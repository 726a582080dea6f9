"""Small-sample statistics every kind of test may need: confidence intervals and normalisation.

In the evaluation core because several kinds share them: the A/B ranking (is the winner
more than noise over N iterations? the balanced score's min-max scaling), a statistical
gate in CI, judged pass/fail tests (a pass rate with its uncertainty). Pure and stdlib
only: no numpy, no I/O, deterministic for a seed, so a report can be reproduced.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from statistics import NormalDist, fmean

__all__ = [
    "Interval",
    "bootstrap_interval",
    "clustered_interval",
    "min_max_normalise",
    "normal_quantile",
    "wilson_interval",
]


@dataclass(frozen=True)
class Interval:
    """A confidence interval ``[low, high]`` around a point estimate ``mean``.

    ``mean`` is the statistic of the sample itself (a mean, a pass share); it need not be
    the interval's midpoint: a percentile bootstrap of skewed data or a Wilson interval
    near 0 or 1 is lopsided, and saying so is the point of those methods.
    """

    low: float
    high: float
    mean: float

    def overlaps(self, other: Interval) -> bool:
        """Whether the two intervals share a point; touching ends count as overlapping.

        Used to call a difference significant only when the intervals are apart: touching
        is the conservative side, a tie in the reported digits must not crown a winner.
        """
        return self.low <= other.high and other.low <= self.high

    @property
    def width(self) -> float:
        """``high - low``: how much the data leave open (0 for one value or no spread)."""
        return self.high - self.low


def _check_confidence(confidence: float) -> None:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1 (exclusive), got {confidence}")


def _quantile(ordered: Sequence[float], q: float) -> float:
    """The ``q`` quantile of sorted values, linear between order statistics (numpy's
    default), written so infinities pass through (``inf - inf`` is never computed)."""
    pos = q * (len(ordered) - 1)
    below = math.floor(pos)
    frac = pos - below
    lo = ordered[below]
    if frac == 0.0 or below + 1 >= len(ordered):
        return lo
    hi = ordered[below + 1]
    if lo == hi:
        return lo
    return lo + (hi - lo) * frac


def bootstrap_interval(
    values: Iterable[float | None],
    *,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
    statistic: Callable[[Sequence[float]], float] = fmean,
) -> Interval | None:
    """A percentile bootstrap interval for ``statistic`` (the mean by default) of ``values``.

    ``resamples`` times, draw ``len(values)`` values with replacement and take the
    statistic; the interval runs from the ``(1 - confidence) / 2`` to the
    ``(1 + confidence) / 2`` quantile of those statistics. ``None`` values (an iteration
    that had no score) are dropped first; no values left gives None, one value a
    zero-width interval at that value.

    Why the percentile bootstrap: scores are bounded (quality in 0..1) and latencies are
    skewed, so a normal-theory ``mean +- t*s/sqrt(n)`` interval can run past 0 or 1 and
    is symmetric where the data are not; the percentile interval needs no distribution,
    stays inside the observed range and follows any skew. The price is small samples:
    a resample can only repeat what was seen, so with few values (below about 10) the
    interval is too narrow, it covers the true mean less often than ``confidence`` says,
    and with 2 values it is close to their range. A caller that calls a difference
    significant from it should require a minimum number of values
    (the A/B significance call does) and say how many there were.

    Deterministic: the same values, ``seed`` and ``resamples`` give the same interval
    (a private ``random.Random(seed)``; the global generator is never touched).
    """
    _check_confidence(confidence)
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, got {resamples}")
    sample = [float(v) for v in values if v is not None]
    if not sample:
        return None
    if any(math.isnan(v) for v in sample):
        raise ValueError("bootstrap_interval: a value is NaN")
    point = statistic(sample)
    if len(sample) == 1 or min(sample) == max(sample):
        return Interval(point, point, point)
    rng = random.Random(seed)
    n = len(sample)
    # One draw of all resamples (the same random sequence as one draw per resample, so
    # the same interval), sliced: a call per resample cost most of the time.
    draws = rng.choices(sample, k=n * resamples)
    estimates = sorted(statistic(draws[i : i + n]) for i in range(0, n * resamples, n))
    alpha = (1.0 - confidence) / 2.0
    return Interval(_quantile(estimates, alpha), _quantile(estimates, 1.0 - alpha), point)


def wilson_interval(passes: int, n: int, confidence: float = 0.95) -> Interval | None:
    """The Wilson score interval for a pass share of ``passes`` out of ``n``; None for n = 0.

    Chosen over the textbook ``p +- z*sqrt(p(1-p)/n)`` (Wald) because that one collapses
    to zero width at 0 or n passes (10 of 10 would claim certainty) and runs outside 0..1;
    Wilson stays inside 0..1 and keeps a sensible width at the ends and for small ``n``.
    ``mean`` is the observed share ``passes / n``.
    """
    _check_confidence(confidence)
    if n < 0 or not 0 <= passes <= n:
        raise ValueError(f"wilson_interval needs 0 <= passes <= n, got {passes} of {n}")
    if n == 0:
        return None
    z = normal_quantile(confidence)
    p = passes / n
    z2n = z * z / n
    centre = (p + z2n / 2.0) / (1.0 + z2n)
    half = z * math.sqrt(p * (1.0 - p) / n + z2n / (4.0 * n)) / (1.0 + z2n)
    low = 0.0 if passes == 0 else max(0.0, centre - half)
    high = 1.0 if passes == n else min(1.0, centre + half)
    return Interval(low, high, p)


def normal_quantile(confidence: float) -> float:
    """The two-sided normal quantile z of ``confidence`` (1.959964 for 0.95)."""
    _check_confidence(confidence)
    return NormalDist().inv_cdf(1.0 - (1.0 - confidence) / 2.0)


def clustered_interval(
    groups: Iterable[Sequence[float]],
    confidence: float = 0.95,
    *,
    bounds: tuple[float, float] | None = (0.0, 1.0),
) -> Interval | None:
    """The mean of every value in ``groups`` with a standard error clustered by group.

    A suite that runs each test several times has samples that are not independent: the
    runs of one test share its difficulty, so they agree with each other more than
    with another test's. The textbook ``sd / sqrt(n)`` treats 10 tests x 10 runs as 100
    independent draws and can be several times too narrow (Miller, "Adding Error Bars to
    Evals", 2024). The clustered (sandwich) estimator sums residuals within each group
    first: ``SE^2 = sum_g (sum_{i in g} (x_i - mean))^2 / n^2``; with one value per group
    it is the usual one. Normal interval ``mean +- z*SE``, cut to ``bounds`` (scores and
    pass shares live in 0..1; None to leave it uncut). None when there are no values.
    """
    values = [[float(v) for v in g] for g in groups]
    flat = [v for g in values for v in g]
    if not flat:
        return None
    if any(not math.isfinite(v) for v in flat):
        raise ValueError("clustered_interval: values must be finite")
    n = len(flat)
    mean = fmean(flat)
    se = math.sqrt(sum(sum(v - mean for v in g) ** 2 for g in values)) / n
    half = normal_quantile(confidence) * se
    low, high = mean - half, mean + half
    if bounds is not None:
        low, high = max(bounds[0], low), min(bounds[1], high)
    return Interval(low, high, mean)


def min_max_normalise(
    values: Sequence[float | None], *, invert: bool = False
) -> list[float | None]:
    """Each value scaled to 0..1 by the smallest and largest known one; None stays None.

    ``(v - min) / (max - min)``, or with ``invert`` (lower is better: latency, cost)
    ``(max - v) / (max - min)``, so 1.0 is always the best. When every known value is
    the same (including a single value) each gets 1.0, not 0 or a division by zero:
    no branch is worse than another on that metric, so none should lose points for it,
    and a composite score then ranks on the metrics that do differ.
    """
    known = [v for v in values if v is not None]
    if any(not math.isfinite(v) for v in known):
        raise ValueError("min_max_normalise: values must be finite numbers or None")
    if not known:
        return [None] * len(values)
    lo, hi = min(known), max(known)
    if lo == hi:
        return [None if v is None else 1.0 for v in values]
    span = hi - lo
    if invert:
        return [None if v is None else (hi - v) / span for v in values]
    return [None if v is None else (v - lo) / span for v in values]
