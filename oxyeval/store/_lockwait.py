"""SQLite's write lock, waited for in short slices, so a command asked to stop stops waiting.

SQLite waits for a lock inside its busy handler, for the whole busy timeout (10 s by
default), and nothing another thread does ends that wait early
(``sqlite3.Connection.interrupt`` does not reach the busy handler). With the history's
write lock held by another process (a writer stopped with SIGSTOP or in a debugger, a
``sqlite3`` shell left inside a transaction), a command asked to stop (SIGTERM, Ctrl-C)
still waited the full timeout at each write before it could report: about 19 s for one
``oxy test``, past ``docker stop``'s grace period.

So a write transaction takes the lock with ``BEGIN IMMEDIATE`` under a busy timeout of a
quarter of a second, tried again until the connection's own timeout has passed, and for
no longer than :data:`~._watchdog.HURRY_GRACE` once the command is asked to stop
(:func:`~._watchdog.hurry_history`: in all, for every wait of the command). Waiting the
same total, a writer queues as before.
The same bound applies to switching a new file to WAL (:func:`retry_locked`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import suppress
from typing import Any, TypeVar

from ._watchdog import stop_waiting_at

__all__ = ["begin_write", "retry_locked"]

T = TypeVar("T")

#: Seconds of one busy wait inside SQLite, between two looks at the stop request.
SLICE = 0.25


def _locked(exc: BaseException) -> bool:
    """Whether ``exc`` is SQLite's "database is locked" (or SQLAlchemy's wrapping it)."""
    import sqlite3

    orig = getattr(exc, "orig", None) or exc
    text = str(orig).lower()
    return isinstance(orig, sqlite3.OperationalError) and ("locked" in text or "busy" in text)


def _end(started: float, timeout: float) -> float:
    """When a wait that began at ``started`` gives up: its timeout, or sooner when the
    command was asked to stop (looked at again on every slice)."""
    stop_by = stop_waiting_at()
    end = started + timeout
    return end if stop_by is None else min(end, stop_by)


def begin_write(execute: Callable[[str], Any], timeout: float) -> None:
    """``BEGIN IMMEDIATE`` on an sqlite3 connection (``execute`` runs one statement on it),
    waiting up to ``timeout`` seconds for the write lock in slices (see the module's
    docstring); raises sqlite3's "database is locked" when it gives up. The connection's
    busy timeout is ``timeout`` again afterwards, for every other statement."""
    started = time.monotonic()
    try:
        while True:
            left = _end(started, timeout) - time.monotonic()
            execute(f"PRAGMA busy_timeout = {max(0, int(min(SLICE, left) * 1000))}")
            try:
                execute("BEGIN IMMEDIATE")
                return
            except Exception as exc:  # sqlite3's, or SQLAlchemy's wrapping it
                if not _locked(exc) or time.monotonic() >= _end(started, timeout):
                    raise
    finally:
        with suppress(Exception):  # a broken connection: its own error is the one to see
            execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")


def retry_locked(attempt: Callable[[], T], timeout: float, pause: float = 0.02) -> T:
    """``attempt()`` again while SQLite answers "database is locked" at once, without its
    busy handler (as it does for ``PRAGMA journal_mode = WAL`` while another connection
    opens the same new file), until ``timeout`` or the command's stop request."""
    import sqlite3

    started = time.monotonic()
    while True:
        try:
            return attempt()
        except sqlite3.OperationalError as exc:
            if not _locked(exc) or time.monotonic() >= _end(started, timeout):
                raise
            time.sleep(pause)
