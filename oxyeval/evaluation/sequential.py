"""Pass rates over repeated judged runs, and when to stop running them.

A judged pass/fail test asks one question per (subject, criterion): over many runs, does
the output pass at least ``threshold`` of the time? :class:`PassRate` summarises the runs
made (passes, the Wilson interval, pass^k and pass@k, flaky or not), and
:class:`AdaptiveTest` says when enough runs have been made that the answer is settled, so
``runs`` can be a maximum instead of a fixed cost. The estimators :func:`pass_at_k` and
:func:`pass_hat_k` are the usual unbiased ones for "at least one of k runs passes" and
"all k runs pass", for any k up to the runs made.

Pure and stdlib only, like ``stats``: no I/O, no clock, so a decision can be replayed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from .stats import Interval, wilson_interval

__all__ = ["AdaptiveTest", "PassRate", "pass_at_k", "pass_hat_k"]

Settled = Literal["pass", "fail"]


def _check_counts(n: int, c: int, k: int) -> None:
    if n < 0 or not 0 <= c <= n:
        raise ValueError(f"needs 0 <= c <= n, got c={c} of n={n}")
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")


def _ratio_of_choices(n: int, m: int, k: int) -> float:
    """``C(m, k) / C(n, k)`` for ``0 <= m <= n`` and ``k <= n``, as a product of ratios.

    Factorials (or ``math.comb``) of thousands of runs are huge integers; a product of
    ``min(k, n - m)`` factors each in [0, 1] never overflows, costs little, and loses
    only a rounding per factor. The two forms are the same number:
    ``C(m,k)/C(n,k) = prod_{i<k} (m-i)/(n-i) = prod_{j<n-m} (n-k-j)/(n-j)``.
    """
    if m < k:
        return 0.0
    result = 1.0
    if k <= n - m:
        for i in range(k):
            result *= (m - i) / (n - i)
    else:
        for j in range(n - m):
            result *= (n - k - j) / (n - j)
    return result


def pass_at_k(n: int, c: int, k: int) -> float | None:
    """pass@k: the chance that at least one of ``k`` runs passes, from ``c`` passes in ``n``.

    The unbiased estimator ``1 - C(n-c, k) / C(n, k)``: the share of the k-subsets of the
    ``n`` runs made that hold at least one pass. None when it cannot be estimated
    (``k > n``, which includes ``n == 0``). With ``k == n`` it is 1.0 if any run passed,
    else 0.0.
    """
    _check_counts(n, c, k)
    if k > n:
        return None
    return 1.0 - _ratio_of_choices(n, n - c, k)


def pass_hat_k(n: int, c: int, k: int) -> float | None:
    """pass^k: the chance that all of ``k`` runs pass, from ``c`` passes in ``n``.

    The unbiased estimator ``C(c, k) / C(n, k)``: the share of the k-subsets of the runs
    made in which every run passed. It is the reliability figure: an agent that passes
    90% of runs passes 5 in a row only about 59% of the time. None when ``k > n``
    (including ``n == 0``). With ``k == n`` it is 1.0 if every run passed, else 0.0.
    """
    _check_counts(n, c, k)
    if k > n:
        return None
    return _ratio_of_choices(n, c, k)


@dataclass(frozen=True)
class PassRate:
    """The judged runs of one (subject, criterion): how often the output passed.

    ``runs`` counts judged runs only; ``judge_errors`` (no verdict even after the re-ask)
    are excluded from every figure, reported beside them, and never count as a pass.
    The derived figures are properties, so an instance cannot contradict its counts:

    * ``pass_rate``: ``passes / runs``; None with no judged run.
    * ``wilson``: the 95% Wilson interval around it (see :func:`wilson_interval`).
    * ``pass_hat_k`` (pass^k) and ``pass_at_k`` (pass@k) for ``k = runs``: whether all
      runs passed, whether at least one did (1.0 or 0.0); :meth:`pass_hat` and
      :meth:`pass_at` give the unbiased estimates for a smaller ``k``.
    * ``flaky``: some runs passed and some failed; ``consistent`` is its opposite for a
      test with at least one judged run (every run gave the same verdict, oxy's word).
    """

    passes: int
    runs: int
    judge_errors: int = 0

    def __post_init__(self) -> None:
        if self.runs < 0 or not 0 <= self.passes <= self.runs:
            raise ValueError(
                f"PassRate needs 0 <= passes <= runs, got {self.passes} of {self.runs}"
            )
        if self.judge_errors < 0:
            raise ValueError(f"judge_errors must not be negative, got {self.judge_errors}")

    @classmethod
    def of(cls, verdicts: Sequence[bool | None]) -> PassRate:
        """From one verdict per run: True passed, False failed, None a judge error."""
        passes = sum(1 for v in verdicts if v is True)
        errors = sum(1 for v in verdicts if v is None)
        return cls(passes=passes, runs=len(verdicts) - errors, judge_errors=errors)

    @property
    def failures(self) -> int:
        """Judged runs that failed."""
        return self.runs - self.passes

    @property
    def pass_rate(self) -> float | None:
        return None if self.runs == 0 else self.passes / self.runs

    @property
    def wilson(self) -> Interval | None:
        return wilson_interval(self.passes, self.runs)

    @property
    def pass_hat_k(self) -> float | None:
        """pass^k with ``k = runs``: 1.0 when every judged run passed; None with none."""
        return self.pass_hat(self.runs) if self.runs else None

    @property
    def pass_at_k(self) -> float | None:
        """pass@k with ``k = runs``: 1.0 when at least one judged run passed; None with none."""
        return self.pass_at(self.runs) if self.runs else None

    def pass_hat(self, k: int) -> float | None:
        """pass^k for ``k`` of these runs (see :func:`pass_hat_k`)."""
        return pass_hat_k(self.runs, self.passes, k)

    def pass_at(self, k: int) -> float | None:
        """pass@k for ``k`` of these runs (see :func:`pass_at_k`)."""
        return pass_at_k(self.runs, self.passes, k)

    @property
    def flaky(self) -> bool:
        return 0 < self.passes < self.runs

    @property
    def consistent(self) -> bool:
        return self.runs > 0 and not self.flaky

    def passed(self, threshold: float) -> bool | None:
        """Whether the pass rate meets ``threshold`` (``>=``, as chattest and oxy decide).

        None with no judged run: a test whose every verdict was a judge error has not
        passed, but it has not failed on the model's account either; the caller decides.
        """
        rate = self.pass_rate
        return None if rate is None else rate >= threshold


# ---------------------------------------------------------------------------------------
# Adaptive stopping

_GRID = 200  # alternatives per side in the mixture (a midpoint rule for a uniform prior)
_SLACK = 1e-9  # a crossing must clear log(1/alpha) by this much: rounding never helps it


def _log_mixture(log_up: Sequence[float], log_down: Sequence[float], ups: int, downs: int) -> float:
    """log of the mean over the grid of ``exp(ups * log_up[j] + downs * log_down[j])``."""
    terms = [ups * u + downs * d for u, d in zip(log_up, log_down, strict=True)]
    top = max(terms)
    return top + math.log(math.fsum(math.exp(t - top) for t in terms) / len(terms))


def _side_bounds(null: float, alpha: float, max_runs: int) -> tuple[int, ...]:
    """For n = 0..max_runs, the fewest "hits" in n runs that take one side's mixture wealth
    to ``1/alpha`` (``n + 1`` where no count does).

    The side tests a hit rate of at most ``null`` (for "pass" a hit is a pass and ``null``
    the threshold; for "fail" a hit is a failure and ``null`` is ``1 - threshold``). Its
    alternatives ``q`` are the midpoints of ``_GRID`` equal slices of ``(null, 1)``; each
    run multiplies the wealth on ``q`` by its likelihood ratio against ``null``:
    ``q/null`` for a hit, ``(1-q)/(1-null)`` for a miss. The mixture only grows with a
    hit and shrinks with a miss, so from one n to the next the boundary stays or moves up
    by one hit: two evaluations per n, O(max_runs * _GRID) in all.
    """
    qs = [null + (1.0 - null) * (j + 0.5) / _GRID for j in range(_GRID)]
    log_up = [math.log(q / null) for q in qs]
    log_down = [math.log((1.0 - q) / (1.0 - null)) for q in qs]
    need = math.log(1.0 / alpha) + _SLACK
    bounds = [1]  # no run, no decision
    for n in range(1, max_runs + 1):
        s = min(bounds[-1], n)  # the previous boundary, or all hits while none crossed yet
        if _log_mixture(log_up, log_down, s, n - s) >= need:
            bounds.append(s)
        elif s + 1 <= n and _log_mixture(log_up, log_down, s + 1, n - s - 1) >= need:
            bounds.append(s + 1)
        else:
            bounds.append(n + 1)
    return tuple(bounds)


@lru_cache(maxsize=64)
def _boundaries(
    threshold: float, alpha: float, max_runs: int
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(fewest passes in n runs for "pass", fewest failures in n runs for "fail"), n = 0..max_runs.

    Cached: every (subject, criterion) of a suite shares one threshold, alpha and maximum,
    and a simulation of thousands of sequences must not recompute them.
    """
    never = tuple(n + 1 for n in range(max_runs + 1))
    if threshold <= 0.0:  # p >= 0 always holds: pass after the first run, whatever it says
        return (1, *(0 for _ in range(max_runs))), never
    if threshold >= 1.0:  # p >= 1 is never shown by finite data; one failure disproves it
        return never, (1, *(1 for _ in range(max_runs)))
    # "pass": pass rates in (t, 1); "fail": failure rates in (1 - t, 1), i.e. p in (0, t)
    return _side_bounds(threshold, alpha, max_runs), _side_bounds(1.0 - threshold, alpha, max_runs)


class AdaptiveTest:
    """Runs one (subject, criterion) only until its verdict against ``threshold`` is settled.

    Feed it each judged run's verdict with :meth:`observe`; :attr:`decided` turns to
    ``"pass"`` once the data show the true pass rate ``p`` is at or above ``threshold``,
    to ``"fail"`` once they show it is below, and stays None while undecided. It may be
    read after every run: the guarantee below holds at whatever run the caller stops.

    Method: two one-sided tests, each a mixture likelihood-ratio martingale (Robbins'
    method of mixtures; equivalently a fixed mixture of bets on a Bernoulli mean) with
    Ville's inequality. For "pass", the wealth after s passes and f failures is the mean,
    over 200 alternatives ``q`` evenly spread in (threshold, 1), of
    ``(q/t)^s ((1-q)/(1-t))^f``; for "fail", the same with ``q`` in (0, threshold).
    A side decides when its wealth reaches ``1/alpha``. When ``p <= t`` every "pass"
    factor has expectation at most 1, so that wealth is a nonnegative supermartingale
    and by Ville's inequality it ever reaches ``1/alpha`` with probability at most
    ``alpha``; the same holds for the "fail" wealth when ``p >= t``. Both wealths
    depend on the counts only, so their crossing points are tabulated once per
    (threshold, alpha, max_runs) and each :meth:`observe` is O(1).

    Guarantee. A wrong decision is an early ``"fail"`` when ``p >= threshold`` or an
    early ``"pass"`` when ``p < threshold`` (the rule is ``pass_rate >= threshold``, so
    at ``p`` exactly on the threshold "pass" is right and "fail" wrong). For every true
    ``p``, whatever the maximum and however often ``decided`` is read, the chance of a
    wrong decision is at most ``alpha``: at any ``p`` only one side can be wrong and
    that side errs with probability at most ``alpha``. (At ``p`` exactly on the
    threshold the "pass" side, which is right there, is also limited to ``alpha``.)
    Ville's bound is for unlimited runs, so a maximum only lowers the real rate: on the
    threshold 0.8 with alpha 0.05 it is 2.4% for 50 runs, 2.6% for 100, 3.0% for 1,000
    (exact, by summing every path; tests/evaluation/test_sequential.py).

    Assumes the verdicts are independent runs fed in an order that does not depend on
    their outcome: with concurrent runs, feed them in the order the runs were started
    (buffer one that finished early), not the order they finished, or a kind of output
    that is judged faster would be seen first and bias the test.

    When ``max_runs`` is reached undecided, :meth:`outcome` falls back to the observed
    rate against the threshold, the non-adaptive rule: that final decision carries no
    guarantee beyond what a fixed number of runs gives. Edge cases: threshold 0 passes
    after the first run (``p >= 0`` always holds), threshold 1 fails at the first
    failure and is never passed early. No decision is made before the first run.
    Observations after a decision are counted (``runs`` tells what was spent) but never
    change it: the guarantee is for the first crossing.
    """

    __slots__ = (
        "_fail_at",
        "_pass_at",
        "alpha",
        "decided",
        "max_runs",
        "passes",
        "runs",
        "threshold",
    )

    def __init__(self, threshold: float, max_runs: int, alpha: float = 0.05) -> None:
        if not 0.0 <= threshold <= 1.0:
            raise ValueError(f"threshold must be between 0 and 1, got {threshold}")
        if not 0.0 < alpha < 1.0:
            raise ValueError(f"alpha must be between 0 and 1 (exclusive), got {alpha}")
        if max_runs < 1:
            raise ValueError(f"max_runs must be at least 1, got {max_runs}")
        self.threshold = float(threshold)
        self.alpha = float(alpha)
        self.max_runs = max_runs
        self.runs = 0
        self.passes = 0
        self.decided: Settled | None = None
        self._pass_at, self._fail_at = _boundaries(self.threshold, self.alpha, max_runs)

    def observe(self, passed: bool) -> None:
        """Count one judged run (judge errors are not runs: leave them out)."""
        if self.runs >= self.max_runs:
            raise ValueError(f"AdaptiveTest: already {self.runs} runs, the maximum")
        self.runs += 1
        if passed:
            self.passes += 1
        if self.decided is None:
            n = self.runs
            if self.passes >= self._pass_at[n]:
                self.decided = "pass"
            elif n - self.passes >= self._fail_at[n]:
                self.decided = "fail"

    @property
    def done(self) -> bool:
        """Whether to stop sampling: decided, or the maximum reached."""
        return self.decided is not None or self.runs >= self.max_runs

    def saved(self, max_runs: int | None = None) -> int:
        """Runs not made out of ``max_runs`` (this test's maximum unless given)."""
        return max(0, (self.max_runs if max_runs is None else max_runs) - self.runs)

    def outcome(self) -> Settled | None:
        """The early decision if there is one, else the observed rate against the threshold.

        Only the early decision carries the guarantee in the class docstring; the
        fallback is the plain non-adaptive rule. None before any run.
        """
        if self.decided is not None:
            return self.decided
        if self.runs == 0:
            return None
        return "pass" if self.passes / self.runs >= self.threshold else "fail"

    def bounds(self, runs: int) -> tuple[int, int]:
        """(fewest passes that decide "pass", fewest failures that decide "fail") after
        ``runs`` runs; ``runs + 1`` for a side that cannot decide there. For reports and
        tests: it shows how far a test is from settling."""
        if not 0 <= runs <= self.max_runs:
            raise ValueError(f"runs must be between 0 and {self.max_runs}, got {runs}")
        return self._pass_at[runs], self._fail_at[runs]

    def __repr__(self) -> str:
        return (
            f"AdaptiveTest(threshold={self.threshold}, max_runs={self.max_runs}, "
            f"alpha={self.alpha}, passes={self.passes}, runs={self.runs}, decided={self.decided!r})"
        )
