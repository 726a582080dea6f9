"""Confidence intervals and normalisation: reference values, edge cases, determinism."""

from __future__ import annotations

import random
import statistics

import pytest

from oxyeval.evaluation import Interval, bootstrap_interval, min_max_normalise, wilson_interval


def test_intervals_overlap_when_they_share_a_point_touching_included() -> None:
    a = Interval(0.1, 0.3, 0.2)
    assert a.overlaps(Interval(0.25, 0.5, 0.4)) and Interval(0.25, 0.5, 0.4).overlaps(a)
    assert a.overlaps(Interval(0.3, 0.4, 0.35))  # touching ends: not apart
    assert a.overlaps(Interval(0.0, 1.0, 0.5))  # one inside the other
    assert not a.overlaps(Interval(0.31, 0.4, 0.35))
    assert not Interval(0.31, 0.4, 0.35).overlaps(a)
    assert a.width == pytest.approx(0.2)


def test_bootstrap_no_values_is_none_and_one_value_is_zero_width() -> None:
    assert bootstrap_interval([]) is None
    assert bootstrap_interval([None, None]) is None
    assert bootstrap_interval([0.7]) == Interval(0.7, 0.7, 0.7)
    assert bootstrap_interval([0.7, None, 0.7]) == Interval(0.7, 0.7, 0.7)


def test_bootstrap_is_deterministic_for_a_seed_and_varies_with_it() -> None:
    rng = random.Random(5)
    values = [rng.gauss(0.6, 0.1) for _ in range(12)]
    first = bootstrap_interval(values, seed=3)
    assert first == bootstrap_interval(values, seed=3)
    assert first != bootstrap_interval(values, seed=4)
    state = random.getstate()
    bootstrap_interval(values, seed=3)
    assert random.getstate() == state  # the global generator is left alone


def test_bootstrap_mean_interval_brackets_the_mean_inside_the_range() -> None:
    values = [0.50, 0.55, 0.60, 0.62, 0.58, 0.53, 0.61, 0.57, 0.59, 0.54]
    iv = bootstrap_interval(values)
    assert iv is not None
    assert iv.mean == pytest.approx(statistics.fmean(values))
    assert min(values) < iv.low < iv.mean < iv.high < max(values)
    # near the normal-theory interval for this well-behaved sample (sd/sqrt(n) ~ 0.012)
    assert iv.width == pytest.approx(2 * 1.96 * statistics.pstdev(values) / 10**0.5, rel=0.25)


def test_bootstrap_wider_confidence_gives_a_wider_interval() -> None:
    values = [1.0, 3.0, 2.0, 5.0, 4.0, 2.5, 3.5]
    narrow = bootstrap_interval(values, confidence=0.5)
    wide = bootstrap_interval(values, confidence=0.99)
    assert narrow is not None and wide is not None
    assert wide.low < narrow.low and narrow.high < wide.high


def test_bootstrap_takes_another_statistic() -> None:
    values = [1.0, 2.0, 3.0, 100.0, 2.5, 1.5, 2.0, 3.0, 2.5, 2.0]
    iv = bootstrap_interval(values, statistic=statistics.median)
    assert iv is not None and iv.mean == 2.25
    assert iv.low >= 1.0 and iv.high <= 3.0  # the median shrugs the outlier off
    mean_iv = bootstrap_interval(values)
    assert mean_iv is not None and mean_iv.mean == pytest.approx(11.95)
    assert mean_iv.high > 20.0  # the mean does not


def test_bootstrap_with_infinity_does_not_produce_nan() -> None:
    iv = bootstrap_interval([float("inf"), float("inf"), 1.0])
    assert iv is not None and iv.high == float("inf") and iv.low == iv.low  # not NaN


@pytest.mark.parametrize(
    "kwargs", [{"confidence": 0.0}, {"confidence": 1.0}, {"confidence": 95}, {"resamples": 0}]
)
def test_bootstrap_rejects_bad_parameters(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        bootstrap_interval([1.0, 2.0], **kwargs)


def test_bootstrap_rejects_nan() -> None:
    with pytest.raises(ValueError, match="NaN"):
        bootstrap_interval([1.0, float("nan")])


@pytest.mark.parametrize(
    ("passes", "n", "low", "high"),
    [  # reference values (Wilson 1927; as tabulated by Newcombe 1998 and common calculators)
        (8, 10, 0.4902, 0.9433),
        (0, 10, 0.0, 0.2775),
        (10, 10, 0.7225, 1.0),
        (50, 100, 0.4038, 0.5962),
        (1, 1, 0.2065, 1.0),
    ],
)
def test_wilson_reference_values(passes: int, n: int, low: float, high: float) -> None:
    iv = wilson_interval(passes, n)
    assert iv is not None
    assert iv.low == pytest.approx(low, abs=1e-4)
    assert iv.high == pytest.approx(high, abs=1e-4)
    assert iv.mean == passes / n


def test_wilson_edge_cases() -> None:
    assert wilson_interval(0, 0) is None
    narrow = wilson_interval(80, 100, confidence=0.8)
    wide = wilson_interval(80, 100, confidence=0.99)
    assert narrow is not None and wide is not None
    assert wide.low < narrow.low < 0.8 < narrow.high < wide.high
    for bad in [(3, 2), (-1, 2), (0, -1)]:
        with pytest.raises(ValueError):
            wilson_interval(*bad)
    with pytest.raises(ValueError):
        wilson_interval(1, 2, confidence=1.5)


def test_min_max_normalise_scales_to_zero_one_and_keeps_none() -> None:
    assert min_max_normalise([1.0, None, 3.0, 2.0]) == [0.0, None, 1.0, 0.5]
    assert min_max_normalise([100.0, 200.0, 300.0], invert=True) == [1.0, 0.5, 0.0]


def test_min_max_normalise_all_equal_or_one_value_gives_one_each() -> None:
    assert min_max_normalise([0.4, 0.4, None]) == [1.0, 1.0, None]
    assert min_max_normalise([0.4, 0.4], invert=True) == [1.0, 1.0]
    assert min_max_normalise([7.0]) == [1.0]
    assert min_max_normalise([None, None]) == [None, None]
    assert min_max_normalise([]) == []


def test_min_max_normalise_rejects_non_finite() -> None:
    with pytest.raises(ValueError):
        min_max_normalise([1.0, float("inf")])
