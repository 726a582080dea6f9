"""pass@k / pass^k against enumeration, PassRate's edge cases, and AdaptiveTest's error rate:
exactly (a dynamic programme over every path) and by simulation."""

from __future__ import annotations

import dataclasses
import itertools
import math
import random
from fractions import Fraction

import pytest

from oxyeval.evaluation import (
    AdaptiveTest,
    PassRate,
    pass_at_k,
    pass_hat_k,
    wilson_interval,
)

# ---------------------------------------------------------------------------------------
# Estimators


def _enumerated(n: int, c: int, k: int) -> tuple[float, float]:
    """(pass@k, pass^k) as shares of all k-subsets of n runs of which c passed."""
    runs = [True] * c + [False] * (n - c)
    subsets = list(itertools.combinations(runs, k))
    return (
        sum(any(s) for s in subsets) / len(subsets),
        sum(all(s) for s in subsets) / len(subsets),
    )


@pytest.mark.parametrize("n", range(1, 8))
def test_estimators_match_enumeration_of_every_subset(n: int) -> None:
    for c in range(n + 1):
        for k in range(1, n + 1):
            at, hat = _enumerated(n, c, k)
            assert pass_at_k(n, c, k) == pytest.approx(at, abs=1e-12), (n, c, k)
            assert pass_hat_k(n, c, k) == pytest.approx(hat, abs=1e-12), (n, c, k)


def test_estimators_are_none_when_k_exceeds_the_runs() -> None:
    assert pass_at_k(0, 0, 1) is None and pass_hat_k(0, 0, 1) is None
    assert pass_at_k(3, 2, 4) is None and pass_hat_k(3, 2, 4) is None
    assert pass_at_k(3, 2, 3) == 1.0 and pass_hat_k(3, 2, 3) == 0.0


def test_estimators_refuse_impossible_counts() -> None:
    with pytest.raises(ValueError):
        pass_at_k(3, 4, 1)
    with pytest.raises(ValueError):
        pass_hat_k(3, -1, 1)
    with pytest.raises(ValueError):
        pass_at_k(3, 1, 0)


@pytest.mark.parametrize(("n", "c", "k"), [(2000, 1900, 30), (2000, 37, 1500), (5000, 4999, 4000)])
def test_estimators_stay_exact_for_many_runs(n: int, c: int, k: int) -> None:
    """Against exact rational arithmetic on the binomial coefficients (huge integers)."""
    hat = Fraction(math.comb(c, k), math.comb(n, k))
    at = 1 - Fraction(math.comb(n - c, k), math.comb(n, k))
    assert pass_hat_k(n, c, k) == pytest.approx(float(hat), rel=1e-9, abs=1e-300)
    assert pass_at_k(n, c, k) == pytest.approx(float(at), rel=1e-9)


def test_estimators_do_not_overflow_at_a_million_runs() -> None:
    assert pass_hat_k(10**6, 10**6 - 1, 1) == pytest.approx(0.999999)
    assert pass_at_k(10**6, 1, 1) == pytest.approx(1e-6)
    assert pass_hat_k(10**6, 900_000, 5) == pytest.approx(0.9**5, rel=1e-4)


# ---------------------------------------------------------------------------------------
# PassRate


def test_no_verdicts_give_no_rate_and_no_decision() -> None:
    rate = PassRate.of([])
    assert (rate.passes, rate.runs, rate.judge_errors) == (0, 0, 0)
    assert rate.pass_rate is None and rate.wilson is None
    assert rate.pass_hat_k is None and rate.pass_at_k is None
    assert rate.passed(0.0) is None
    assert not rate.flaky and not rate.consistent


def test_judge_errors_are_excluded_and_never_a_pass() -> None:
    rate = PassRate.of([None, None, None])
    assert (rate.passes, rate.runs, rate.judge_errors) == (0, 0, 3)
    assert rate.pass_rate is None and rate.passed(0.0) is None
    mixed = PassRate.of([True, None, True])
    assert (mixed.passes, mixed.runs, mixed.judge_errors) == (2, 2, 1)
    assert mixed.pass_rate == 1.0 and mixed.pass_hat_k == 1.0 and mixed.consistent


def test_flaky_runs_and_their_figures() -> None:
    rate = PassRate.of([True, False, None, True])
    assert (rate.passes, rate.runs, rate.judge_errors, rate.failures) == (2, 3, 1, 1)
    assert rate.pass_rate == pytest.approx(2 / 3)
    assert rate.wilson == wilson_interval(2, 3)
    assert rate.flaky and not rate.consistent
    assert rate.pass_hat_k == 0.0 and rate.pass_at_k == 1.0  # k = runs: all / any
    assert rate.pass_hat(2) == pytest.approx(1 / 3) and rate.pass_at(1) == pytest.approx(2 / 3)
    assert rate.passed(2 / 3) is True and rate.passed(0.7) is False


def test_threshold_is_met_at_equality_and_all_failed_is_consistent() -> None:
    assert PassRate(4, 5).passed(0.8) is True
    assert PassRate(7, 10).passed(0.7) is True
    failed = PassRate.of([False, False])
    assert failed.consistent and not failed.flaky and failed.pass_at_k == 0.0
    assert failed.passed(0.0) is True  # chattest's default threshold 0 passes anything judged


def test_pass_rate_refuses_impossible_counts_and_is_frozen() -> None:
    with pytest.raises(ValueError):
        PassRate(3, 2)
    with pytest.raises(ValueError):
        PassRate(0, 1, judge_errors=-1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        PassRate(1, 1).passes = 0  # type: ignore[misc]


# ---------------------------------------------------------------------------------------
# AdaptiveTest: behaviour


def _feed(test: AdaptiveTest, verdicts: list[bool]) -> AdaptiveTest:
    for v in verdicts:
        test.observe(v)
    return test


def test_arguments_are_checked() -> None:
    for bad in ({"threshold": -0.1}, {"threshold": 1.1}, {"alpha": 0.0}, {"max_runs": 0}):
        kwargs = {"threshold": 0.8, "max_runs": 10, **bad}
        with pytest.raises(ValueError):
            AdaptiveTest(**kwargs)  # type: ignore[arg-type]


def test_no_decision_before_a_run_and_none_from_a_single_run_at_0_8() -> None:
    test = AdaptiveTest(0.8, 50)
    assert test.decided is None and test.outcome() is None and not test.done
    assert _feed(test, [True]).decided is None
    assert test.bounds(0) == (1, 1)


def test_all_passes_decide_pass_early_and_the_decision_then_stays() -> None:
    test = _feed(AdaptiveTest(0.8, 50), [True] * 20)
    assert test.decided == "pass" and test.done
    assert test.saved() == 30 and test.saved(100) == 80
    _feed(test, [False] * 10)  # a run already in flight when it decided: counted, no change
    assert test.decided == "pass" and test.runs == 30 and test.passes == 20


def test_many_failures_decide_fail_early() -> None:
    test = _feed(AdaptiveTest(0.8, 50), [False, False, False])
    assert test.decided == "fail" and test.runs == 3 and test.saved() == 47


def test_observing_past_the_maximum_is_refused_and_the_fallback_is_the_observed_rate() -> None:
    test = _feed(AdaptiveTest(0.8, 5), [True, True, True, True, False])
    assert test.decided is None and test.done
    assert test.outcome() == "pass"  # 4/5 >= 0.8: the non-adaptive rule
    with pytest.raises(ValueError):
        test.observe(True)
    assert _feed(AdaptiveTest(0.8, 5), [True, True, True, False, True]).outcome() == "pass"
    assert _feed(AdaptiveTest(0.9, 5), [True, True, True, True, False]).outcome() == "fail"


def test_thresholds_0_and_1() -> None:
    assert _feed(AdaptiveTest(0.0, 10), [False]).decided == "pass"
    one = AdaptiveTest(1.0, 10)
    assert _feed(one, [True] * 9).decided is None  # never settled as passing early
    assert _feed(AdaptiveTest(1.0, 10), [True, False]).decided == "fail"
    _feed(one, [True])
    assert one.decided is None and one.outcome() == "pass"


def test_boundaries_move_by_at_most_one_per_run() -> None:
    test = AdaptiveTest(0.7, 200)
    for n in range(1, 201):
        (p0, f0), (p1, f1) = test.bounds(n - 1), test.bounds(n)
        for before, after in ((p0, p1), (f0, f1)):
            assert after == n + 1 or before <= after <= before + 1
    assert test.bounds(200)[0] <= 200 and test.bounds(200)[1] <= 200


# ---------------------------------------------------------------------------------------
# AdaptiveTest: the error rate


def _exact_decisions(threshold: float, p: float, max_runs: int, alpha: float) -> dict[str, float]:
    """The exact chance of each early decision at true rate p: every path, by its counts."""
    test = AdaptiveTest(threshold, max_runs, alpha)
    out = {"pass": 0.0, "fail": 0.0}
    alive = {0: 1.0}  # passes -> probability of being here undecided
    for n in range(1, max_runs + 1):
        need_pass, need_fail = test.bounds(n)
        nxt: dict[int, float] = {}
        for s, prob in alive.items():
            for passes, q in ((s + 1, p), (s, 1.0 - p)):
                if q == 0.0:
                    continue
                if passes >= need_pass:
                    out["pass"] += prob * q
                elif n - passes >= need_fail:
                    out["fail"] += prob * q
                else:
                    nxt[passes] = nxt.get(passes, 0.0) + prob * q
        alive = nxt
    return out


@pytest.mark.parametrize(
    ("threshold", "alpha"), [(0.8, 0.05), (0.5, 0.1), (0.95, 0.05), (0.2, 0.01)]
)
def test_exact_wrong_decision_rate_is_at_most_alpha_at_and_near_the_threshold(
    threshold: float, alpha: float
) -> None:
    for p in (threshold, threshold + 0.02, threshold + 0.05):
        if p <= 1.0:
            wrong = _exact_decisions(threshold, p, 150, alpha)["fail"]
            assert wrong <= alpha, (p, wrong)
    for p in (threshold - 0.01, threshold - 0.05):
        wrong = _exact_decisions(threshold, p, 150, alpha)["pass"]
        assert wrong <= alpha, (p, wrong)


def _simulate(p: float, threshold: float, max_runs: int, n: int, seed: int) -> dict[object, int]:
    rng = random.Random(seed)
    tally: dict[object, int] = {"pass": 0, "fail": 0, None: 0, "runs": 0}
    for _ in range(n):
        test = AdaptiveTest(threshold, max_runs)
        while not test.done:
            test.observe(rng.random() < p)
        tally[test.decided] += 1
        tally["runs"] += test.runs
    return tally


def _allowed(rate: float, n: int) -> float:
    return rate + 3.0 * math.sqrt(rate * (1.0 - rate) / n)


N = 10_000


@pytest.mark.parametrize(
    ("p", "wrong"),
    [(0.8, "fail"), (0.83, "fail"), (0.77, "pass")],
    ids=["on-threshold", "a-bit-above", "a-bit-below"],
)
def test_simulated_wrong_early_decisions_stay_under_alpha(p: float, wrong: str) -> None:
    """The proof: 10,000 scripted sequences checked after every run, threshold 0.8."""
    tally = _simulate(p, 0.8, 60, N, seed=17)
    assert tally[wrong] / N <= _allowed(0.05, N), tally
    # the exact figure agrees with the simulation (a check on the harness itself)
    exact = _exact_decisions(0.8, p, 60, 0.05)[wrong]
    assert abs(tally[wrong] / N - exact) <= 4.0 * math.sqrt(exact * (1 - exact) / N) + 1e-3


def test_the_same_simulation_catches_a_wilson_interval_checked_after_every_run() -> None:
    """The harness can fail: the forbidden rule (stop when a 95% Wilson interval clears
    the threshold) makes far more than 5% wrong "fail"s on the threshold."""
    rng, wrong, n = random.Random(17), 0, 2000
    for _ in range(n):
        passes = 0
        for runs in range(1, 61):
            passes += rng.random() < 0.8
            interval = wilson_interval(passes, runs)
            assert interval is not None
            if interval.high < 0.8:
                wrong += 1
                break
            if interval.low >= 0.8:
                break
    assert wrong / n > _allowed(0.05, n)


def test_a_clearly_good_model_stops_well_before_the_maximum() -> None:
    tally = _simulate(0.95, 0.8, 100, 2000, seed=3)
    assert tally["pass"] / 2000 >= 0.95
    assert tally["runs"] / 2000 < 60  # of 100


def test_a_clearly_bad_model_stops_sooner_still() -> None:
    tally = _simulate(0.5, 0.8, 50, 2000, seed=4)
    assert tally["fail"] / 2000 >= 0.95 and tally["pass"] == 0
    assert tally["runs"] / 2000 < 25  # of 50
