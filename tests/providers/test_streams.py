"""Streamed answers on all four wires (and the mock), through Model as a run calls them.

The fake servers send each vendor's server-sent events with scripted delays, so the time
to first token a test measures is known: within 20 ms of the script on every wire.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from oxyeval.errors import ProviderError
from oxyeval.providers import (
    ChatMessage,
    Completion,
    GenerateParams,
    ModelPool,
    ModelSpec,
    ResponseSchema,
    ToolSpec,
    completion_data,
    completion_from_data,
)
from oxyeval.redact import register_secret
from tests.fakes import FakeResponse, FakeServer, SleepRecorder, StreamBody, stall

from .streamfakes import Event, anthropic_events, gemini_events, openai_events, sse, timed

HI = [ChatMessage("user", "hi")]


@pytest.fixture(scope="module", autouse=True)
def _async_stack_loaded() -> None:
    """httpx loads anyio's asyncio backend at a process's first request (~20 ms of
    imports, measured): a one-time cost of the client, not part of any server's time to
    first token, so it is paid before the timing tests, whichever test runs first."""
    import anyio

    asyncio.run(anyio.sleep(0))


PIECES = ["Hello", " streamed", " world"]
KEY = "sk-stream-test-123456"


def _text_events(wire: str, pieces: list[str] = PIECES, **kw: Any) -> list[Event]:
    if wire in ("openai", "ollama"):
        return openai_events(pieces, **kw)
    if wire == "anthropic":
        return anthropic_events(pieces, **kw)
    return gemini_events(pieces, **kw)


#: wire -> (vendor, model id, API prefix, expected cost of 7 input + 3 output tokens)
WIRES: dict[str, tuple[str, str, str, float | None]] = {
    "openai": ("openai", "gpt-4o-mini", "/v1", (7 * 0.15 + 3 * 0.60) / 1e6),
    "ollama": ("ollama", "llama3.2", "/v1", None),  # no price known: None, never 0
    "anthropic": ("anthropic", "claude-haiku-4-5", "/v1", (7 * 1.0 + 3 * 5.0) / 1e6),
    "google": ("google", "gemini-2.5-flash", "/v1beta", (7 * 0.30 + 3 * 2.50) / 1e6),
}


def _spec(wire: str, server: FakeServer, **fields: Any) -> ModelSpec:
    vendor, model, _, _ = WIRES[wire]
    return ModelSpec(
        name="m",
        vendor=vendor,
        model_ref=model,
        api_url=server.url,
        key_var="STREAM_KEY",
        **{"max_retries": 2, **fields},
    )


def _server(wire: str) -> FakeServer:
    return FakeServer(prefix=WIRES[wire][2]).start()


def _call(
    spec: ModelSpec,
    *,
    params: GenerateParams | None = None,
    on_text: Callable[[str], object] | None = None,
    cache: Any = None,
    stream: bool = True,
) -> Completion:
    async def go() -> Completion:
        pool = ModelPool({spec.name: spec}, sleep=SleepRecorder(), environ={"STREAM_KEY": KEY})
        async with pool:
            return await pool.get(spec.name).generate(
                HI, params, stream=stream, on_text=on_text, cache=cache
            )

    return asyncio.run(go())


@pytest.mark.parametrize("wire", list(WIRES))
def test_time_to_first_token_usage_and_cost_on_every_wire(wire: str) -> None:
    with _server(wire) as server:
        server.enqueue(timed(_text_events(wire), first=0.15, gap=0.04))
        seen: list[str] = []
        completion = _call(_spec(wire, server), on_text=seen.append)
    assert completion.text == "Hello streamed world"
    assert "".join(seen) == completion.text and len(seen) == 3  # piece by piece
    assert completion.usage.input_tokens == 7 and completion.usage.output_tokens == 3
    assert completion.time_to_first_token is not None
    # Measured from the request, so never before the server's first piece (a loaded
    # machine only adds to it); the two later pieces come 0.08 s after the first.
    ttft = completion.time_to_first_token
    assert ttft >= 0.15 - 0.005, ttft
    assert completion.latency - ttft >= 0.08 - 0.005
    assert completion.tokens_per_second == pytest.approx(
        3 / (completion.latency - completion.time_to_first_token)
    )
    expected = WIRES[wire][3]
    if expected is None:
        assert completion.cost is None
    else:
        assert completion.cost == pytest.approx(expected)
    body = server.requests[0].body
    if wire == "google":
        assert server.requests[0].path.endswith(":streamGenerateContent?alt=sse")
    else:
        assert body["stream"] is True
    if wire in ("openai", "ollama"):
        assert body["stream_options"] == {"include_usage": True}


@pytest.mark.parametrize("wire", list(WIRES))
def test_a_whole_answer_has_no_time_to_first_token(wire: str) -> None:
    vendor = WIRES[wire][0]
    with _server(wire) as server:
        from tests import fakes

        whole = {
            "openai": fakes.openai_chat_response,
            "ollama": fakes.openai_chat_response,
            "anthropic": fakes.anthropic_message_response,
            "google": fakes.gemini_response,
        }[wire]("plain answer")
        server.enqueue((200, whole))
        completion = _call(_spec(wire, server), stream=False)
    assert vendor and completion.text == "plain answer"
    assert completion.time_to_first_token is None and completion.tokens_per_second is None
    assert "stream" not in (server.requests[0].body or {})


def test_model_stream_yields_the_pieces_then_the_completion(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Where a piece ends depends on the keys registered: text that could begin one is
    # held back until the next piece shows it does not. Keys an earlier test's session
    # fixtures registered for good (a throwaway server's password, "oxy-pw-...", would
    # hold back the "o" of "Hello") are set aside here.
    from oxyeval import redact

    monkeypatch.setattr(redact, "_secrets", set())
    monkeypatch.setattr(redact, "_permanent", set())
    monkeypatch.setattr(redact, "_forms", ())
    with _server("openai") as server:
        server.enqueue(timed(_text_events("openai"), first=0.02, gap=0.02))
        spec = _spec("openai", server)

        async def go() -> list[str | Completion]:
            async with ModelPool({"m": spec}, environ={"STREAM_KEY": KEY}) as pool:
                return [item async for item in pool.get("m").stream(HI)]

        items = asyncio.run(go())
    assert items[:-1] == PIECES
    last = items[-1]
    assert isinstance(last, Completion) and last.text == "Hello streamed world"
    assert last.time_to_first_token is not None


def test_the_mock_streams_after_its_scripted_latency() -> None:
    spec = ModelSpec(
        name="m", vendor="mock", options={"outputs": ["one two three"], "latency_ms": 120}
    )
    seen: list[str] = []
    completion = _call(spec, on_text=seen.append)
    assert seen == ["one ", "two ", "three"]
    assert completion.time_to_first_token is not None
    assert abs(completion.time_to_first_token - 0.12) < 0.02


# --------------------------------------------------------------------------- tools, structure

WEATHER = ToolSpec(
    "weather",
    "Weather in a city",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
TIME = ToolSpec("time", "Time in a city", {"type": "object", "properties": {}})


@pytest.mark.parametrize("wire", list(WIRES))
def test_tool_calls_are_gathered_from_the_stream(wire: str) -> None:
    if wire == "google":
        events = gemini_events([], calls=[("weather", {"city": "Paris"}), ("time", {})])
    else:
        calls = [("weather", ['{"ci', 'ty": "Pa', 'ris"}']), ("time", [])]
        events = _text_events(
            wire,
            ["Let me check."],
            calls=calls,
            **({"finish": "tool_calls"} if wire in ("openai", "ollama") else {"stop": "tool_use"}),
        )
    with _server(wire) as server:
        server.enqueue(timed(events))
        completion = _call(_spec(wire, server), params=GenerateParams(tools=(WEATHER, TIME)))
    assert [(c.name, c.arguments) for c in completion.tool_calls] == [
        ("weather", {"city": "Paris"}),
        ("time", {}),
    ]
    assert len({c.id for c in completion.tool_calls}) == 2
    assert completion.time_to_first_token is not None  # the arguments are content


VERDICT = ResponseSchema(
    "verdict",
    {
        "type": "object",
        "properties": {"verdict": {"type": "string", "enum": ["A", "B"]}},
        "required": ["verdict"],
    },
)


@pytest.mark.parametrize("wire", list(WIRES))
def test_structured_output_is_read_from_the_stream(wire: str) -> None:
    pieces = ['{"verd', 'ict": ', '"A"}']
    if wire == "anthropic":  # forced tool use: the object comes as the tool's input
        events = anthropic_events([], calls=[("verdict", pieces)], stop="tool_use")
    else:
        events = _text_events(wire, pieces)
    with _server(wire) as server:
        server.enqueue(timed(events))
        completion = _call(_spec(wire, server), params=GenerateParams(response_schema=VERDICT))
    assert completion.structured == {"verdict": "A"}
    assert completion.tool_calls == []


# --------------------------------------------------------------------------- failures


@pytest.mark.parametrize("wire", list(WIRES))
def test_a_stream_cut_before_any_content_is_retried(wire: str) -> None:
    events = _text_events(wire)
    first_content = next(i for i, (content, _) in enumerate(events) if content)
    with _server(wire) as server:
        server.enqueue(
            timed(events, cut_after=first_content),  # the connection drops before content
            timed(events),
        )
        completion = _call(_spec(wire, server))
    assert completion.text == "Hello streamed world"
    assert completion.attempts == 2 and len(server.requests) == 2


@pytest.mark.parametrize("wire", list(WIRES))
def test_a_stream_cut_after_content_fails_without_a_retry(wire: str) -> None:
    events = _text_events(wire)
    first_content = next(i for i, (content, _) in enumerate(events) if content)
    with _server(wire) as server:
        server.enqueue(timed(events, cut_after=first_content + 1), timed(events))
        seen: list[str] = []
        with pytest.raises(ProviderError) as info:
            _call(_spec(wire, server), on_text=seen.append)
    message = str(info.value)
    assert "dropped before the whole response arrived" in message
    assert "not retried" in message and not info.value.retryable
    assert "'m'" in message and "127.0.0.1" in message
    assert len(server.requests) == 1


@pytest.mark.parametrize("wire", list(WIRES))
def test_a_stream_that_ends_before_its_closing_event_is_a_cut(wire: str) -> None:
    unfinished = {
        "openai": {"finish": None, "done": False},
        "ollama": {"finish": None, "done": False},
        "anthropic": {"stop": None},
        "google": {"finish": None},
    }[wire]
    with _server(wire) as server:
        server.enqueue(timed(_text_events(wire, **unfinished)))
        with pytest.raises(ProviderError) as info:
            _call(_spec(wire, server))
    assert "ended before the answer was complete" in str(info.value)
    assert len(server.requests) == 1  # content had arrived: not retried


@pytest.mark.parametrize("wire", list(WIRES))
def test_a_malformed_event_is_a_clear_error(wire: str) -> None:
    broken = StreamBody([(0.0, b'data: {"choices": [\n\n')])
    with _server(wire) as server:
        server.enqueue(FakeResponse(200, broken), FakeResponse(200, broken))
        with pytest.raises(ProviderError) as info:
            _call(_spec(wire, server))
    message = str(info.value)
    assert "malformed response from http://127.0.0.1" in message and "model 'm'" in message
    assert "server-sent event" in message
    assert len(server.requests) == 1  # a malformed answer is not retried


def test_an_error_event_before_content_is_retried() -> None:
    overloaded = {"type": "overloaded_error", "message": "Overloaded"}
    with _server("anthropic") as server:
        server.enqueue(
            timed(anthropic_events(PIECES, error=overloaded)), timed(anthropic_events(PIECES))
        )
        completion = _call(_spec("anthropic", server))
    assert completion.text == "Hello streamed world" and completion.attempts == 2


def test_an_http_error_status_is_classified_as_for_a_whole_answer() -> None:
    with _server("openai") as server:
        server.enqueue((429, {"error": {"message": "slow down"}}), timed(openai_events(PIECES)))
        completion = _call(_spec("openai", server))
        assert completion.attempts == 2
        server.enqueue((401, {"error": {"message": "bad key"}}))
        with pytest.raises(ProviderError) as info:
            _call(_spec("openai", server))
    assert "refused the credentials" in str(info.value) and KEY not in str(info.value)


def test_a_stream_that_stalls_after_content_times_out_without_a_retry() -> None:
    events = openai_events(PIECES)
    with _server("openai") as server:
        server.enqueue(timed(events, first=0.0, gap=5.0), timed(events))
        with pytest.raises(ProviderError) as info:
            _call(_spec("openai", server, timeout=0.5))
    assert "within 0.5s" in str(info.value) and len(server.requests) == 1


def test_a_server_that_does_not_stream_is_read_whole() -> None:
    from tests.fakes import openai_chat_response

    with _server("openai") as server:
        server.enqueue((200, openai_chat_response("all at once")))
        seen: list[str] = []
        completion = _call(_spec("openai", server), on_text=seen.append)
    assert completion.text == "all at once" and seen == ["all at once"]
    assert completion.time_to_first_token is not None


def test_a_key_split_across_pieces_never_reaches_the_reader() -> None:
    register_secret(KEY)
    pieces = ["the key is sk-stre", "am-test-12", "3456 ok"]
    with _server("openai") as server:
        server.enqueue(timed(openai_events(pieces)))
        seen: list[str] = []
        completion = _call(_spec("openai", server), on_text=seen.append)
    assert completion.text == "the key is *** ok"
    assert "".join(seen) == "the key is *** ok"
    assert not any(part in "".join(seen) for part in ("sk-stre", "am-test-12"))


def test_an_oversized_stream_is_refused() -> None:
    big = sse({"choices": [{"index": 0, "delta": {"content": "x" * 1_000_000}}]})
    with _server("openai") as server:
        server.enqueue(FakeResponse(200, StreamBody([(0.0, big)] * 9)))
        with pytest.raises(ProviderError) as info:
            _call(_spec("openai", server))
    assert "larger than 8 MB" in str(info.value)


def test_a_stalled_connection_before_the_headers_is_a_timeout() -> None:
    with _server("openai") as server:
        server.enqueue(stall(5.0), stall(5.0), stall(5.0))
        with pytest.raises(ProviderError) as info:
            _call(_spec("openai", server, timeout=0.3, max_retries=0))
    assert "within 0.3s" in str(info.value)


# --------------------------------------------------------------------------- cache


class MemoryCache:
    """An answer cache in a dict, kept as the history's cache keeps it (data, not objects)."""

    keep_truncated = False

    def __init__(self) -> None:
        self.entries: dict[str, dict[str, Any]] = {}

    async def get(self, key: Mapping[str, Any]) -> Completion | None:
        data = self.entries.get(json.dumps(key, sort_keys=True))
        return completion_from_data(data) if data is not None else None

    async def put(self, key: Mapping[str, Any], completion: Completion) -> None:
        self.entries[json.dumps(key, sort_keys=True)] = completion_data(completion)


def test_streamed_and_whole_calls_share_the_cache_and_a_hit_has_no_ttft() -> None:
    cache = MemoryCache()
    with _server("openai") as server:
        server.enqueue(timed(openai_events(PIECES), first=0.05))
        streamed = _call(_spec("openai", server), cache=cache)
        seen: list[str] = []
        again = _call(_spec("openai", server), cache=cache, on_text=seen.append)
        whole = _call(_spec("openai", server), cache=cache, stream=False)
        assert len(server.requests) == 1
    assert streamed.time_to_first_token is not None and not streamed.cached
    for hit in (again, whole):
        assert hit.cached and hit.text == streamed.text
        assert hit.time_to_first_token is None and hit.tokens_per_second is None
        assert hit.cost == pytest.approx(streamed.cost)
    assert seen == [streamed.text]
