"""Running statements on a warehouse: a pool of sessions per database, and the deadline.

The server stops a statement at the database's ``timeout`` (each engine asks it to).
Behind that, a statement whose answer has not come a grace period later (a server or a
network that stopped answering) is cancelled on the server from here, through another
connection or request, and its session is dropped: a command never waits on a server
that does not answer, and a stopped query is no longer running there. Interrupting
the run (Ctrl-C, SIGTERM) cancels the running statements the same way.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from typing import Any

from .warehouses import Column, Rows, Session, Warehouse, WarehouseError

__all__ = ["GRACE_SECONDS", "WarehousePool"]

#: How long past its timeout a statement may go unanswered before it is cancelled here.
GRACE_SECONDS = 2.0
_CONNECT_SECONDS = 10.0  # at most, for connecting and signing in (less with a small timeout)
_IDLE = 4  # sessions kept open per database between queries


class WarehousePool:
    """The sessions of one warehouse database for one run: reused one query at a time."""

    def __init__(self, warehouse: Warehouse) -> None:
        self.warehouse = warehouse
        self._idle: list[Session] = []
        self._lock = threading.Lock()
        self._closed = False

    def _take(self, timeout: float) -> Session:
        with self._lock:
            if self._closed:
                raise WarehouseError("closed", "the run's databases are closed")
            if self._idle:
                return self._idle.pop()
        return self.warehouse.open(min(_CONNECT_SECONDS, max(timeout, 1.0) + GRACE_SECONDS))

    def _give(self, session: Session) -> None:
        with self._lock:
            if not self._closed and len(self._idle) < _IDLE:
                self._idle.append(session)
                return
        _close(session)

    def _start(
        self, session: Session, sql: str, params: list[Any], options: dict[str, Any]
    ) -> concurrent.futures.Future[Rows]:
        future: concurrent.futures.Future[Rows] = concurrent.futures.Future()

        def work() -> None:
            try:
                rows = session.run(
                    sql,
                    params,
                    writable=options["writable"],
                    timeout=options["timeout"],
                    max_rows=options["max_rows"],
                )
            except BaseException as exc:
                with contextlib.suppress(concurrent.futures.InvalidStateError):
                    future.set_exception(exc)  # unless the caller gave up on it already
                return
            with contextlib.suppress(concurrent.futures.InvalidStateError):
                future.set_result(rows)

        threading.Thread(target=work, daemon=True, name="oxyeval-warehouse").start()
        return future

    def _finish(self, session: Session, error: BaseException | None) -> None:
        """Keep a session that answered (rows, or the server's own error about the
        statement); drop one that timed out, failed to answer or lost its connection."""
        if error is None or (
            isinstance(error, WarehouseError) and error.code in ("sql", "refused")
        ):
            self._give(session)
        else:
            _close(session)

    def _past_deadline(self, session: Session, options: dict[str, Any]) -> WarehouseError:
        with contextlib.suppress(Exception):
            session.cancel()
        _close(session)
        return WarehouseError(
            "timeout",
            f"the query ran past its timeout of {options['timeout']:g} s and the server did "
            "not stop it; it was cancelled on the server",
        )

    def run_sync(self, sql: str, params: list[Any], options: dict[str, Any]) -> Rows:
        """One statement, waited for in this thread."""
        session = self._take(options["timeout"])
        future = self._start(session, sql, params, options)
        try:
            rows = future.result(options["timeout"] + GRACE_SECONDS)
        except concurrent.futures.TimeoutError:
            raise self._past_deadline(session, options) from None
        except BaseException as exc:
            self._finish(session, exc)
            raise
        self._finish(session, None)
        return rows

    async def run(self, sql: str, params: list[Any], options: dict[str, Any]) -> Rows:
        """One statement, awaited; cancelling the caller cancels it on the server."""
        session = await asyncio.to_thread(self._take, options["timeout"])
        future = self._start(session, sql, params, options)
        try:
            rows = await asyncio.wait_for(
                asyncio.wrap_future(future), options["timeout"] + GRACE_SECONDS
            )
        except asyncio.TimeoutError:
            raise self._past_deadline(session, options) from None
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                session.cancel()
            _close(session)
            raise
        except BaseException as exc:
            self._finish(session, exc)
            raise
        self._finish(session, None)
        return rows

    def columns(self, timeout: float, limit: int) -> list[Column]:
        """The warehouse's catalog, read on one of the pool's sessions (in this thread)."""
        session = self._take(timeout)
        try:
            found = self.warehouse.columns(session, timeout, limit)
        except BaseException as exc:
            self._finish(session, exc)
            raise
        self._finish(session, None)
        return found

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
            self._closed = True
        for session in idle:
            _close(session)


def _close(session: Session) -> None:
    with contextlib.suppress(Exception):
        session.close()
