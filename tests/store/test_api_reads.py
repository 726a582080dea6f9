"""What the Testing API reads beyond the CLI: regressions counted per case, runs filtered
by subject and status and paged; on SQLite and PostgreSQL."""

from __future__ import annotations

from oxyeval.store import Store

from ._helpers import make_case, record


def test_regression_counts_per_case(store: Store) -> None:
    make_case(store, "c1")
    make_case(store, "c2")
    make_case(store, "c3")
    for flag in (True, False, True):
        record(
            store,
            "c1",
            passed=False,
            score=0.1,
            is_regression=flag,
            regression_type="FAILED" if flag else None,
        )
    record(store, "c2", passed=True, score=0.9)
    record(store, "c3", passed=False, score=0.2, is_regression=True, regression_type="SCORE_DROP")
    assert store.stats.regression_counts() == {"c1": 2, "c3": 1}
    assert store.stats.regression_counts(["c1", "c2"]) == {"c1": 2}
    assert store.stats.regression_counts([]) == {}


def test_runs_filtered_by_subject_and_status_and_paged(store: Store) -> None:
    ids = []
    for i in range(5):
        run = store.runs.start("ab", total=1, subject=f"case-{i % 2}")
        if i != 4:
            store.runs.finish(run, "completed")
        ids.append(run)
    newest_first = list(reversed(ids))
    assert [r.id for r in store.runs.list(10, kind="ab")] == newest_first
    assert [r.id for r in store.runs.list(2, kind="ab", offset=1)] == newest_first[1:3]
    assert [r.id for r in store.runs.list(10, subject="case-1")] == [ids[3], ids[1]]
    assert [r.id for r in store.runs.list(10, status="running")] == [ids[4]]
    assert store.runs.list(10, kind="ab", subject="case-0", status="completed")[0].id == ids[2]
