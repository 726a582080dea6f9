"""The statistics a CI gate stands on, against reference values computed by hand (the
formulas written out here, independently of the module's code), to 4 decimals."""

from __future__ import annotations

import math

import pytest

from oxyeval.evaluation.agreement import cohens_kappa
from oxyeval.evaluation.regression import paired_change
from oxyeval.evaluation.stats import clustered_interval, normal_quantile

Z95 = 1.959963984540054
Z80 = 0.8416212335729143


def test_the_normal_quantile_is_the_textbook_one() -> None:
    assert normal_quantile(0.95) == pytest.approx(Z95, abs=1e-12)


def test_a_clustered_interval_is_wider_when_a_groups_runs_agree() -> None:
    # Two tests, three runs each; each test always gives the same verdict.
    found = clustered_interval([[1, 1, 1], [0, 0, 0]], bounds=None)
    assert found is not None
    se = math.sqrt(1.5**2 + 1.5**2) / 6  # residual sums +1.5 and -1.5 over n = 6
    assert round(se, 4) == 0.3536
    assert (round(found.low, 4), round(found.high, 4)) == (
        round(0.5 - Z95 * se, 4),
        round(0.5 + Z95 * se, 4),
    )
    # Treated as six independent draws, the same data look sqrt(3) times surer.
    naive = clustered_interval([[1], [1], [1], [0], [0], [0]], bounds=None)
    assert naive is not None
    assert found.width / naive.width == pytest.approx(math.sqrt(3))


def test_a_clustered_interval_is_cut_to_its_bounds_and_empty_is_none() -> None:
    found = clustered_interval([[1, 1], [1, 0]])
    assert found is not None and found.high == 1.0 and found.mean == 0.75
    assert clustered_interval([]) is None and clustered_interval([[], []]) is None


def test_one_stable_test_losing_one_run_of_three_is_inconclusive() -> None:
    change = paired_change([((3, 3), (2, 3))])
    assert change is not None and change.outcome == "inconclusive"
    # Agresti-Caffo: (3+1)/5 = 0.8 and (2+1)/5 = 0.6; variances p(1-p)/5.
    se = math.sqrt(0.8 * 0.2 / 5 + 0.6 * 0.4 / 5)
    assert round(change.interval.mean, 4) == -0.2
    assert round(change.interval.low, 4) == round(-0.2 - Z95 * se, 4) == -0.7544
    assert round(change.interval.high, 4) == round(-0.2 + Z95 * se, 4) == 0.3544
    assert round(change.min_detectable_drop, 4) == round((Z95 + Z80) * se, 4) == 0.7924
    assert change.change == pytest.approx(-1 / 3)
    assert "too small to tell" in change.message and "79.2 points" in change.message


def test_twenty_tests_halving_their_pass_rate_is_a_regression() -> None:
    change = paired_change([((10, 10), (5, 10))] * 20)
    assert change is not None and change.outcome == "regressed"
    pb, ph = 11 / 12, 6 / 12
    se = math.sqrt(20 * (pb * (1 - pb) / 12 + ph * (1 - ph) / 12)) / 20
    assert round(change.interval.high, 4) == round(ph - pb + Z95 * se, 4)
    assert change.interval.high < 0 and change.message.startswith("regressed")


def test_a_large_unchanged_suite_rules_a_drop_out() -> None:
    change = paired_change([((19, 20), (19, 20))] * 200)
    assert change is not None and change.outcome == "not_regressed"
    assert change.interval.low >= -0.05 and change.change == 0.0


def test_bad_tallies_and_settings_are_refused() -> None:
    assert paired_change([]) is None
    with pytest.raises(ValueError):
        paired_change([((4, 3), (1, 3))])
    with pytest.raises(ValueError):
        paired_change([((1, 3), (1, 3))], margin=1.5)


def test_kappa_of_a_two_by_two_table() -> None:
    # 50 items: both "A" 20, A/B 5, B/A 10, both "B" 15.
    first = ["A"] * 25 + ["B"] * 25
    second = ["A"] * 20 + ["B"] * 5 + ["A"] * 10 + ["B"] * 15
    kappa = cohens_kappa(first, second)
    assert kappa is not None
    po, pe = 35 / 50, (25 * 30 + 25 * 20) / 2500
    value = (po - pe) / (1 - pe)
    se = math.sqrt(po * (1 - po) / 50) / (1 - pe)
    assert round(kappa.value or 0, 4) == round(value, 4) == 0.4
    assert kappa.interval is not None
    assert round(kappa.interval.low, 4) == round(value - Z95 * se, 4) == 0.146
    assert round(kappa.interval.high, 4) == round(value + Z95 * se, 4) == 0.654
    assert kappa.confusion[("A", "B")] == 5 and kappa.confusion[("B", "A")] == 10


def test_kappa_is_one_for_agreement_and_undefined_when_chance_agrees_fully() -> None:
    perfect = cohens_kappa(["A", "B", "A"], ["A", "B", "A"])
    assert perfect is not None and perfect.value == 1.0
    one_label = cohens_kappa(["A", "A"], ["A", "A"])
    assert one_label is not None and one_label.value is None and one_label.interval is None
    assert cohens_kappa([], []) is None
    with pytest.raises(ValueError):
        cohens_kappa(["A"], [])
