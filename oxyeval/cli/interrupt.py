"""Ctrl-C and SIGTERM stop a long command the same way: cancel, keep, report.

CI runners and ``docker stop`` send SIGTERM, whose default action kills the
process on the spot: no JSON, no history. :func:`run_interruptible` runs a
command's coroutine with SIGINT and SIGTERM both turned into a cancellation of
that coroutine, so the library's ``into=`` results are filled in as the
cancellation unwinds, and then raises :class:`Interrupted` naming the signal.
A second signal stops at once (as Python's own second Ctrl-C does), for a
cleanup that hangs.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:  # imported when a command runs its loop, not at start-up (oxy --help)
    import asyncio

__all__ = [
    "Interrupted",
    "SignalExit",
    "exit_on_signal",
    "interrupt_reason",
    "run_interruptible",
]

T = TypeVar("T")

_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM") if hasattr(signal, name))


class Interrupted(KeyboardInterrupt):
    """The command was stopped by a signal; a KeyboardInterrupt, so every handler of
    Ctrl-C handles SIGTERM too."""

    def __init__(self, signal_name: str = "SIGINT") -> None:
        super().__init__(signal_name)
        self.signal_name = signal_name


def interrupt_reason(exc: BaseException) -> str:
    """``"interrupted (SIGTERM)"``: what stopped the command, for its stderr line."""
    name = exc.signal_name if isinstance(exc, Interrupted) else "SIGINT"
    return f"interrupted ({name})"


class _Stopper:
    """The signal handler: first signal cancels the main task, the next one raises."""

    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None
        self.task: asyncio.Task[Any] | None = None
        self.signal_name: str | None = None

    def __call__(self, signum: int, _frame: object) -> None:
        name = signal.Signals(signum).name
        if self.signal_name is not None or self.loop is None or self.task is None:
            raise Interrupted(name)  # a second signal, or none of our loop is running yet
        self.signal_name = name
        # The cancellation waits for the next await; a synchronous template rendering
        # on the loop's thread sees this flag at its next loop iteration or call instead.
        from .._tasks import request_stop  # loaded already: run_interruptible imported it

        request_stop()
        self.loop.call_soon_threadsafe(_hurry_history, 2.0)
        self.loop.call_soon_threadsafe(self.task.cancel)

    async def guard(self, main: Coroutine[Any, Any, T]) -> T:
        import asyncio

        self.loop = asyncio.get_running_loop()
        self.task = asyncio.current_task()
        try:
            return await main
        except asyncio.CancelledError:
            if self.signal_name is None:
                raise
            raise Interrupted(self.signal_name) from None


def run_interruptible(main: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(main)``, where SIGINT and SIGTERM cancel ``main`` and raise Interrupted.

    Handlers are installed only in the main thread (Python allows no other) and
    restored afterwards, so library callers and test runners keep theirs. A
    signal the process was started to ignore (``nohup``, a background job's
    SIGINT) stays ignored.
    """
    from .._tasks import clear_stop  # with asyncio: not at start-up (oxy --help)

    stopper = _Stopper()
    clear_stop()
    try:
        import asyncio

        with _handled_by(stopper):
            return asyncio.run(stopper.guard(main))
    finally:
        clear_stop()
        if stopper.signal_name is not None:
            _hurry_history(None)  # a library caller's next run waits as usual


@contextmanager
def _handled_by(handler: Any) -> Iterator[None]:
    """SIGINT and SIGTERM go to ``handler`` for the block, then back to what they were.
    Only in the main thread (Python allows no other); a signal the process was started
    to ignore (``nohup``, a background job's SIGINT) stays ignored."""
    previous: dict[int, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for sig in _SIGNALS:
            if signal.getsignal(sig) is not signal.SIG_IGN:
                previous[sig] = signal.signal(sig, handler)
    try:
        yield
    finally:
        for sig, handler_before in previous.items():
            signal.signal(sig, handler_before)


def _hurry_history(grace: float | None) -> None:
    """A stopping command reports promptly even when its history stopped answering (a
    PostgreSQL server, another process holding SQLite's write lock): its waits get
    ``grace`` seconds in all, not their whole timeouts (``store.hurry_history``). Also
    when no history was opened yet: one may still be opening in a worker thread, and
    would otherwise wait its full timeouts (the module is small, stdlib only)."""
    from ..store import hurry_history

    hurry_history(grace)


class SignalExit(SystemExit):
    """The exit a signal forces before a command's loop runs; ``reason`` is the line it
    printed, for ``main``'s JSON document."""

    def __init__(self, code: int, reason: str) -> None:
        super().__init__(code)
        self.reason = reason


def _exit_now(signum: int, _frame: object) -> None:
    from ..evaluation import interrupted_code

    name = signal.Signals(signum).name
    reason = f"interrupted ({name}) before any model was called; nothing ran"
    print(reason, file=sys.stderr)
    raise SignalExit(interrupted_code(), reason)


@contextmanager
def report_whole() -> Iterator[None]:
    """While a finished (or stopped) run's report is written, a signal does not cut it:
    a JSON document cut in two is worse than a second's wait. The first signal is said
    and the report written whole, with the run's own exit code (every case had ended);
    a second one ends the process at once (exit 3), as the user insists."""
    said: list[str] = []

    def later(signum: int, _frame: object) -> None:
        from ..evaluation import interrupted_code

        name = signal.Signals(signum).name
        if said:
            reason = f"interrupted ({name}) again while the report was written; it is cut short"
            print(reason, file=sys.stderr)
            raise SignalExit(interrupted_code(), reason)
        said.append(name)
        print(
            f"interrupted ({name}) while the report was written: it is written whole first "
            "(another signal stops at once)",
            file=sys.stderr,
        )

    with _handled_by(later):
        yield


def exit_on_signal() -> None:
    """Until a command's loop runs, SIGINT/SIGTERM end the process with exit 3 and a reason.

    Without this, a Ctrl-C while modules import reaches Click, which prints "Aborted!"
    and exits 1 (the code for a failed test), and SIGTERM kills the process silently.
    """
    if threading.current_thread() is not threading.main_thread():
        return
    for sig in _SIGNALS:
        if signal.getsignal(sig) is not signal.SIG_IGN:
            signal.signal(sig, _exit_now)
