"""OpenAIAPI against a real local socket (tests.fakes), through ModelPool and Model."""

from __future__ import annotations

import asyncio
import json
import time

import httpx
import pytest

from oxyeval.errors import ProviderError
from oxyeval.providers import ChatMessage, GenerateParams, ModelPool, ModelSpec
from oxyeval.providers.openai import OpenAIAPI, build_openai_body, parse_openai_response
from tests.fakes import (
    FakeResponse,
    SleepRecorder,
    fake_openai,
    openai_chat_response,
    openai_error,
    run_model,
    stall,
)

KEY = "sk-test-secret-123"
ENV = {"MY_KEY": KEY}
MESSAGES = [
    ChatMessage("system", "Be terse."),
    ChatMessage("user", "What is 2+2?"),
]


def spec_for(url: str, **overrides: object) -> ModelSpec:
    fields: dict[str, object] = {
        "name": "gpt",
        "vendor": "openai",
        "model_ref": "gpt-test",
        "key_var": "MY_KEY",
        "api_url": url,
        "timeout": 5.0,
        "max_retries": 2,
    }
    fields.update(overrides)
    return ModelSpec(**fields)  # type: ignore[arg-type]


def test_success_parses_text_usage_finish_and_sends_the_expected_request() -> None:
    with fake_openai("4") as server:
        params = GenerateParams(temperature=0.0, max_tokens=20, seed=7, stop=("\n",))
        result = run_model(spec_for(server.url), MESSAGES, params=params, environ=ENV)
        (request,) = server.requests

    assert result.text == "4"
    assert result.finish_reason == "stop"
    assert (result.usage.input_tokens, result.usage.output_tokens) == (10, 1)
    assert result.attempts == 1
    assert result.model == "gpt"
    assert request.method == "POST"
    assert request.route == "/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.headers["content-type"] == "application/json"
    assert request.body == {
        "model": "gpt-test",
        "messages": [
            {"role": "system", "content": "Be terse."},
            {"role": "user", "content": "What is 2+2?"},
        ],
        "temperature": 0.0,
        "max_tokens": 20,
        "seed": 7,
        "stop": ["\n"],
    }


def test_model_default_params_are_sent_and_call_params_override_them() -> None:
    with fake_openai() as server:
        spec = spec_for(server.url, params=GenerateParams(temperature=0.7, top_p=0.9))
        run_model(spec, MESSAGES, params=GenerateParams(temperature=0.1), environ=ENV)
        body = server.requests[0].body
    assert body["temperature"] == 0.1
    assert body["top_p"] == 0.9


def test_local_server_without_key_var_gets_no_authorization_header() -> None:
    with fake_openai() as server:
        spec = spec_for(server.url, key_var=None)
        result = run_model(spec, [ChatMessage("user", "echo me")], environ={})
        (request,) = server.requests
    assert result.text == "echo me"
    assert "authorization" not in request.headers


def test_429_with_retry_after_waits_at_least_that_long_then_succeeds() -> None:
    sleep = SleepRecorder()
    with fake_openai("ok") as server:
        server.enqueue((429, openai_error("Rate limit reached"), {"Retry-After": "2"}))
        result = run_model(spec_for(server.url), MESSAGES, environ=ENV, sleep=sleep)
        count = len(server.requests)
    assert result.text == "ok"
    assert result.attempts == 2
    assert count == 2
    assert len(sleep.delays) == 1
    assert sleep.delays[0] >= 2.0


def test_500s_until_retries_are_exhausted() -> None:
    sleep = SleepRecorder()
    with fake_openai() as server:
        server.enqueue_many((500, openai_error("The server had an error")), 3)
        with pytest.raises(ProviderError) as info:
            run_model(spec_for(server.url, max_retries=2), MESSAGES, environ=ENV, sleep=sleep)
        count = len(server.requests)
    message = str(info.value)
    assert count == 3
    assert "gave up after 3 attempts" in message
    assert "HTTP 500" in message
    assert "The server had an error" in message
    assert info.value.status == 500
    assert len(sleep.delays) == 2


def test_timeout_is_retried_then_reported() -> None:
    with fake_openai() as server:
        server.enqueue(stall(2.0), stall(2.0))
        spec = spec_for(server.url, timeout=0.2, max_retries=1)
        with pytest.raises(ProviderError) as info:
            run_model(spec, MESSAGES, environ=ENV)
        count = len(server.requests)
    message = str(info.value)
    assert count == 2
    assert "within 0.2s" in message
    assert "gave up after 2 attempts" in message


def test_401_fails_fast_names_the_key_var_and_never_shows_the_key() -> None:
    sleep = SleepRecorder()
    with fake_openai() as server:
        server.enqueue((401, openai_error(f"Incorrect API key provided: {KEY}", "invalid_api_key")))
        with pytest.raises(ProviderError) as info:
            run_model(spec_for(server.url), MESSAGES, environ=ENV, sleep=sleep)
        count = len(server.requests)
    message = str(info.value)
    assert count == 1
    assert sleep.delays == []
    assert "MY_KEY" in message
    assert "Check" in message
    assert "HTTP 401" in message
    assert KEY not in message
    assert KEY not in repr(info.value.args)


def test_404_points_at_model_ref_and_api_url() -> None:
    with fake_openai() as server:
        server.enqueue((404, openai_error("The model `gpt-test` does not exist")))
        with pytest.raises(ProviderError) as info:
            run_model(spec_for(server.url), MESSAGES, environ=ENV)
        assert len(server.requests) == 1
    assert "model_ref 'gpt-test'" in str(info.value)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("<html>Bad gateway</html>", "expected a JSON body"),
        ({"id": "x", "object": "chat.completion"}, "'choices'"),
        ({"choices": []}, "'choices'"),
        ({"choices": [{"finish_reason": "stop"}]}, "choices[0].message"),
        ({"choices": [{"message": {"content": 42}}]}, "choices[0].message.content"),
        ([1, 2, 3], "a JSON object"),
    ],
)
def test_malformed_success_bodies_say_what_was_expected(body: object, expected: str) -> None:
    with fake_openai() as server:
        server.enqueue(FakeResponse(200, body))
        with pytest.raises(ProviderError) as info:
            run_model(spec_for(server.url), MESSAGES, environ=ENV)
        assert len(server.requests) == 1  # malformed is not retried
    message = str(info.value)
    assert "malformed response" in message
    assert expected in message


def test_null_content_and_missing_usage_are_tolerated() -> None:
    body = openai_chat_response(None, finish_reason="tool_calls", usage=False)
    with fake_openai() as server:
        server.enqueue(FakeResponse(200, body))
        result = run_model(spec_for(server.url), MESSAGES, environ=ENV)
    assert result.text == ""
    assert result.finish_reason == "tool_calls"
    assert result.usage.input_tokens is None
    assert result.usage.total_tokens is None


def test_concurrent_calls_share_connections_and_run_in_parallel() -> None:
    """Ten-way concurrency must reach the server as ten requests at once."""
    with fake_openai(latency=0.05) as server:
        spec = spec_for(server.url, concurrency=10)

        async def go() -> list[str]:
            async with ModelPool({"gpt": spec}, environ=ENV) as pool:
                model = pool.get("gpt")
                calls = [model.generate([ChatMessage("user", f"q{i}")]) for i in range(30)]
                return [c.text for c in await asyncio.gather(*calls)]

        texts = asyncio.run(go())
        peak = server.max_in_flight
        count = len(server.requests)
    assert texts == [f"q{i}" for i in range(30)]
    assert count == 30
    assert 2 <= peak <= 10


# --------------------------------------------------------------- request building (no sockets)


def test_body_omits_every_param_that_is_none() -> None:
    body = build_openai_body("m", [ChatMessage("user", "hi")], GenerateParams())
    assert body == {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


def test_body_keeps_zero_values() -> None:
    body = build_openai_body("m", [], GenerateParams(temperature=0.0, seed=0, top_p=0.0))
    assert body["temperature"] == 0.0 and body["seed"] == 0 and body["top_p"] == 0.0
    assert "stop" not in body


@pytest.mark.parametrize(
    ("content", "text"),
    [
        (
            [{"type": "text", "text": "a"}, {"type": "image_url"}, {"type": "text", "text": "b"}],
            "ab",
        ),
        (["x", {"type": "text", "text": "y"}], "xy"),
        ([{"type": "refusal", "refusal": "no"}], ""),
        (None, ""),
    ],
)
def test_content_part_lists_are_joined(content: object, text: str) -> None:
    data = {"choices": [{"message": {"content": content}, "finish_reason": "stop"}]}
    parsed = parse_openai_response(data)
    assert not isinstance(parsed, str)
    assert parsed[0] == text


def test_mock_transport_trailing_slash_and_custom_headers() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=openai_chat_response("hi"))

    spec = ModelSpec(
        name="local",
        vendor="openai",
        model_ref="llama",
        api_url="http://vllm.local:8000/v1/",
        headers={"X-Team": "evals"},
    )

    async def go() -> str:
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            api = OpenAIAPI(spec, client)
            return (await api.generate([ChatMessage("user", "q")], GenerateParams())).text

    assert asyncio.run(go()) == "hi"
    (request,) = seen
    assert str(request.url) == "http://vllm.local:8000/v1/chat/completions"
    assert request.headers["x-team"] == "evals"
    assert "authorization" not in request.headers
    assert json.loads(request.content)["model"] == "llama"


def test_fake_server_stops_promptly_while_a_handler_is_stalled() -> None:
    """The timeout tests rely on this: a sleeping handler must not hold up stop()."""
    server = fake_openai().start()
    server.enqueue(stall(60.0))
    spec = spec_for(server.url, timeout=0.1, max_retries=0)
    with pytest.raises(ProviderError, match=r"within 0\.1s"):
        run_model(spec, MESSAGES, environ=ENV)
    started = time.monotonic()
    server.stop()
    assert time.monotonic() - started < 5.0  # vs. 60 s if the stalled handler were awaited
