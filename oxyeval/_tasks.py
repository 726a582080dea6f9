"""Sibling coroutines that never outlive the call that started them.

``asyncio.gather`` (without ``return_exceptions``) raises as soon as the *first* child
is cancelled or fails, while the other children are still unwinding. Code that then
collects what the children left behind (an interrupted test's finished runs, the
verdicts so far, the results to report and store) runs too early: a child that
finishes unwinding a moment later adds its own partial result after the caller has
already listed it as "never finished", and the same test is reported and stored twice.

:func:`gather_settled` is ``gather`` with the guarantee of Python 3.11's TaskGroup
(which 3.10 lacks): when it raises, every child has finished. On a cancellation or a
child's error the other children are cancelled and waited for, then the error is raised.

A cancellation reaches a coroutine only when it next awaits: synchronous work on the
event loop's thread (a template rendering for seconds) would hold the first Ctrl-C or
SIGTERM until it ends. :func:`request_stop` is the flag the CLI's signal handler raises
next to the cancellation; long synchronous loops poll :func:`stop_requested` and give up
(raising ``asyncio.CancelledError``, as an await would have), so the command unwinds,
keeps what finished and reports "interrupted" promptly.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from typing import Any, TypeVar

__all__ = [
    "Limit",
    "clear_stop",
    "finish_shielded",
    "gather_settled",
    "request_stop",
    "run_sync",
    "settle_windowed",
    "stop_requested",
]

T = TypeVar("T")

# Set from a signal handler (main thread) and read by synchronous work in any thread: a
# bool rebound under the GIL needs no lock, and reading it costs a global lookup.
_stop_requested = False


def request_stop() -> None:
    """Ask synchronous work in progress to stop at its next check (see the docstring)."""
    global _stop_requested
    _stop_requested = True


def stop_requested() -> bool:
    """Whether the command is being interrupted: long synchronous loops check this."""
    return _stop_requested


def clear_stop() -> None:
    """Forget a stop request: a new command (or a test running commands in-process)
    starts unstopped."""
    global _stop_requested
    _stop_requested = False


async def gather_settled(*aws: Awaitable[T]) -> list[T]:
    """Every awaitable's result in order; on an error or cancellation, raised only once
    every child has stopped (the others cancelled, each once, so a child's own cleanup
    on cancellation is not cut short), so no child changes shared state after the
    caller's ``except``/``finally`` has read it."""
    tasks = [asyncio.ensure_future(a) for a in aws]
    if not tasks:
        return []
    try:
        # Unlike gather, waiting does not cancel what it waits for: each child is
        # cancelled here, exactly once.
        await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
    except asyncio.CancelledError:
        await _stop(tasks)
        raise
    failed = next((t for t in tasks if t.done() and (t.cancelled() or t.exception())), None)
    if failed is None:
        return [t.result() for t in tasks]
    cancelled = await _stop(tasks)
    if cancelled or failed.cancelled():  # we were, while stopping; or a child on its own
        raise asyncio.CancelledError
    error = failed.exception()
    assert error is not None
    raise error


async def settle_windowed(
    items: Iterable[T], work: Callable[[T], Awaitable[Any]], window: int
) -> None:
    """``gather_settled(*(work(item) for item in items))`` with at most ``window`` of
    them alive at once, the next started as one ends: a run of 100,000 units holds a few
    hundred tasks, not 100,000 (each with its frame) waiting for their turn. On an error
    or a cancellation, those running are stopped as :func:`gather_settled` stops them,
    and the rest never start."""
    pending = iter(items)
    running: set[asyncio.Future[Any]] = set()
    # Each unit reports its own end (a done callback), rather than one ``asyncio.wait``
    # per round over every running unit: that registers and removes a callback on each
    # of them every round, a cost that grows with the window times the units.
    woken: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    failed: asyncio.Future[Any] | None = None

    def ended(task: asyncio.Future[Any]) -> None:
        nonlocal failed
        running.discard(task)
        # Every ended unit's error is retrieved here (no "never retrieved" warning).
        if (task.cancelled() or task.exception() is not None) and failed is None:
            failed = task
        if failed is None:
            fill()
        if (failed is not None or not running) and not woken.done():
            woken.set_result(None)

    def fill() -> None:
        for item in pending:
            task = asyncio.ensure_future(work(item))
            running.add(task)
            task.add_done_callback(ended)
            if len(running) >= window:
                return

    fill()
    if not running:
        return
    try:
        await woken
    except asyncio.CancelledError:
        await _stop(list(running))
        raise
    if failed is None:
        return
    cancelled = await _stop(list(running))
    if cancelled or failed.cancelled():
        raise asyncio.CancelledError
    error = failed.exception()
    assert error is not None
    raise error


async def _stop(tasks: list[asyncio.Future[Any]]) -> bool:
    """Cancel the children still running and wait until every one is done; True if we
    were cancelled meanwhile. That does not stop the wait (as with TaskGroup): the caller
    is already on its way out, and leaving now would leave children running behind it."""
    pending = {t for t in tasks if not t.done()}
    for task in pending:
        task.cancel()
    cancelled = False
    while pending:
        try:
            _, pending = await asyncio.wait(pending)
        except asyncio.CancelledError:
            cancelled = True
            pending = {t for t in pending if not t.done()}
    for task in tasks:  # every error retrieved: the caller raises the first one
        if not task.cancelled():
            task.exception()
    return cancelled


async def finish_shielded(aw: Awaitable[T]) -> tuple[T, bool]:
    """``aw``'s result even when the caller is cancelled meanwhile, and whether it was.

    For a write that must be seen whole or not at all: a row committed by a worker
    thread is in the history whether or not its awaiting task was cancelled, so the
    result it stands for must be reported too. The caller re-raises the cancellation
    (``asyncio.CancelledError``) after keeping the result when the flag is True.
    """
    future = asyncio.ensure_future(aw)
    try:
        return await asyncio.shield(future), False
    except asyncio.CancelledError:
        if future.cancelled():
            raise
        while True:
            try:
                return await asyncio.shield(future), True
            except asyncio.CancelledError:
                if future.cancelled():
                    raise


def run_sync(main: Coroutine[Any, Any, T], async_name: str) -> T:
    """``asyncio.run(main)`` for the library's synchronous entry points, which scripts
    call. Inside a running event loop (a Jupyter notebook, an async test) that cannot
    work: say which coroutine to await instead of asyncio's "cannot be called from a
    running event loop"."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(main)
    main.close()  # never started: no "coroutine was never awaited" warning
    raise RuntimeError(
        f"an event loop is already running here (a notebook or async code): "
        f"use `await {async_name}(...)` instead"
    )


class Limit(asyncio.Semaphore):
    """An :class:`asyncio.Semaphore` (first come, first served) whose waits cost the same
    with a thousand waiters as with one.

    Why: a run of many cases keeps about a thousand units waiting for the run's budget,
    and Python 3.11's semaphore searches its waiters on every acquire (is any of them
    not cancelled?) and removes each one from the middle of a deque when it is woken:
    work that grew with the queue for every case. Here a release hands its slot to the
    first live waiter, and a waiter cancelled before its turn is skipped when reached.
    """

    def __init__(self, value: int = 1) -> None:
        super().__init__(value)
        self._queue: collections.deque[asyncio.Future[None]] = collections.deque()

    def locked(self) -> bool:
        self._skip_cancelled()
        return self._value == 0 or bool(self._queue)

    async def acquire(self) -> bool:  # type: ignore[override]
        self._skip_cancelled()
        if self._value > 0 and not self._queue:
            self._value -= 1
            return True
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._queue.append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.release()  # given the slot, then cancelled before using it: pass it on
            raise
        return True

    def release(self) -> None:
        while self._queue:
            waiter = self._queue.popleft()
            if not waiter.done():
                waiter.set_result(None)  # the slot goes to it directly
                return
        self._value += 1

    def _skip_cancelled(self) -> None:
        while self._queue and self._queue[0].done():
            self._queue.popleft()
