"""Migrations: Alembic at open, the 0.1.0 file upgraded without loss, refusals, atomicity."""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
import threading
from pathlib import Path

import pytest

from oxyeval.store import StoreError, open_store
from oxyeval.store._migrations import HEAD, REVISIONS, VERSION_TABLE

from .conftest import Backend

FIXTURE = Path(__file__).parent / "fixtures" / "history-v0.1.0.db"


def _copy(tmp_path: Path) -> Path:
    db = tmp_path / "old" / "oxyeval.db"
    db.parent.mkdir()
    shutil.copyfile(FIXTURE, db)
    return db


def _legacy_rows(path: Path) -> dict[str, list[tuple]]:
    """Everything the 0.1.0 file holds, read with plain sqlite3."""
    conn = sqlite3.connect(path)
    out = {
        "prompts": conn.execute(
            "SELECT id, name, source, created_at FROM prompts ORDER BY id"
        ).fetchall(),
        "versions": conn.execute(
            "SELECT prompt_id, version, content_hash, content FROM prompt_versions ORDER BY 1, 2"
        ).fetchall(),
        "cases": conn.execute(
            "SELECT id, prompt_id, name, description, input, expected_output, threshold, "
            "source_file, created_at, updated_at, deleted_at, total_runs, pass_count, score_sum, "
            "scored_runs, length_sum, last_run, last_passed FROM test_cases ORDER BY id"
        ).fetchall(),
        "runs": conn.execute(
            "SELECT id, prompt_id, prompt_version, started_at, finished_at, status, total, done, "
            "pid, host FROM runs ORDER BY id"
        ).fetchall(),
        "executions": conn.execute(
            "SELECT id, test_case_id, run_id, passed, score, actual_output, expected_output, "
            "output_diff, regression_types, prompt_version, error, created_at, similarity_method "
            "FROM executions "
            "ORDER BY rowid"
        ).fetchall(),
        "daily": conn.execute("SELECT * FROM case_daily ORDER BY 1, 2").fetchall(),
    }
    conn.close()
    return out


def test_fixture_is_a_real_0_1_0_history() -> None:
    conn = sqlite3.connect(f"file:{FIXTURE}?mode=ro", uri=True)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 2
    assert conn.execute("PRAGMA application_id").fetchone()[0] == 0x4F585945
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert VERSION_TABLE not in tables and "executions" in tables
    conn.close()


def test_0_1_0_history_upgrades_without_loss(tmp_path: Path) -> None:
    db = _copy(tmp_path)
    old = _legacy_rows(db)
    assert len(old["executions"]) == 13 and len(old["runs"]) == 4  # what the fixture holds
    with open_store(db) as s:
        assert [(p.id, p.name, p.source, p.created_at) for p in s.prompts.list()] == old["prompts"]
        versions = [
            (v.prompt_id, v.version, v.content_hash) for v in s.prompts.versions("sentiment")
        ]
        assert versions == [row[:3] for row in old["versions"]]
        for pid, version, _hash, content in old["versions"]:
            import json

            assert s.prompts.get_version(pid, version) == json.loads(content)
        cases = {c.id: c for c in s.cases.list(include_deleted=True)}
        for row in old["cases"]:
            c = cases[row[0]]
            import json

            assert (c.prompt_id, c.name, c.description, c.input, c.expected_output) == (
                row[1],
                row[2],
                row[3],
                json.loads(row[4]),
                row[5],
            )
            assert (c.threshold, c.source_file, c.created_at, c.updated_at, c.deleted_at) == row[
                6:11
            ]
            assert (c.total_runs, c.pass_count, c.score_sum, c.scored_runs, c.length_sum) == row[
                11:16
            ]
            assert (c.last_run, c.last_passed) == (
                row[16],
                None if row[17] is None else bool(row[17]),
            )
        runs = {r.id: r for r in s.runs.list(100)}
        assert {r[0] for r in old["runs"]} == set(runs)
        for row in old["runs"]:
            r = runs[row[0]]
            assert (r.prompt_id, r.prompt_version, r.started_at, r.finished_at, r.status) == row[
                1:6
            ]
            assert (r.total, r.done, r.pid, r.host, r.kind) == (*row[6:10], "cases")
        stored = []
        for case_id in cases:
            stored += s.executions.list(case_id, limit=100)
        by_id = {e.id: e for e in stored}
        assert set(by_id) == {row[0] for row in old["executions"]}
        for row in old["executions"]:
            e = by_id[row[0]]
            assert (e.test_case_id, e.run_id, e.score, e.actual_output, e.expected_output) == (
                row[1],
                row[2],
                row[4],
                row[5],
                row[6],
            )
            import json

            assert e.output_diff == (None if row[7] is None else json.loads(row[7]))
            assert list(e.regression_types) == json.loads(row[8])
            assert (e.prompt_version, e.created_at) == (row[9], row[11])
            # The old `error` column meant "not judged": pending is now a status.
            if row[10] is None:
                assert e.status == ("passed" if row[3] else "failed") and e.error is None
            else:
                assert row[10].startswith("pending") and e.status == "pending" and e.error is None
        for case_id in cases:
            trend = s.stats.case_stats(case_id).trend  # type: ignore[union-attr]
            expected = [r[1:] for r in old["daily"] if r[0] == case_id]
            assert [
                (t.date, t.total_runs, t.passes, t.score_sum, t.scored) for t in trend
            ] == expected
        # Regression detection finds each case's comparable history (per baseline).
        comparable: dict[tuple[str, str, str], list[float | None]] = {}
        for row in old["executions"]:
            if row[10] is None:  # judged
                comparable.setdefault((row[1], row[6], row[12]), []).append(row[4])
        assert len(comparable) >= 5
        for (case_id, expected, method), scores in comparable.items():
            h = s.stats.history(case_id, 100, baseline=(expected, method))
            assert h.total_runs == len(scores)
            assert sorted(p.score for p in h.recent) == sorted(scores)
        # The aggregates carried over equal a recount from the carried-over executions.
        s.stats.rebuild()
        for c in s.cases.list(include_deleted=True):
            before = cases[c.id]
            assert (c.total_runs, c.pass_count, c.last_run, c.last_passed) == (
                before.total_runs,
                before.pass_count,
                before.last_run,
                before.last_passed,
            )
            assert c.score_sum == pytest.approx(before.score_sum)
        # The crashed run of the fixture is found, and the history takes new writes.
        assert s.runs.mark_stale() == [r[0] for r in old["runs"] if r[5] == "running"]
        run = s.runs.start(prompt_id="sentiment", prompt_version=2, total=1)
        from oxyeval.store import NewExecution

        s.executions.record(
            NewExecution(
                test_case_id="sentiment::happy",
                run_id=run,
                status="passed",
                score=1.0,
                actual_output="positive",
                prompt_version=2,
            )
        )
        assert (
            s.cases.get("sentiment::happy").total_runs == cases["sentiment::happy"].total_runs + 1
        )  # type: ignore[union-attr]
    conn = sqlite3.connect(db)
    assert conn.execute(f"SELECT version_num FROM {VERSION_TABLE}").fetchone()[0] == HEAD
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert not {t for t in tables if t.startswith("legacy_")}
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 100
    conn.close()


@pytest.mark.parametrize("journal", ["delete", "wal"])
def test_reading_an_old_history_does_not_write_it(tmp_path: Path, journal: str) -> None:
    db = _copy(tmp_path)
    if journal == "wal":  # how 0.1.0 left its files
        conn = sqlite3.connect(db)
        assert conn.execute("PRAGMA journal_mode = WAL").fetchone()[0] == "wal"
        conn.close()
    digest = hashlib.sha256(db.read_bytes()).hexdigest()
    with open_store(db, read_only=True) as r:
        assert r.read_only
        assert {c.id for c in r.cases.list()} >= {"sentiment::happy", "sentiment::new"}
        assert len(r.runs.list()) == 4
    assert hashlib.sha256(db.read_bytes()).hexdigest() == digest
    assert {p.name for p in db.parent.iterdir()} <= {
        "oxyeval.db",
        "oxyeval.db-wal",
        "oxyeval.db-shm",
    }
    with open_store(db) as s:  # and a writer converts the WAL file as well
        assert len(s.runs.list()) == 4 and s.cases.get("sentiment::happy").total_runs == 3  # type: ignore[union-attr]


def test_an_old_history_too_large_for_memory_is_read_through_a_private_copy_on_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reading an old history upgrades a private copy of it: in memory when small, else in
    a file beside it that is gone as soon as it is open (a history of gigabytes never goes
    into memory). The history itself is not written, and nothing is left beside it."""
    from oxyeval.store._migrations import MEMORY_COPY_LIMIT

    db = _copy(tmp_path)
    assert db.stat().st_size < MEMORY_COPY_LIMIT
    monkeypatch.setattr("oxyeval.store._migrations.MEMORY_COPY_LIMIT", 1024)
    digest = hashlib.sha256(db.read_bytes()).hexdigest()
    with open_store(db, read_only=True) as r:
        assert sorted(p.name for p in db.parent.iterdir()) == ["oxyeval.db"]  # unlinked
        assert len(r.runs.list()) == 4 and r.cases.get("sentiment::happy") is not None
        with r.engine.connect() as conn:
            (_seq, _name, copy), *_ = conn.exec_driver_sql("PRAGMA database_list").all()
    # read from a file beside it (SQLite names it still), not from memory ("")
    assert Path(copy).parent == db.parent and Path(copy).name.startswith(".oxyeval-read-")
    assert hashlib.sha256(db.read_bytes()).hexdigest() == digest
    assert sorted(p.name for p in db.parent.iterdir()) == ["oxyeval.db"]


def test_an_old_history_with_no_room_for_a_copy_is_refused_to_readers_and_upgraded_by_writers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil

    from oxyeval.store import OldSchemaError, resolve_location
    from oxyeval.suites.history_store import read_before_writing

    db = _copy(tmp_path)
    monkeypatch.setattr("oxyeval.store._migrations.MEMORY_COPY_LIMIT", 1024)
    full = shutil.disk_usage(db.parent)._replace(free=0)
    monkeypatch.setattr(shutil, "disk_usage", lambda _path: full)
    digest = hashlib.sha256(db.read_bytes()).hexdigest()
    with pytest.raises(OldSchemaError) as caught:
        open_store(db, read_only=True)
    message = str(caught.value)
    assert str(db) in message and "older schema" in message and "oxy cases run" in message
    assert hashlib.sha256(db.read_bytes()).hexdigest() == digest  # not written
    # a command about to write upgrades it in place instead
    reader = read_before_writing(resolve_location(str(db), environ={}))
    assert reader is not None
    with reader:
        assert len(reader.runs.list()) == 4
    conn = sqlite3.connect(db)
    assert conn.execute(f"SELECT version_num FROM {VERSION_TABLE}").fetchone()[0] == HEAD
    conn.close()


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write read-only folders")
def test_an_old_history_in_a_read_only_folder_can_be_read(tmp_path: Path) -> None:
    db = _copy(tmp_path)
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.close()
    os.chmod(db.parent, 0o555)
    try:
        with open_store(db, read_only=True) as r:
            assert len(r.runs.list()) == 4
    finally:
        os.chmod(db.parent, 0o755)


def test_a_failing_conversion_leaves_the_old_file_intact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from oxyeval.store._migrations import _legacy

    db = _copy(tmp_path)
    old = _legacy_rows(db)
    real = _legacy._COPY_EXECUTIONS
    monkeypatch.setattr(
        _legacy, "_COPY_EXECUTIONS", real.replace("FROM legacy_executions", "FROM no_such_table")
    )
    with pytest.raises(StoreError):
        open_store(db)
    assert _legacy_rows(db) == old  # rolled back: still a 0.1.0 file
    monkeypatch.undo()
    with open_store(db) as s:
        assert len(s.runs.list()) == 4


def test_v1_history_is_converted_too(tmp_path: Path) -> None:
    db = tmp_path / "v1.db"
    conn = sqlite3.connect(db)
    conn.executescript(
        """
        PRAGMA application_id = 1331190085;
        CREATE TABLE prompts (id TEXT PRIMARY KEY, name TEXT NOT NULL, source TEXT NOT NULL DEFAULT '', created_at TEXT NOT NULL);
        CREATE TABLE prompt_versions (prompt_id TEXT NOT NULL REFERENCES prompts(id), version INTEGER NOT NULL, content_hash TEXT NOT NULL, content TEXT NOT NULL, created_at TEXT NOT NULL, PRIMARY KEY (prompt_id, version), UNIQUE (prompt_id, content_hash));
        CREATE TABLE test_cases (id TEXT PRIMARY KEY, prompt_id TEXT NOT NULL REFERENCES prompts(id), name TEXT NOT NULL, description TEXT, input TEXT NOT NULL DEFAULT '{}', expected_output TEXT, threshold REAL, source_file TEXT, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, deleted_at TEXT, total_runs INTEGER NOT NULL DEFAULT 0, pass_count INTEGER NOT NULL DEFAULT 0, score_sum REAL NOT NULL DEFAULT 0, scored_runs INTEGER NOT NULL DEFAULT 0, length_sum INTEGER NOT NULL DEFAULT 0, last_run TEXT, last_passed INTEGER);
        CREATE INDEX ix_test_cases_prompt ON test_cases(prompt_id);
        CREATE TABLE runs (id TEXT PRIMARY KEY, prompt_id TEXT, prompt_version INTEGER, started_at TEXT NOT NULL, finished_at TEXT, status TEXT NOT NULL DEFAULT 'running', total INTEGER NOT NULL DEFAULT 0, done INTEGER NOT NULL DEFAULT 0, pid INTEGER, host TEXT);
        CREATE TABLE executions (id TEXT PRIMARY KEY, test_case_id TEXT NOT NULL REFERENCES test_cases(id), run_id TEXT REFERENCES runs(id), execution_id TEXT NOT NULL, passed INTEGER NOT NULL, score REAL, actual_output TEXT NOT NULL, expected_output TEXT, output_diff TEXT, exact_match INTEGER NOT NULL DEFAULT 0, semantic_score REAL, similarity_method TEXT NOT NULL DEFAULT '', length_diff INTEGER NOT NULL DEFAULT 0, token_diff INTEGER, token_method TEXT NOT NULL DEFAULT '', is_regression INTEGER NOT NULL DEFAULT 0, regression_type TEXT, prompt_version INTEGER NOT NULL, run_duration_ms REAL NOT NULL DEFAULT 0, latency_ms REAL, input_tokens INTEGER, output_tokens INTEGER, error TEXT, created_at TEXT NOT NULL);
        CREATE INDEX ix_executions_case_created ON executions(test_case_id, created_at);
        INSERT INTO prompts VALUES ('p1', 'Prompt', 'p.yml', '2026-01-01T00:00:00.000Z');
        INSERT INTO test_cases (id, prompt_id, name, created_at, updated_at, total_runs, pass_count, score_sum, scored_runs, length_sum, last_run, last_passed) VALUES ('c1', 'p1', 'case', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z', 2, 1, 1.1, 2, 4, '2026-01-02T10:00:00.000Z', 0);
        INSERT INTO executions (id, test_case_id, execution_id, passed, score, actual_output, is_regression, regression_type, prompt_version, created_at) VALUES ('e1', 'c1', 'e1', 1, 0.9, 'ok', 0, NULL, 1, '2026-01-01T09:00:00.000Z'), ('e2', 'c1', 'e2', 0, 0.2, 'ok', 1, 'FAILED', 1, '2026-01-02T10:00:00.000Z');
        PRAGMA user_version = 1;
        """
    )
    conn.close()
    with open_store(db) as s:
        stats = s.stats.case_stats("c1")
        assert stats is not None and stats.regression_count == 1
        assert stats.regressions[0].regression_types == ("FAILED",)
        assert [(t.date, t.total_runs) for t in stats.trend] == [
            ("2026-01-01", 1),
            ("2026-01-02", 1),
        ]


def test_database_newer_than_the_code_is_refused(backend: Backend) -> None:
    loc = backend.fresh()
    with open_store(loc) as s, s.write("test") as conn:
        import sqlalchemy as sa

        conn.execute(sa.text(f"UPDATE {VERSION_TABLE} SET version_num = '9999'"))
    for read_only in (False, True):
        with pytest.raises(StoreError) as info:
            open_store(loc, read_only=read_only)
        text = str(info.value)
        assert "newer" in text and "9999" in text and loc.display in text


def test_two_openers_of_a_new_database_migrate_it_once(backend: Backend) -> None:
    loc = backend.fresh()
    gate = threading.Barrier(4)
    errors: list[BaseException] = []

    def opener() -> None:
        try:
            gate.wait()
            open_store(loc).close()
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=opener) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    with open_store(loc) as s, s.read("test") as conn:
        import sqlalchemy as sa

        assert conn.execute(
            sa.text(f"SELECT count(*), min(version_num) FROM {VERSION_TABLE}")
        ).one() == (1, HEAD)


@pytest.mark.parametrize("replay", [True, False], ids=["revisions", "new-at-head"])
def test_tables_and_migrations_agree(backend: Backend, replay: bool) -> None:
    """_tables.py (what the code queries) is exactly what the revisions build, and what a
    new database is created with."""
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext
    from alembic.script import ScriptDirectory

    from oxyeval.store._engine import create_engine
    from oxyeval.store._migrations import __file__ as migrations_init
    from oxyeval.store._migrations import upgrade
    from oxyeval.store._tables import metadata

    script = ScriptDirectory(str(Path(migrations_init).parent))
    assert script.get_current_head() == HEAD
    assert tuple(reversed([r.revision for r in script.walk_revisions()])) == REVISIONS
    loc = backend.fresh()
    if loc.path is not None:
        loc.path.parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(loc)
    try:
        assert upgrade(engine, loc, replay=replay) == "empty"
        with engine.connect() as conn:
            ctx = MigrationContext.configure(conn, opts={"version_table": VERSION_TABLE})
            assert ctx.get_current_revision() == HEAD
            diff = compare_metadata(ctx, metadata)
    finally:
        engine.dispose()
    assert diff == []


@pytest.mark.parametrize("replay", [True, False], ids=["revisions", "new-at-head"])
def test_a_live_name_is_unique_only_among_live_cases(backend: Backend, replay: bool) -> None:
    """The unique index on a case's name is partial on both backends, however the schema
    was made: a deleted case keeps its name and a new live case may take it too."""
    import sqlalchemy as sa

    from oxyeval.store._engine import create_engine
    from oxyeval.store._migrations import upgrade

    loc = backend.fresh()
    if loc.path is not None:
        loc.path.parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(loc)
    row = (
        "INSERT INTO test_cases (id, prompt_id, name, input, created_at, updated_at, deleted_at)"
        " VALUES (:id, 'p', 'same', '{}', 't', 't', :deleted)"
    )
    try:
        upgrade(engine, loc, replay=replay)
        with engine.begin() as conn:
            conn.execute(
                sa.text("INSERT INTO prompts (id, name, created_at) VALUES ('p', 'p', 't')")
            )
            conn.execute(sa.text(row), {"id": "gone", "deleted": "t"})
            conn.execute(sa.text(row), {"id": "live", "deleted": None})
        with pytest.raises(sa.exc.IntegrityError), engine.begin() as conn:
            conn.execute(sa.text(row), {"id": "twin", "deleted": None})
    finally:
        engine.dispose()


def test_live_cases_sharing_a_name_keep_one_and_the_others_are_renamed(backend: Backend) -> None:
    """A history written before names were held unique may hold two live cases of one
    name (API requests that raced): the upgrade keeps the name on the one a file declares
    (else the oldest), renames the others after their id, and loses no case."""
    import sqlalchemy as sa

    from oxyeval.store._engine import create_engine
    from oxyeval.store._migrations import _alembic

    loc = backend.fresh()
    if loc.path is not None:
        loc.path.parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(loc)
    rows = [  # (id, prompt, name, source_file, deleted_at)
        ("p::a~2", "p", "a", None, None),
        ("p::a", "p", "a", "s.prompt.yml", None),
        ("p::a~3", "p", "a", None, None),
        ("p::old", "p", "a", None, "2026-01-01T00:00:00Z"),
        ("q::b", "q", "b", None, None),
        ("q::b~2", "q", "b", None, None),
    ]
    try:
        with engine.connect() as conn, conn.begin():
            _alembic(conn, "0005")
            for prompt in ("p", "q"):
                conn.execute(
                    sa.text("INSERT INTO prompts (id, name, created_at) VALUES (:p, :p, 'now')"),
                    {"p": prompt},
                )
            for id, prompt, name, source, deleted in rows:
                conn.execute(
                    sa.text(
                        "INSERT INTO test_cases (id, prompt_id, name, source_file, deleted_at, "
                        "created_at, updated_at) VALUES (:i, :p, :n, :s, :d, 'now', 'now')"
                    ),
                    {"i": id, "p": prompt, "n": name, "s": source, "d": deleted},
                )
    finally:
        engine.dispose()
    with open_store(loc) as s:
        names = {c.id: c.name for c in s.cases.list(include_deleted=True)}
        assert names == {
            "p::a": "a",
            "p::a~2": "a (p::a~2)",
            "p::a~3": "a (p::a~3)",
            "p::old": "a",  # deleted: it keeps its name
            "q::b": "b",
            "q::b~2": "b (q::b~2)",
        }
        with pytest.raises(StoreError, match="already has a test case named 'a'"):
            s.cases.create("p", "a", {}, id="p::a~4")


def test_a_command_about_to_write_reads_an_older_history_on_either_backend(
    backend: Backend,
) -> None:
    """SQLite: read through an upgraded copy, the file left as it is. PostgreSQL, where a
    read-only open cannot read an older schema: upgraded in place, as the command's own
    open would a moment later (before, ``oxy cases run`` of a whole project stopped)."""
    import sqlalchemy as sa

    from oxyeval.store import OldSchemaError
    from oxyeval.store._engine import create_engine
    from oxyeval.store._migrations import _alembic
    from oxyeval.suites.history_store import read_before_writing

    location = backend.fresh()

    def version() -> str:
        engine = create_engine(location)
        try:
            with engine.connect() as conn:
                return str(
                    conn.execute(sa.text(f"SELECT version_num FROM {VERSION_TABLE}")).scalar()
                )
        finally:
            engine.dispose()

    engine = create_engine(location)
    try:
        with engine.connect() as conn:
            conn = conn.execution_options(oxy_write=True)
            with conn.begin():
                _alembic(conn, REVISIONS[-2])
    finally:
        engine.dispose()
    if backend.name == "postgresql":
        with pytest.raises(OldSchemaError):
            open_store(location, read_only=True)
    reader = read_before_writing(location)
    assert reader is not None
    with reader:
        assert reader.runs.list() == []
    assert version() == (HEAD if backend.name == "postgresql" else REVISIONS[-2])


def test_a_private_copy_that_cannot_be_made_is_said_and_leaves_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The copy beside an old history failing half-way (a full disk): an error that names
    the history, not a traceback, and no file left beside it."""
    from oxyeval.store import StoreError

    db = _copy(tmp_path)
    monkeypatch.setattr("oxyeval.store._migrations.MEMORY_COPY_LIMIT", 1024)
    real = sqlite3.connect

    class _Failing:
        """The old history's read-only connection, whose backup fails as on a full disk."""

        def __init__(self, conn: sqlite3.Connection) -> None:
            self._conn = conn

        def backup(self, _target: object) -> None:
            raise sqlite3.OperationalError("database or disk is full")

        def __getattr__(self, name: str) -> object:
            return getattr(self._conn, name)

    def connect(database: object, *args: object, **kwargs: object) -> object:
        conn = real(database, *args, **kwargs)  # type: ignore[call-overload]
        return _Failing(conn) if str(database).startswith("file:") else conn

    monkeypatch.setattr(sqlite3, "connect", connect)
    with pytest.raises(StoreError) as caught:
        open_store(db, read_only=True)
    assert str(db) in str(caught.value) and "disk is full" in str(caught.value)
    assert sorted(p.name for p in db.parent.iterdir()) == ["oxyeval.db"]
