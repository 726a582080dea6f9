"""Embedding clients against real local sockets (tests.fakes), through EmbeddingPool.

Every network test goes through the pool, the path a real run takes: key
resolution, the shared client, retries and redaction. Sleeps are recorded by
an injected ``sleep``, never waited for.
"""

from __future__ import annotations

import asyncio
import math
import random
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import httpx
import pytest

from oxyeval.errors import ConfigError, ProviderError
from oxyeval.providers import (
    Embedder,
    EmbeddingPool,
    EmbeddingResult,
    ModelSpec,
    RetryPolicy,
    cosine,
    embedding_vendors,
)
from oxyeval.providers.google import GoogleEmbeddingAPI
from oxyeval.providers.mock import MockEmbeddingAPI
from oxyeval.providers.ollama import OllamaEmbeddingAPI
from oxyeval.providers.openai import OpenAIEmbeddingAPI
from tests.fakes import (
    SleepRecorder,
    fake_gemini_embeddings,
    fake_openai_embeddings,
    fake_vector,
    gemini_embeddings_response,
    openai_embeddings_response,
    openai_error,
)

KEY = "sk-embed-secret-456"
ENV = {"EMB_KEY": KEY}
T = TypeVar("T")


def openai_spec(url: str | None, **overrides: Any) -> ModelSpec:
    fields: dict[str, Any] = {
        "name": "emb",
        "vendor": "openai",
        "model_ref": "text-embedding-3-small",
        "key_var": "EMB_KEY",
        "api_url": url,
        "timeout": 5.0,
        "max_retries": 2,
    }
    fields.update(overrides)
    return ModelSpec(**fields)


def gemini_spec(url: str | None, **overrides: Any) -> ModelSpec:
    fields: dict[str, Any] = {"vendor": "google", "model_ref": "gemini-embedding-001"}
    return openai_spec(url, **{**fields, **overrides})


def run(
    spec: ModelSpec,
    use: Callable[[Embedder], Awaitable[T]],
    *,
    environ: dict[str, str] | None = None,
    sleep: SleepRecorder | None = None,
) -> T:
    """``use`` the embedder of a fresh pool in its own event loop (for sync tests)."""

    async def go() -> T:
        pool = EmbeddingPool(
            {spec.name: spec},
            retry=RetryPolicy(rng=random.Random(0)),
            sleep=sleep or SleepRecorder(),
            environ=ENV if environ is None else environ,
        )
        async with pool:
            return await use(pool.get(spec.name))

    return asyncio.run(go())


def embed(spec: ModelSpec, texts: list[str], **kwargs: Any) -> list[list[float]]:
    return run(spec, lambda e: e.embed(texts), **kwargs)


# ------------------------------------------------------------------------------ openai


def test_openai_orders_by_index_and_sends_the_documented_request() -> None:
    texts = ["the cat sat", "a dog", "birds fly south"]
    with fake_openai_embeddings(api_key=KEY, shuffle=True) as server:

        async def use(e: Embedder) -> tuple[list[list[float]], int | None, int]:
            return await e.embed(texts), e.input_tokens, e.requests

        vectors, tokens, count = run(openai_spec(server.url), use)
        (request,) = server.requests

    assert vectors == [fake_vector(t) for t in texts]  # reordered by data[].index
    assert (tokens, count) == (8, 1)  # usage.prompt_tokens: the fake counts words
    assert request.method == "POST"
    assert request.route == "/v1/embeddings"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.headers["content-type"] == "application/json"
    assert request.body == {"model": "text-embedding-3-small", "input": texts}


def test_openai_compatible_server_without_key_gets_no_authorization_header() -> None:
    with fake_openai_embeddings(dims=4) as server:
        vectors = embed(openai_spec(server.url, key_var=None), ["hello"], environ={})
        (request,) = server.requests
    assert vectors == [fake_vector("hello", 4)]
    assert "authorization" not in request.headers


def test_ollama_needs_no_key_and_defaults_to_its_openai_endpoint() -> None:
    assert OllamaEmbeddingAPI.default_api_url == "http://localhost:11434/v1"
    assert OllamaEmbeddingAPI.requires_key is False
    with fake_openai_embeddings() as server:
        spec = openai_spec(server.url, vendor="ollama", model_ref="nomic-embed-text", key_var=None)
        vectors = embed(spec, ["local"], environ={})
        (request,) = server.requests
    assert vectors == [fake_vector("local")]
    assert request.body == {"model": "nomic-embed-text", "input": ["local"]}
    assert "authorization" not in request.headers


def test_default_urls_point_at_the_hosted_apis() -> None:
    assert OpenAIEmbeddingAPI(openai_spec(None), None).base_url == "https://api.openai.com/v1"
    google = GoogleEmbeddingAPI(gemini_spec(None), None)
    assert google.base_url == "https://generativelanguage.googleapis.com/v1beta"
    assert set(embedding_vendors()) >= {"openai", "ollama", "google", "gemini", "mock"}


# ------------------------------------------------------------------------------ gemini


def test_gemini_sends_key_in_header_and_one_request_per_text() -> None:
    texts = ["first text", "second text"]
    with fake_gemini_embeddings(api_key=KEY) as server:

        async def use(e: Embedder) -> tuple[list[list[float]], int | None]:
            return await e.embed(texts), e.input_tokens

        vectors, tokens = run(gemini_spec(server.url), use)
        (request,) = server.requests

    assert vectors == [fake_vector(t) for t in texts]
    assert tokens is None  # batchEmbedContents reports no usage here
    assert request.route == "/v1beta/models/gemini-embedding-001:batchEmbedContents"
    assert request.headers["x-goog-api-key"] == KEY
    assert request.query == {}
    assert KEY not in request.path  # never ?key=
    assert request.body == {
        "requests": [
            {
                "model": "models/gemini-embedding-001",
                "content": {"parts": [{"text": t}]},
                "taskType": "SEMANTIC_SIMILARITY",
            }
            for t in texts
        ]
    }


def test_gemini_accepts_a_models_prefix_and_an_empty_task_type() -> None:
    with fake_gemini_embeddings(api_key=KEY) as server:
        spec = gemini_spec(
            server.url, model_ref="models/text-embedding-004", options={"task_type": None}
        )
        embed(spec, ["x"])
        (request,) = server.requests
    assert request.route == "/v1beta/models/text-embedding-004:batchEmbedContents"
    assert request.body["requests"] == [
        {"model": "models/text-embedding-004", "content": {"parts": [{"text": "x"}]}}
    ]


def test_gemini_invalid_key_fails_at_once() -> None:
    with fake_gemini_embeddings(api_key="the-right-key") as server:
        sleep = SleepRecorder()
        with pytest.raises(ProviderError) as info:
            embed(gemini_spec(server.url), ["x"], sleep=sleep)
        assert len(server.requests) == 1
    assert info.value.status == 400
    assert "API key not valid" in str(info.value)
    assert sleep.delays == []


# ------------------------------------------------------------------------------ batching and cache


@pytest.mark.parametrize("vendor", ["openai", "google"])
def test_many_texts_are_sent_in_batches_of_at_most_96(vendor: str) -> None:
    texts = [f"text number {i}" for i in range(200)]
    fake = fake_openai_embeddings if vendor == "openai" else fake_gemini_embeddings
    with fake() as server:
        spec = openai_spec(server.url) if vendor == "openai" else gemini_spec(server.url)
        vectors = embed(spec, texts)
        requests = server.requests
    assert vectors == [fake_vector(t) for t in texts]
    key = "input" if vendor == "openai" else "requests"
    assert sorted(len(r.body[key]) for r in requests) == [8, 96, 96]


def test_batch_size_option_and_concurrency_limit() -> None:
    with fake_openai_embeddings(latency=0.02) as server:
        spec = openai_spec(server.url, concurrency=1, options={"batch_size": 2})
        vectors = embed(spec, ["a", "b", "c", "d", "e"])
        assert server.max_in_flight == 1  # batches share the model's semaphore
        assert [r.body["input"] for r in server.requests] == [["a", "b"], ["c", "d"], ["e"]]
    assert vectors == [fake_vector(t) for t in "abcde"]


def test_each_text_is_embedded_once_per_run() -> None:
    with fake_openai_embeddings(latency=0.05) as server:

        async def use(e: Embedder) -> tuple[float, int]:
            await e.embed(["expected", "expected", "actual"])
            await e.embed(["actual"])
            # Asked for at the same moment: still one request.
            await asyncio.gather(e.embed(["shared"]), e.embed(["shared", "other"]))
            return await e.similarity("expected", "expected"), e.requests

        same, count = run(openai_spec(server.url), use)
        inputs = sorted(sorted(r.body["input"]) for r in server.requests)
    assert inputs == [["actual", "expected"], ["other"], ["shared"]]
    assert count == 3
    assert same == pytest.approx(1.0)


def test_blank_texts_are_not_sent_and_score_zero() -> None:
    with fake_openai_embeddings() as server:

        async def use(e: Embedder) -> tuple[list[list[float]], float]:
            return await e.embed(["", "word", "  "]), await e.similarity("", "word")

        vectors, score = run(openai_spec(server.url), use)
        assert [r.body["input"] for r in server.requests] == [["word"]]
    assert vectors == [[], fake_vector("word"), []]
    assert score == 0.0


def test_similarity_is_the_raw_cosine_and_can_be_negative() -> None:
    base = fake_vector("base")
    opposite = next(
        t for t in (f"candidate {i}" for i in range(100)) if cosine(base, fake_vector(t)) < 0
    )
    with fake_openai_embeddings() as server:

        async def use(e: Embedder) -> tuple[float, float]:
            return await e.similarity("base", "other"), await e.similarity("base", opposite)

        other, negative = run(openai_spec(server.url), use)
    assert other == pytest.approx(cosine(base, fake_vector("other")))
    assert negative == pytest.approx(cosine(base, fake_vector(opposite)))
    assert negative < 0  # not clipped to [0, 1]


# ------------------------------------------------------------------------------ errors and retries


def test_429_with_retry_after_is_waited_for_then_succeeds() -> None:
    with fake_openai_embeddings() as server:
        server.enqueue((429, openai_error("Rate limit reached"), {"Retry-After": "2"}))
        sleep = SleepRecorder()
        vectors = embed(openai_spec(server.url), ["x"], sleep=sleep)
        assert len(server.requests) == 2
    assert vectors == [fake_vector("x")]
    (delay,) = sleep.delays
    assert 2.0 <= delay <= 2.2  # Retry-After plus at most 10% jitter


def test_server_errors_are_retried_until_the_attempts_run_out() -> None:
    with fake_openai_embeddings() as server:
        server.enqueue_many((500, openai_error("The server had an error")), 3)
        sleep = SleepRecorder()
        with pytest.raises(ProviderError) as info:
            embed(openai_spec(server.url), ["x"], sleep=sleep)
        assert len(server.requests) == 3  # max_retries=2
    assert "HTTP 500" in str(info.value)
    assert "gave up after 3 attempts" in str(info.value)
    assert len(sleep.delays) == 2


def test_401_fails_fast_and_never_shows_the_key() -> None:
    with fake_openai_embeddings(api_key=KEY) as server:
        # Some servers echo the key they refused; the message must not.
        server.enqueue((401, openai_error(f"Incorrect API key provided: {KEY}", "invalid_api_key")))
        sleep = SleepRecorder()
        with pytest.raises(ProviderError) as info:
            embed(openai_spec(server.url), ["x"], sleep=sleep)
        assert len(server.requests) == 1
    message = str(info.value)
    assert info.value.status == 401
    assert KEY not in message
    assert "EMB_KEY" in message  # says which variable to check
    assert sleep.delays == []


def test_a_failed_request_fails_every_caller_waiting_for_it() -> None:
    with fake_openai_embeddings(latency=0.05) as server:
        server.enqueue((400, openai_error("bad request"), {}, 0.05))

        async def use(e: Embedder) -> list[Any]:
            return await asyncio.gather(e.embed(["x"]), e.embed(["x"]), return_exceptions=True)

        outcomes = run(openai_spec(server.url), use)
        assert len(server.requests) == 1
    assert all(isinstance(o, ProviderError) and o.status == 400 for o in outcomes)


MALFORMED = [
    ("openai", {"object": "list"}, "'data' list"),
    ("openai", openai_embeddings_response([[1.0, 0.0]]), "2 embeddings, got 1"),
    ("openai", openai_embeddings_response([[1.0], ["x"]]), "'data[1].embedding'"),
    ("openai", openai_embeddings_response([[1.0], [2.0]], order=[0, 0]), "distinct input index"),
    ("google", {"embedding": {"values": [1.0]}}, "'embeddings' list"),
    ("google", gemini_embeddings_response([[1.0], [2.0], [3.0]]), "2 embeddings, got 3"),
    ("google", {"embeddings": [{"values": [1.0]}, {"value": [2.0]}]}, "'embeddings[1].values'"),
]


@pytest.mark.parametrize(("vendor", "body", "expected"), MALFORMED)
def test_malformed_bodies_fail_without_retry(vendor: str, body: Any, expected: str) -> None:
    fake = fake_openai_embeddings if vendor == "openai" else fake_gemini_embeddings
    with fake() as server:
        server.enqueue((200, body))
        spec = openai_spec(server.url) if vendor == "openai" else gemini_spec(server.url)
        with pytest.raises(ProviderError) as info:
            embed(spec, ["one", "two"])
        assert len(server.requests) == 1
    assert "malformed response" in str(info.value)
    assert expected in str(info.value)


def test_a_vendor_returning_the_wrong_count_is_caught_by_the_embedder() -> None:
    class Short(MockEmbeddingAPI):
        async def embed(self, texts: list[str]) -> EmbeddingResult:
            return EmbeddingResult([[1.0]], None)

    embedder = Embedder(Short(ModelSpec("m", "mock"), None), sleep=SleepRecorder())
    with pytest.raises(ProviderError, match="asked for 2 embeddings, got 1"):
        asyncio.run(embedder.embed(["a", "b"]))


# ------------------------------------------------------------------------------ pool


def test_missing_key_is_a_config_error_naming_the_variable() -> None:
    pool = EmbeddingPool({"emb": openai_spec(None)}, environ={})
    with pytest.raises(ConfigError, match="EMB_KEY"):
        pool.get("emb")
    hosted = EmbeddingPool({"emb": openai_spec(None, key_var=None)}, environ={})
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        hosted.get("emb")


def test_unknown_names_and_vendors_are_config_errors() -> None:
    pool = EmbeddingPool({"emb": openai_spec(None, vendor="anthropic")}, environ=ENV)
    with pytest.raises(ConfigError, match="no embeddings API"):
        pool.get("emb")
    with pytest.raises(ConfigError, match="unknown embedding model 'nope'"):
        pool.get("nope")


def test_embedders_share_one_client_and_an_external_client_is_left_open() -> None:
    async def go() -> None:
        specs = {"a": openai_spec("http://x/v1"), "b": gemini_spec("http://y", name="b")}
        own = EmbeddingPool(specs, environ=ENV)
        a, b = own.get("a"), own.get("b")
        assert a.api.client is b.api.client is not None
        assert own.get("a") is a
        await own.aclose()

        async with httpx.AsyncClient() as client:
            pool = EmbeddingPool({"a": openai_spec("http://x/v1")}, client=client, environ=ENV)
            assert pool.get("a").api.client is client
            await pool.aclose()
            assert not client.is_closed

    asyncio.run(go())


# ------------------------------------------------------------------------------ mock vendor


def test_mock_is_deterministic_offline_and_ranks_by_shared_words() -> None:
    spec = ModelSpec("m", "mock")

    async def go() -> tuple[list[list[float]], list[float], bool]:
        async with EmbeddingPool({"m": spec}, environ={}) as pool:
            e = pool.get("m")
            vectors = await e.embed(["The cat sat on the mat", "the CAT sat on the mat!"])
            scores = [
                await e.similarity("the cat sat on the mat", "the cat sat on the mat"),
                await e.similarity("the cat sat on the mat", "a cat slept on a rug"),
                await e.similarity("the cat sat on the mat", "quantum chromodynamics lectures"),
            ]
            return vectors, scores, pool._client is None

    vectors, (identical, overlapping, disjoint), no_client = asyncio.run(go())
    assert vectors[0] == vectors[1]  # case and punctuation do not matter
    assert len(vectors[0]) == 256
    assert math.fsum(x * x for x in vectors[0]) == pytest.approx(1.0)
    assert identical == pytest.approx(1.0)
    assert identical > overlapping > disjoint >= 0.0
    assert no_client  # the mock never touches the network
    # A fresh instance gives the same vector (no per-process hashing); dims is an option.
    other = MockEmbeddingAPI(ModelSpec("m", "mock", options={"dims": 16}), None)
    assert len(other.vector("x")) == 16
    assert MockEmbeddingAPI(spec, None).vector("The cat sat on the mat") == vectors[0]


# ------------------------------------------------------------------------------ cosine


@pytest.mark.parametrize(
    ("u", "v", "expected"),
    [
        ([1.0, 0.0], [1.0, 0.0], 1.0),
        ([1.0, 2.0], [2.0, 4.0], 1.0),  # scale does not matter
        ([1.0, 0.0], [0.0, 3.0], 0.0),
        ([1.0, -1.0], [-1.0, 1.0], -1.0),
        ([], [1.0], 0.0),  # blank text
        ([3.0, 4.0], [4.0, 3.0], 24 / 25),
        # Squares that overflow (inf/inf was nan, which min(1.0, nan) made 1.0) or underflow.
        ([0.0, 1e200, 0.0], [1e200, 0.0, 0.0], 0.0),
        ([1e200, 1e200, 0.0], [1e200, 0.0, 0.0], 2**-0.5),
        ([1e-200, 0.0], [1e-200, 0.0], 1.0),
        ([1e308, -1e308], [-1e308, 1e308], -1.0),
    ],
)
def test_cosine(u: list[float], v: list[float], expected: float) -> None:
    assert cosine(u, v) == pytest.approx(expected)
    assert -1.0 <= cosine(u, v) <= 1.0


@pytest.mark.parametrize(
    ("u", "why"),
    [
        ([float("nan"), 1.0], "not a finite number"),
        ([float("inf"), 0.0], "not a finite number"),
        ([0.0, 0.0], "all zeros"),  # no direction: neither similar nor dissimilar
    ],
)
def test_cosine_refuses_vectors_that_cannot_be_compared(u: list[float], why: str) -> None:
    """An error for the case, never a score (min(1.0, nan) is 1.0: a NaN passed)."""
    for a, b in ((u, [1.0, 0.0]), ([1.0, 0.0], u)):
        with pytest.raises(ValueError, match=why):
            cosine(a, b)


def test_cosine_refuses_vectors_of_different_models() -> None:
    with pytest.raises(ValueError, match="2 and 3 dimensions"):
        cosine([1.0, 0.0], [1.0, 0.0, 0.0])


def test_a_caller_waiting_on_a_cancelled_request_fetches_the_text_itself() -> None:
    with fake_openai_embeddings(latency=0.1) as server:

        async def use(e: Embedder) -> list[list[float]]:
            owner = asyncio.create_task(e.embed(["x"]))
            await asyncio.sleep(0.03)  # the owner's request is in flight
            waiter = asyncio.create_task(e.embed(["x"]))
            await asyncio.sleep(0.01)
            owner.cancel()
            return await waiter

        vectors = run(openai_spec(server.url), use)
        assert len(server.requests) == 2
    assert vectors == [fake_vector("x")]
