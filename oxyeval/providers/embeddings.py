"""Embedding models for semantic scoring: expected vs actual output by cosine similarity.

The shape mirrors the chat models on purpose: a vendor class (``EmbeddingAPI``, in
the vendor's own module next to its chat class: ``openai.py``, ``ollama.py``,
``google.py``, ``mock.py``) makes exactly one HTTP attempt per ``embed``;
:class:`Embedder` adds what every vendor needs the same way (retries through the
chat models' ``Retrier``, batching, a per-run cache); :class:`EmbeddingPool` is the
chat models' pool (``VendorPool``) handing out embedders: one registry, one key
resolution, one HTTP client.

config.yml's ``embeddings:`` entries are configured like chat models (name, vendor,
model_ref, key_var, api_url, headers, timeout, max_retries, concurrency) plus three
options, each sent in the vendor's own wire format:

* ``batch_size``: texts per request (default 96, cut to the API's limit: Gemini 100,
  OpenAI 2048);
* ``dims``: the vector size asked for (OpenAI ``dimensions``, Gemini
  ``outputDimensionality``, the mock's size); unset, the model's own;
* ``task_type``: Gemini's ``taskType`` (default ``SEMANTIC_SIMILARITY``).
"""

from __future__ import annotations

import asyncio
import math
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING

from ..errors import ConfigError, ProviderError
from ._base import EmbeddingAPI, EmbeddingResult, ModelSpec, positive_option
from ._limiter import AdaptiveLimiter
from ._model import Retrier, RetryPolicy
from ._pool import VendorPool
from ._registry import (
    embedding_vendor_class,
    embedding_vendors,
    register_embedding_vendor,
)

if TYPE_CHECKING:
    pass

__all__ = [
    "Embedder",
    "EmbeddingAPI",
    "EmbeddingPool",
    "EmbeddingResult",
    "EmbeddingSpec",
    "cosine",
    "embedding_vendor_class",
    "embedding_vendors",
    "register_embedding_vendor",
]

#: An embedding model is configured exactly like a chat model; see the module docstring
#: for the ``options`` it reads.
EmbeddingSpec = ModelSpec


def cosine(u: Sequence[float], v: Sequence[float]) -> float:
    """Raw cosine similarity in [-1, 1]; 0.0 when either vector is empty (a blank text).

    Raises ValueError for vectors that cannot be compared: of different lengths (from
    different models), holding a value that is not finite, or all zeros (no direction).
    Any of these is an error for the case that asked, never a score: ``min(1.0, nan)``
    is 1.0, so a NaN once scored as a perfect match. Each vector is divided by its
    largest magnitude first, so squares of 1e200 cannot overflow (nor those of 1e-200
    underflow) into a wrong answer; the cosine does not change with the scale.
    """
    if not u or not v:
        return 0.0
    if len(u) != len(v):
        raise ValueError(f"cannot compare vectors of {len(u)} and {len(v)} dimensions")
    a, b = _unit_scale(u), _unit_scale(v)
    dot = math.fsum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(math.fsum(x * x for x in a)) * math.sqrt(math.fsum(y * y for y in b))
    # Rounding can push the cosine of parallel vectors a hair past 1.
    return max(-1.0, min(1.0, dot / norm))


def _unit_scale(vector: Sequence[float]) -> list[float]:
    """``vector`` divided by its largest magnitude (ValueError: not finite, or all zeros)."""
    problem = vector_problem(vector)
    if problem is not None:
        raise ValueError(f"cannot compare an embedding that {problem}")
    largest = max(abs(x) for x in vector)
    return [x / largest for x in vector]


def vector_problem(vector: Sequence[float]) -> str | None:
    """Why an embedding cannot stand for its text (None when it can)."""
    if not all(math.isfinite(x) for x in vector):
        bad = next(x for x in vector if not math.isfinite(x))
        return f"holds a value that is not a finite number ({bad})"
    if not any(vector):
        return "is all zeros (a vector with no direction)"
    return None


class Embedder:
    """An embedding model with the chat models' retry policy, plus batching and a cache.

    The cache is keyed by text, so an expected output shared by many tests (or
    asked for by several tests at the same moment) is embedded once per run.
    """

    def __init__(
        self,
        api: EmbeddingAPI,
        *,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        batch_size: int | None = None,
        cache_size: int = 1024,
        limiter: AdaptiveLimiter | None = None,
    ) -> None:
        self.api = api
        self.spec: ModelSpec = api.spec
        self._calls = Retrier(self.spec, retry=retry, sleep=sleep, limiter=limiter)
        size = batch_size or positive_option(self.spec, "batch_size") or api.default_batch
        # Above the API's own limit the server would refuse the request; smaller
        # batches give the same vectors.
        self.batch_size = max(1, min(size, api.max_batch or size))
        self.cache_size = cache_size
        self._cache: OrderedDict[str, tuple[float, ...]] = OrderedDict()
        self._pending: dict[str, asyncio.Future[tuple[float, ...]]] = {}
        #: Requests that succeeded and the tokens their servers reported (None: none did).
        self.requests = 0
        self.input_tokens: int | None = None

    @property
    def name(self) -> str:
        return self.spec.name

    def flush_notes(self) -> None:
        self._calls.flush_notes()

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order; fresh lists, safe to modify.

        A blank text (empty or whitespace) is not sent, since OpenAI refuses empty
        input and it has no meaning to embed; its vector is ``[]``, whose cosine
        with anything is 0.0.
        """
        found: dict[str, tuple[float, ...]] = {}
        waiting: dict[str, asyncio.Future[tuple[float, ...]]] = {}
        missing: list[str] = []
        for text in dict.fromkeys(texts):
            if not text.strip():
                found[text] = ()
            elif text in self._cache:
                self._cache.move_to_end(text)
                found[text] = self._cache[text]
            elif text in self._pending:
                waiting[text] = self._pending[text]
            else:
                missing.append(text)
        if missing:
            found.update(await self._fetch(missing))
        for text, future in waiting.items():
            # Not ``await future``: if the caller that owns it is cancelled, that is
            # no reason to cancel this call too; fetch the text here instead.
            await asyncio.wait([future])
            if future.cancelled():
                found.update(await self._fetch([text]))
            else:
                found[text] = future.result()
        return [list(found[text]) for text in texts]

    async def similarity(self, a: str, b: str) -> float:
        """Raw cosine of the two texts' vectors, in [-1, 1] (not clipped to [0, 1]).

        Scales differ between models (some score unrelated text well above 0), so
        thresholds belong to the test that knows its model, not to this method.
        A blank text scores 0.0 against anything (see :meth:`embed`).
        """
        u, v = await self.embed([a, b])
        return cosine(u, v)

    async def _fetch(self, texts: list[str]) -> dict[str, tuple[float, ...]]:
        """Embed ``texts`` (distinct, not cached) in concurrent batches, filling the cache.

        Each text gets a future in ``_pending`` first, so a concurrent caller that
        needs the same text waits for this request instead of sending its own. The
        first failure is raised once every batch has finished, so no request is
        left running unobserved.
        """
        loop = asyncio.get_running_loop()
        futures = {text: loop.create_future() for text in texts}
        self._pending.update(futures)
        vectors: dict[str, tuple[float, ...]] = {}
        try:
            batches = [
                texts[i : i + self.batch_size] for i in range(0, len(texts), self.batch_size)
            ]
            outcomes = await asyncio.gather(
                *(self._embed_batch(batch) for batch in batches), return_exceptions=True
            )
            error: BaseException | None = None
            for batch, outcome in zip(batches, outcomes, strict=True):
                if isinstance(outcome, BaseException):
                    if not isinstance(outcome, Exception):
                        raise outcome  # cancelled: the futures are cancelled below
                    error = error or outcome
                    for text in batch:
                        futures[text].set_exception(outcome)
                        futures[text].exception()  # retrieved: waiters still get it raised
                    continue
                for text, vector in zip(batch, outcome, strict=True):
                    self._remember(text, vector)
                    futures[text].set_result(vector)
                    vectors[text] = vector
            if error is not None:
                raise error
            return vectors
        finally:
            for text, future in futures.items():
                if not future.done():
                    future.cancel()
                if self._pending.get(text) is future:
                    del self._pending[text]

    async def _embed_batch(self, batch: list[str]) -> list[tuple[float, ...]]:
        result, _, _ = await self._calls.call(lambda: self.api.embed(list(batch)))
        if len(result.vectors) != len(batch):
            raise ProviderError(
                f"model '{self.spec.name}' ({self.spec.vendor}): asked for {len(batch)} "
                f"embeddings, got {len(result.vectors)}",
                model=self.spec.name,
            )
        for index, vector in enumerate(result.vectors):
            problem = vector_problem(vector) if vector else "is empty"
            if problem is not None:  # an error for the cases that asked, never a score
                raise ProviderError(
                    f"model '{self.spec.name}' ({self.spec.vendor}): embedding {index + 1} of "
                    f"{len(batch)} {problem}; it cannot be compared",
                    model=self.spec.name,
                )
        self.requests += 1
        if result.input_tokens is not None:
            self.input_tokens = (self.input_tokens or 0) + result.input_tokens
        return [tuple(v) for v in result.vectors]

    def _remember(self, text: str, vector: tuple[float, ...]) -> None:
        self._cache[text] = vector
        self._cache.move_to_end(text)
        while len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)


class EmbeddingPool(VendorPool[Embedder]):
    """Resolves embedding model names to :class:`Embedder` objects sharing one client.

    Pass the run's existing client (e.g. the one :class:`~oxyeval.providers.ModelPool`
    built) to share its connections too; a client passed in is never closed here. Pass
    the ModelPool's ``limiters`` as well, so embeddings and chat calls to one server
    share one adaptive concurrency limit.
    """

    noun = "embedding model"
    caller = Embedder

    def _api_class(self, spec: ModelSpec) -> type[EmbeddingAPI]:
        try:
            return embedding_vendor_class(spec.vendor)
        except KeyError:
            raise ConfigError(
                f"model '{spec.name}': vendor '{spec.vendor}' has no embeddings API here; "
                f"embedding vendors: {', '.join(embedding_vendors())}"
            ) from None

    async def __aenter__(self) -> EmbeddingPool:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
