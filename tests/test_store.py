"""The SQLite history store: migrations, aggregates, rollups, crashes, concurrency, bad files."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from oxyeval import store as store_mod
from oxyeval.errors import EXIT_INFRA, EXIT_INPUT
from oxyeval.store import (
    LATEST_VERSION,
    AlreadyExistsError,
    Migration,
    NotFoundError,
    Store,
    StoreError,
    default_db_path,
    migrate,
    utc_timestamp,
)

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "hist" / "oxyeval.db"


@pytest.fixture
def store(db: Path):
    with Store.open(db) as s:
        yield s


def _case(s: Store, case_id: str = "c1", prompt: str = "p1", **kw) -> dict:
    return s.create_test_case(
        prompt, f"case {case_id}", {"text": "hi"}, "positive", id=case_id, **kw
    )


def _exec(s: Store, case_id: str = "c1", **kw) -> dict:
    fields = {"test_case_id": case_id, "passed": True, "actual_output": "positive"}
    fields["prompt_version"] = 1
    fields.update(kw)
    return s.record_execution(**fields)


# --------------------------------------------------------------------------- paths, opening


def test_default_db_path_prefers_oxy_db(tmp_path: Path) -> None:
    assert default_db_path(tmp_path, environ={}) == tmp_path / ".oxy" / "oxyeval.db"
    assert default_db_path(tmp_path, environ={"OXY_DB": "  "}) == tmp_path / ".oxy" / "oxyeval.db"
    assert default_db_path(tmp_path, environ={"OXY_DB": "/x/h.db"}) == Path("/x/h.db")


def test_utc_timestamp_is_utc_with_milliseconds() -> None:
    assert utc_timestamp("2026-11-22T07:58:00.123456+02:00") == "2026-11-22T05:58:00.123Z"
    assert utc_timestamp("2026-11-22T05:58:00Z") == "2026-11-22T05:58:00.000Z"
    assert len(utc_timestamp()) == len("2026-11-22T05:58:00.000Z")
    with pytest.raises(ValueError):
        utc_timestamp("yesterday")


def test_open_creates_folders_and_migrates_an_empty_file(tmp_path: Path) -> None:
    empty = tmp_path / "a" / "b" / "empty.db"
    empty.parent.mkdir(parents=True)
    empty.write_bytes(b"")
    with Store.open(empty) as s:
        assert s.schema_version == LATEST_VERSION
        assert s.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert s.conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
        assert s.conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
        assert s.conn.execute("PRAGMA busy_timeout").fetchone()[0] == 10_000
    with Store.open(tmp_path / "new" / "dir" / "h.db") as s:
        assert s.schema_version == LATEST_VERSION


def test_directory_path_is_a_store_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(StoreError) as info:
        Store.open(tmp_path)
    assert str(tmp_path) in str(info.value)
    assert info.value.exit_code == EXIT_INFRA


def test_non_sqlite_file_is_a_store_error_naming_it(tmp_path: Path) -> None:
    bad = tmp_path / "notes.db"
    bad.write_text("this is not a database, just some text that is long enough " * 20)
    with pytest.raises(StoreError) as info:
        Store.open(bad)
    assert str(bad) in str(info.value)
    assert "not a valid SQLite database" in str(info.value)
    assert info.value.__cause__ is not None  # kept for --debug, not shown to users


def test_parent_that_is_a_file_is_a_store_error(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    with pytest.raises(StoreError, match="cannot create folder"):
        Store.open(tmp_path / "f" / "h.db")


def test_someone_elses_sqlite_database_is_left_alone(tmp_path: Path) -> None:
    other = tmp_path / "app.db"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="not an oxyeval history database"):
        Store.open(other)
    conn = sqlite3.connect(other)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 0
    conn.close()


def test_locked_database_is_a_store_error_not_a_hang(db: Path) -> None:
    Store.open(db).close()
    blocker = sqlite3.connect(db, isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")
    try:
        s = Store.open(db, timeout=0.1)  # readers still work under WAL
        start = time.perf_counter()
        with pytest.raises(StoreError) as info:
            s.upsert_prompt("p", "P")
        assert time.perf_counter() - start < 5
        assert "locked" in str(info.value) and str(db) in str(info.value)
        s.close()
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()


def test_closed_store_raises_store_error(db: Path) -> None:
    s = Store.open(db)
    s.close()
    s.close()  # idempotent
    with pytest.raises(StoreError, match="closed"):
        s.list_test_cases()


# --------------------------------------------------------------------------- migrations


def _v1_database(path: Path) -> None:
    """What an oxyeval that only knew schema 1 would have left on disk."""
    conn = sqlite3.connect(path, isolation_level=None)
    assert migrate(conn, target=1) == 1
    conn.execute("INSERT INTO prompts VALUES ('p1', 'Prompt', 'p.yml', '2026-01-01T00:00:00.000Z')")
    conn.execute(
        "INSERT INTO test_cases (id, prompt_id, name, input, expected_output, created_at, "
        "updated_at, total_runs, pass_count, score_sum, scored_runs, length_sum, last_run, "
        "last_passed) VALUES ('c1', 'p1', 'case', '{\"q\":1}', 'ok', "
        "'2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z', 4, 2, 1.5, 3, 8, "
        "'2026-01-02T10:00:00.000Z', 0)"
    )
    conn.execute(
        "INSERT INTO runs (id, prompt_id, prompt_version, started_at, finished_at, status, total, "
        "done) VALUES ('r1', 'p1', 1, '2026-01-01T09:00:00.000Z', '2026-01-02T10:00:01.000Z', "
        "'completed', 4, 4)"
    )
    rows = [
        # id, passed, score, regression_type, created_at
        ("e1", 1, 0.9, None, "2026-01-01T09:00:00.000Z"),
        ("e2", 1, None, None, "2026-01-01T23:59:59.999Z"),
        ("e3", 0, 0.4, "SCORE_DROP", "2026-01-02T08:00:00.000Z"),
        ("e4", 0, 0.2, "FAILED", "2026-01-02T10:00:00.000Z"),
    ]
    conn.executemany(
        "INSERT INTO executions (id, test_case_id, run_id, execution_id, passed, score, "
        "actual_output, expected_output, is_regression, regression_type, prompt_version, "
        "created_at) VALUES (?, 'c1', 'r1', ?, ?, ?, 'ok', 'ok', ?, ?, 1, ?)",
        [(i, i, p, sc, 1 if rt else 0, rt, t) for i, p, sc, rt, t in rows],
    )
    conn.close()


def test_v1_database_with_data_migrates_and_keeps_history(db: Path) -> None:
    db.parent.mkdir(parents=True)
    _v1_database(db)
    conn = sqlite3.connect(db)
    cols = {r[1] for r in conn.execute("PRAGMA table_info(executions)")}
    assert "regression_types" not in cols  # really the old schema
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 1
    conn.close()

    with Store.open(db) as s:
        assert s.schema_version == LATEST_VERSION == 3
        case = s.get_test_case("c1")
        assert case is not None
        assert (case["totalRuns"], case["passRate"], case["avgScore"]) == (4, 50.0, 0.5)
        assert case["input"] == {"q": 1}
        execs = {e["id"]: e for e in s.executions("c1", limit=10)}
        assert set(execs) == {"e1", "e2", "e3", "e4"}
        assert execs["e3"]["regressionTypes"] == ["SCORE_DROP"]
        assert execs["e4"]["regressionTypes"] == ["FAILED"]
        assert execs["e1"]["regressionTypes"] == []
        stats = s.test_case_stats("c1")
        assert stats is not None
        # Rollup backfilled from the old executions, split on the UTC day.
        assert stats["trendData"] == [
            {"date": "2026-01-01", "totalRuns": 2, "passRate": 100.0, "avgScore": 0.9},
            {"date": "2026-01-02", "totalRuns": 2, "passRate": 0.0, "avgScore": pytest.approx(0.3)},
        ]
        assert stats["regressionCount"] == 2
        assert [r["id"] for r in stats["regressions"]] == ["e4", "e3"]
        # New writes land on top of the backfilled rollup.
        _exec(s, score=0.7, created_at="2026-01-02T12:00:00Z")
        day2 = s.test_case_stats("c1")["trendData"][1]  # type: ignore[index]
        assert day2["totalRuns"] == 3
        assert day2["passRate"] == pytest.approx(100 / 3)
        assert day2["avgScore"] == pytest.approx((0.4 + 0.2 + 0.7) / 3)
    # Reopening an up-to-date database is a no-op.
    with Store.open(db) as s:
        assert s.schema_version == LATEST_VERSION
        assert s.get_test_case("c1")["totalRuns"] == 5  # type: ignore[index]


def test_database_newer_than_the_code_is_refused(db: Path) -> None:
    Store.open(db).close()
    conn = sqlite3.connect(db)
    conn.execute(f"PRAGMA user_version = {LATEST_VERSION + 1}")
    conn.close()
    with pytest.raises(StoreError) as info:
        Store.open(db)
    text = str(info.value)
    assert "newer" in text and str(db) in text and str(LATEST_VERSION + 1) in text


def test_a_failing_migration_rolls_back_to_the_previous_version(
    db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db.parent.mkdir(parents=True)
    _v1_database(db)

    def broken(conn: sqlite3.Connection) -> None:
        conn.execute("ALTER TABLE executions ADD COLUMN half_done TEXT")
        raise RuntimeError("boom in the middle of migration 2")

    monkeypatch.setattr(
        store_mod, "MIGRATIONS", (store_mod.MIGRATIONS[0], Migration(2, "x", broken))
    )
    with pytest.raises(RuntimeError, match="boom"):
        Store.open(db)
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 1
    assert "half_done" not in {r[1] for r in conn.execute("PRAGMA table_info(executions)")}
    conn.close()
    monkeypatch.undo()
    with Store.open(db) as s:  # the real migration still applies afterwards
        assert s.schema_version == LATEST_VERSION


# --------------------------------------------------------------------------- prompts


def test_prompt_versions_follow_content(store: Store) -> None:
    store.upsert_prompt("p1", "Sentiment", "prompts/s.yml")
    v1 = store.ensure_version("p1", {"system": "be brief", "model": "m"})
    assert v1 == 1
    # Same content with keys in another order is the same version.
    assert store.ensure_version("p1", {"model": "m", "system": "be brief"}) == 1
    assert store.ensure_version("p1", {"system": "be verbose", "model": "m"}) == 2
    assert store.ensure_version("p1", {"system": "be brief", "model": "m"}) == 1
    assert store.latest_version("p1") == 2
    assert store.get_version("p1", 1) == {"system": "be brief", "model": "m"}
    assert store.get_version("p1", 3) is None
    assert [v["version"] for v in store.list_versions("p1")] == [1, 2]
    assert store.latest_version("unknown") is None
    assert store.ensure_version("p2", {"system": "be brief", "model": "m"}) == 1  # per prompt
    store.upsert_prompt("p1", "Sentiment v2", "prompts/s2.yml")
    assert store.get_prompt("p1")["name"] == "Sentiment v2"  # type: ignore[index]


# --------------------------------------------------------------------------- test cases


def test_create_get_update_and_expected_output(store: Store) -> None:
    case = store.create_test_case(
        "p1", "Positive", {"text": "I love it"}, "positive", "desc", id="pos", threshold=0.8
    )
    assert case["id"] == "pos" and case["promptId"] == "p1"
    assert case["input"] == {"text": "I love it"}
    assert case["totalRuns"] == 0 and case["passRate"] is None and case["avgScore"] is None
    assert case["createdAt"] == case["updatedAt"]
    with pytest.raises(AlreadyExistsError) as info:
        store.create_test_case("p1", "dup", {}, id="pos")
    assert info.value.exit_code == EXIT_INPUT
    time.sleep(0.005)
    updated = store.update_test_case("pos", name="Positive!", expectedOutput="POSITIVE")
    assert (updated["name"], updated["expectedOutput"]) == ("Positive!", "POSITIVE")
    assert updated["updatedAt"] > case["updatedAt"]
    same = store.update_test_case("pos", name="Positive!")
    assert same["updatedAt"] == updated["updatedAt"]  # nothing really changed
    time.sleep(0.005)
    accepted = store.update_expected_output("pos", "pos.")
    assert accepted["expectedOutput"] == "pos." and accepted["updatedAt"] > updated["updatedAt"]
    with pytest.raises(NotFoundError):
        store.update_test_case("nope", name="x")
    with pytest.raises(TypeError):
        store.update_test_case("pos", colour="red")


def test_aggregates_after_several_executions(store: Store) -> None:
    _case(store)
    _exec(store, passed=True, score=0.9, created_at="2026-03-01T10:00:00Z", actual_output="ab")
    _exec(store, passed=False, score=None, created_at="2026-03-01T11:00:00Z", actual_output="abcd")
    _exec(store, passed=True, score=0.6, created_at="2026-03-01T12:00:00Z", actual_output="abcdef")
    # Recorded late but older: must not become lastRun/lastPassed.
    _exec(store, passed=False, score=0.3, created_at="2026-03-01T09:00:00Z", actual_output="a")
    case = store.get_test_case("c1")
    assert case is not None
    assert case["totalRuns"] == 4
    assert case["passRate"] == 50.0
    assert case["avgScore"] == pytest.approx((0.9 + 0.6 + 0.3) / 3)  # None scores excluded
    assert case["lastRun"] == "2026-03-01T12:00:00.000Z"
    assert case["lastPassed"] is True
    assert case["avgLength"] == pytest.approx((2 + 4 + 6 + 1) / 4)
    _exec(store, passed=False, score=0.1, created_at="2026-03-02T00:00:00Z")
    case = store.get_test_case("c1")
    assert case["lastPassed"] is False and case["lastRun"] == "2026-03-02T00:00:00.000Z"  # type: ignore[index]
    # Incremental maintenance agrees with a full recomputation.
    before_stats = store.test_case_stats("c1")
    store.rebuild_aggregates()
    after = store.get_test_case("c1")
    assert after is not None
    for key in ("totalRuns", "passRate", "lastRun", "lastPassed", "avgLength"):
        assert after[key] == case[key]  # type: ignore[index]
    assert after["avgScore"] == pytest.approx(case["avgScore"])  # type: ignore[index]
    assert store.test_case_stats("c1")["trendData"] == before_stats["trendData"]  # type: ignore[index]


def test_execution_fields_round_trip_newest_first(store: Store) -> None:
    _case(store)
    for i in range(5):
        _exec(store, score=i / 10, created_at=f"2026-04-0{i + 1}T00:00:00Z", actual_output="x" * i)
    rec = _exec(
        store,
        passed=False,
        score=0.5,
        actual_output="negative",
        output_diff=[{"op": "replace", "from": "positive", "to": "negative"}],
        exact_match=False,
        semantic_score=0.5,
        similarity_method="embedding",
        token_diff=-1,
        token_method="tiktoken",
        regression_types=["FAILED", "SCORE_DROP"],
        run_duration_ms=12.5,
        latency_ms=10.0,
        input_tokens=7,
        output_tokens=2,
        created_at="2026-04-09T00:00:00Z",
    )
    assert rec["isRegression"] is True and rec["regressionType"] == "FAILED"
    assert rec["expectedOutput"] == "positive"  # snapshotted from the case
    assert rec["lengthDiff"] == len("negative") - len("positive")
    page = store.executions("c1", limit=3)
    assert [e["createdAt"][:10] for e in page] == ["2026-04-09", "2026-04-05", "2026-04-04"]
    top = page[0]
    assert top == store.get_execution(rec["id"])
    assert top["outputDiff"] == [{"op": "replace", "from": "positive", "to": "negative"}]
    assert top["regressionTypes"] == ["FAILED", "SCORE_DROP"]
    assert (top["runDuration"], top["tokenDiff"], top["semanticScore"]) == (12.5, -1, 0.5)
    assert [e["createdAt"][:10] for e in store.executions("c1", limit=3, offset=3)] == [
        "2026-04-03",
        "2026-04-02",
        "2026-04-01",
    ]


def test_record_execution_for_unknown_case_or_run_writes_nothing(store: Store) -> None:
    _case(store)
    with pytest.raises(NotFoundError):
        _exec(store, case_id="ghost")
    with pytest.raises(NotFoundError):
        _exec(store, run_id="no-such-run")
    assert store.get_test_case("c1")["totalRuns"] == 0  # type: ignore[index]
    assert store.executions("c1") == []
    assert store.test_case_stats("c1")["trendData"] == []  # type: ignore[index]
    with pytest.raises(TypeError):
        _exec(store, colour="red")


def test_upsert_keeps_identity_and_history(store: Store) -> None:
    first = store.upsert_test_case("yaml-1", "p1", "greets", {"name": "Ann"}, "Hello Ann")
    _exec(store, case_id="yaml-1", actual_output="Hello Ann")
    time.sleep(0.005)
    again = store.upsert_test_case("yaml-1", "p1", "greets", {"name": "Ann"}, "Hello Ann")
    assert again["updatedAt"] == first["updatedAt"]  # unchanged YAML -> untouched row
    assert again["totalRuns"] == 1
    time.sleep(0.005)
    changed = store.upsert_test_case(
        "yaml-1", "p1", "greets", {"name": "Ann"}, "Hi Ann", source_file="t.yml"
    )
    assert changed["id"] == "yaml-1"
    assert changed["createdAt"] == first["createdAt"]
    assert changed["updatedAt"] > first["updatedAt"]
    assert changed["expectedOutput"] == "Hi Ann" and changed["sourceFile"] == "t.yml"
    assert changed["totalRuns"] == 1 and len(store.executions("yaml-1")) == 1
    time.sleep(0.005)
    reordered = store.upsert_test_case(
        "yaml-1", "p1", "greets", {"name": "Ann"}, "Hi Ann", source_file="t.yml"
    )
    assert reordered["updatedAt"] == changed["updatedAt"]


def test_soft_delete_hides_but_keeps_history(store: Store) -> None:
    _case(store, "keep")
    _case(store, "gone")
    _exec(store, case_id="gone", score=0.9)
    assert store.delete_test_case("gone") is True
    assert store.delete_test_case("gone") is False
    assert store.delete_test_case("never") is False
    assert [c["id"] for c in store.list_test_cases()] == ["keep"]
    assert [c["id"] for c in store.list_test_cases(include_deleted=True)] == ["keep", "gone"]
    assert store.get_test_case("gone") is None
    kept = store.get_test_case("gone", include_deleted=True)
    assert kept is not None and kept["deletedAt"] is not None and kept["totalRuns"] == 1
    assert len(store.executions("gone")) == 1
    assert store.test_case_stats("gone")["totalRuns"] == 1  # type: ignore[index]
    with pytest.raises(NotFoundError):
        store.update_test_case("gone", name="x")
    # Declaring it again in YAML brings it back with its history.
    back = store.upsert_test_case("gone", "p1", "case gone", {"text": "hi"}, "positive")
    assert back["deletedAt"] is None and back["totalRuns"] == 1
    assert {c["id"] for c in store.list_test_cases()} == {"keep", "gone"}


def test_list_test_cases_filters_by_prompt(store: Store) -> None:
    _case(store, "a", prompt="p1")
    _case(store, "b", prompt="p2")
    _case(store, "c", prompt="p1")
    assert [c["id"] for c in store.list_test_cases("p1")] == ["a", "c"]
    assert [c["id"] for c in store.list_test_cases("p2")] == ["b"]
    assert len(store.list_test_cases()) == 3


# --------------------------------------------------------------------------- stats


def test_trend_data_by_day_is_exact(store: Store) -> None:
    _case(store)
    days = {
        "2026-05-01": [(True, 1.0), (True, 0.8), (False, 0.2), (True, None)],
        "2026-05-02": [(False, 0.1), (False, None)],
        "2026-05-04": [(True, 0.9), (True, 0.7), (False, 0.5)],
    }
    # Insert days out of order and spread over each day, incl. the last millisecond.
    for day in ("2026-05-04", "2026-05-01", "2026-05-02"):
        for i, (passed, score) in enumerate(days[day]):
            ts = f"{day}T23:59:59.999Z" if i == 0 else f"{day}T0{i}:00:00Z"
            _exec(store, passed=passed, score=score, created_at=ts)
    stats = store.test_case_stats("c1")
    assert stats is not None
    assert [(t["date"], t["totalRuns"], t["passRate"]) for t in stats["trendData"]] == [
        ("2026-05-01", 4, 75.0),
        ("2026-05-02", 2, 0.0),
        ("2026-05-04", 3, pytest.approx(200 / 3)),
    ]
    assert [t["avgScore"] for t in stats["trendData"]] == [
        pytest.approx(2.0 / 3),
        pytest.approx(0.1),
        pytest.approx(0.7),
    ]
    assert stats["totalRuns"] == 9
    assert stats["passRate"] == pytest.approx(500 / 9)
    assert stats["avgScore"] == pytest.approx((1.0 + 0.8 + 0.2 + 0.1 + 0.9 + 0.7 + 0.5) / 7)
    last_two = store.test_case_stats("c1", trend_days=2)["trendData"]  # type: ignore[index]
    assert [t["date"] for t in last_two] == ["2026-05-02", "2026-05-04"]
    recent = stats["recentRuns"]
    assert len(recent) == 9 and recent[0]["createdAt"] == "2026-05-04T23:59:59.999Z"
    assert set(recent[0]) == {"id", "passed", "score", "promptVersion", "createdAt"}
    assert store.test_case_stats("nope") is None


def test_regressions_capped_at_50_with_total_count(store: Store) -> None:
    _case(store)
    rows = [
        {
            "test_case_id": "c1",
            "passed": False,
            "actual_output": "x",
            "prompt_version": 2,
            "score": 0.1,
            "is_regression": i % 2 == 0,
            "regression_type": "SCORE_DROP" if i % 2 == 0 else None,
            "created_at": f"2026-06-01T00:{i // 60:02d}:{i % 60:02d}Z",
        }
        for i in range(130)
    ]
    assert store.record_executions(rows) == 130
    stats = store.test_case_stats("c1", recent=5)
    assert stats is not None
    assert stats["regressionCount"] == 65
    assert len(stats["regressions"]) == 50
    assert stats["regressions"][0]["createdAt"] == "2026-06-01T00:02:08.000Z"  # i = 128
    assert stats["regressions"][0]["regressionTypes"] == ["SCORE_DROP"]
    assert len(stats["recentRuns"]) == 5


def test_history_for_case_feeds_regression_detection(store: Store) -> None:
    _case(store)
    assert store.history_for_case("c1")["historicalPassRate"] is None
    for i in range(12):
        _exec(store, passed=i != 3, score=0.9, actual_output="y" * (10 + i))
    h = store.history_for_case("c1", recent=10)
    assert h["totalRuns"] == 12
    assert h["historicalPassRate"] == pytest.approx(11 / 12)
    assert len(h["recent"]) == 10
    assert h["recent"][0]["actualLength"] == 21  # newest first
    assert store.recent_executions("c1", 2) == h["recent"][:2]


# --------------------------------------------------------------------------- runs, crashes


def test_runs_list_counts_and_finish(store: Store) -> None:
    _case(store)
    r1 = store.start_run("p1", 1, 2, started_at="2026-07-01T00:00:00Z")
    _exec(store, run_id=r1, passed=True)
    _exec(store, run_id=r1, passed=False, regression_type="FAILED", error=None)
    store.finish_run(r1, "completed")
    r2 = store.start_run("p1", 2, 3, started_at="2026-07-02T00:00:00Z")
    _exec(store, run_id=r2, passed=False, error="provider timeout")
    runs = store.list_runs()
    assert [r["id"] for r in runs] == [r2, r1]
    assert runs[1]["status"] == "completed"
    assert (runs[1]["passed"], runs[1]["failed"], runs[1]["regressions"], runs[1]["done"]) == (
        1,
        1,
        1,
        2,
    )
    assert (runs[0]["status"], runs[0]["errors"], runs[0]["done"], runs[0]["total"]) == (
        "running",
        1,
        1,
        3,
    )
    assert store.list_runs(limit=1)[0]["id"] == r2
    assert store.mark_stale_runs() == []  # r2 is live: its Store is open in this process
    with pytest.raises(ValueError):
        store.finish_run(r2, "running")
    with pytest.raises(NotFoundError):
        store.finish_run("nope")


def test_interrupted_run_keeps_finished_executions(db: Path) -> None:
    a = Store.open(db)
    _case(a)
    run = a.start_run("p1", 1, total=5)
    for score in (0.9, 0.5, None):
        _exec(a, run_id=run, passed=score is not None and score > 0.8, score=score)
    b = Store.open(db)  # e.g. the user's next `oxy test`, while the first is still going
    assert b.mark_stale_runs() == []
    a.close()  # the first process goes away without finish_run
    assert len(b.executions("c1")) == 3
    case = b.get_test_case("c1")
    assert case is not None
    assert case["totalRuns"] == 3 and case["passRate"] == pytest.approx(100 / 3)
    assert case["avgScore"] == pytest.approx(0.7)
    assert b.mark_stale_runs() == [run]
    got = b.get_run(run)
    assert got is not None
    assert (got["status"], got["done"], got["total"]) == ("interrupted", 3, 5)
    assert got["finishedAt"] is not None
    assert b.mark_stale_runs() == []
    b.close()


def test_crashed_process_run_is_marked_interrupted(db: Path) -> None:
    script = textwrap.dedent(
        f"""
        import os, sys
        sys.path.insert(0, {str(REPO)!r})
        from oxyeval.store import Store
        s = Store.open(sys.argv[1])
        s.create_test_case("p1", "c", {{}}, "ok", id="c1")
        run = s.start_run("p1", 1, 10)
        for i in range(3):
            s.record_execution(test_case_id="c1", run_id=run, passed=True, score=0.9,
                               actual_output="ok", prompt_version=1)
        print(run, flush=True)
        os._exit(9)  # a real crash: no finish_run, no close, no atexit
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", script, str(db)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 9, proc.stderr
    run = proc.stdout.strip()
    with Store.open(db) as s:
        assert s.get_test_case("c1")["totalRuns"] == 3  # type: ignore[index]
        assert len(s.executions("c1")) == 3
        assert s.get_run(run)["status"] == "running"  # type: ignore[index]
        assert s.mark_stale_runs() == [run]  # its pid no longer exists
        assert s.get_run(run)["status"] == "interrupted"  # type: ignore[index]


# --------------------------------------------------------------------------- concurrency


def test_two_stores_writing_alternately_and_concurrently(db: Path) -> None:
    a = Store.open(db)
    b = Store.open(db)
    _case(a)
    for i in range(20):  # strictly alternating
        (a if i % 2 else b).record_execution(
            test_case_id="c1", passed=True, score=0.5, actual_output="x", prompt_version=1
        )
    errors: list[BaseException] = []
    gate = threading.Barrier(2)

    def writer(s: Store, prompt: str) -> None:
        try:
            gate.wait()
            for i in range(40):
                s.record_execution(
                    test_case_id="c1",
                    passed=i % 2 == 0,
                    score=1.0,
                    actual_output="x",
                    prompt_version=1,
                )
                s.ensure_version(prompt, {"n": i % 3})
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(s, p)) for s, p in ((a, "pa"), (b, "pb"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    case = b.get_test_case("c1")
    assert case is not None
    assert case["totalRuns"] == 100
    assert case["passRate"] == pytest.approx(100 * (20 + 40) / 100)
    assert case["avgScore"] == pytest.approx((20 * 0.5 + 80 * 1.0) / 100)
    assert len(a.executions("c1", limit=200)) == 100
    assert a.latest_version("pa") == 3 and b.latest_version("pb") == 3
    a.close()
    b.close()
