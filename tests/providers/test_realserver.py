"""What a real llama.cpp server broke, at the provider layer.

Every server here is a fake on 127.0.0.1 that behaves like llama-cpp-python where it
matters: it rejects ``"content": null`` with an HTTP 500 listing pydantic validation
errors, serves one request at a time, or answers embeddings per token.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import types
from typing import Any

import pytest

from oxyeval.errors import ProviderError
from oxyeval.providers import (
    ChatMessage,
    Completion,
    EmbeddingPool,
    GenerateParams,
    Model,
    ModelAPI,
    ModelPool,
    ModelSpec,
    ToolCall,
    _model,
)
from oxyeval.providers._limiter import AdaptiveLimiter, Limiters, Outcome
from oxyeval.providers._model import deterministic_500
from oxyeval.providers.openai import describe_value, pool_token_vectors

from ..fakes import (
    FakeResponse,
    FakeServer,
    RecordedRequest,
    SleepRecorder,
    fake_openai,
    last_tool_results,
    openai_chat_response,
    openai_embeddings_response,
    openai_error,
    openai_tool_call_response,
    stall,
)

LOG = "oxyeval.providers"

#: What llama-cpp-python answers to an assistant turn with "content": null (abridged to
#: the shape that matters: an HTTP 500 whose message is a multi-line pydantic report).
VALIDATION_500 = (
    "7 validation errors for CreateChatCompletionRequest\n"
    "messages.2.typed-dict.content\n  Input should be a valid string [type=string_type]\n"
    "messages.2.typed-dict.role\n  Input should be 'system' [type=literal_error]\n"
    "messages.2.typed-dict.role\n  Input should be 'user' [type=literal_error]\n"
    "messages.2.typed-dict.tool_call_id\n  Field required [type=missing]\n"
    "messages.2.typed-dict.name\n  Field required [type=missing]\n"
    "messages.2.typed-dict.function_call\n  Field required [type=missing]\n"
    "messages.2.typed-dict.content.list\n  Input should be a valid list [type=list_type]"
)


def llama_cpp_chat(answer: Any) -> FakeServer:
    """A chat server that, like llama-cpp-python, refuses null message content with a 500."""

    def respond(request: RecordedRequest) -> FakeResponse:
        messages = request.body.get("messages") or []
        if any(m.get("content") is None for m in messages):
            return FakeResponse(
                500,
                {
                    "error": {
                        "message": VALIDATION_500,
                        "type": "internal_server_error",
                        "param": None,
                        "code": None,
                    }
                },
            )
        result = answer(request)
        body = result if isinstance(result, dict) else openai_chat_response(result)
        return FakeResponse(200, body)

    return FakeServer(respond)


def spec(url: str, **fields: Any) -> ModelSpec:
    values: dict[str, Any] = {
        "name": "gemma",
        "vendor": "openai",
        "model_ref": "gemma3-270m",
        "api_url": url,
        "timeout": 5.0,
        "max_retries": 4,
    }
    values.update(fields)
    return ModelSpec(**values)


async def _with_pool(specs: list[ModelSpec], go: Any, **kwargs: Any) -> Any:
    pool = ModelPool({s.name: s for s in specs}, sleep=SleepRecorder(), environ={}, **kwargs)
    async with pool:
        return await go(pool)


class FrozenClock:
    """Stands in for the ``time`` module of _model: monotonic() is set by the test."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now

    def perf_counter(self) -> float:
        import time

        return time.perf_counter()


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FrozenClock:
    """Freeze the retry-note clock only (asyncio keeps the real one)."""
    frozen = FrozenClock()
    fake = types.SimpleNamespace(monotonic=frozen.monotonic, perf_counter=frozen.perf_counter)
    monkeypatch.setattr(_model, "time", fake)
    return frozen


# ------------------------------------------------------------------ item 17: the tool loop


def test_a_calls_only_assistant_turn_is_sent_with_empty_content_not_null() -> None:
    """Two turns of a tool loop against a server that refuses null content."""

    def answer(request: RecordedRequest) -> Any:
        if last_tool_results(request.body):
            return "It is sunny."
        return openai_tool_call_response([("weather", {"city": "Paris"})])

    call = ToolCall("call_0", "weather", {"city": "Paris"})
    history = [
        ChatMessage("user", "Weather?"),
        ChatMessage("assistant", "", tool_calls=(call,)),
        ChatMessage("tool", "21C", tool_call_id="call_0", name="weather"),
    ]

    async def go(pool: ModelPool) -> Completion:
        return await pool.get("gemma").generate(history)

    with llama_cpp_chat(answer) as server:
        completion = asyncio.run(_with_pool([spec(server.url)], go))
        (request,) = server.requests
    assert completion.text == "It is sunny."
    assistant = request.body["messages"][1]
    assert assistant["content"] == "" and assistant["tool_calls"][0]["id"] == "call_0"


def test_a_repeated_validation_500_stops_after_two_attempts_and_is_printed_once(
    caplog: pytest.LogCaptureFixture, clock: FrozenClock
) -> None:
    rejecting = FakeServer(lambda r: FakeResponse(500, {"error": {"message": VALIDATION_500}}))

    async def go(pool: ModelPool) -> Completion:
        return await pool.get("gemma").generate([ChatMessage("user", "hi")])

    with rejecting, caplog.at_level(logging.WARNING, logger=LOG):
        with pytest.raises(ProviderError) as info:
            asyncio.run(_with_pool([spec(rejecting.url, max_retries=4)], go))
        requests = rejecting.requests
    assert len(requests) == 2  # not 5: the second identical rejection ends it
    message = str(info.value)
    assert "twice in a row" in message and "not retried further" in message
    assert info.value.retryable is False
    # The 7-line report shows once in the retry note (and once in the final error).
    notes = [r.getMessage() for r in caplog.records if "retrying model" in r.getMessage()]
    assert len(notes) == 1 and notes[0].count("7 validation errors") == 1


def test_an_identical_error_in_the_next_note_is_not_printed_again(
    caplog: pytest.LogCaptureFixture, clock: FrozenClock
) -> None:
    """A 503 is retried to the end, but its long message shows in the first note only."""
    busy = FakeServer(lambda r: FakeResponse(503, {"error": {"message": "busy\n" * 5}}))

    async def go(pool: ModelPool) -> Completion:
        return await pool.get("gemma").generate([ChatMessage("user", "hi")])

    async def tick(_seconds: float) -> None:
        clock.now += 5.0  # notes are a second apart at least: every retry gets one

    with busy, caplog.at_level(logging.WARNING, logger=LOG):
        with pytest.raises(ProviderError):
            pool = ModelPool({"gemma": spec(busy.url, max_retries=3)}, sleep=tick, environ={})

            async def run() -> Completion:
                async with pool:
                    return await go(pool)

            asyncio.run(run())
        requests = len(busy.requests)
    notes = [r.getMessage() for r in caplog.records if "retrying model" in r.getMessage()]
    assert requests == 4 and len(notes) == 3
    assert "busy" in notes[0]
    assert all(n.endswith("the same error as in the last note") for n in notes[1:])


@pytest.mark.parametrize(
    ("status", "detail", "previous_same", "expected"),
    [
        (500, "7 validation errors for CreateChatCompletionRequest", True, True),
        (500, "Llama model must be created with embedding=True to call this method", True, True),
        (500, "7 validation errors for CreateChatCompletionRequest", False, False),  # first time
        (500, "The server had an error while processing your request.", True, False),  # outage
        (500, "Internal Server Error", True, False),
        (502, "Field required", True, False),  # gateways are retried as before
    ],
)
def test_which_500s_count_as_deterministic(
    status: int, detail: str, previous_same: bool, expected: bool
) -> None:
    error = ProviderError(
        f"model 'm' (openai, x): HTTP {status} from http://h/v1/chat/completions: {detail}",
        model="m",
        status=status,
        retryable=True,
    )
    previous = str(error) if previous_same else "something else"
    assert deterministic_500(error, previous) is expected


# ------------------------------------------------------------- item 14: retry notes


class FailOnce(ModelAPI):
    """Each distinct question fails once with a 503, then succeeds."""

    vendor = "fail-once"

    def __init__(self, spec: ModelSpec) -> None:
        super().__init__(spec, None)
        self.seen: set[str] = set()

    async def generate(self, messages: list[ChatMessage], params: GenerateParams) -> Completion:
        question = messages[-1].content
        if question not in self.seen:
            self.seen.add(question)
            raise ProviderError(
                "model 'm': HTTP 503 from http://h: busy", model="m", status=503, retryable=True
            )
        return Completion(text=question)


def test_coalesced_retry_notes_are_flushed_when_the_run_ends(
    caplog: pytest.LogCaptureFixture, clock: FrozenClock
) -> None:
    api = FailOnce(ModelSpec(name="m", vendor="fail-once", concurrency=16))
    model = Model(api, sleep=SleepRecorder())

    async def go() -> None:
        await asyncio.gather(*(model.generate([ChatMessage("user", str(i))]) for i in range(10)))

    with caplog.at_level(logging.WARNING, logger=LOG):
        asyncio.run(go())  # the clock stands still: one note, nine retries counted silently
        before = [r.getMessage() for r in caplog.records]
        model.flush_notes()
        after = [r.getMessage() for r in caplog.records]
    assert len([m for m in before if "retrying model 'm'" in m]) == 1
    (flushed,) = after[len(before) :]
    assert "model 'm': 9 more retries after the last retry note" in flushed
    model.flush_notes()  # nothing left to report
    assert len(caplog.records) == len(after)


def test_model_pool_close_flushes_the_notes(
    caplog: pytest.LogCaptureFixture, clock: FrozenClock
) -> None:
    with fake_openai("ok") as server:
        server.enqueue_many((503, openai_error("overloaded")), 4)

        async def go(pool: ModelPool) -> list[Completion]:
            model = pool.get("gemma")
            return await asyncio.gather(
                *(model.generate([ChatMessage("user", str(i))]) for i in range(4))
            )

        with caplog.at_level(logging.WARNING, logger=LOG):
            asyncio.run(_with_pool([spec(server.url)], go))
    messages = [r.getMessage() for r in caplog.records]
    noted = sum("retrying model 'gemma'" in m for m in messages)
    flushed = [m for m in messages if "more retr" in m and "after the last retry note" in m]
    assert noted == 1 and len(flushed) == 1
    assert "3 more retries" in flushed[0]  # 1 shown + 3 flushed = the 4 retries made


# ------------------------------------------------------------- item 18: adaptive concurrency


def test_limiter_halves_once_per_generation_and_climbs_back(
    caplog: pytest.LogCaptureFixture,
) -> None:
    limiter = AdaptiveLimiter("gemma", 10)

    async def go() -> None:
        sent = [await limiter.acquire() for _ in range(10)]
        assert limiter.in_flight == 10
        # All ten time out together: one signal, 10 -> 5, not 10 -> 0.
        for generation in sent:
            limiter.release(generation, Outcome.OVERLOADED, "a request timed out after 120s")
        assert limiter.limit == 5
        # Requests sent after the decrease may lower it again, down to 1 and no further.
        for expected in (2, 1, 1):
            limiter.release(await limiter.acquire(), Outcome.OVERLOADED, "HTTP 429")
            assert limiter.limit == expected
        # Successes: +1 after `limit` successes in a row, up to the configured 10; the
        # level that overloaded last (2) takes 4 x 1 successes to probe.
        steps = []
        while limiter.limit < 10:
            limiter.release(await limiter.acquire(), Outcome.SUCCESS)
            steps.append(limiter.limit)
        assert steps == sorted(steps) and steps[-1] == 10
        assert len(steps) == 4 + sum(range(2, 10))
        for _ in range(50):
            limiter.release(await limiter.acquire(), Outcome.SUCCESS)
        assert limiter.limit == 10  # never above the configured concurrency
        limiter.release(await limiter.acquire(), Outcome.NEUTRAL)  # a 400: no change
        assert limiter.limit == 10

    with caplog.at_level(logging.INFO, logger=LOG):
        asyncio.run(go())
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO]
    assert lines[:3] == [
        "gemma: server is overloaded (a request timed out after 120s), lowering concurrency 10 -> 5",
        "gemma: server is overloaded (HTTP 429), lowering concurrency 5 -> 2",
        "gemma: server is overloaded (HTTP 429), lowering concurrency 2 -> 1",
    ]
    # The climb back is one line (at the top), not nine.
    assert lines[3:] == ["gemma: the server keeps up again, raising concurrency 9 -> 10"]


def test_a_failed_probe_waits_twice_as_long_and_is_said_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A server that sustains one request: probing two costs fewer requests each time."""
    limiter = AdaptiveLimiter("gemma", 2)

    async def go() -> list[int]:
        limiter.release(await limiter.acquire(), Outcome.OVERLOADED, "HTTP 429")
        successes_before_probe = []
        for _ in range(4):
            count = 0
            while limiter.limit == 1:
                limiter.release(await limiter.acquire(), Outcome.SUCCESS)
                count += 1
            successes_before_probe.append(count)
            limiter.release(await limiter.acquire(), Outcome.OVERLOADED, "HTTP 429")
            assert limiter.limit == 1
        return successes_before_probe

    with caplog.at_level(logging.INFO, logger=LOG):
        assert asyncio.run(go()) == [4, 8, 16, 32]
    said = [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO]
    assert said == [
        "gemma: server is overloaded (HTTP 429), lowering concurrency 2 -> 1",
        "gemma: the server keeps up again, raising concurrency 1 -> 2",
    ]


def test_limiter_queues_beyond_its_limit_and_a_cancelled_waiter_frees_nothing() -> None:
    limiter = AdaptiveLimiter("m", 2)

    async def go() -> None:
        first, second = await limiter.acquire(), await limiter.acquire()
        third = asyncio.ensure_future(limiter.acquire())
        cancelled = asyncio.ensure_future(limiter.acquire())
        await asyncio.sleep(0)
        assert not third.done() and limiter.in_flight == 2
        cancelled.cancel()
        await asyncio.sleep(0)
        limiter.release(first, Outcome.SUCCESS)
        await asyncio.sleep(0)
        assert third.done() and limiter.in_flight == 2  # the slot went to the live waiter
        limiter.release(second, Outcome.SUCCESS)
        limiter.release(third.result(), Outcome.SUCCESS)
        assert limiter.in_flight == 0

    asyncio.run(go())


def one_at_a_time_server(latency: float = 0.05) -> FakeServer:
    """Like a llama.cpp server with one slot: a second request in flight gets a 429."""
    lock = threading.Lock()
    state = {"busy": 0}

    def respond(request: RecordedRequest) -> FakeResponse:
        with lock:
            if state["busy"]:
                return FakeResponse(429, openai_error("server busy", "rate_limit_error"))
            state["busy"] += 1
        try:
            import time

            time.sleep(latency)
            return FakeResponse(200, openai_chat_response("ok"))
        finally:
            with lock:
                state["busy"] -= 1

    return FakeServer(respond)


def test_model_backs_off_to_what_a_one_request_server_sustains(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def go(pool: ModelPool) -> list[Completion]:
        model = pool.get("gemma")
        return await asyncio.gather(
            *(model.generate([ChatMessage("user", str(i))]) for i in range(8))
        )

    with one_at_a_time_server() as server, caplog.at_level(logging.WARNING, logger=LOG):
        done = asyncio.run(_with_pool([spec(server.url, concurrency=8, max_retries=30)], go))
    assert [c.text for c in done] == ["ok"] * 8
    lowered = [r.getMessage() for r in caplog.records if "lowering concurrency" in r.getMessage()]
    assert lowered[0] == "gemma: server is overloaded (HTTP 429), lowering concurrency 8 -> 4"
    # Each decrease is one line: no more lines than halvings from 8 down to 1.
    assert 1 <= len(lowered) <= 3


def test_a_timeout_lowers_concurrency_and_says_what_to_change(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def go(pool: ModelPool) -> Completion:
        model = pool.get("gemma")
        return await model.generate([ChatMessage("user", "hi")])

    with fake_openai() as server:
        server.enqueue(stall(10), stall(10))
        with caplog.at_level(logging.WARNING, logger=LOG), pytest.raises(ProviderError) as info:
            asyncio.run(
                _with_pool([spec(server.url, timeout=0.3, max_retries=1, concurrency=4)], go)
            )
    message = str(info.value)
    assert "gave up after 2 attempts" in message
    for knob in ("`concurrency`", "`max_tokens`", "`timeout`", "model 'gemma'"):
        assert knob in message
    lowered = [r.getMessage() for r in caplog.records if "lowering concurrency" in r.getMessage()]
    assert lowered[0].startswith("gemma: server is overloaded (a request timed out after 0.3s)")
    assert lowered[0].endswith("4 -> 2")


def test_one_limiter_per_endpoint_shared_by_chat_and_embeddings() -> None:
    url = "http://127.0.0.1:9/v1"
    agent = spec(url, name="gemma", concurrency=10)
    judge = spec(url, name="gemma-judge", concurrency=4, params=GenerateParams(temperature=0))
    other = spec(url, name="other", model_ref="another-model")
    mocks = [ModelSpec(name=n, vendor="mock", options={"outputs": ["x"]}) for n in ("a", "b")]
    pool = ModelPool({s.name: s for s in (agent, judge, other, *mocks)}, environ={})
    embed_spec = spec(url, name="gemma-embed")
    embeddings = EmbeddingPool({"gemma-embed": embed_spec}, environ={}, limiters=pool.limiters)
    try:
        shared = pool.get("gemma").limiter
        assert pool.get("gemma-judge").limiter is shared
        assert embeddings.get("gemma-embed")._calls.limiter is shared
        assert shared.ceiling == 4 and shared.name == "gemma, gemma-judge, gemma-embed"
        assert pool.get("other").limiter is not shared  # another model on the same server
        assert pool.get("a").limiter is not pool.get("b").limiter  # mocks: one each
    finally:
        asyncio.run(pool.aclose())
        asyncio.run(embeddings.aclose())


def test_limiters_key_ignores_a_trailing_slash() -> None:
    limiters = Limiters()
    a = limiters.get("a", 8, "http://h:1/v1", "m")
    assert limiters.get("b", 8, "http://h:1/v1/", "m") is a


# ------------------------------------------------------------------ item 21: embeddings


def embeddings_server(embedding: Any = None, *, status: int = 200, body: Any = None) -> FakeServer:
    """An OpenAI-compatible /embeddings fake answering ``embedding`` for every input."""

    def respond(request: RecordedRequest) -> FakeResponse:
        if status != 200:
            return FakeResponse(status, body)
        texts = request.body["input"]
        data = openai_embeddings_response([[0.0]] * len(texts))
        for item in data["data"]:
            item["embedding"] = (
                embedding(texts[item["index"]]) if callable(embedding) else embedding
            )
        return FakeResponse(200, data)

    return FakeServer(respond)


def _similarity(url: str, a: str, b: str, **kwargs: Any) -> float:
    async def go() -> float:
        pool = EmbeddingPool(
            {"emb": spec(url, name="emb", max_retries=2)}, environ={}, sleep=SleepRecorder()
        )
        async with pool:
            embedder = pool.get("emb")
            first = await embedder.similarity(a, b)
            await embedder.similarity(a + "!", b + "!")  # a second request: no second note
            return first

    return asyncio.run(go())


def llama_cpp_embeddings(tokens: dict[str, list[list[float]]]) -> FakeServer:
    """Per-token vectors, and llama-cpp-python's bug: in a batch, every text but the first
    gets wrong rows (here: ones that point the other way)."""

    def respond(request: RecordedRequest) -> FakeResponse:
        texts = request.body["input"]
        data = openai_embeddings_response([[0.0]] * len(texts))
        for item in data["data"]:
            rows = tokens[texts[item["index"]].rstrip("!")]
            item["embedding"] = rows if item["index"] == 0 else [[-x for x in r] for r in rows]
        return FakeResponse(200, data)

    return FakeServer(respond)


def test_per_token_vectors_are_mean_pooled_one_text_per_request_with_one_note(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Per-token rows whose means are [1, 0] ("north") and [1, 1] ("south"): cosine 1/sqrt(2).
    tokens = {
        "north": [[2.0, 1.0], [0.0, -1.0]],
        "south": [[1.0, 0.0], [1.0, 2.0], [1.0, 1.0]],
    }
    with llama_cpp_embeddings(tokens) as server, caplog.at_level(logging.WARNING, logger=LOG):
        score = _similarity(server.url, "north", "south")
        sizes = [len(r.body["input"]) for r in server.requests]
    assert score == pytest.approx(2**-0.5)  # not the batch's mixed-up second text
    # The first batch came back per token: asked again text by text, and so from then on.
    assert sizes == [2, 1, 1, 1, 1]
    notes = [r.getMessage() for r in caplog.records if "one vector per token" in r.getMessage()]
    assert len(notes) == 1
    assert "mean pooling" in notes[0] and "--pooling mean" in notes[0]
    assert "one text per request" in notes[0]


def test_pooled_vectors_keep_one_request_per_batch() -> None:
    with embeddings_server(lambda text: [1.0, float(len(text))]) as server:
        _similarity(server.url, "north", "south")
        sizes = [len(r.body["input"]) for r in server.requests]
    assert sizes == [2, 2]


@pytest.mark.parametrize(
    ("embedding", "shown"),
    [
        ([[1.0, 2.0], [3.0]], "a list of 2 lists of 1, 2 items (float)"),
        ([[1, "a"]], "a list of 1 lists of 2 items (int, str)"),
        ({"values": [1.0]}, "an object with keys values"),
        ("0.1,0.2", "a str"),
        (None, "null"),
    ],
)
def test_a_malformed_embedding_error_shows_what_was_received(embedding: Any, shown: str) -> None:
    with embeddings_server(embedding) as server, pytest.raises(ProviderError) as info:
        _similarity(server.url, "a", "b")
    message = str(info.value)
    assert "'data[0].embedding' to be a list of numbers" in message
    assert f"got {shown}" in message


def test_describe_value_truncates_long_vectors() -> None:
    text = describe_value([[0.123456] * 4096] * 30)
    assert text.startswith("a list of 30 lists of 4096 items (float): [[0.123456")
    assert len(text) < 250 and text.endswith("...")


def test_pool_token_vectors_refuses_ragged_or_non_numeric_rows() -> None:
    assert pool_token_vectors([[1.0, 3.0], [3.0, 5.0]]) == [2.0, 4.0]
    assert pool_token_vectors([[1.0], [1.0, 2.0]]) is None
    assert pool_token_vectors([[1.0], [True]]) is None
    assert pool_token_vectors([]) is None


def test_a_server_not_serving_embeddings_says_how_to_start_one() -> None:
    body = {
        "error": {
            "message": "Llama model must be created with embedding=True to call this method",
            "type": "internal_server_error",
            "param": None,
            "code": None,
        }
    }
    with embeddings_server(status=500, body=body) as server:
        with pytest.raises(ProviderError) as info:
            _similarity(server.url, "a", "b")
        requests, url = len(server.requests), server.url
    assert requests == 1  # a retry cannot fix the server's command line
    message = str(info.value)
    assert "is not serving embeddings" in message
    assert "--embedding true" in message and url in message
