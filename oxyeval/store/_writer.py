"""A large run's executions written by a second process, so storing them does not share
the run's core.

Storing a test case's execution is about as much Python as running it (rows in six
tables, each value redacted), and a thread that does it shares one
interpreter lock with the cases: 10,000 mock cases took 40% longer with their history
than without. A child process (a Python running :func:`_serve`) with its own
connection to the same SQLite file runs the very same code
(:meth:`~._executions.Executions.record_many`) on another core; the parent only pickles
each batch (a twentieth of the cost) and waits, in its worker thread, for the child's
commit before the batch counts as stored, so what is in the report is in the history as
before.

When it is used: batches for an SQLite file on a POSIX system, once one batch of
:data:`START_AT` executions has asked for it (smaller runs never pay for a process);
until the child has opened the file, batches are written in the thread as before, so
nothing waits for it to start. ``OXY_HISTORY_WRITER=thread`` turns it off. A child that
cannot start, or ends, is never needed again: the store goes back to its thread.

The child is told the secrets to scrub (the parent's, whenever they change), ignores
Ctrl-C and SIGTERM (its parent decides when writing stops: it drains, then closes its
end), runs in a session of its own, and exits when its input closes, so it never
outlives its parent. A parent asked to stop tells it (SIGUSR1), so it waits for
SQLite's lock no longer than the parent would (:func:`~._watchdog.hurry_history`).
"""

from __future__ import annotations

import os
import pickle
import select
import signal
import struct
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Sequence
from contextlib import suppress
from pathlib import Path
from typing import Any

from ._errors import StoreError
from ._watchdog import _WATCHDOG, HURRY_GRACE, stop_waiting_at

__all__ = ["START_AT", "Lost", "ProcessWriter", "Ticket", "wanted"]

#: Executions in one batch that make a store start its writer process.
START_AT = 200
#: Seconds a child may take beyond the store's busy timeout to answer one batch.
_SLACK = 120.0
#: Seconds a stopping command waits for the child beyond its own grace for the history.
_SLACK_HURRIED = 1.0
#: Seconds between two looks at whether the command was asked to stop.
_SLICE = 0.1
_LENGTH = struct.Struct("!Q")
#: The folder this copy of oxyeval was imported from.
_PACKAGES = str(Path(__file__).resolve().parents[2])
#: Seconds a child may take to open the history before it is given up.
_START_WITHIN = 30.0
#: What the child runs: without the current folder on its path, with this copy's folder.
_LAUNCH = (
    "import sys; del sys.path[0]; "
    "sys.argv[1] in sys.path or sys.path.append(sys.argv[1]); "
    "from oxyeval.store._writer import _serve; _serve()"
)


#: Chains whose failure the child remembers (a run is one chain; a few run at once).
_CHAINS_KEPT = 64
#: A frame larger than this is not ours (a corrupt pipe): refused, not allocated.
_MAX_FRAME = 1 << 31


def _frame(message: tuple[str, Any]) -> bytes:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return _LENGTH.pack(len(data)) + data


class Lost(Exception):
    """The writer process could not be asked, or gave no answer: nothing is known of the
    batch, which may be in the history already (so its writer looks before it writes it
    again: :meth:`~._executions.Executions.record_many`)."""


def wanted(backend: str, path: object, read_only: bool) -> bool:
    """Whether a store may hand its executions to a child process."""
    if os.environ.get("OXY_HISTORY_WRITER", "process").strip().lower() == "thread":
        return False
    return backend == "sqlite" and path is not None and not read_only and os.name == "posix"


class Ticket:
    """A batch sent to the child, and once it answered, how it went: ``status`` "ok"
    (``value`` the count written), "error" (``value`` what it raised) or "lost"."""

    __slots__ = ("status", "value")

    def __init__(self) -> None:
        self.status: str | None = None
        self.value: Any = None

    def settle(self, status: str, value: Any) -> None:
        self.status, self.value = status, value


class ProcessWriter:
    """One child process writing executions into one SQLite file."""

    def __init__(self, path: str, display: str, timeout: float) -> None:
        self._display = display
        self._timeout = timeout
        # Sending (and the child's state), reading answers, and the tickets waiting: the
        # last is never held while the pipe is used, so answers are read while a sender
        # waits for room in the pipe (a child blocked on a large answer nobody read
        # would otherwise never read the rest of what it was sent).
        self._lock = threading.Lock()
        self._answers = threading.Lock()
        self._tickets = threading.Lock()
        self._waiting: deque[Ticket] = deque()  # sent, not answered yet, in order
        self._ready = False
        self.broken = False
        self._secrets: frozenset[str] = frozenset()
        self._hurried = False
        self._started = time.monotonic()
        env = dict(os.environ, OXY_HISTORY_WRITER="thread")
        try:
            # The child never runs another copy of oxyeval than its parent: the folder of
            # this one is added to its path (after the standard library, and without the
            # current folder, which could shadow a module), and it says which copy it runs
            # when it is ready; it is not used if that is another.
            self._proc: subprocess.Popen[bytes] | None = subprocess.Popen(
                [sys.executable, "-c", _LAUNCH, _PACKAGES],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=env,
                start_new_session=True,
                close_fds=True,
            )
            self._send(_frame(("open", {"path": os.path.abspath(path), "timeout": timeout})))
        except (OSError, ValueError):
            self._proc = None
            self.broken = True

    def ready(self) -> bool:
        """Whether the child has opened the file (never waits: until then the caller
        writes in its own thread). One that has not within :data:`_START_WITHIN` seconds
        is given up (an interpreter that is not Python, say)."""
        if self._ready or self.broken:
            return self._ready
        with self._lock:
            if self._ready or self.broken:
                return self._ready
            try:
                if not self._readable(0):
                    if time.monotonic() - self._started > _START_WITHIN:
                        self._give_up()
                    return False
                reply = self._receive(5.0)  # a small frame, already arriving
            except BaseException as exc:
                self._give_up()
                if not isinstance(exc, Exception):
                    raise
                return False
            if reply != ("ready", _PACKAGES):
                self._give_up()
                return False
            self._ready = True
            return True

    def write(self, what: str, batch: Sequence[Any], secrets: frozenset[str]) -> int:
        """The batch (``what``: executions or cache entries) written and committed by the
        child; what the child raised is raised here. :class:`Lost` when the child could
        not be asked or gave no answer: it is then never asked again, and the caller
        writes the batch itself, as one that may be in the history already."""
        return int(self.wait(self.send(what, batch, secrets)))

    def call(self, function: str, args: tuple[Any, ...]) -> Ticket:
        """Have the child run ``function`` (``"module:name"`` in oxyeval) on its store with
        ``args``, without waiting (:meth:`wait` gives what it returned): a large run's
        reads run on the child's core instead of sharing this interpreter's lock with the
        cases. Answered in turn, after the batches sent before it."""
        try:
            data = _frame(("call", (function, args)))
        except Exception as exc:  # nothing sent: the child is as good as before
            raise Lost(f"the call cannot be sent ({exc})") from None
        return self._put(data)

    def send(
        self, what: str, batch: Sequence[Any], secrets: frozenset[str], chain: str | None = None
    ) -> Ticket:
        """Hand the batch to the child without waiting for its answer (:meth:`wait` for
        it): the child starts on it the moment it is done with the one before, instead of
        when this process gets round to sending it. A batch sent under ``chain`` is not
        written once an earlier batch of the same chain failed (it gets the same error),
        so a run's writes stop at their first failure even with the next one in the pipe."""
        try:
            data = _frame(("chained", (chain, what, list(batch))) if chain else (what, list(batch)))
        except Exception as exc:  # nothing sent: the child is as good as before
            raise Lost(f"the batch cannot be sent ({exc})") from None
        return self._put(data, secrets)

    def _put(self, data: bytes, secrets: frozenset[str] | None = None) -> Ticket:
        ticket = Ticket()
        with self._lock:
            if not self._ready or self.broken:
                raise Lost("no writer process")
            try:
                if secrets is not None and secrets != self._secrets:
                    self._send(_frame(("secrets", sorted(secrets))))
                    self._secrets = secrets
                self._tell_hurry()
                with self._tickets:  # before the child can answer it
                    self._waiting.append(ticket)
                self._send(data)
            except BaseException as exc:
                # The pipe may hold half a frame: this child is never asked again.
                self._give_up(str(exc))
                if not isinstance(exc, Exception):
                    raise
                raise Lost(str(exc)) from None
        return ticket

    def wait(self, ticket: Ticket) -> Any:
        """The child's answer to what :meth:`send` or :meth:`call` handed it: answers come
        in the order they went, so whoever waits reads them, each to its own ticket."""
        with self._answers:
            while ticket.status is None:
                try:
                    status, value = self._receive(self._timeout + _SLACK)
                except BaseException as exc:
                    # Nothing known of the batches in the pipe, and it may hold an answer
                    # nobody read: this child is never asked again (killed first, so a
                    # sender waiting for room in its pipe lets go of the lock).
                    proc = self._proc
                    if proc is not None:
                        with suppress(OSError):
                            proc.kill()
                    with self._lock:
                        self._give_up(str(exc))
                    if not isinstance(exc, Exception):
                        raise
                    break
                with self._tickets:
                    if self._waiting:  # else all were just settled as lost
                        self._waiting.popleft().settle(status, value)
        if ticket.status == "error":
            raise ticket.value
        if ticket.status == "ok":
            return ticket.value
        raise Lost(str(ticket.value))

    def drain(self) -> None:
        """Wait for every batch sent (their senders hear how each went): what this
        process writes itself then queues behind them here, not in SQLite's busy wait."""
        with self._tickets:
            last = self._waiting[-1] if self._waiting else None
        if last is not None:
            with suppress(Exception):
                self.wait(last)

    def _tell_hurry(self) -> None:
        """Bring the child's wait for SQLite's lock in step with this process's: short
        once the command is asked to stop, back to normal once that is undone (a
        library caller's next run)."""
        hurried = stop_waiting_at() is not None
        if hurried != self._hurried:
            self._send(_frame(("hurry" if hurried else "calm", None)))
            self._hurried = hurried

    def close(self) -> None:
        """End the child once it has answered every batch sent, so one that has opened
        the file is let go with nothing in hand (killed if it does not exit within a few
        seconds), one that has not is killed."""
        self.drain()
        with self._lock:
            self._end(let_go=self._ready)

    # ----------------------------------------------------------------- the pipe

    def _give_up(self, why: str = "the writer process was given up") -> None:
        self._end(let_go=False, why=why)

    def _end(self, *, let_go: bool, why: str = "the writer process ended") -> None:
        """The child ended (its input closed; killed unless ``let_go``) and never asked
        again, and what it was sent and did not answer is lost; the caller holds the
        lock."""
        proc, self._proc = self._proc, None
        self._ready = False
        self.broken = True
        with self._tickets:
            waiting, self._waiting = self._waiting, deque()
        for ticket in waiting:
            ticket.settle("lost", why)
        if proc is None:
            return
        if proc.stdin is not None:
            with suppress(OSError):
                proc.stdin.close()
        if not let_go:
            proc.kill()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            with suppress(OSError):
                proc.stdout.close()

    def _send(self, data: bytes) -> None:
        assert self._proc is not None and self._proc.stdin is not None
        self._proc.stdin.write(data)
        self._proc.stdin.flush()

    def _readable(self, wait: float) -> bool:
        assert self._proc is not None and self._proc.stdout is not None
        return bool(select.select([self._proc.stdout], [], [], wait)[0])

    def _receive(self, wait: float) -> tuple[str, Any]:
        assert self._proc is not None and self._proc.stdout is not None
        deadline = time.monotonic() + wait
        fd = self._proc.stdout.fileno()
        # Waited in slices: once the command is asked to stop, the child is told (it
        # then waits for SQLite's lock no longer than this process would), and the
        # answer is waited for about that long from then on.
        noticed = False
        while not select.select([fd], [], [], _SLICE)[0]:
            if not noticed and stop_waiting_at() is not None:
                noticed = True
                if not self._hurried:  # asked to stop while this batch is written
                    self._hurried = True
                    self._proc.send_signal(signal.SIGUSR1)
                deadline = min(deadline, time.monotonic() + HURRY_GRACE + _SLACK_HURRIED)
            if time.monotonic() >= deadline:
                raise StoreError("no answer in time")
        head = _read_exactly(fd, _LENGTH.size, deadline)
        (size,) = _LENGTH.unpack(head)
        if size > _MAX_FRAME:
            raise StoreError(f"a frame of {size} bytes")
        message = pickle.loads(_read_exactly(fd, size, deadline))
        if not (isinstance(message, tuple) and len(message) == 2):
            raise StoreError("an unexpected answer")
        return message


def _read_exactly(fd: int, size: int, deadline: float | None) -> bytes:
    parts: list[bytes] = []
    left = size
    while left:
        if deadline is not None:
            wait = deadline - time.monotonic()
            if wait <= 0 or not select.select([fd], [], [], wait)[0]:
                raise StoreError("no answer in time")
        piece = os.read(fd, min(left, 1 << 20))
        if not piece:
            raise EOFError("the pipe closed")
        parts.append(piece)
        left -= len(piece)
    return b"".join(parts)


# --------------------------------------------------------------------- the child


def _portable(exc: BaseException) -> BaseException:
    """``exc`` as it can cross the pipe (pickled whole when it can be)."""
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:
        return StoreError(f"{type(exc).__name__}: {exc}")


def _hurried(_signum: int, _frame: Any) -> None:
    """The parent was asked to stop: SQLite's lock is waited for no longer than there
    (:func:`~._watchdog.stop_waiting_at`). Two attributes set, no lock taken: this runs
    in a signal handler."""
    _WATCHDOG.hurried_at = _WATCHDOG.hurried_at or time.monotonic()
    _WATCHDOG.cap = HURRY_GRACE


def _write(store: Any, what: str, batch: Any) -> int:
    if what == "executions":
        return int(store.executions.record_many(batch))
    if what == "cache":
        return int(store.cache.put_many(batch))
    if what == "branches":
        return int(store.branches.write_batch(batch))
    raise StoreError(f"the writer process cannot {what!r}")


def _called(store: Any, function: str, args: tuple[Any, ...]) -> Any:
    """What ``function`` (``"module:name"``, a module of this package) returns for this
    store and ``args``: found by name, so the store's code does not import the callers'."""
    import importlib

    module, _, name = function.partition(":")
    if not (module == "oxyeval" or module.startswith("oxyeval.")) or not name:
        raise StoreError(f"the writer process calls only oxyeval's functions, not {function!r}")
    return getattr(importlib.import_module(module), name)(store, *args)


def _serve() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGUSR1, _hurried)
    from ..redact import register_secret, secret_scope
    from ._core import open_store

    read_fd, out = sys.stdin.buffer.fileno(), sys.stdout.buffer
    store = None
    scope: Any = None
    failed: dict[str, BaseException] = {}  # each chain's failure, the latest few
    try:
        while True:
            try:
                head = _read_exactly(read_fd, _LENGTH.size, None)
                (size,) = _LENGTH.unpack(head)
                if size > _MAX_FRAME:
                    return
                op, payload = pickle.loads(_read_exactly(read_fd, size, None))
            except EOFError:
                return
            try:
                if op == "secrets":  # the parent's whole set: it replaces the last one
                    if scope is not None:
                        scope.__exit__(None, None, None)
                    scope = secret_scope()
                    scope.__enter__()
                    for value in payload:
                        register_secret(value)
                    continue
                if op in ("hurry", "calm"):
                    _WATCHDOG.hurry(HURRY_GRACE if op == "hurry" else None)
                    continue
                if op == "open":
                    store = open_store(payload["path"], timeout=payload["timeout"], migrate=False)
                    reply: tuple[str, Any] = ("ready", _PACKAGES)
                elif op == "call" and store is not None:
                    reply = ("ok", _called(store, *payload))
                elif op == "chained" and store is not None:
                    chain, op, payload = payload
                    if chain not in failed:  # else an earlier batch of its chain failed
                        try:
                            reply = ("ok", _write(store, op, payload))
                        except Exception as exc:
                            while len(failed) >= _CHAINS_KEPT:
                                failed.pop(next(iter(failed)))
                            failed[chain] = _portable(exc)
                    if chain in failed:
                        reply = ("error", failed[chain])
                elif store is not None:
                    reply = ("ok", _write(store, op, payload))
                else:
                    reply = ("error", StoreError(f"the writer process cannot {op!r}"))
            except Exception as exc:
                reply = ("error", _portable(exc))
            try:
                answer = _frame(reply)
            except Exception as exc:  # what a call returned cannot cross the pipe
                answer = _frame(("error", StoreError(f"an answer that cannot be sent: {exc}")))
            out.write(answer)
            out.flush()
    finally:
        # Every batch is committed and answered; optimizing is the parent's close, and a
        # whole interpreter's teardown would only keep the parent's close waiting.
        if store is not None:
            store.engine.dispose()
        out.flush()
        os._exit(0)
