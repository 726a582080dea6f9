"""A project's first history file, made by the lean store from the schema snapshot, is the
file the migrations make; and two processes creating it at once share one good file."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from oxyeval.store import open_results, open_store
from oxyeval.store._engine import resolve_location
from oxyeval.store._fresh import (
    SNAPSHOT,
    build_by_migrations,
    create_from_snapshot,
    render_snapshot,
)

ROOT = Path(__file__).resolve().parents[2]


def _describe(path: Path) -> tuple[list[str], int, int, str]:
    conn = sqlite3.connect(path)
    try:
        return (
            sorted(conn.iterdump()),  # index order is SQLAlchemy's set order
            conn.execute("PRAGMA application_id").fetchone()[0],
            conn.execute("PRAGMA user_version").fetchone()[0],
            conn.execute("PRAGMA journal_mode").fetchone()[0],
        )
    finally:
        conn.close()


def test_the_committed_snapshot_is_what_the_migrations_build() -> None:
    assert SNAPSHOT.read_text(encoding="utf-8") == render_snapshot(), (
        "the schema snapshot is stale: run `python -m oxyeval.store._fresh` and commit it"
    )


def _migrated(path: Path) -> Path:
    """A new history built by the migrations (the tables' schema at once), not the snapshot."""
    path.parent.mkdir(parents=True)
    assert build_by_migrations(path) == "empty"
    return path


def test_a_file_from_the_snapshot_equals_a_migrated_one(tmp_path: Path) -> None:
    migrated = _migrated(tmp_path / "a" / "oxyeval.db")
    fresh = tmp_path / "b" / ".oxy" / "oxyeval.db"
    assert create_from_snapshot(fresh)
    assert _describe(fresh) == _describe(migrated)
    assert _describe(fresh)[3] == "wal"
    assert sorted(p.name for p in fresh.parent.iterdir()) == ["oxyeval.db"]  # no temp file left


def test_the_full_store_makes_a_new_history_from_the_snapshot_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What ``oxy cases run`` creates on a new project is the migrations' file, made from the
    snapshot (quicker than building the tables' schema, which a first run waited for)."""
    from oxyeval.store import _migrations

    made = tmp_path / "c" / ".oxy" / "oxyeval.db"
    with monkeypatch.context() as m:
        m.setattr(_migrations, "_create_at_head", lambda _conn: pytest.fail("built, not copied"))
        with open_store(made) as store:
            store.prompts.upsert("p", "p", "p.prompt.yml")
    assert sorted(
        p.name for p in made.parent.iterdir() if not p.name.endswith(("-wal", "-shm"))
    ) == ["oxyeval.db"]
    migrated = _migrated(tmp_path / "a" / "oxyeval.db")
    with open_store(migrated) as store:
        store.prompts.upsert("p", "p", "p.prompt.yml")
    schema = [line for line in _describe(made)[0] if not line.startswith("INSERT")]
    assert schema == [line for line in _describe(migrated)[0] if not line.startswith("INSERT")]
    assert _describe(made)[1:] == _describe(migrated)[1:]


def test_the_first_run_writes_through_the_lean_store_and_the_full_store_reads_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "proj" / ".oxy" / "oxyeval.db"
    location = resolve_location(str(path), environ={})
    lite = open_results(location)
    assert lite is not None and path.is_file()
    with lite:
        run_id = lite.runs.start("consistency", total=1, subject="t.agent.yml")
        lite.runs.finish(run_id)
    with open_store(location, read_only=True) as store:
        assert [r.id for r in store.runs.list(limit=10)] == [run_id]


def test_an_existing_file_is_never_replaced(tmp_path: Path) -> None:
    path = tmp_path / "oxyeval.db"
    open_store(path).close()
    with open_store(path) as store:
        run_id = store.runs.start("consistency", total=1)
    assert create_from_snapshot(path)  # the other process's file stands
    with open_store(path, read_only=True) as store:
        assert [r.id for r in store.runs.list(limit=10)] == [run_id]


def test_an_unwritable_place_falls_back_to_the_full_store(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert not create_from_snapshot(blocker / "sub" / "oxyeval.db")  # a file is in the way
    assert open_results(resolve_location(str(blocker / "sub" / "oxyeval.db"), environ={})) is None


def test_processes_creating_the_same_history_at_once_share_one_good_file(tmp_path: Path) -> None:
    path = tmp_path / "shared" / "oxyeval.db"
    code = (
        "import sys; from oxyeval.store import open_results\n"
        "from oxyeval.store._engine import resolve_location\n"
        "lite = open_results(resolve_location(sys.argv[1], environ={}))\n"
        "assert lite is not None\n"
        "with lite:\n"
        "    lite.runs.finish(lite.runs.start('consistency', total=1))\n"
    )
    procs = [subprocess.Popen([sys.executable, "-c", code, str(path)], cwd=ROOT) for _ in range(6)]
    assert [p.wait(timeout=60) for p in procs] == [0] * 6
    with open_store(path, read_only=True) as store:
        assert len(store.runs.list(limit=100)) == 6
    assert sorted(p.name for p in path.parent.iterdir() if p.name.endswith(".new")) == []
