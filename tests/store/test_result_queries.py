"""What `oxy test` and `oxy history` ask of the consistency results, on SQLite and PostgreSQL:
the previous scored result, the files of a test name, stored names, per-run summaries."""

from __future__ import annotations

from oxyeval.store import NewConsistencyResult, Store


def _result(store: Store, run: str, name: str, status: str, accuracy: float | None, at: str):
    return store.tests.record(
        run,
        NewConsistencyResult(
            file="agents/a.agent.yml", name=name, status=status, accuracy=accuracy, created_at=at
        ),
    )


def test_previous_is_the_latest_scored_result_outside_the_current_run(store: Store) -> None:
    old = store.runs.start("consistency", started_at="2026-01-01T00:00:00Z")
    first = _result(store, old, "totals", "scored", 0.9, "2026-01-01T00:00:01Z")
    mid = store.runs.start("consistency", started_at="2026-01-02T00:00:00Z")
    _result(store, mid, "totals", "error", None, "2026-01-02T00:00:01Z")
    _result(store, mid, "totals", "interrupted", 0.2, "2026-01-02T00:00:02Z")  # partial
    now = store.runs.start("consistency")
    prev = store.tests.previous("agents/a.agent.yml", "totals", before_run=now)
    assert prev is not None and (prev.id, prev.accuracy, prev.run_id) == (first.id, 0.9, old)
    _result(store, now, "totals", "scored", 0.5, "2026-01-03T00:00:01Z")
    again = store.tests.previous("agents/a.agent.yml", "totals", before_run=now)
    assert again is not None and again.id == first.id  # this run's own result never counts
    latest = store.tests.previous("agents/a.agent.yml", "totals")
    assert latest is not None and latest.accuracy == 0.5
    assert store.tests.previous("agents/a.agent.yml", "other") is None
    assert store.tests.previous("agents/b.agent.yml", "totals") is None


def test_files_names_and_run_summaries(store: Store) -> None:
    run = store.runs.start("consistency")
    _result(store, run, "totals", "scored", 0.5, "2026-01-01T00:00:01Z")
    _result(store, run, "words", "scored", 1.0, "2026-01-01T00:00:02Z")
    _result(store, run, "broken", "error", None, "2026-01-01T00:00:03Z")
    _result(store, run, "cut", "interrupted", 0.1, "2026-01-01T00:00:04Z")
    store.tests.record(
        run,
        NewConsistencyResult(
            file="agents/b.agent.yml", name="totals", status="scored", accuracy=0.0
        ),
    )
    empty = store.runs.start("consistency")
    assert store.tests.files("totals") == ["agents/a.agent.yml", "agents/b.agent.yml"]
    assert store.tests.files("words") == ["agents/a.agent.yml"] and store.tests.files("x") == []
    names = store.tests.names()
    assert names[0] == ("agents/b.agent.yml", "totals")  # the most recently stored first
    assert len(names) == 5
    # The run is counted from its results like any other: per status, and averaged over
    # the known outcomes.
    s, none = store.runs.get(run), store.runs.get(empty)
    assert s is not None and none is not None
    assert (none.results, none.average_score) == (0, None)  # no results: nothing to count
    assert s.results == 5 and dict(s.statuses) == {"scored": 3, "error": 1, "interrupted": 1}
    assert s.average_score == 0.5  # (0.5 + 1.0 + 0.0) / 3: partial scores are not counted
