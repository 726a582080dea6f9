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

__all__ = ["DEFAULT_MAX_RUNS", "Runner"]

T = TypeVar("T")

#: Runs this server has going at once; more wait (each is many model calls already).
DEFAULT_MAX_RUNS = 8


class Runner:
    def __init__(self, hub: EventHub, max_runs: int = DEFAULT_MAX_RUNS) -> None:
        self.hub = hub
        self.limiters = Limiters()
        self.max_runs = max_runs
        self._slots: asyncio.Semaphore | None = None
        self._tasks: set[asyncio.Task[Any]] = set()

    async def run(self, operation: str, make: Callable[[Any], Awaitable[T]]) -> T:
        """``make(sink)`` started as its own task (shielded: the caller's cancellation does
        not reach it), under the run limit and the shared model limits."""
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.max_runs)
        _, sink = self.hub.sink(operation)
        slots = self._slots

        async def guarded() -> T:
            async with slots:
                return await make(sink)

        with shared_limiters(self.limiters):  # the task copies this context
            task = asyncio.ensure_future(guarded())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return await asyncio.shield(task)

    @property
    def running(self) -> int:
        return len(self._tasks)

    async def drain(self) -> None:
        """Wait for runs whose clients left (the server is stopping)."""
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
