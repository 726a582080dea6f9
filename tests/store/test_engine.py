"""Locations, opening, SQLite settings and errors that name the database (never its password)."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from oxyeval.errors import EXIT_INFRA, EXIT_INPUT
from oxyeval.store import (
    EmptyHistoryError,
    Location,
    LocationError,
    Store,
    StoreError,
    open_store,
    resolve_location,
)

from ..pgcluster import PASSWORD, PgCluster
from .conftest import Backend

# --------------------------------------------------------------------------- locations


def test_resolution_order(tmp_path: Path) -> None:
    default = resolve_location(project_root=tmp_path, environ={})
    assert default.path == tmp_path / ".oxy" / "oxyeval.db" and not default.explicit
    env = {"OXY_DB": "/x/h.db"}
    assert resolve_location(project_root=tmp_path, environ=env).path == Path("/x/h.db")
    assert resolve_location("given.db", project_root=tmp_path, environ=env).path == Path("given.db")
    assert resolve_location(project_root=tmp_path, environ={"OXY_DB": "  "}).path == default.path
    history = {"url": "hist/h.db"}
    from_config = resolve_location(project_root=tmp_path, environ={}, history=history)
    assert from_config.path == tmp_path / "hist" / "h.db" and from_config.explicit
    assert resolve_location(project_root=tmp_path, environ=env, history=history).path == Path(
        "/x/h.db"
    )
    assert resolve_location("sqlite:///rel.db", environ={}).path == Path("rel.db")
    assert resolve_location("sqlite:////abs/x.db", environ={}).path == Path("/abs/x.db")


def test_postgres_urls_and_passwords(tmp_path: Path) -> None:
    loc = resolve_location("postgres://u:p%40ss-w0rd-long@db.example:5433/hist", environ={})
    assert loc.backend == "postgresql"
    assert loc.display == "postgres://u:***@db.example:5433/hist"
    assert "p%40ss" not in repr(loc) and "p@ss" not in repr(loc) and str(loc) == loc.display
    assert loc.password == "p@ss-w0rd-long"
    from_env = resolve_location(
        project_root=tmp_path,
        environ={"PGPASS_OXY": "from-the-env-123"},
        history={"url": "postgresql://u@h/db", "password_var": "PGPASS_OXY"},
    )
    assert from_env.password == "from-the-env-123" and from_env.display == "postgresql://u@h/db"
    # An unset variable is no error: libpq's PGPASSWORD / ~/.pgpass may still supply one
    # (test_password_fallback.py).
    unset = resolve_location(
        project_root=tmp_path,
        environ={},
        history={"url": "postgresql://u@h/db", "password_var": "NOPE"},
    )
    assert unset.password is None and unset.unset_password_var == "NOPE"
    with pytest.raises(LocationError, match="password_var") as info:
        resolve_location(
            project_root=tmp_path, environ={}, history={"url": "postgresql://u:secret-in-yaml@h/db"}
        )
    assert "secret-in-yaml" not in str(info.value) and info.value.key == ("history", "url")
    for bad, why in (
        ("mysql://u@h/db", "unsupported URL scheme"),
        ("postgresql://u@h", "names no database"),
        ("postgresql:///db", "names no host"),
        ("postgresql://u@h:port/db", "port is not a number"),
    ):
        with pytest.raises(LocationError, match=why) as info:
            resolve_location(bad, environ={})
        assert info.value.exit_code == EXIT_INPUT


def test_utc_timestamps() -> None:
    from oxyeval.store import utc_timestamp

    assert utc_timestamp("2026-11-22T07:58:00.123456+02:00") == "2026-11-22T05:58:00.123Z"
    assert utc_timestamp("2026-11-22T05:58:00Z") == "2026-11-22T05:58:00.000Z"
    with pytest.raises(ValueError):
        utc_timestamp("yesterday")


# --------------------------------------------------------------------------- opening


def test_sqlite_settings_and_folders(tmp_path: Path) -> None:
    with open_store(tmp_path / "new" / "dir" / "h.db") as s:
        with s.engine.connect() as conn:
            pragma = {
                name: conn.exec_driver_sql(f"PRAGMA {name}").scalar()
                for name in ("journal_mode", "foreign_keys", "synchronous", "busy_timeout")
            }
        assert pragma == {
            "journal_mode": "wal",
            "foreign_keys": 1,
            "synchronous": 1,
            "busy_timeout": 10_000,
        }
    empty = tmp_path / "empty.db"
    empty.write_bytes(b"")
    open_store(empty).close()  # an empty file is a new database
    conn = sqlite3.connect(empty)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 100  # 0.1.0 refuses it as newer
    conn.close()


def test_read_only_open_creates_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "no" / "such" / "h.db"
    with pytest.raises(EmptyHistoryError):
        open_store(missing, read_only=True)
    assert not (tmp_path / "no").exists()
    db = tmp_path / "h.db"
    with open_store(db) as s:
        s.cases.create("p", "c", {}, "x", id="c1")
    content = db.read_bytes()
    with open_store(db, read_only=True) as r:
        assert r.read_only and [c.id for c in r.cases.list()] == ["c1"]
        with pytest.raises(StoreError, match="read-only"):
            r.cases.create("p", "d", {}, id="d")
    assert db.read_bytes() == content
    # At most SQLite's WAL index files appear (a reader needs them); no data is written.
    assert {p.name for p in tmp_path.iterdir()} <= {"h.db", "h.db-wal", "h.db-shm"}
    wal = tmp_path / "h.db-wal"
    assert not wal.exists() or wal.stat().st_size == 0


def test_bad_paths_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(LocationError, match="is a directory") as info:
        open_store(tmp_path)
    assert str(tmp_path) in str(info.value) and info.value.exit_code == EXIT_INPUT
    (tmp_path / "f").write_text("x")
    with pytest.raises(LocationError, match="cannot create folder"):
        open_store(tmp_path / "f" / "h.db")
    bad = tmp_path / "notes.db"
    bad.write_text("this is not a database, just some text that is long enough " * 20)
    with pytest.raises(StoreError, match="not a valid SQLite database") as info:
        open_store(bad)
    assert str(bad) in str(info.value) and info.value.exit_code == EXIT_INFRA
    assert info.value.__cause__ is not None  # kept for --debug, not shown to users


def test_someone_elses_sqlite_database_is_left_alone(tmp_path: Path) -> None:
    other = tmp_path / "app.db"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="not an oxyeval history database"):
        open_store(other)
    conn = sqlite3.connect(other)
    assert [r[0] for r in conn.execute("SELECT name FROM sqlite_master")] == ["t"]
    conn.close()


def test_locked_sqlite_database_is_a_store_error_not_a_hang(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    open_store(db).close()
    blocker = sqlite3.connect(db, isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")
    try:
        s = open_store(db, timeout=0.1)
        start = time.perf_counter()
        with pytest.raises(StoreError) as info:
            s.prompts.upsert("p", "P")
        assert time.perf_counter() - start < 5
        assert "locked" in str(info.value) and str(db) in str(info.value)
        s.close()
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()


def test_closed_store_raises_store_error(backend: Backend) -> None:
    s = open_store(backend.fresh())
    s.close()
    s.close()  # idempotent
    with pytest.raises(StoreError, match="closed"):
        s.cases.list()


def test_empty_postgres_database_reads_as_no_history(backend: Backend) -> None:
    loc = backend.fresh()
    with pytest.raises(EmptyHistoryError):
        open_store(loc, read_only=True)
    open_store(loc).close()  # a writer creates the schema
    with open_store(loc, read_only=True) as r:
        assert r.runs.list() == []


# --------------------------------------------------------------------------- PostgreSQL errors


@pytest.mark.parametrize("backend", ["postgresql"], indirect=True)
def test_pg_errors_name_the_database_never_the_password(
    backend: Backend, pg_cluster: PgCluster
) -> None:
    port = pg_cluster.port
    wrong = resolve_location(
        f"postgresql://oxy:wrong-{PASSWORD}@127.0.0.1:{port}/postgres", environ={}
    )
    with pytest.raises(StoreError) as info:
        open_store(wrong, timeout=5)
    text = str(info.value)
    assert "refused the password" in text and f"127.0.0.1:{port}/postgres" in text
    # Written in the URL: the advice is to correct the URL, not config.yml's password_var.
    assert "written in the URL" in text and "password_var" not in text
    assert PASSWORD not in text and "***" in text
    nopw = resolve_location(pg_cluster.url("postgres", password=False), environ={})
    with pytest.raises(StoreError, match="asks for a password and none was given"):
        open_store(nopw, timeout=5)
    missing = resolve_location(pg_cluster.url("no_such_db"), environ={})
    with pytest.raises(StoreError, match="does not exist") as info:
        open_store(missing, timeout=5)
    assert PASSWORD not in str(info.value) and "no_such_db" in str(info.value)
    with socket_port() as free:
        down = resolve_location(f"postgresql://oxy:{PASSWORD}@127.0.0.1:{free}/x", environ={})
        with pytest.raises(StoreError, match="cannot be reached") as info:
            open_store(down, timeout=2)
    assert PASSWORD not in str(info.value) and info.value.exit_code == EXIT_INFRA


@pytest.mark.parametrize("backend", ["postgresql"], indirect=True)
def test_pg_password_from_config_variable(
    backend: Backend, pg_cluster: PgCluster, tmp_path: Path
) -> None:
    name = pg_cluster.create_database()
    loc = resolve_location(
        project_root=tmp_path,
        environ={"OXY_PG_PASSWORD": PASSWORD},
        history={"url": pg_cluster.url(name, password=False), "password_var": "OXY_PG_PASSWORD"},
    )
    with open_store(loc) as s:
        s.prompts.upsert("p", "P")
        assert PASSWORD not in s.path and PASSWORD not in repr(s)
    pg_cluster.drop_database(name)


def test_missing_driver_is_an_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    real = builtins.__import__

    def no_psycopg(name: str, *args: object, **kwargs: object) -> object:
        if name == "psycopg":
            raise ImportError("No module named 'psycopg'")
        return real(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(builtins, "__import__", no_psycopg)
    with pytest.raises(LocationError, match=r"pip install 'oxyeval\[postgres\]'"):
        open_store(Location("postgresql", "postgresql://u@h/db", url="postgresql+psycopg://u@h/db"))


class socket_port:
    """A port nothing listens on (bound, then released)."""

    def __enter__(self) -> int:
        import socket

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return int(s.getsockname()[1])

    def __exit__(self, *exc: object) -> None:
        return None


def test_plain_sql_binds_by_place_on_sqlite_with_each_name_where_it_stands() -> None:
    from oxyeval.store._core import _positional

    text, pick = _positional("UPDATE t SET a = :a, b = CASE WHEN :b < 1 THEN :b END WHERE id = :id")
    assert text == "UPDATE t SET a = ?, b = CASE WHEN ? < 1 THEN ? END WHERE id = ?"
    assert pick({"id": 7, "a": "x", "b": 0.5, "unused": 1}) == ("x", 0.5, 0.5, 7)
    one, pick_one = _positional("DELETE FROM t WHERE id = :id AND ts::text <> ''")
    assert one == "DELETE FROM t WHERE id = ? AND ts::text <> ''" and pick_one({"id": 3}) == (3,)


def test_a_batch_the_driver_refuses_is_made_valid_and_written_once(store: Store) -> None:
    """Rows go to the driver unchecked; one it cannot encode (a lone surrogate) makes the
    batch go again, made valid, with nothing of the refused attempt left behind."""
    from oxyeval.store._core import executemany

    rows = [{"a": "ok", "b": 1}, {"a": "bad \ud800 text", "b": 2}, {"a": "fine", "b": 3}]
    with store.write("testing") as conn:
        conn.exec_driver_sql("CREATE TABLE batch_t (a TEXT, b INTEGER)")
        executemany(conn, "INSERT INTO batch_t (a, b) VALUES (:a, :b)", rows)
        executemany(conn, "INSERT INTO batch_t (a, b) VALUES (:a, :b)", [{"a": "plain", "b": 4}])
    with store.read("testing") as conn:
        got = conn.exec_driver_sql("SELECT a, b FROM batch_t ORDER BY b").all()
    assert [tuple(r) for r in got] == [
        ("ok", 1),
        ("bad \ufffd text", 2),
        ("fine", 3),
        ("plain", 4),
    ]
    with store.write("testing") as conn:
        conn.exec_driver_sql("DROP TABLE batch_t")
