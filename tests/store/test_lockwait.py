"""SQLite's write lock is waited for in slices: the full timeout as before, and no longer
than the grace once the command is asked to stop."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from oxyeval.store import hurry_history
from oxyeval.store._lockwait import begin_write


@pytest.fixture
def two(tmp_path: Path) -> Iterator[tuple[sqlite3.Connection, sqlite3.Connection]]:
    path = tmp_path / "h.db"
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("PRAGMA journal_mode = WAL")
    holder.execute("CREATE TABLE t (x)")
    waiter = sqlite3.connect(path, isolation_level=None, timeout=30)
    try:
        yield holder, waiter
    finally:
        holder.close()
        waiter.close()


def _busy_timeout(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA busy_timeout").fetchone()[0])


def test_a_writer_still_queues_for_the_whole_timeout(
    two: tuple[sqlite3.Connection, sqlite3.Connection],
) -> None:
    holder, waiter = two
    holder.execute("BEGIN IMMEDIATE")
    threading.Timer(0.6, holder.execute, args=("COMMIT",)).start()
    begin_write(waiter.execute, 5)  # more than one slice: still waits, then gets it
    assert waiter.in_transaction
    waiter.execute("ROLLBACK")
    assert _busy_timeout(waiter) == 5000  # every other statement waits as configured


def test_the_timeout_still_ends_the_wait(
    two: tuple[sqlite3.Connection, sqlite3.Connection],
) -> None:
    holder, waiter = two
    holder.execute("BEGIN IMMEDIATE")
    started = time.monotonic()
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        begin_write(waiter.execute, 0.6)
    assert 0.5 < time.monotonic() - started < 3
    assert _busy_timeout(waiter) == 600


def test_a_command_asked_to_stop_stops_waiting_for_the_lock(
    two: tuple[sqlite3.Connection, sqlite3.Connection],
) -> None:
    holder, waiter = two
    holder.execute("BEGIN IMMEDIATE")
    threading.Timer(0.3, hurry_history, args=(0.3,)).start()
    started = time.monotonic()
    try:
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            begin_write(waiter.execute, 30)  # sqlite3's own busy wait: all 30 s
        assert time.monotonic() - started < 5
        # Past the grace, a later write does not wait at all (one try).
        started = time.monotonic()
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            begin_write(waiter.execute, 30)
        assert time.monotonic() - started < 5  # one try, not the 30 s wait
    finally:
        hurry_history(None)
