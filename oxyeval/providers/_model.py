"""Retries, backoff, per-model concurrency and timing, once for every vendor."""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import TypeVar

from ..errors import ProviderError
from ..redact import redact, redact_data
from ._base import ChatMessage, Completion, GenerateParams, ModelAPI, ModelSpec

__all__ = ["Model", "Retrier", "RetryPolicy"]

log = logging.getLogger("oxyeval.providers")

T = TypeVar("T")


class RetryPolicy:
    """Exponential backoff with equal jitter, honouring Retry-After up to ``max_retry_after``."""

    def __init__(
        self,
        base: float = 1.0,
        cap: float = 30.0,
        max_retry_after: float = 120.0,
        rng: random.Random | None = None,
    ) -> None:
        self.base = base
        self.cap = cap
        self.max_retry_after = max_retry_after
        self.rng = rng or random.Random()

    def delay(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to wait before retry number ``attempt`` (0-based)."""
        if retry_after is not None:
            # A server that says when to come back knows better than our curve; a small
            # jitter spreads the herd of concurrent callers that got the same header.
            return retry_after + self.rng.uniform(0, min(1.0, retry_after * 0.1))
        ceiling = min(self.cap, self.base * (2**attempt))
        return ceiling / 2 + self.rng.uniform(0, ceiling / 2)


class Retrier:
    """The retry loop for one configured model, whatever the call is (chat or embeddings).

    It owns the model's concurrency semaphore and its rate-limited retry notes, so
    every kind of call to the same model shares one limit and one voice on stderr.
    A backoff sleep happens outside the semaphore: a waiting call must not hold a
    slot that another call could use.
    """

    def __init__(
        self,
        spec: ModelSpec,
        *,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.spec = spec
        self.retry = retry or RetryPolicy()
        self._sleep = sleep
        self.semaphore = asyncio.Semaphore(max(1, spec.concurrency))
        self._last_note = 0.0
        self._quiet_retries = 0

    def _note_retry(self, error: ProviderError, delay: float, attempt: int, attempts: int) -> None:
        """Say on stderr that we are retrying, at most once a second per model.

        Fifty calls hitting the same outage should read as one line with a count,
        not fifty lines; silence would look like a hang, so the first always shows.
        """
        now = time.monotonic()
        if now - self._last_note < 1.0:
            self._quiet_retries += 1
            return
        others = self._quiet_retries
        self._last_note, self._quiet_retries = now, 0
        reason = f"HTTP {error.status}" if error.status else "connection/timeout"
        more = (
            f"; {others} more retr{'y' if others == 1 else 'ies'} since the last note"
            if others
            else ""
        )
        log.warning(
            "retrying model '%s' in %.1fs (attempt %d of %d, %s%s): %s",
            self.spec.name,
            delay,
            attempt,
            attempts,
            reason,
            more,
            error,
        )

    async def call(self, attempt_once: Callable[[], Awaitable[T]]) -> tuple[T, int, float]:
        """``(result, attempts made, seconds the successful attempt took)``.

        ``attempt_once`` makes one attempt and raises ProviderError; retryable
        errors are retried up to ``spec.max_retries`` times, the rest raised at once.
        """
        attempts = self.spec.max_retries + 1
        for attempt in range(attempts):
            async with self.semaphore:
                start = time.perf_counter()
                try:
                    result = await attempt_once()
                except ProviderError as exc:
                    error = exc
                else:
                    return result, attempt + 1, time.perf_counter() - start
            if not error.retryable:
                raise error
            if attempt + 1 >= attempts:
                raise ProviderError(
                    f"{error} (gave up after {attempts} attempt{'s' if attempts != 1 else ''})",
                    model=error.model,
                    status=error.status,
                    retryable=False,
                ) from None
            if error.retry_after is not None and error.retry_after > self.retry.max_retry_after:
                raise ProviderError(
                    f"{error} (the server asked to retry after {error.retry_after:.0f}s, "
                    f"more than the {self.retry.max_retry_after:.0f}s we wait)",
                    model=error.model,
                    status=error.status,
                ) from None
            delay = self.retry.delay(attempt, error.retry_after)
            self._note_retry(error, delay, attempt + 2, attempts)
            await self._sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover


class Model:
    """A configured model: a vendor API plus the policy for calling it."""

    def __init__(
        self,
        api: ModelAPI,
        *,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.api = api
        self.spec: ModelSpec = api.spec
        self._calls = Retrier(self.spec, retry=retry, sleep=sleep)
        self.retry = self._calls.retry

    @property
    def name(self) -> str:
        return self.spec.name

    async def generate(
        self, messages: Sequence[ChatMessage], params: GenerateParams | None = None
    ) -> Completion:
        merged = self.spec.params.merged(params)
        completion, attempts, latency = await self._calls.call(
            lambda: self.api.generate(list(messages), merged)
        )
        completion.latency = latency
        completion.attempts = attempts
        completion.model = self.spec.name
        # The one door every answer comes through: a key the model echoed is scrubbed
        # here, before it can reach a report, a file, the store or the next prompt.
        completion.text = redact(completion.text)
        if completion.tool_calls:
            completion.tool_calls = [
                replace(c, arguments=redact_data(c.arguments)) for c in completion.tool_calls
            ]
        return completion
