"""Embedding clients for semantic scoring: expected vs actual output by cosine similarity.

The shape mirrors the chat providers on purpose: a vendor class makes exactly
one HTTP attempt per :meth:`EmbeddingAPI.embed` and raises a classified
:class:`~oxyeval.errors.ProviderError`; :class:`Embedder` adds what every vendor
needs the same way (retries through the chat models' :class:`Retrier`, batching,
a per-run cache); :class:`EmbeddingPool` resolves names to embedders sharing one
HTTP client and resolves keys exactly like :class:`~oxyeval.providers.ModelPool`.

Wire formats:

* ``openai`` (and any OpenAI-compatible server through ``api_url``: vLLM,
  LM Studio, llama.cpp): ``POST {base}/embeddings`` with ``{"model", "input":
  [texts]}``; vectors in ``data[].embedding``, put in order by ``data[].index``;
  tokens in ``usage.prompt_tokens``. Bearer key only when one is configured.
  llama.cpp's server started without pooling answers one vector *per token*
  (``embedding`` is a list of lists); those are mean-pooled into one vector per
  text, with one note on stderr (see :func:`pool_token_vectors`).
* ``ollama``: the same on Ollama's OpenAI-compatible ``/v1``, no key needed.
* ``google``/``gemini``: ``POST {base}/models/{model}:batchEmbedContents`` with the
  key in ``x-goog-api-key`` (never in the URL) and ``{"requests": [{"model":
  "models/{model}", "content": {"parts": [{"text": ...}]}, "taskType":
  "SEMANTIC_SIMILARITY"}]}``; vectors in ``embeddings[].values``, in request order.
* ``mock``: offline and deterministic (hashed bag of words), no network.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import math
import os
import re
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import quote

from ..errors import ConfigError, ProviderError
from ..redact import register_secret
from ._base import ModelSpec
from ._http import malformed, post_json
from ._limiter import AdaptiveLimiter, Limiters
from ._model import Retrier, RetryPolicy
from ._pool import resolve_api_key
from ._registry import vendors as chat_vendors

if TYPE_CHECKING:
    import httpx

log = logging.getLogger("oxyeval.providers")

__all__ = [
    "Embedder",
    "EmbeddingAPI",
    "EmbeddingPool",
    "EmbeddingResult",
    "EmbeddingSpec",
    "GoogleEmbeddingAPI",
    "MockEmbeddingAPI",
    "OllamaEmbeddingAPI",
    "OpenAIEmbeddingAPI",
    "cosine",
    "embedding_vendor_class",
    "embedding_vendors",
    "register_embedding_vendor",
]

#: An embedding model is configured exactly like a chat model (name, vendor,
#: model_ref, key_var, api_url, headers, timeout, max_retries, concurrency); the
#: ``options`` it reads are ``batch_size`` (all vendors), ``task_type`` (Gemini)
#: and ``dims`` (mock).
EmbeddingSpec = ModelSpec


def cosine(u: Sequence[float], v: Sequence[float]) -> float:
    """Raw cosine similarity in [-1, 1]; 0.0 when either vector is empty or all zeros.

    A zero vector has no direction, so "no similarity" is the only honest answer
    (and it is what a blank text embeds to, see :meth:`Embedder.embed`).
    Vectors of different lengths come from different models: comparing them is a
    bug, so it raises ValueError instead of returning a meaningless number.
    """
    if not u or not v:
        return 0.0
    if len(u) != len(v):
        raise ValueError(f"cannot compare vectors of {len(u)} and {len(v)} dimensions")
    dot = math.fsum(a * b for a, b in zip(u, v, strict=True))
    norm = math.sqrt(math.fsum(a * a for a in u)) * math.sqrt(math.fsum(b * b for b in v))
    if norm == 0.0:
        return 0.0
    # Rounding can push the cosine of parallel vectors a hair past 1.
    return max(-1.0, min(1.0, dot / norm))


@dataclass(frozen=True)
class EmbeddingResult:
    """One vector per input text, in input order, and the tokens billed when reported."""

    vectors: list[list[float]]
    input_tokens: int | None = None


# --------------------------------------------------------------------------- vendors


class EmbeddingAPI(ABC):
    """Base of every embedding vendor: one HTTP attempt per :meth:`embed`."""

    vendor: ClassVar[str]
    #: Whether the vendor needs an API key when ``key_var`` is not set.
    requires_key: ClassVar[bool] = True
    default_api_url: ClassVar[str | None] = None
    #: Most texts sent in one request; Gemini takes at most 100, OpenAI 2048.
    max_batch: ClassVar[int] = 96

    def __init__(self, spec: ModelSpec, client: httpx.AsyncClient | None) -> None:
        self.spec = spec
        self.client = client

    @property
    def base_url(self) -> str:
        url = self.spec.api_url or self.default_api_url or ""
        return url.rstrip("/")

    def _client(self) -> httpx.AsyncClient:
        if self.client is None:
            raise ProviderError(
                f"model '{self.spec.name}' ({self.spec.vendor}): no HTTP client was given to "
                f"{type(self).__name__}; create embedders through EmbeddingPool",
                model=self.spec.name,
            )
        return self.client

    @abstractmethod
    async def embed(self, texts: list[str]) -> EmbeddingResult:
        """Make one attempt for all ``texts``; raise ProviderError (retryable or not)."""


def _vector(value: Any) -> list[float] | None:
    """A list of numbers as floats, or None when it is anything else."""
    if not isinstance(value, list) or not value:
        return None
    if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in value):
        return None
    return [float(x) for x in value]


def pool_token_vectors(value: Any) -> list[float] | None:
    """The mean of per-token vectors (a list of equally long number lists), or None.

    llama.cpp's ``llama-server`` without ``--pooling``, and llama-cpp-python's server
    (whose settings have no pooling option) for models without a pooling type, return
    one vector per token instead of one per text. Their mean is what a ``mean``-pooled
    server would have answered, and what sentence-embedding models are trained for;
    the cosine of two such means is a fair similarity.
    """
    if not isinstance(value, list) or not value:
        return None
    rows = [_vector(row) for row in value]
    if any(row is None for row in rows) or len({len(row) for row in rows if row}) != 1:
        return None
    count = len(rows)
    return [math.fsum(column) / count for column in zip(*rows, strict=True)]  # type: ignore[misc]


def describe_value(value: Any, limit: int = 120) -> str:
    """What a value looks like (type, shape, start), for errors about unexpected data.

    A 4096-dimension vector printed whole would bury the message; its shape and
    first numbers say what went wrong.
    """
    if isinstance(value, list):
        if value and all(isinstance(row, list) for row in value):
            widths = sorted({len(row) for row in value})
            shown = ", ".join(str(w) for w in widths[:3]) + ("..." if len(widths) > 3 else "")
            inner = {type(x).__name__ for row in value for x in row[:50]}
            shape = f"a list of {len(value)} lists of {shown} items ({', '.join(sorted(inner)) or 'empty'})"
        else:
            kinds = sorted({type(x).__name__ for x in value[:50]})
            shape = f"a list of {len(value)} items ({', '.join(kinds) or 'empty'})"
    elif isinstance(value, dict):
        shape = f"an object with keys {', '.join(list(map(str, value))[:8]) or 'none'}"
    else:
        shape = "null" if value is None else f"a {type(value).__name__}"
    text = json.dumps(value, default=str)
    if len(text) > limit:
        text = text[:limit] + "..."
    return f"{shape}: {text}"


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class OpenAIEmbeddingAPI(EmbeddingAPI):
    """``POST {base}/embeddings``; also every OpenAI-compatible server via ``api_url``."""

    vendor: ClassVar[str] = "openai"
    default_api_url: ClassVar[str | None] = "https://api.openai.com/v1"

    def _headers(self) -> dict[str, str]:
        if self.spec.api_key:
            return {"Authorization": f"Bearer {self.spec.api_key}"}
        return {}

    #: Set once per model when the server sent per-token vectors: from then on each text
    #: goes in a request of its own (see :meth:`embed`), and the note has been shown.
    pooled_tokens: bool = False

    async def embed(self, texts: list[str]) -> EmbeddingResult:
        """One request for all ``texts``, unless the server answers per token.

        llama-cpp-python's server, when it does not pool, gets every text of a batch but
        the first wrong (measured: the cosine between a text's vectors sent alone and
        sent second in a batch was 0.007). So once a server has sent per-token vectors,
        each text is sent on its own, and a batch that came back per token is asked
        again text by text.
        """
        if self.pooled_tokens and len(texts) > 1:
            return await self._one_by_one(texts)
        result, per_token = await self._request(texts)
        if per_token and len(texts) > 1:
            return await self._one_by_one(texts)
        return result

    async def _one_by_one(self, texts: list[str]) -> EmbeddingResult:
        vectors: list[list[float]] = []
        tokens: int | None = None
        for text in texts:
            result, _ = await self._request([text])
            vectors.extend(result.vectors)
            if result.input_tokens is not None:
                tokens = (tokens or 0) + result.input_tokens
        return EmbeddingResult(vectors, tokens)

    async def _request(self, texts: list[str]) -> tuple[EmbeddingResult, bool]:
        """The vectors of one request, and whether they came per token (and were pooled)."""
        url = f"{self.base_url}/embeddings"
        body = {"model": self.spec.model_ref, "input": list(texts)}
        try:
            data = await post_json(self._client(), self.spec, url, body, self._headers())
        except ProviderError as exc:
            raise _not_serving_embeddings(self.spec, exc) or exc from None
        items = data.get("data")
        if not isinstance(items, list):
            raise malformed(self.spec, url, "a 'data' list", data)
        if len(items) != len(texts):
            raise malformed(self.spec, url, f"{len(texts)} embeddings, got {len(items)}")
        vectors: list[list[float] | None] = [None] * len(texts)
        per_token = False
        for position, item in enumerate(items):
            if not isinstance(item, dict):
                raise malformed(self.spec, url, f"'data[{position}]' to be an object", data)
            # The index is the order of the input; servers may answer out of order.
            index = item.get("index", position)
            raw = item.get("embedding")
            vector = _vector(raw)
            if _count(index) is None or not 0 <= index < len(texts) or vectors[index] is not None:
                raise malformed(
                    self.spec, url, f"'data[{position}].index' to be a distinct input index"
                )
            if vector is None:
                vector = pool_token_vectors(raw)
                if vector is None:
                    raise ProviderError(
                        f"model '{self.spec.name}' ({self.spec.vendor}): malformed response "
                        f"from {url}: expected 'data[{position}].embedding' to be a list of "
                        f"numbers (or per-token lists of numbers), got {describe_value(raw)}",
                        model=self.spec.name,
                    )
                per_token = True
                self._note_pooled(len(raw), len(vector))
            vectors[index] = vector
        usage = data.get("usage")
        tokens = _count(usage.get("prompt_tokens")) if isinstance(usage, dict) else None
        return EmbeddingResult([v for v in vectors if v is not None], tokens), per_token

    def _note_pooled(self, tokens: int, dims: int) -> None:
        if self.pooled_tokens:
            return
        self.pooled_tokens = True
        log.warning(
            "embedding model '%s': the server sent one vector per token (%d tokens x %d "
            "dimensions) instead of one per text; oxyeval averages them (mean pooling) and "
            "sends one text per request (such servers mix up the texts of a batch). To "
            "have the server pool, run llama.cpp's own server with `llama-server "
            "--embeddings --pooling mean`, or an embedding model that declares its pooling type",
            self.spec.name,
            tokens,
            dims,
        )


_NO_EMBEDDINGS = re.compile(
    r"embedding\s*=\s*true|embeddings? (are |is )?not (enabled|supported)|--embeddings?\b", re.I
)


def _not_serving_embeddings(spec: ModelSpec, error: ProviderError) -> ProviderError | None:
    """A clear error when the server is up but not serving embeddings, else None.

    llama-cpp-python answers HTTP 500 "Llama model must be created with
    embedding=True to call this method"; llama.cpp's own server says "This server
    does not support embeddings. Start it with `--embeddings`". Retrying either is
    pointless, and the fix is on the server's command line.
    """
    if error.status is None or not _NO_EMBEDDINGS.search(str(error)):
        return None
    return ProviderError(
        f"{error}. The server at {spec.api_url or 'api_url'} is not serving embeddings: "
        "start a server for the embedding model with embeddings on (llama-cpp-python: "
        "python -m llama_cpp.server --model MODEL.gguf --embedding true; llama.cpp: "
        "llama-server -m MODEL.gguf --embeddings --pooling mean) and point this "
        "embedding model's api_url at it",
        model=spec.name,
        status=error.status,
    )


class OllamaEmbeddingAPI(OpenAIEmbeddingAPI):
    """Ollama's OpenAI-compatible ``/v1/embeddings``: its native API differs in every field."""

    vendor: ClassVar[str] = "ollama"
    requires_key: ClassVar[bool] = False
    default_api_url: ClassVar[str | None] = "http://localhost:11434/v1"


class GoogleEmbeddingAPI(EmbeddingAPI):
    """Gemini ``batchEmbedContents`` with the key in a header (URLs end up in messages)."""

    vendor: ClassVar[str] = "google"
    default_api_url: ClassVar[str | None] = "https://generativelanguage.googleapis.com/v1beta"

    def _headers(self) -> dict[str, str]:
        if self.spec.api_key:
            return {"x-goog-api-key": self.spec.api_key}
        return {}

    async def embed(self, texts: list[str]) -> EmbeddingResult:
        # Accept "models/gemini-x" as well as "gemini-x", as Google's own tools do.
        ref = self.spec.model_ref.removeprefix("models/")
        url = f"{self.base_url}/models/{quote(ref, safe='-._~')}:batchEmbedContents"
        # Gemini tunes the vectors to the task; scoring is semantic similarity.
        task = self.spec.options.get("task_type", "SEMANTIC_SIMILARITY")
        requests = []
        for text in texts:
            request: dict[str, Any] = {
                "model": f"models/{ref}",
                "content": {"parts": [{"text": text}]},
            }
            if task:
                request["taskType"] = task
            requests.append(request)
        data = await post_json(
            self._client(), self.spec, url, {"requests": requests}, self._headers()
        )
        items = data.get("embeddings")
        if not isinstance(items, list):
            raise malformed(self.spec, url, "an 'embeddings' list", data)
        if len(items) != len(texts):
            raise malformed(self.spec, url, f"{len(texts)} embeddings, got {len(items)}")
        vectors = []
        for position, item in enumerate(items):
            vector = _vector(item.get("values")) if isinstance(item, dict) else None
            if vector is None:
                raise malformed(
                    self.spec, url, f"'embeddings[{position}].values' to be a list of numbers"
                )
            vectors.append(vector)
        usage = data.get("usageMetadata")
        tokens = _count(usage.get("promptTokenCount")) if isinstance(usage, dict) else None
        return EmbeddingResult(vectors, tokens)


_WORD = re.compile(r"\w+")


class MockEmbeddingAPI(EmbeddingAPI):
    """Offline, deterministic embeddings: a hashed bag of words, L2-normalised.

    Identical texts get identical vectors and texts sharing words get a positive
    cosine (counts are never negative), so semantic-scoring examples and CI run
    with no key and no network. ``options.dims`` sets the size (default 256).
    """

    vendor: ClassVar[str] = "mock"
    requires_key: ClassVar[bool] = False

    @property
    def dims(self) -> int:
        dims = self.spec.options.get("dims", 256)
        return dims if isinstance(dims, int) and dims > 0 else 256

    def vector(self, text: str) -> list[float]:
        dims = self.dims
        counts = [0.0] * dims
        for word in _WORD.findall(text.lower()):
            # blake2b, not hash(): the same word must land in the same slot in every process.
            digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
            counts[int.from_bytes(digest, "big") % dims] += 1.0
        norm = math.sqrt(sum(c * c for c in counts))
        return [c / norm for c in counts] if norm else counts

    async def embed(self, texts: list[str]) -> EmbeddingResult:
        tokens = sum(len(_WORD.findall(t)) for t in texts)
        return EmbeddingResult([self.vector(t) for t in texts], tokens)


# --------------------------------------------------------------------------- registry

_VENDORS: dict[str, type[EmbeddingAPI]] = {
    "openai": OpenAIEmbeddingAPI,
    "ollama": OllamaEmbeddingAPI,
    "google": GoogleEmbeddingAPI,
    "gemini": GoogleEmbeddingAPI,
    "mock": MockEmbeddingAPI,
}


def register_embedding_vendor(name: str, cls: type[EmbeddingAPI]) -> None:
    """Add (or replace) an embedding vendor; plugins call this to bring their own."""
    _VENDORS[name] = cls


def embedding_vendors() -> list[str]:
    return sorted(_VENDORS)


def embedding_vendor_class(name: str) -> type[EmbeddingAPI]:
    """The class for ``name``; KeyError when no embedding vendor has that name."""
    return _VENDORS[name]


# --------------------------------------------------------------------------- Embedder


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
        option = self.spec.options.get("batch_size")
        size = batch_size or (option if isinstance(option, int) else 0) or api.max_batch
        self.batch_size = max(1, size)
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
        self.requests += 1
        if result.input_tokens is not None:
            self.input_tokens = (self.input_tokens or 0) + result.input_tokens
        return [tuple(v) for v in result.vectors]

    def _remember(self, text: str, vector: tuple[float, ...]) -> None:
        self._cache[text] = vector
        self._cache.move_to_end(text)
        while len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)


# --------------------------------------------------------------------------- pool


def _resolve_key(
    spec: ModelSpec, cls: type[EmbeddingAPI], environ: Mapping[str, str] | None
) -> ModelSpec:
    """The spec with its key, resolved by the chat models' rules and messages.

    ``resolve_api_key`` knows only chat vendors; a plugin embedding vendor without
    a chat twin gets the same rules here (literal key, else ``key_var``, else no
    key when the vendor or a custom ``api_url`` needs none).
    """
    if spec.vendor in chat_vendors():
        return resolve_api_key(spec, environ)
    if spec.api_key:
        return spec
    if spec.key_var is None:
        if spec.api_url or not cls.requires_key:
            return spec
        raise ConfigError(
            f"model '{spec.name}' ({spec.vendor}) needs an API key; set key_var in "
            f"config.yml to the environment variable that holds it."
        )
    env = os.environ if environ is None else environ
    key = env.get(spec.key_var, "").strip()
    if not key:
        raise ConfigError(
            f"model '{spec.name}' ({spec.vendor}) needs an API key in the environment "
            f"variable {spec.key_var} (named by key_var), which is not set. "
            f"Export {spec.key_var}, or set key_var in config.yml to the variable that "
            f"holds the key."
        )
    register_secret(key)
    return replace(spec, api_key=key)


class EmbeddingPool:
    """Resolves embedding model names to :class:`Embedder` objects sharing one client.

    Pass the run's existing client (e.g. the one :class:`ModelPool` built) to share
    its connections too; a client passed in is never closed here. Pass the ModelPool's
    ``limiters`` as well, so embeddings and chat calls to one server share one
    adaptive concurrency limit.
    """

    def __init__(
        self,
        specs: Mapping[str, ModelSpec],
        *,
        client: httpx.AsyncClient | None = None,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        environ: Mapping[str, str] | None = None,
        limiters: Limiters | None = None,
    ) -> None:
        self.specs = dict(specs)
        self.limiters = limiters or Limiters()
        self._client = client
        self._own_client = client is None
        self._retry = retry
        self._sleep = sleep
        self._environ = environ
        self._embedders: dict[str, Embedder] = {}

    def _http_client(self) -> httpx.AsyncClient:
        if self._client is None:
            import httpx

            remote = [s for s in self.specs.values() if s.vendor != "mock"]
            total = sum(s.concurrency for s in remote) or 10
            self._client = httpx.AsyncClient(
                # The endpoints' adaptive limiters are the gate (see ModelPool).
                limits=httpx.Limits(max_connections=None, max_keepalive_connections=total),
                timeout=httpx.Timeout(120.0, connect=10.0),
            )
        return self._client

    def check(self, names: Sequence[str]) -> None:
        """Resolve vendors and keys for ``names`` up front, before any test runs."""
        for name in names:
            self.get(name)

    def get(self, name: str) -> Embedder:
        embedder = self._embedders.get(name)
        if embedder is not None:
            return embedder
        spec = self.specs.get(name)
        if spec is None:
            known = ", ".join(self.specs) or "none"
            raise ConfigError(f"unknown embedding model '{name}'; embedding models: {known}")
        try:
            cls = embedding_vendor_class(spec.vendor)
        except KeyError:
            raise ConfigError(
                f"model '{name}': vendor '{spec.vendor}' has no embeddings API here; "
                f"embedding vendors: {', '.join(embedding_vendors())}"
            ) from None
        spec = _resolve_key(spec, cls, self._environ)
        client = None if cls is MockEmbeddingAPI else self._http_client()
        api = cls(spec, client)
        limiter = self.limiters.get(spec.name, spec.concurrency, api.base_url, spec.model_ref)
        embedder = Embedder(api, retry=self._retry, sleep=self._sleep, limiter=limiter)
        self._embedders[name] = embedder
        return embedder

    async def aclose(self) -> None:
        """Close the client (if ours) and report retries not yet noted: the run is over."""
        for embedder in self._embedders.values():
            embedder.flush_notes()
        if self._client is not None and self._own_client:
            await self._client.aclose()
        self._client = None

    async def __aenter__(self) -> EmbeddingPool:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
