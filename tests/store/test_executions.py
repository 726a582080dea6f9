"""Executions: statuses, aggregates kept in step, round trips, redaction; SQLite and PostgreSQL."""

from __future__ import annotations

from typing import Any

import pytest

from oxyeval.redact import register_secret
from oxyeval.store import NotFoundError, Store

from ._helpers import make_case, new, record


def _trend_of(stats: Any) -> list[tuple[Any, ...]]:
    """Trend points with sums rounded: an incremental float sum and a recount may differ in
    the last bit."""
    return [(t.date, t.total_runs, t.passes, round(t.score_sum, 9), t.scored) for t in stats.trend]


def _trend(store: Store, case_id: str) -> list[tuple[Any, ...]]:
    return _trend_of(store.stats.case_stats(case_id))


def test_aggregates_after_several_executions(store: Store) -> None:
    make_case(store)
    record(store, passed=True, score=0.9, created_at="2026-03-01T10:00:00Z", actual_output="ab")
    record(store, passed=False, score=None, created_at="2026-03-01T11:00:00Z", actual_output="abcd")
    record(store, passed=True, score=0.6, created_at="2026-03-01T12:00:00Z", actual_output="abcdef")
    # Recorded late but older: must not become last_run/last_passed.
    record(store, passed=False, score=0.3, created_at="2026-03-01T09:00:00Z", actual_output="a")
    case = store.cases.get("c1")
    assert case is not None
    assert case.total_runs == 4 and case.pass_rate == 50.0
    assert case.avg_score == pytest.approx((0.9 + 0.6 + 0.3) / 3)  # None scores excluded
    assert case.last_run == "2026-03-01T12:00:00.000Z" and case.last_passed is True
    assert case.avg_length == pytest.approx((2 + 4 + 6 + 1) / 4)
    record(store, passed=False, score=0.1, created_at="2026-03-02T00:00:00Z")
    case = store.cases.get("c1")
    assert (
        case is not None
        and case.last_passed is False
        and case.last_run == "2026-03-02T00:00:00.000Z"
    )
    before = store.stats.case_stats("c1")
    store.stats.rebuild()  # incremental maintenance agrees with a full recount
    after = store.cases.get("c1")
    assert after is not None
    for key in ("total_runs", "pass_count", "scored_runs", "length_sum", "last_run", "last_passed"):
        assert getattr(after, key) == getattr(case, key)
    assert after.score_sum == pytest.approx(case.score_sum)
    assert _trend(store, "c1") == _trend_of(before)


def test_pending_and_error_executions_are_kept_but_not_counted(store: Store) -> None:
    # The run's counts by outcome follow the cases kind's statuses, registered by the
    # suite that writes them (a bare store counts by the core's defaults).
    import oxyeval.suites.cases.results  # noqa: F401

    make_case(store)
    run = store.runs.start(prompt_id="p1", prompt_version=1, total=4)
    record(store, run_id=run, passed=True, score=1.0)
    record(store, run_id=run, status="pending", actual_output="new answer")
    record(
        store, run_id=run, status="error", actual_output=None, error="HTTP 503 from the provider"
    )
    record(store, run_id=run, status="error", actual_output="scored? no", error="embeddings down")
    case = store.cases.get("c1")
    assert case is not None and (case.total_runs, case.pass_rate) == (1, 100.0)
    statuses = [e.status for e in store.executions.list("c1")]
    assert sorted(statuses) == ["error", "error", "passed", "pending"]
    got = store.runs.get(run)
    assert got is not None
    assert (got.done, got.passed, got.failed, got.pending, got.errors) == (4, 1, 0, 1, 2)
    (trend,) = store.stats.case_stats("c1").trend  # type: ignore[union-attr]
    assert trend.total_runs == 1
    assert store.executions.latest("c1").error == "embeddings down"  # type: ignore[union-attr]
    with pytest.raises(ValueError, match="status"):
        record(store, status="skipped")
    with pytest.raises(ValueError, match="actual_output"):
        record(store, status="passed", actual_output=None)


def test_execution_fields_round_trip_newest_first(store: Store) -> None:
    make_case(store)
    for i in range(5):
        record(store, score=i / 10, created_at=f"2026-04-0{i + 1}T00:00:00Z", actual_output="x" * i)
    rec = record(
        store,
        passed=False,
        score=0.5,
        actual_output="negative",
        output_diff=[{"op": "replace", "from": "positive", "to": "negative"}],
        semantic_score=0.5,
        similarity_method="embedding",
        token_diff=-1,
        token_method="tiktoken",
        regression_types=["FAILED", "SCORE_DROP"],
        run_duration_ms=12.5,
        latency_ms=10.0,
        input_tokens=7,
        output_tokens=2,
        finish_reason="length",
        created_at="2026-04-09T00:00:00Z",
    )
    assert rec.is_regression and rec.regression_type == "FAILED"
    assert rec.expected_output == "positive"  # snapshotted from the case
    assert rec.length_diff == len("negative") - len("positive")
    assert rec.finish_reason == "length"  # as the model said it; its meaning is the providers'
    page = store.executions.list("c1", limit=3)
    assert [e.created_at[:10] for e in page] == ["2026-04-09", "2026-04-05", "2026-04-04"]
    top = page[0]
    assert top == store.executions.get(rec.id) == rec
    assert top.output_diff == [{"op": "replace", "from": "positive", "to": "negative"}]
    assert top.regression_types == ("FAILED", "SCORE_DROP")
    assert (top.run_duration_ms, top.token_diff, top.semantic_score) == (12.5, -1, 0.5)
    assert [e.created_at[:10] for e in store.executions.list("c1", limit=3, offset=3)] == [
        "2026-04-03",
        "2026-04-02",
        "2026-04-01",
    ]
    assert store.executions.list("c1", limit=1, offset=1)[0].finish_reason is None


def test_same_millisecond_keeps_insertion_order(store: Store) -> None:
    make_case(store)
    ids = [
        record(store, created_at="2026-01-01T00:00:00Z", actual_output=str(i)).id for i in range(5)
    ]
    assert [e.id for e in store.executions.list("c1")] == ids[::-1]
    assert store.executions.latest("c1").actual_output == "4"  # type: ignore[union-attr]


def test_unknown_case_or_run_writes_nothing(store: Store) -> None:
    make_case(store)
    with pytest.raises(NotFoundError):
        record(store, "ghost")
    with pytest.raises(NotFoundError):
        record(store, run_id="no-such-run")
    with pytest.raises(NotFoundError):
        store.executions.record_many([new(), new("ghost")])
    assert store.cases.get("c1").total_runs == 0  # type: ignore[union-attr]
    assert store.executions.list("c1") == []
    assert store.stats.case_stats("c1").trend == ()  # type: ignore[union-attr]


def test_record_many_matches_one_by_one(store: Store) -> None:
    make_case(store, "a")
    make_case(store, "b")
    rows = [
        new(
            "a" if i % 3 else "b",
            passed=i % 2 == 0,
            score=None if i % 5 == 0 else i / 40,
            actual_output="y" * i,
            status="pending" if i % 7 == 0 else ("passed" if i % 2 == 0 else "failed"),
            created_at=f"2026-02-{1 + i % 3:02d}T{i % 24:02d}:00:00Z",
        )
        for i in range(40)
    ]
    assert store.executions.record_many(rows) == 40
    batch = {c.id: c for c in store.cases.list()}
    seen = store.stats.history("a", 100, baseline=("positive", ""))
    assert seen.total_runs == sum(
        1 for r in rows if r.test_case_id == "a" and r.status in ("passed", "failed")
    )
    trend = {c: _trend(store, c) for c in ("a", "b")}
    store.stats.rebuild()
    for case in store.cases.list():
        assert case.total_runs == batch[case.id].total_runs
        assert case.pass_count == batch[case.id].pass_count
        assert case.score_sum == pytest.approx(batch[case.id].score_sum)
        assert (case.last_run, case.last_passed) == (
            batch[case.id].last_run,
            batch[case.id].last_passed,
        )
        assert _trend(store, case.id) == trend[case.id]
    again = store.stats.history("a", 100, baseline=("positive", ""))
    assert (again.total_runs, again.historical_pass_rate) == (
        seen.total_runs,
        seen.historical_pass_rate,
    )
    assert again.avg_score == pytest.approx(seen.avg_score)


def test_model_output_and_errors_are_redacted_on_write(store: Store) -> None:
    secret = "sk-live-redact-me-0123456789"
    register_secret(secret)
    make_case(store)
    ok = record(
        store,
        status="failed",
        actual_output=f"my key is {secret}",
        expected_output=f"expected {secret}",
        output_diff=[{"op": "insert", "text": f"{secret}"}],
        score=0.1,
    )
    bad = record(store, status="error", actual_output=None, error=f"401: bad key {secret}")
    for e in (store.executions.get(ok.id), store.executions.get(bad.id)):
        assert e is not None
        text = repr(e)
        assert secret not in text and "***" in text
