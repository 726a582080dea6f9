"""--fail-on-regression as a paired test: scripted tallies whose outcome is known, the
one decision's exit code for each, and the tally every kind gives."""

from __future__ import annotations

import math

import pytest

import oxyeval.suites.cases.results
import oxyeval.suites.consistency.results
import oxyeval.suites.passfail.results  # noqa: F401
from oxyeval.evaluation import Gates, Previous, Result, decide
from oxyeval.evaluation.regression_gate import check_regression, subject_tallies, tally_of

GATED = Gates(fail_on_regression=True)


def _results(pairs: list[tuple[tuple[int, int], tuple[int, int]]]) -> list[Result]:
    """One pass/fail result per test: this run's tally, and its baseline's."""
    return [
        Result(
            kind="passfail",
            subject=f"t{k}",
            status="scored",
            score=now[0] / now[1],
            details={"passes": now[0], "runs": now[1]},
            previous=Previous(base[0] / base[1], "2026-11-20T10:00:00Z", "run-1", base),
        )
        for k, (base, now) in enumerate(pairs)
    ]


def test_a_significant_drop_regresses_and_exits_1() -> None:
    results = _results([((10, 10), (6, 10))] * 30)
    decision = decide(results, GATED)
    check = decision.regression
    assert check is not None and check.outcome == "regressed" and not check.passed
    assert decision.code == 1 and decision.headline == "regressed"
    assert check.message in decision.reasons
    assert check.compared == 30 and check.baseline_runs == ("run-1",)
    # Agresti-Caffo by hand: baseline 11/12, now 7/12 in each of 30 tests.
    pb, ph = 11 / 12, 7 / 12
    se = math.sqrt(30 * (pb * (1 - pb) / 12 + ph * (1 - ph) / 12)) / 30
    assert check.change is not None
    assert check.change.interval.high == pytest.approx(ph - pb + 1.959964 * se, abs=1e-4)
    assert check.change.change == pytest.approx(-0.4)


def test_the_same_tallies_are_not_a_regression() -> None:
    decision = decide(_results([((10, 10), (10, 10))] * 30), GATED)
    assert decision.regression is not None
    assert decision.regression.outcome == "not_regressed"
    assert decision.code == 0 and decision.headline == "ungated"
    assert not decision.warnings


def test_a_small_drop_in_a_small_run_is_inconclusive_and_the_policy_decides() -> None:
    results = _results([((3, 3), (2, 3))])
    passing = decide(results, GATED)
    check = passing.regression
    assert check is not None and check.outcome == "inconclusive"
    # By hand: 4/5 against 3/5, each with variance p(1-p)/5.
    se = math.sqrt(0.8 * 0.2 / 5 + 0.6 * 0.4 / 5)
    assert check.change is not None
    assert check.change.interval.low == pytest.approx(-0.2 - 1.959964 * se, abs=1e-4)
    assert check.change.min_detectable_drop == pytest.approx((1.959964 + 0.841621) * se, abs=1e-4)
    assert round(check.change.min_detectable_drop, 4) == 0.7924
    assert passing.code == 0 and check.passed
    assert any("inconclusive" in w and "would detect a drop of 79.2" in w for w in passing.warnings)
    failing = decide(results, Gates(fail_on_regression=True, inconclusive="fail"))
    assert failing.code == 1 and failing.headline == "regressed"
    assert "--inconclusive fail: failing" in failing.reasons[-1]


def test_an_unread_history_leaves_the_outcome_unknown() -> None:
    decision = decide(_results([((3, 3), (3, 3))]), GATED, history_unread=["db: locked"])
    assert decision.code == 3 and decision.regression is not None
    assert decision.regression.outcome == "unread"
    assert decision.regression is not None and not decision.regression.checked


def test_without_a_baseline_the_gate_says_so_and_passes() -> None:
    results = [
        Result(kind="passfail", subject="t", status="scored", details={"passes": 1, "runs": 2})
    ]
    decision = decide(results, GATED)
    assert decision.code == 0 and decision.regression is not None
    assert decision.regression.outcome == "no_baseline"
    assert any("no result has a baseline" in w for w in decision.warnings)


def test_each_kind_gives_its_tally() -> None:
    # A case: one sample per repeat, the repeats of one case added up.
    repeats = [
        Result(kind="cases", subject="c1", status=s, passed=s == "passed", repeat=k)
        for k, s in enumerate(["passed", "failed", "passed"])
    ]
    assert subject_tallies(repeats) == {"c1": (2, 3)}
    # A pass/fail criterion: judged passes over judged runs.
    judged = Result(kind="passfail", subject="p", status="scored", details={"passes": 4, "runs": 5})
    assert tally_of(judged) == (4, 5)
    # A consistency test: answers in the largest cluster over the answers.
    clustered = Result(kind="consistency", subject="x", status="scored", details={"tally": [7, 10]})
    assert tally_of(clustered) == (7, 10)
    # An unscored result has no tally.
    assert tally_of(Result(kind="consistency", subject="x", status="error")) is None


def test_the_policy_is_checked() -> None:
    with pytest.raises(ValueError):
        check_regression([], inconclusive="maybe")
