"""Requests in flight per model endpoint, adapted to what the server sustains (AIMD).

A hosted API takes sixteen requests at once; llama.cpp or a laptop's Ollama answers
one at a time and queues the rest, and every queued request's timeout runs while
it waits there. A fixed limit is too low for the first or times out on the second,
so each endpoint starts at its configured ``concurrency`` and then:

* **halves** its limit (never below 1) when a request times out or the server says
  it is overloaded (HTTP 429, 503, 529). Only a request sent *after* the last
  decrease can lower the limit again: ten requests timing out together are one
  signal (10 -> 5), not ten (10 -> 1), as in TCP congestion control;
* **adds one** after as many successes in a row as the current limit (about one
  round of requests), up to the configured ``concurrency``. The one level that
  overloaded the server last time is probed more patiently: it takes four times as
  many successes, twice that again each time it overloads the server anew (up to
  64 times), so a server that sustains one request is not sent two every other
  round.

This limiter is the only per-endpoint gate: agent runs, judge calls, test cases
and embedding batches to the same endpoint all wait here, in one queue. A request
waits for its slot *before* it is sent, so the wait never counts against its
``timeout``. Each change is said once per run: a decrease is a warning on stderr the
first time (``gemma: server is overloaded (HTTP 429), lowering concurrency 10 -> 5``),
the return to the configured value an info line the first time, and repeats (a
failed probe dropping back again) and the steps of the climb are debug lines.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import enum
import logging
from collections import deque
from collections.abc import Iterator

__all__ = ["AdaptiveLimiter", "Limiters", "Outcome", "current_limiters", "shared_limiters"]

log = logging.getLogger("oxyeval.providers")


class Outcome(enum.Enum):
    """What one request says about the server's capacity."""

    SUCCESS = "success"
    OVERLOADED = "overloaded"  # timed out, or 429/503/529
    NEUTRAL = "neutral"  # any other failure (bad request, connection refused, cancelled)


class AdaptiveLimiter:
    """An asyncio semaphore whose size follows the server: AIMD between 1 and ``ceiling``.

    The fast path (a free slot, nobody waiting) takes no lock and creates no future,
    so an endpoint that keeps up pays what a plain semaphore costs.
    """

    def __init__(self, name: str, ceiling: int) -> None:
        self.names = [name]
        self.ceiling = max(1, int(ceiling))
        self.limit = self.ceiling
        self.in_flight = 0
        #: Bumped at every decrease; a request remembers the generation it was sent in.
        self.generation = 0
        self._successes = 0
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._overloaded_at = 0  # the limit in force at the last decrease
        self._patience = 4  # successes per step, times the limit, to probe that level again
        self._said: set[tuple[int, int]] = set()  # changes (from, to) already on stderr

    @property
    def name(self) -> str:
        return ", ".join(self.names)

    def share(self, name: str, ceiling: int) -> None:
        """Another configured model on the same endpoint: the strictest ``concurrency`` wins,
        since both send to the same server."""
        if name not in self.names:
            self.names.append(name)
        self.ceiling = min(self.ceiling, max(1, int(ceiling)))
        self.limit = min(self.limit, self.ceiling)

    async def acquire(self) -> int:
        """Wait for a slot; returns the generation to pass back to :meth:`release`."""
        if self.in_flight < self.limit and not self._waiters:
            self.in_flight += 1
            return self.generation
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter
        except BaseException:
            if waiter.done() and not waiter.cancelled():
                # The slot was handed to us as we were cancelled: pass it on.
                self.in_flight -= 1
                self._wake()
            else:
                with contextlib.suppress(ValueError):
                    self._waiters.remove(waiter)
            raise
        return self.generation

    def release(self, generation: int, outcome: Outcome, reason: str = "") -> None:
        """Give the slot back and adapt the limit to what the request showed."""
        self.in_flight -= 1
        if outcome is Outcome.OVERLOADED:
            self._decrease(generation, reason)
        elif outcome is Outcome.SUCCESS:
            self._successes += 1
            needed = self.limit
            if self.limit + 1 == self._overloaded_at:
                needed *= self._patience  # the level that failed last time: probe slowly
            if self.limit < self.ceiling and self._successes >= needed:
                self._successes = 0
                self.limit += 1
                level = logging.INFO if self.limit == self.ceiling else logging.DEBUG
                log.log(
                    self._once(self.limit - 1, self.limit, level),
                    "%s: the server keeps up again, raising concurrency %d -> %d",
                    self.name,
                    self.limit - 1,
                    self.limit,
                )
        self._wake()

    def _decrease(self, generation: int, reason: str) -> None:
        self._successes = 0
        if generation != self.generation or self.limit == 1:
            return  # sent before the last decrease (same congestion), or already at 1
        before, self.limit = self.limit, max(1, self.limit // 2)
        self.generation += 1
        if before == self._overloaded_at:
            self._patience = min(64, self._patience * 2)  # the probe failed again
        else:
            self._overloaded_at, self._patience = before, 4
        log.log(
            self._once(before, self.limit, logging.WARNING),
            "%s: server is overloaded%s, lowering concurrency %d -> %d",
            self.name,
            f" ({reason})" if reason else "",
            before,
            self.limit,
        )

    def _once(self, before: int, after: int, level: int) -> int:
        """``level`` the first time this change happens, debug after that."""
        if level == logging.DEBUG or (before, after) in self._said:
            return logging.DEBUG
        self._said.add((before, after))
        return level

    def _wake(self) -> None:
        while self._waiters and self.in_flight < self.limit:
            waiter = self._waiters.popleft()
            if not waiter.done():
                self.in_flight += 1
                waiter.set_result(None)


class Limiters:
    """The limiters of one run, one per endpoint, shared by chat and embedding models.

    An endpoint is the base URL plus ``model_ref``: a hosted API limits each model on
    its own, a local server serves one model, and two configured names for the same
    model (an agent model and a judge at another temperature) share one queue. A
    model without a URL (``mock``) is its own endpoint.
    """

    def __init__(self) -> None:
        self._by_endpoint: dict[tuple[str, str], AdaptiveLimiter] = {}

    def get(self, name: str, concurrency: int, base_url: str, model_ref: str) -> AdaptiveLimiter:
        key = (base_url.rstrip("/"), model_ref) if base_url else ("", f"name:{name}")
        limiter = self._by_endpoint.get(key)
        if limiter is None:
            limiter = self._by_endpoint[key] = AdaptiveLimiter(name, concurrency)
        else:
            limiter.share(name, concurrency)
        return limiter


_SHARED: contextvars.ContextVar[Limiters | None] = contextvars.ContextVar(
    "oxyeval_shared_limiters", default=None
)


def current_limiters() -> Limiters | None:
    """The limiters every run started in this context shares (None: each run has its own)."""
    return _SHARED.get()


@contextlib.contextmanager
def shared_limiters(limiters: Limiters) -> Iterator[Limiters]:
    """Make every run started inside share ``limiters``: a server that starts runs for
    several requests at once keeps each endpoint under its one ``concurrency``, as a
    single CLI run does, instead of granting each request its own allowance. Tasks
    created inside inherit it (asyncio copies the context)."""
    token = _SHARED.set(limiters)
    try:
        yield limiters
    finally:
        _SHARED.reset(token)
