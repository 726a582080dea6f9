"""Case statistics and regression-detection history, on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest

from oxyeval.store import Store

from ._helpers import make_case, new, record


def test_trend_data_by_day_is_exact(store: Store) -> None:
    make_case(store)
    days = {
        "2026-05-01": [(True, 1.0), (True, 0.8), (False, 0.2), (True, None)],
        "2026-05-02": [(False, 0.1), (False, None)],
        "2026-05-04": [(True, 0.9), (True, 0.7), (False, 0.5)],
    }
    # Days out of order and spread over each day, incl. the last millisecond.
    for day in ("2026-05-04", "2026-05-01", "2026-05-02"):
        for i, (passed, score) in enumerate(days[day]):
            ts = f"{day}T23:59:59.999Z" if i == 0 else f"{day}T0{i}:00:00Z"
            record(store, passed=passed, score=score, created_at=ts)
    record(store, status="pending", created_at="2026-05-03T00:00:00Z")  # not a day of data
    stats = store.stats.case_stats("c1")
    assert stats is not None
    assert [(t.date, t.total_runs, t.pass_rate) for t in stats.trend] == [
        ("2026-05-01", 4, 75.0),
        ("2026-05-02", 2, 0.0),
        ("2026-05-04", 3, pytest.approx(200 / 3)),
    ]
    assert [t.avg_score for t in stats.trend] == [
        pytest.approx(2.0 / 3),
        pytest.approx(0.1),
        pytest.approx(0.7),
    ]
    assert stats.total_runs == 9 and stats.pass_rate == pytest.approx(500 / 9)
    assert stats.avg_score == pytest.approx((1.0 + 0.8 + 0.2 + 0.1 + 0.9 + 0.7 + 0.5) / 7)
    last_two = store.stats.case_stats("c1", trend_days=2).trend  # type: ignore[union-attr]
    assert [t.date for t in last_two] == ["2026-05-02", "2026-05-04"]
    recent = stats.recent_runs
    assert len(recent) == 10 and recent[0].created_at == "2026-05-04T23:59:59.999Z"
    assert {r.status for r in recent} == {"passed", "failed", "pending"}
    assert store.stats.case_stats("nope") is None


def test_regressions_capped_at_50_with_total_count(store: Store) -> None:
    make_case(store)
    rows = [
        new(
            passed=False,
            actual_output="x",
            prompt_version=2,
            score=0.1,
            is_regression=i % 2 == 0,
            regression_type="SCORE_DROP" if i % 2 == 0 else None,
            created_at=f"2026-06-01T00:{i // 60:02d}:{i % 60:02d}Z",
        )
        for i in range(130)
    ]
    assert store.executions.record_many(rows) == 130
    stats = store.stats.case_stats("c1", recent=5)
    assert stats is not None
    assert stats.regression_count == 65 and len(stats.regressions) == 50
    assert stats.regressions[0].created_at == "2026-06-01T00:02:08.000Z"  # i = 128
    assert stats.regressions[0].regression_types == ("SCORE_DROP",)
    assert len(stats.recent_runs) == 5


def test_history_feeds_regression_detection(store: Store) -> None:
    make_case(store)
    assert store.stats.history("c1").historical_pass_rate is None
    for i in range(12):
        record(store, passed=i != 3, score=0.9, actual_output="y" * (10 + i))
    record(store, status="error", actual_output=None, error="outage")  # never a data point
    h = store.stats.history("c1", recent=10)
    assert h.total_runs == 12 and h.historical_pass_rate == pytest.approx(11 / 12)
    assert len(h.recent) == 10 and h.recent[0].actual_length == 21  # newest first
    assert h.avg_length == pytest.approx(sum(10 + i for i in range(12)) / 12)


def test_history_with_a_baseline_counts_only_comparable_runs(store: Store) -> None:
    make_case(store)
    for _ in range(3):
        record(store, passed=False, score=0.2, expected_output="old", similarity_method="lexical")
    record(store, passed=True, score=1.0, expected_output="new", similarity_method="lexical")
    record(store, passed=True, score=0.9, expected_output="new", similarity_method="embedding:e")
    h = store.stats.history("c1", baseline=("new", "lexical"))
    assert (h.total_runs, h.historical_pass_rate, h.avg_score) == (1, 1.0, 1.0)
    assert [p.score for p in h.recent] == [1.0]
    assert store.stats.history("c1", baseline=("other", "lexical")).total_runs == 0
