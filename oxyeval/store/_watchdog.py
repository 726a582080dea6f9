"""A client-side deadline on PostgreSQL statements, for a server that stops answering.

The server's ``statement_timeout`` ends a slow statement on a live server. Nothing on
the server's side helps when the server runs no code at all (a stopped postmaster, a
paused VM): its kernel still acknowledges what we send, so TCP keepalives and
``tcp_user_timeout`` never fire either, and libpq waits for an answer forever. A
command would then hang past any timeout and through SIGTERM (the thread holding the
statement is joined before the process exits), printing no report.

So each statement, commit and rollback arms a deadline (``limit`` seconds, a little
more than the server's own statement_timeout, so a live server answers first with a
clear error); one watchdog thread per process, asleep while nothing is armed, shuts
down the socket of a connection whose deadline passes (``shutdown(2)`` on a duplicate
of its descriptor). That wakes libpq with an error, which the store reports as an
unreachable database. The engine is then *tripped*: it hands out no more connections,
so the rest of a run does not wait again at every write.
"""

from __future__ import annotations

import os
import socket
import threading
import time
import weakref
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

__all__ = ["HURRY_GRACE", "guard_engine", "hurry_history"]

#: Seconds a history statement (or a new connection) still gets once a command was asked
#: to stop (SIGTERM, Ctrl-C): a live server answers in milliseconds; a command that
#: waited the whole statement timeout would outlive ``docker stop``'s grace period.
HURRY_GRACE = 2.0


class _Tripped:
    """Whether an engine's server failed to answer in time (then: no new connections)."""

    __slots__ = ("when",)

    def __init__(self) -> None:
        self.when: float | None = None


class _Watchdog:
    """Armed deadlines of every guarded connection in the process, and the thread that
    cuts those that pass."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        # id(raw connection) -> (deadline, descriptor, weak raw connection, its engine's state)
        self._armed: dict[int, tuple[float, int, Any, _Tripped]] = {}
        self._thread: threading.Thread | None = None
        #: Set once the command was asked to stop: no deadline is further away than this.
        self.cap: float | None = None

    def hurry(self, grace: float | None) -> None:
        """Bring every deadline to at most ``grace`` seconds from now (None: back to normal)."""
        with self._cond:
            self.cap = grace
            if grace is None:
                return
            soon = time.monotonic() + grace
            for key, (deadline, fd, ref, state) in self._armed.items():
                self._armed[key] = (min(deadline, soon), fd, ref, state)
            self._cond.notify()

    def arm(self, raw: Any, limit: float, state: _Tripped) -> None:
        try:
            fd = int(raw.fileno())
            ref = weakref.ref(raw)
        except Exception:  # closed already, or not a psycopg connection: nothing to watch
            return
        with self._cond:
            if self.cap is not None:
                limit = min(limit, self.cap)
            self._armed[id(raw)] = (time.monotonic() + limit, fd, ref, state)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._run, name="oxyeval-history-deadline", daemon=True
                )
                self._thread.start()
            self._cond.notify()

    def disarm(self, raw: Any) -> None:
        if raw is None:
            return
        with self._cond:
            self._armed.pop(id(raw), None)

    def _run(self) -> None:
        with self._cond:
            while True:
                now = time.monotonic()
                for key, (deadline, fd, ref, state) in list(self._armed.items()):
                    if deadline <= now:
                        del self._armed[key]
                        raw = ref()
                        # Under the lock, and only while still armed: the statement is
                        # still waiting, so the descriptor is still this connection's.
                        if raw is not None and not getattr(raw, "closed", False):
                            state.when = now
                            _cut(fd)
                if not self._armed:
                    # Idle: sleep until something is armed (a daemon thread never holds
                    # the process open).
                    self._cond.wait()
                    continue
                soonest = min(entry[0] for entry in self._armed.values())
                self._cond.wait(max(0.0, soonest - now))


def _cut(fd: int) -> None:
    """Shut the socket down: a read or poll blocked on it returns at once, with an error."""
    try:
        sock = socket.socket(fileno=os.dup(fd))
    except OSError:
        return
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    finally:
        sock.close()  # the duplicate only; the connection's own descriptor stays libpq's


_WATCHDOG = _Watchdog()


def hurry_history(grace: float | None = HURRY_GRACE) -> None:
    """The command was asked to stop: give every history statement in flight, every later
    one and every new connection at most ``grace`` seconds, so it reports promptly even
    when the server stopped answering (``None`` undoes it). Not from a signal handler
    itself (it takes a lock the interrupted code may hold): from the event loop."""
    _WATCHDOG.hurry(grace)


def _raw(conn: Any) -> Any:
    """The DBAPI (psycopg) connection behind a SQLAlchemy Connection, if any."""
    try:
        return conn.connection.dbapi_connection
    except Exception:
        return None


def guard_engine(engine: Engine, limit: float) -> None:
    """Put every statement, commit and rollback of ``engine`` under a ``limit``-second
    deadline (see the module's docstring)."""
    from sqlalchemy import event, exc

    state = _Tripped()

    def arm(conn: Any, *_args: Any) -> None:
        raw = _raw(conn)
        if raw is not None:
            _WATCHDOG.arm(raw, limit, state)

    def disarm(conn: Any, *_args: Any) -> None:
        _WATCHDOG.disarm(_raw(conn))

    event.listen(engine, "before_cursor_execute", arm)
    event.listen(engine, "after_cursor_execute", disarm)
    event.listen(engine, "commit", arm)  # fired before the DBAPI commit
    event.listen(engine, "rollback", arm)
    event.listen(engine, "begin", disarm)

    @event.listens_for(engine, "handle_error")
    def _on_error(context: Any) -> None:
        if context.connection is not None:
            disarm(context.connection)

    @event.listens_for(engine, "reset")
    def _on_reset(raw: Any, _record: Any, _state: Any = None) -> None:
        _WATCHDOG.arm(raw, limit, state)  # returning to the pool rolls back

    @event.listens_for(engine, "checkin")
    def _on_checkin(raw: Any, _record: Any) -> None:
        _WATCHDOG.disarm(raw)

    @event.listens_for(engine, "close")
    def _on_close(raw: Any, _record: Any) -> None:
        _WATCHDOG.disarm(raw)

    @event.listens_for(engine, "invalidate")
    def _on_invalidate(raw: Any, _record: Any, _exc: Any) -> None:
        _WATCHDOG.disarm(raw)

    @event.listens_for(engine, "checkout")
    def _on_checkout(_raw_conn: Any, _record: Any, _proxy: Any) -> None:
        if state.when is not None:
            raise exc.DisconnectionError("the server stopped answering")  # then do_connect

    @event.listens_for(engine, "do_connect")
    def _on_connect(_dialect: Any, _record: Any, _args: Any, kwargs: Any) -> None:
        cap = _WATCHDOG.cap
        if cap is not None:  # libpq counts whole seconds, at least 2
            kwargs["connect_timeout"] = max(
                2, min(int(kwargs.get("connect_timeout") or cap), round(cap))
            )
        if state.when is not None:
            import psycopg

            raise psycopg.OperationalError(
                f"the server stopped answering (no reply within {limit:g} s); this "
                "command does not wait for it again"
            )
