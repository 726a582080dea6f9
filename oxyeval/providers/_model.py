"""Retries, backoff, per-endpoint concurrency and timing, once for every vendor.

A :class:`Model` answers whole (:meth:`Model.generate`) or streamed
(``generate(..., stream=True)``, or :meth:`Model.stream` to read the text as it comes).
Both go through the same retries, limiter, answer cache and secret scrubbing; a streamed
attempt is retried only while no content has arrived (a consumer may have shown it), and
its answer carries ``time_to_first_token``. Every answer carries its ``cost`` when the
model's price is known (:mod:`oxyeval.providers.pricing`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import replace
from typing import TypeVar

from ..errors import ProviderError
from ..inputs import valid_text
from ..redact import RedactingPieces, redact, redact_data
from ._base import (
    AttemptTimeout,
    ChatMessage,
    Completion,
    Deltas,
    GenerateParams,
    ModelAPI,
    ModelSpec,
)
from ._limiter import AdaptiveLimiter, Outcome
from ._response_cache import ResponseCache, answer_key, cacheable, current_repeat
from .batching import current_batcher
from .pricing import BATCH_SHARE, cost_of, price_for

__all__ = ["OVERLOAD_STATUS", "Model", "Retrier", "RetryPolicy", "deterministic_500", "timed_out"]

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


#: Statuses that mean "too many requests for this server right now": the limiter backs off.
OVERLOAD_STATUS = frozenset({429, 503, 529})
#: What a server says when it rejects the request itself (pydantic/FastAPI validators,
#: llama-cpp-python, vLLM) rather than failing while serving it.
_REJECTION = re.compile(
    r"validation errors?|field required|input should be|extra inputs are not permitted"
    r"|is not a valid|invalid (?:request|value|type|input|argument|parameter)|unprocessable"
    r"|must be created with|not supported|unsupported",
    re.IGNORECASE,
)


def timed_out(error: ProviderError, elapsed: float, timeout: float) -> bool:
    """Whether a failed attempt was a timeout: no HTTP status, and it used its whole budget.

    Judged by the clock, not by the message, so it holds whatever words the HTTP layer
    uses for "no answer in time".
    """
    return error.status is None and error.retryable and elapsed >= 0.9 * timeout


def deterministic_500(error: ProviderError, previous: str | None) -> bool:
    """An HTTP 500 that a retry will not change.

    Servers built on request validators (llama-cpp-python, some proxies) answer a
    request they reject with 500, not 400. Such an error is recognised by two things
    together: it reads as a rejection of the request ("7 validation errors...",
    "Field required", "must be created with embedding=True"), and the very same
    message came back for the same request on the previous attempt. A 500 that says
    only "The server had an error" is an outage, however often it repeats, and is
    retried as usual.
    """
    return error.status == 500 and previous == str(error) and bool(_REJECTION.search(previous))


class Retrier:
    """The retry loop for one configured model, whatever the call is (chat or embeddings).

    It waits on the endpoint's :class:`AdaptiveLimiter` (shared with every other model
    on that endpoint), tells it how each attempt went, and keeps the model's
    rate-limited retry notes, so every kind of call to the same server shares one
    limit and one voice on stderr. A backoff sleep happens outside the limiter: a
    waiting call must not hold a slot that another call could use.
    """

    def __init__(
        self,
        spec: ModelSpec,
        *,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        limiter: AdaptiveLimiter | None = None,
    ) -> None:
        self.spec = spec
        self.retry = retry or RetryPolicy()
        self._sleep = sleep
        self.limiter = limiter or AdaptiveLimiter(spec.name, spec.concurrency)
        self._last_note = 0.0
        self._quiet_retries = 0
        self._last_noted: str | None = None

    def _note_retry(self, error: ProviderError, delay: float, attempt: int, attempts: int) -> None:
        """Say on stderr that we are retrying, at most once a second per model.

        Fifty calls hitting the same outage should read as one line with a count,
        not fifty lines; silence would look like a hang, so the first always shows.
        An error identical to the one in the previous note (a server rejecting the
        same request again, its message maybe many lines long) is not printed again.
        The retries counted but not shown are reported by :meth:`flush_notes`.
        """
        now = time.monotonic()
        if now - self._last_note < 1.0:
            self._quiet_retries += 1
            return
        others = self._quiet_retries
        self._last_note, self._quiet_retries = now, 0
        text = str(error)
        same, self._last_noted = text == self._last_noted, text
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
            "the same error as in the last note" if same else text,
        )

    def flush_notes(self) -> None:
        """Report the retries counted since the last note; call it when the run ends."""
        if self._quiet_retries:
            count, self._quiet_retries = self._quiet_retries, 0
            log.warning(
                "model '%s': %d more retr%s after the last retry note",
                self.spec.name,
                count,
                "y" if count == 1 else "ies",
            )

    def _timeout_hint(self) -> str:
        return (
            f". Each attempt may take at most timeout: {self.spec.timeout:g}s, and that "
            "includes the time the request waits in the server's own queue: lower "
            f"`concurrency` for model '{self.spec.name}' in config.yml (a local server often "
            "answers one request at a time), set `max_tokens` to bound the length of "
            "answers, or raise `timeout`"
        )

    async def call(self, attempt_once: Callable[[], Awaitable[T]]) -> tuple[T, int, float]:
        """``(result, attempts made, seconds the successful attempt took)``.

        ``attempt_once`` makes one attempt and raises ProviderError; retryable
        errors are retried up to ``spec.max_retries`` times, the rest raised at once,
        and so is an HTTP 500 that came back identical twice (see :func:`deterministic_500`).
        """
        attempts = self.spec.max_retries + 1
        previous: str | None = None
        for attempt in range(attempts):
            generation = await self.limiter.acquire()
            outcome, reason = Outcome.NEUTRAL, ""
            start = time.perf_counter()
            try:
                result = await attempt_once()
            except ProviderError as exc:
                error = exc
                slow = timed_out(exc, time.perf_counter() - start, self.spec.timeout)
                if slow:
                    outcome, reason = (
                        Outcome.OVERLOADED,
                        f"a request timed out after {self.spec.timeout:g}s",
                    )
                elif exc.status in OVERLOAD_STATUS:
                    outcome, reason = Outcome.OVERLOADED, f"HTTP {exc.status}"
            else:
                outcome = Outcome.SUCCESS
                return result, attempt + 1, time.perf_counter() - start
            finally:
                self.limiter.release(generation, outcome, reason)
            if not error.retryable:
                raise error
            if deterministic_500(error, previous):
                raise ProviderError(
                    f"{error} (the same HTTP 500 error came back twice in a row: the server "
                    "rejects this request, so it was not retried further)",
                    model=error.model,
                    status=error.status,
                ) from None
            previous = str(error)
            if attempt + 1 >= attempts:
                raise ProviderError(
                    f"{error} (gave up after {attempts} attempt{'s' if attempts != 1 else ''})"
                    # Advice once: an attempt's own timeout error already gives it.
                    + (
                        self._timeout_hint()
                        if slow and not isinstance(error, AttemptTimeout)
                        else ""
                    ),
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
    """A configured model: a vendor API plus the policy for calling it.

    ``price`` is the spec's (config.yml ``pricing:``) or else the built-in one for its
    ``model_ref``; None when neither knows the model (its answers' cost is None).
    """

    def __init__(
        self,
        api: ModelAPI,
        *,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        limiter: AdaptiveLimiter | None = None,
    ) -> None:
        self.api = api
        self.spec: ModelSpec = api.spec
        self._calls = Retrier(self.spec, retry=retry, sleep=sleep, limiter=limiter)
        self._sleep = sleep
        self.retry = self._calls.retry
        self.price = (
            self.spec.price if self.spec.price is not None else price_for(self.spec.model_ref)
        )
        #: The parameters a call with given ones sends (merged, capped), made once per
        #: distinct parameters: a run of 10,000 cases passes the same ones each time.
        self._sent: dict[GenerateParams | None, GenerateParams] = {}

    def _sent_params(self, params: GenerateParams | None) -> GenerateParams:
        try:
            return self._sent[params]
        except KeyError:
            pass
        except TypeError:  # unhashable (a dict in ``extra``): made for this call
            return self._capped(params)
        sent = self._capped(params)
        if len(self._sent) < 64:
            self._sent[params] = sent
        return sent

    def _capped(self, params: GenerateParams | None) -> GenerateParams:
        merged = self.spec.params.merged(params)
        cap = self.api.effective_max_tokens(merged, self.spec.model_ref, local=self.spec.local)
        if cap != merged.max_tokens:  # the default cap is sent, and part of the cache key
            merged = replace(merged, max_tokens=cap)
        return merged

    def variant(
        self, params: GenerateParams, *, name: str | None = None, timeout: float | None = None
    ) -> Model:
        """This model with ``params`` laid over its own sampling settings (and another
        ``timeout`` per attempt, when given): the same endpoint limiter, HTTP client, retry
        policy and price, no config.yml entry.

        ``name`` (default: this model's name and the settings changed, ``gpt[temperature=0.9]``)
        is what messages and ``Completion.model`` call it.
        """
        if name is None:
            changed = {k: v for k, v in params.__dict__.items() if v is not None}
            shown = ", ".join(f"{k}={v}" for k, v in changed.items())
            name = f"{self.spec.name}[{shown}]" if shown else self.spec.name
        spec = replace(
            self.spec, name=name, params=self.spec.params.merged(params), price=self.price
        )
        if timeout is not None:
            spec = replace(spec, timeout=timeout)
        api = type(self.api)(spec, self.api.client)
        return Model(api, retry=self.retry, sleep=self._sleep, limiter=self.limiter)

    @property
    def limiter(self) -> AdaptiveLimiter:
        """The endpoint's adaptive concurrency limit (shared with models on the same endpoint)."""
        return self._calls.limiter

    def flush_notes(self) -> None:
        self._calls.flush_notes()

    @property
    def name(self) -> str:
        return self.spec.name

    def max_tokens(self, params: GenerateParams | None = None) -> int | None:
        """The answer-length limit :meth:`generate` with ``params`` sends (None: the
        server's own), by the vendor's rule (:meth:`ModelAPI.effective_max_tokens`)."""
        return self.api.effective_max_tokens(
            self.spec.params.merged(params), self.spec.model_ref, local=self.spec.local
        )

    async def generate(
        self,
        messages: Sequence[ChatMessage],
        params: GenerateParams | None = None,
        *,
        run: int = 1,
        cache: ResponseCache | None = None,
        stream: bool = False,
        on_text: Callable[[str], object] | None = None,
    ) -> Completion:
        """One answer, retried as the policy says. With a ``cache``, an identical earlier
        call (same messages, parameters, model, endpoint and run index ``run`` within
        any :func:`~oxyeval.providers.repeat_scope`) is replayed without a request, and
        a new answer is kept unless it is empty or cut off (see :func:`cacheable`).

        ``stream=True`` (or an ``on_text``) asks the vendor for a streamed answer, to time
        its first token; ``on_text`` gets the text piece by piece, redacted, as it
        arrives. Streamed and whole calls share cache entries: a replayed answer has no
        ``time_to_first_token`` and its whole text goes to ``on_text`` at once.
        """
        if any(m.images for m in messages) and not getattr(self.api, "vision", False):
            raise ProviderError(
                f"model '{self.name}' ({self.spec.vendor}): oxyeval sends images only to "
                "OpenAI-compatible (openai, ollama) and Anthropic models; judge this test "
                "case with one of those",
                model=self.name,
            )
        merged = self._sent_params(params)
        key = None
        batcher = current_batcher()
        if cache is not None or batcher is not None:
            key = answer_key(
                self.spec, self.api.base_url, messages, merged, (*current_repeat(), run)
            )
        if cache is not None and key is not None:
            hit = await cache.get(key)
            if hit is not None:
                hit.latency, hit.attempts, hit.cached = 0.0, 0, True
                hit.time_to_first_token = None
                hit = self._delivered(hit)
                log.debug("model %s: answer replayed from the cache", self.spec.name)
                if on_text is not None and hit.text:
                    on_text(hit.text)
                return hit
        if batcher is not None and key is not None:
            # Batched calls are never streamed: the whole answer arrives at once.
            completion, attempts, latency = await batcher.generate(
                self.api,
                messages,
                merged,
                key,
                lambda: self._calls.call(lambda: self.api.generate(list(messages), merged)),
            )
            if on_text is not None and completion.text:
                on_text(redact(completion.text))
        elif stream or on_text is not None or self.spec.stream:
            completion, attempts, latency = await self._streamed(list(messages), merged, on_text)
        else:
            completion, attempts, latency = await self._calls.call(
                lambda: self.api.generate(list(messages), merged)
            )
        completion.latency = latency
        completion.attempts = attempts
        completion = self._delivered(completion)
        log.debug(
            "model %s: answered in %.2f s (%s in, %s out tokens; %d attempt(s); finish %s)",
            self.spec.name,
            latency,
            completion.usage.input_tokens,
            completion.usage.output_tokens,
            attempts,
            completion.finish_reason,
        )
        if batcher is not None:
            batcher.delivered(
                completion,
                cost_of(self.price, completion.usage.input_tokens, completion.usage.output_tokens),
            )
        if (
            key is not None
            and cache is not None
            and cacheable(completion, keep_truncated=cache.keep_truncated)
        ):
            await cache.put(key, completion)
        return completion

    async def stream(
        self,
        messages: Sequence[ChatMessage],
        params: GenerateParams | None = None,
        *,
        run: int = 1,
        cache: ResponseCache | None = None,
    ) -> AsyncIterator[str | Completion]:
        """The answer as it arrives: text pieces (``str``, redacted), then the whole
        :class:`Completion` as the last item (``isinstance(item, Completion)``).

        The same call as ``generate(..., stream=True)``: retries (only before content
        arrived), limiter, cache and errors alike; an error is raised from the loop.
        Leaving the loop early cancels the request.
        """
        queue: asyncio.Queue[str | None] = asyncio.Queue()
        task = asyncio.ensure_future(
            self.generate(
                messages, params, run=run, cache=cache, stream=True, on_text=queue.put_nowait
            )
        )
        task.add_done_callback(lambda _: queue.put_nowait(None))
        try:
            while (piece := await queue.get()) is not None:
                yield piece
            yield task.result()
        finally:
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, ProviderError):
                    await task

    async def _streamed(
        self,
        messages: list[ChatMessage],
        params: GenerateParams,
        on_text: Callable[[str], object] | None,
    ) -> tuple[Completion, int, float]:
        """Streamed attempts through the retry loop; the answer's first-token time set."""
        pieces = RedactingPieces(on_text) if on_text is not None else None
        last: list[tuple[float, Deltas]] = []

        async def attempt() -> Completion:
            deltas = Deltas(pieces.write if pieces is not None else None)
            last[:] = [(time.perf_counter(), deltas)]
            try:
                return await self.api.stream(messages, params, deltas)
            except ProviderError as exc:
                if deltas.first is None or not exc.retryable:
                    raise
                raise ProviderError(
                    f"{exc} (part of the answer had already arrived, so the call is not "
                    "retried: a reader may have seen it)",
                    model=exc.model,
                    status=exc.status,
                ) from None

        completion, attempts, latency = await self._calls.call(attempt)
        if pieces is not None:
            pieces.flush()
        started, deltas = last[0]
        if deltas.first is not None:
            completion.time_to_first_token = deltas.first - started
        return completion, attempts, latency

    def _delivered(self, completion: Completion) -> Completion:
        """Every answer, fresh or replayed, leaves through here: named, scrubbed, priced."""
        completion.model = self.spec.name
        # The one door every answer comes through: a key the model echoed is scrubbed
        # here, before it can reach a report, a file, the store or the next prompt.
        # Valid text too: a plugin's class may hand over what no writer can encode.
        completion.text = valid_text(redact(completion.text), f"the answer of model '{self.name}'")
        if completion.tool_calls:
            completion.tool_calls = [
                replace(c, arguments=redact_data(c.arguments)) for c in completion.tool_calls
            ]
        completion.cost = cost_of(
            self.price, completion.usage.input_tokens, completion.usage.output_tokens
        )
        if completion.batched and completion.cost is not None:
            completion.cost *= BATCH_SHARE
        return completion
