"""A client-side deadline on PostgreSQL statements, for a server that stops answering.

The server's ``statement_timeout`` ends a slow statement on a live server. Nothing on
the server's side helps when the server runs no code at all (a stopped postmaster, a
paused VM): its kernel still acknowledges what we send, so TCP keepalives and
``tcp_user_timeout`` never fire either, and libpq waits for an answer forever. A
command would then hang past any timeout and through SIGTERM (the thread holding the
statement is joined before the process exits), printing no report.

So every round trip to the server arms a deadline (``limit`` seconds, a little more
than the server's own statement_timeout, so a live server answers first with a clear
error): each statement, commit and rollback (SQLAlchemy's cursor and transaction
events), the rollback that returns a connection to the pool, and a new connection from
the end of its handshake until the pool hands it out. That last one matters: what
SQLAlchemy runs on a fresh connection (the dialect's first queries: server version,
isolation level, hstore...) fires no cursor event, and a server that completes the
startup handshake and then never answers (pgbouncer in front of a dead database) would
otherwise hold it forever. One watchdog thread per process, asleep while nothing is
armed, shuts down the socket of a connection whose deadline passes (``shutdown(2)`` on
a duplicate of its descriptor). That wakes libpq with an error, which the store reports
as a database that stopped answering. The engine is then *tripped*: it hands out no more
connections, so the rest of a run does not wait again at every write.

The handshake itself is bounded by the connect timeout, which psycopg enforces; its
socket is not ours to cut. So it runs in a helper thread that nobody joins, and the
caller stops waiting for it once the command is asked to stop (:func:`hurry_history`):
a late connection is closed as it arrives.

Closing a connection sends one message without waiting for an answer (psycopg keeps
its connections non-blocking), so it needs no deadline.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

__all__ = ["HURRY_GRACE", "guard_engine", "hurry_history", "stop_waiting_at"]

#: Seconds a history statement (or a new connection) still gets once a command was asked
#: to stop (SIGTERM, Ctrl-C): a live server answers in milliseconds; a command that
#: waited the whole statement timeout would outlive ``docker stop``'s grace period.
HURRY_GRACE = 2.0


class _Tripped:
    """Whether an engine's server failed to answer in time (then: no new connections)."""

    __slots__ = ("waited", "when")

    def __init__(self) -> None:
        self.when: float | None = None
        #: Seconds the cut round trip had waited (for the error message).
        self.waited = 0.0


class _Watchdog:
    """Armed deadlines of every guarded connection in the process, and the thread that
    cuts those that pass."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        # id(raw connection) -> (deadline, descriptor, weak raw connection, its engine's
        # state, when it was armed)
        self._armed: dict[int, tuple[float, int, Any, _Tripped, float]] = {}
        self._thread: threading.Thread | None = None
        #: Set once the command was asked to stop: no deadline is further away than this.
        self.cap: float | None = None
        #: When (monotonic) the command was asked to stop.
        self.hurried_at: float | None = None

    def hurry(self, grace: float | None) -> None:
        """Bring every deadline to at most ``grace`` seconds from now (None: back to normal)."""
        with self._cond:
            self.cap = grace
            if grace is None:
                self.hurried_at = None
                return
            now = time.monotonic()
            if self.hurried_at is None:
                self.hurried_at = now
            soon = now + grace
            for key, (deadline, *rest) in self._armed.items():
                self._armed[key] = (min(deadline, soon), *rest)
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
            now = time.monotonic()
            self._armed[id(raw)] = (now + limit, fd, ref, state, now)
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
                for key, (deadline, fd, ref, state, armed_at) in list(self._armed.items()):
                    if deadline <= now:
                        del self._armed[key]
                        raw = ref()
                        # Under the lock, and only while still armed: the statement is
                        # still waiting, so the descriptor is still this connection's.
                        if raw is not None and not getattr(raw, "closed", False):
                            state.when, state.waited = now, now - armed_at
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


def stop_waiting_at() -> float | None:
    """The monotonic time after which nothing waits any more (for a handshake, for
    SQLite's lock: waits the watchdog cannot cut) because the command was asked to stop:
    ``HURRY_GRACE`` after it was, in all (None: it was not)."""
    cap, hurried_at = _WATCHDOG.cap, _WATCHDOG.hurried_at
    if cap is None or hurried_at is None:
        return None
    return hurried_at + cap


#: Seconds between two looks at whether a waiting connect should give up (psycopg's own
#: interval for noticing Ctrl-C).
_POLL = 0.1


def _connect_unless_stopping(connect: Callable[[], Any], state: _Tripped) -> Any:
    """``connect()`` in a helper thread, waited for until it returns or the command is
    asked to stop (then the engine is tripped and the caller gets an OperationalError).
    The thread is a daemon nobody joins, so the process can exit while it still waits
    for its connect timeout; a connection it makes after we stopped waiting (given up,
    or a signal raised in the waiting thread) is closed."""
    import psycopg

    lock = threading.Lock()
    done = threading.Event()
    outcome: list[tuple[bool, Any]] = []
    abandoned = False

    def work() -> None:
        try:
            result: tuple[bool, Any] = (True, connect())
        except BaseException as exc:  # handed to the caller, who re-raises it
            result = (False, exc)
        with lock:
            late = abandoned
            if not late:
                outcome.append(result)
                done.set()
        if late and result[0]:
            _close_quietly(result[1])

    threading.Thread(target=work, name="oxyeval-history-connect", daemon=True).start()
    try:
        while not done.wait(_POLL):
            stop_by = stop_waiting_at()
            if stop_by is not None and time.monotonic() >= stop_by:
                state.when = time.monotonic()
                raise psycopg.OperationalError("gave up connecting: the command was asked to stop")
    except BaseException:
        with lock:
            abandoned = True
            arrived = outcome[0] if outcome else None
        if arrived is not None and arrived[0]:
            _close_quietly(arrived[1])
        raise
    ok, value = outcome[0]
    if not ok:
        raise value
    return value


def _close_quietly(raw: Any) -> None:
    with contextlib.suppress(Exception):  # already broken: nothing left to close
        raw.close()


_CONNECTION_CLASS: Any = None


def _connection_class() -> Any:
    """psycopg's Connection, except that cancelling a statement cuts its socket.

    psycopg cancels the statement in flight when the thread waiting for it gets
    KeyboardInterrupt or SystemExit (Ctrl-C, or SIGTERM in a command without an event
    loop: ``oxy history``), through a second connection to the server, then waits for
    the statement to end: up to 5 + 5 seconds against a server that no longer answers,
    before the command can report. The command is stopping: the socket is cut instead
    (the waiting statement fails at once, and the server rolls its transaction back when
    it notices). Made on first use, so importing this module does not import psycopg."""
    global _CONNECTION_CLASS
    if _CONNECTION_CLASS is None:
        import psycopg

        class HistoryConnection(psycopg.Connection):  # type: ignore[type-arg]
            def cancel_safe(self, *, timeout: float = 30.0) -> None:
                if not self.closed:
                    _cut(self.pgconn.socket)

        _CONNECTION_CLASS = HistoryConnection
    return _CONNECTION_CLASS


def _raw(conn: Any) -> Any:
    """The DBAPI (psycopg) connection behind a SQLAlchemy Connection, if any."""
    try:
        return conn.connection.dbapi_connection
    except Exception:
        return None


def guard_engine(engine: Engine, limit: float) -> None:
    """Put every round trip of ``engine``'s connections under a ``limit``-second deadline,
    and its handshakes under the command's stop request (see the module's docstring)."""
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
    def _on_error(context: Any) -> Any:
        if context.connection is not None:
            disarm(context.connection)
        if state.when is not None and context.is_disconnect:
            # Our cut, which libpq reports as "server closed the connection
            # unexpectedly": say what happened instead.
            import psycopg

            return exc.OperationalError(
                context.statement,
                context.parameters,
                psycopg.OperationalError(f"no reply within {state.waited:.2g} s"),
            )
        return None

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
    def _on_checkout(raw: Any, _record: Any, _proxy: Any) -> None:
        _WATCHDOG.disarm(raw)  # armed since its handshake if it is new (_on_connect)
        if state.when is not None:
            raise exc.DisconnectionError("the server stopped answering")  # then do_connect

    @event.listens_for(engine, "do_connect")
    def _on_connect(_dialect: Any, _record: Any, args: Any, kwargs: Any) -> Any:
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
        # What dialect.connect does (psycopg.connect), with our Connection class.
        connection_class = _connection_class()
        raw = _connect_unless_stopping(lambda: connection_class.connect(*args, **kwargs), state)
        # What the pool runs on it before handing it out (the dialect's first queries,
        # connect events) fires no cursor event: under one deadline until checkout.
        _WATCHDOG.arm(raw, limit, state)
        return raw
