"""How the server runs suites for its requests: to the end even when the client leaves,
a bounded number at once, every model endpoint under one limit for all of them, and each
told on the event stream.

Why each: a run's executions are stored as they finish, so cancelling it because an HTTP
client timed out would only throw away the calls in flight; a burst of ``runABTest``
requests must not multiply a model's ``concurrency`` by the number of requests (the
limiters of :func:`oxyeval.providers.shared_limiters` are the CLI's, shared); and the
dashboard's live page shows progress from the events.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from ..providers import Limiters, shared_limiters
from .events import EventHub

__all__ = ["DEFAULT_MAX_RUNS", "Runner", "ServerBusy"]

T = TypeVar("T")

#: Runs this server has going at once; more wait (each is many model calls already).
DEFAULT_MAX_RUNS = 8


class ServerBusy(Exception):
    """Too many runs going and waiting: the request is refused, not queued forever."""


class Runner:
    def __init__(
        self, hub: EventHub, max_runs: int = DEFAULT_MAX_RUNS, max_queued: int | None = None
    ) -> None:
        self.hub = hub
        self.limiters = Limiters()
        self.max_runs = max_runs
        self.max_queued = 2 * max_runs if max_queued is None else max_queued
        self._slots: asyncio.Semaphore | None = None
        self._tasks: set[asyncio.Task[Any]] = set()

    async def run(self, operation: str, make: Callable[[Any], Awaitable[T]]) -> T:
        """``make(sink)`` started as its own task, under the run limit and the shared model
        limits. Once started it is shielded (the caller leaving does not stop it: its
        executions are being stored); one still waiting for a slot when its caller leaves
        is dropped, never run for nobody. More than ``max_queued`` waiting: ServerBusy."""
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.max_runs)
        if len(self._tasks) >= self.max_runs + self.max_queued:
            raise ServerBusy(
                f"{len(self._tasks)} runs are going or waiting (at most {self.max_runs} at "
                f"once, {self.max_queued} waiting); try again when some have finished"
            )
        _, sink = self.hub.sink(operation)
        slots = self._slots
        started = False

        async def guarded() -> T:
            nonlocal started
            async with slots:
                started = True
                return await make(sink)

        with shared_limiters(self.limiters):  # the task copies this context
            task = asyncio.ensure_future(guarded())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            if not started:
                task.cancel()
            raise

    @property
    def running(self) -> int:
        return len(self._tasks)

    async def drain(self) -> None:
        """Wait for runs whose clients left (the server is stopping)."""
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
