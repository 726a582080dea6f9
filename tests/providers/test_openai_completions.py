"""OpenAICompletionsAPI (vendor ``openai-completions``) against a real local socket, through
ModelPool and Model: whole and streamed answers, the flattened prompt, errors and retries."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from oxyeval.errors import ProviderError
from oxyeval.providers import (
    ChatMessage,
    Completion,
    GenerateParams,
    ModelPool,
    ModelSpec,
    ToolSpec,
    vendor_class,
)
from oxyeval.providers.openai_completions import (
    DEFAULT_COMPLETION_TOKENS,
    OpenAICompletionsAPI,
    flatten_messages,
)
from tests.fakes import FakeResponse, FakeServer, RecordedRequest, SleepRecorder, StreamBody

KEY = "sk-completions-secret-4242"
MESSAGES = [ChatMessage("system", "Be terse."), ChatMessage("user", "Capital of France?")]


def completion_body(text: str, finish: str = "stop") -> dict[str, Any]:
    return {
        "object": "text_completion",
        "choices": [{"index": 0, "text": text, "finish_reason": finish, "logprobs": None}],
        "usage": {"prompt_tokens": 9, "completion_tokens": 2, "total_tokens": 11},
    }


def sse(data: Any) -> bytes:
    return f"data: {data if isinstance(data, str) else json.dumps(data)}\n\n".encode()


def streamed(pieces: list[str], *, finish: str | None = "stop", done: bool = True) -> FakeResponse:
    chunks = [
        sse(
            {
                "object": "text_completion",
                "choices": [{"index": 0, "text": p, "finish_reason": None}],
            }
        )
        for p in pieces
    ]
    if finish is not None:
        chunks.append(sse({"choices": [{"index": 0, "text": "", "finish_reason": finish}]}))
        chunks.append(sse({"choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 3}}))
    if done:
        chunks.append(sse("[DONE]"))
    return FakeResponse(200, StreamBody([(0.0, c) for c in chunks]))


def spec_for(url: str, **overrides: Any) -> ModelSpec:
    fields: dict[str, Any] = {
        "name": "legacy",
        "vendor": "openai-completions",
        "model_ref": "gpt-3.5-turbo-instruct",
        "api_url": url,
        "api_key": KEY,
        "timeout": 5.0,
        "max_retries": 2,
    }
    fields.update(overrides)
    return ModelSpec(**fields)


def call(
    spec: ModelSpec,
    *,
    stream: bool = False,
    params: GenerateParams | None = None,
    sleep: SleepRecorder | None = None,
) -> tuple[Completion, list[str]]:
    pieces: list[str] = []

    async def go() -> Completion:
        pool = ModelPool({spec.name: spec}, sleep=sleep or SleepRecorder(), environ={})
        async with pool:
            model = pool.get(spec.name)
            if stream:
                return await model.generate(MESSAGES, params, on_text=pieces.append)
            return await model.generate(MESSAGES, params)

    return asyncio.run(go()), pieces


def test_the_vendor_is_registered() -> None:
    assert vendor_class("openai-completions") is OpenAICompletionsAPI


def test_messages_flatten_system_first_then_turns_with_blank_lines() -> None:
    turns = [
        ChatMessage("user", "Q1"),
        ChatMessage("system", "S"),
        ChatMessage("assistant", ""),
        ChatMessage("user", "Q2"),
    ]
    assert flatten_messages(turns) == "S\n\nQ1\n\nQ2"


def test_a_whole_answer_sends_the_documented_body_and_reads_text_usage_finish() -> None:
    with FakeServer(lambda r: (200, completion_body(" Paris."))) as server:
        params = GenerateParams(temperature=0.2, top_p=0.9, stop=("\n",))
        result, _ = call(spec_for(server.url), params=params)
        (request,) = server.requests
    assert request.route == "/v1/completions"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.body == {
        "model": "gpt-3.5-turbo-instruct",
        "prompt": "Be terse.\n\nCapital of France?",
        "max_tokens": DEFAULT_COMPLETION_TOKENS,
        "temperature": 0.2,
        "top_p": 0.9,
        "stop": ["\n"],
    }
    assert result.text == " Paris."
    assert result.finish_reason == "stop"
    assert (result.usage.input_tokens, result.usage.output_tokens) == (9, 2)


def test_the_models_max_tokens_replaces_the_default_and_extra_cannot_replace_the_prompt() -> None:
    with FakeServer(lambda r: (200, completion_body("x", "length"))) as server:
        params = GenerateParams(max_tokens=5, extra={"prompt": "hijacked", "echo": False})
        result, _ = call(spec_for(server.url), params=params)
        body = server.requests[0].body
    assert body["max_tokens"] == 5
    assert body["prompt"] == "Be terse.\n\nCapital of France?"
    assert body["echo"] is False
    assert result.truncated


def test_no_key_no_authorization_header() -> None:
    with FakeServer(lambda r: (200, completion_body("ok"))) as server:
        call(spec_for(server.url, api_key=None))
        (request,) = server.requests
    assert "authorization" not in request.headers


def test_a_custom_header_from_the_spec_is_sent() -> None:
    with FakeServer(lambda r: (200, completion_body("ok"))) as server:
        call(spec_for(server.url, api_key=None, headers={"X-Api-Key": KEY}))
        (request,) = server.requests
    assert request.headers["x-api-key"] == KEY


def test_a_streamed_answer_reports_its_pieces_and_gathers_the_whole() -> None:
    with FakeServer(lambda r: streamed([" Par", "is", "."])) as server:
        result, pieces = call(spec_for(server.url), stream=True)
        (request,) = server.requests
    assert request.body["stream"] is True
    assert request.body["stream_options"] == {"include_usage": True}
    assert request.body["prompt"] == "Be terse.\n\nCapital of France?"
    # Model holds back a few characters at a time (a key split across pieces is scrubbed).
    assert "".join(pieces) == " Paris."
    assert len(pieces) >= 2
    assert result.text == " Paris."
    assert result.finish_reason == "stop"
    assert (result.usage.input_tokens, result.usage.output_tokens) == (9, 3)
    assert result.time_to_first_token is not None


def test_a_server_that_ignores_stream_is_read_whole() -> None:
    with FakeServer(lambda r: (200, completion_body("whole"))) as server:
        result, pieces = call(spec_for(server.url), stream=True)
    assert result.text == "whole"
    assert pieces == ["whole"]


def test_a_stream_cut_before_its_end_is_retried() -> None:
    def answer(request: RecordedRequest) -> FakeResponse:
        return streamed(["ok"])

    with FakeServer(answer) as server:
        server.enqueue(streamed([], finish=None, done=False))
        result, _ = call(spec_for(server.url), stream=True)
        count = len(server.requests)
    assert result.text == "ok"
    assert count == 2


def test_401_fails_at_once_without_showing_the_key() -> None:
    sleep = SleepRecorder()
    error = {"error": {"message": f"Incorrect API key provided: {KEY}", "type": "invalid_api_key"}}
    with FakeServer() as server:
        server.enqueue((401, error))
        with pytest.raises(ProviderError) as info:
            call(spec_for(server.url), sleep=sleep)
        count = len(server.requests)
    assert count == 1
    assert sleep.delays == []
    assert info.value.status == 401
    assert "HTTP 401" in str(info.value)
    assert KEY not in str(info.value)


def test_500_is_retried_then_succeeds() -> None:
    sleep = SleepRecorder()
    with FakeServer(lambda r: (200, completion_body("fine"))) as server:
        server.enqueue((500, {"error": {"message": "boom"}}), (500, {"error": {"message": "boom"}}))
        result, _ = call(spec_for(server.url), sleep=sleep)
        count = len(server.requests)
    assert result.text == "fine"
    assert result.attempts == 3
    assert count == 3
    assert len(sleep.delays) == 2


def test_500_until_retries_run_out_is_reported() -> None:
    with FakeServer() as server:
        server.enqueue_many((500, {"error": {"message": "still down"}}), 3)
        with pytest.raises(ProviderError) as info:
            call(spec_for(server.url))
        count = len(server.requests)
    assert count == 3
    assert "HTTP 500" in str(info.value)
    assert "still down" in str(info.value)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"choices": []}, "'choices' list"),
        ({"choices": [{"text": 3}]}, "'choices[0].text' to be a string"),
    ],
)
def test_malformed_answers_say_what_was_expected(body: dict[str, Any], expected: str) -> None:
    with FakeServer(lambda r: (200, body)) as server, pytest.raises(ProviderError) as info:
        call(spec_for(server.url, max_retries=0))
    assert expected in str(info.value)


def test_offering_tools_is_refused_before_any_request() -> None:
    with FakeServer(lambda r: (200, completion_body("ok"))) as server:
        params = GenerateParams(tools=(ToolSpec("lookup", "find a row"),))
        with pytest.raises(ProviderError) as info:
            call(spec_for(server.url), params=params)
        count = len(server.requests)
    assert count == 0
    assert "cannot offer tools" in str(info.value)
