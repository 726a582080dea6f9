"""AnthropicAPI against a real local socket (tests.fakes), through ModelPool and Model."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from oxyeval.errors import ProviderError
from oxyeval.providers import ChatMessage, GenerateParams, ModelSpec
from oxyeval.providers._http import RETRYABLE_STATUS
from oxyeval.providers.anthropic import (
    DEFAULT_MAX_TOKENS,
    AnthropicAPI,
    build_anthropic_body,
    parse_anthropic_response,
)
from tests.fakes import (
    FakeResponse,
    SleepRecorder,
    anthropic_error,
    anthropic_message_response,
    fake_anthropic,
    run_model,
    stall,
)

KEY = "sk-test-secret-123"
ENV = {"MY_KEY": KEY}
MESSAGES = [
    ChatMessage("system", "You are a calculator."),
    ChatMessage("system", "Answer with digits only."),
    ChatMessage("user", "What is 2+2?"),
]


def spec_for(url: str, **overrides: object) -> ModelSpec:
    fields: dict[str, object] = {
        "name": "claude",
        "vendor": "anthropic",
        "model_ref": "claude-test",
        "key_var": "MY_KEY",
        "api_url": url,
        "timeout": 5.0,
        "max_retries": 2,
    }
    fields.update(overrides)
    return ModelSpec(**fields)  # type: ignore[arg-type]


def test_success_parses_text_usage_stop_reason_and_sends_the_expected_request() -> None:
    with fake_anthropic("4") as server:
        params = GenerateParams(temperature=0.2, top_p=0.5, stop=("END",))
        result = run_model(spec_for(server.url), MESSAGES, params=params, environ=ENV)
        (request,) = server.requests

    assert result.text == "4"
    assert result.finish_reason == "end_turn"
    assert (result.usage.input_tokens, result.usage.output_tokens) == (10, 1)
    assert result.attempts == 1
    assert request.route == "/v1/messages"
    assert request.headers["x-api-key"] == KEY
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert request.headers["content-type"] == "application/json"
    assert "authorization" not in request.headers
    assert request.body == {
        "model": "claude-test",
        "max_tokens": DEFAULT_MAX_TOKENS,
        "system": "You are a calculator.\n\nAnswer with digits only.",
        "messages": [{"role": "user", "content": "What is 2+2?"}],
        "temperature": 0.2,
        "top_p": 0.5,
        "stop_sequences": ["END"],
    }


def test_explicit_max_tokens_is_sent_and_seed_is_not() -> None:
    with fake_anthropic() as server:
        params = GenerateParams(max_tokens=64, seed=3)
        run_model(spec_for(server.url), MESSAGES, params=params, environ=ENV)
        body = server.requests[0].body
    assert body["max_tokens"] == 64
    assert "seed" not in body


def test_only_text_blocks_make_the_answer() -> None:
    body = anthropic_message_response(
        "final",
        extra_blocks=[{"type": "thinking", "thinking": "hmm", "signature": "sig"}],
        stop_reason="max_tokens",
    )
    with fake_anthropic() as server:
        server.enqueue(FakeResponse(200, body))
        result = run_model(spec_for(server.url), MESSAGES, environ=ENV)
    assert result.text == "final"
    assert result.finish_reason == "max_tokens"


def test_429_with_retry_after_waits_at_least_that_long_then_succeeds() -> None:
    sleep = SleepRecorder()
    with fake_anthropic("ok") as server:
        server.enqueue(
            (
                429,
                anthropic_error("Number of requests exceeded", "rate_limit_error"),
                {"retry-after": "2"},
            )
        )
        result = run_model(spec_for(server.url), MESSAGES, environ=ENV, sleep=sleep)
        count = len(server.requests)
    assert result.text == "ok"
    assert result.attempts == 2
    assert count == 2
    assert sleep.delays and sleep.delays[0] >= 2.0


def test_529_overloaded_is_retried() -> None:
    assert 529 in RETRYABLE_STATUS
    sleep = SleepRecorder()
    with fake_anthropic("ok") as server:
        server.enqueue((529, anthropic_error("Overloaded", "overloaded_error")))
        result = run_model(spec_for(server.url), MESSAGES, environ=ENV, sleep=sleep)
        assert len(server.requests) == 2
    assert result.text == "ok"
    assert result.attempts == 2
    assert len(sleep.delays) == 1


def test_500s_until_retries_are_exhausted() -> None:
    with fake_anthropic() as server:
        server.enqueue_many((500, anthropic_error("Internal server error", "api_error")), 3)
        with pytest.raises(ProviderError) as info:
            run_model(spec_for(server.url, max_retries=2), MESSAGES, environ=ENV)
        count = len(server.requests)
    assert count == 3
    assert "gave up after 3 attempts" in str(info.value)
    assert "Internal server error" in str(info.value)


def test_timeout_is_retried_then_reported() -> None:
    with fake_anthropic() as server:
        server.enqueue(stall(2.0), stall(2.0))
        spec = spec_for(server.url, timeout=0.2, max_retries=1)
        with pytest.raises(ProviderError) as info:
            run_model(spec, MESSAGES, environ=ENV)
        count = len(server.requests)
    assert count == 2
    assert "within 0.2s" in str(info.value)
    assert "gave up after 2 attempts" in str(info.value)


def test_401_fails_fast_names_the_key_var_and_never_shows_the_key() -> None:
    sleep = SleepRecorder()
    with fake_anthropic() as server:
        server.enqueue((401, anthropic_error(f"invalid x-api-key {KEY}", "authentication_error")))
        with pytest.raises(ProviderError) as info:
            run_model(spec_for(server.url), MESSAGES, environ=ENV, sleep=sleep)
        count = len(server.requests)
    message = str(info.value)
    assert count == 1
    assert sleep.delays == []
    assert "$MY_KEY" in message
    assert "Check" in message
    assert "invalid x-api-key" in message  # the vendor's reason survives...
    assert KEY not in message  # ...without the key it echoed


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("", "expected a JSON body"),
        ({"type": "message", "role": "assistant"}, "'content' list"),
        ({"content": "just a string"}, "'content' list"),
    ],
)
def test_malformed_success_bodies_say_what_was_expected(body: object, expected: str) -> None:
    with fake_anthropic() as server:
        server.enqueue(FakeResponse(200, body))
        with pytest.raises(ProviderError) as info:
            run_model(spec_for(server.url), MESSAGES, environ=ENV)
        assert len(server.requests) == 1
    assert "malformed response" in str(info.value)
    assert expected in str(info.value)


# --------------------------------------------------------------- request building (no sockets)


def test_consecutive_same_role_messages_are_merged_and_tool_becomes_user() -> None:
    messages = [
        ChatMessage("user", "a"),
        ChatMessage("user", "b"),
        ChatMessage("system", "sys"),
        ChatMessage("assistant", "c"),
        ChatMessage("assistant", "d"),
        ChatMessage("tool", "result"),
        ChatMessage("user", "e"),
    ]
    body = build_anthropic_body("m", messages, GenerateParams())
    assert body["system"] == "sys"
    assert body["messages"] == [
        {"role": "user", "content": "a\n\nb"},
        {"role": "assistant", "content": "c\n\nd"},
        {"role": "user", "content": "result\n\ne"},
    ]


def test_body_without_system_or_params_has_only_required_fields() -> None:
    body = build_anthropic_body("m", [ChatMessage("user", "hi")], GenerateParams())
    assert body == {
        "model": "m",
        "max_tokens": DEFAULT_MAX_TOKENS,
        "messages": [{"role": "user", "content": "hi"}],
    }


def test_missing_usage_and_stop_reason_are_none() -> None:
    parsed = parse_anthropic_response({"content": [{"type": "text", "text": "x"}]})
    assert not isinstance(parsed, str)
    text, stop, usage = parsed
    assert (text, stop) == ("x", None)
    assert usage.total_tokens is None


def test_mock_transport_default_url_and_header_override() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=anthropic_message_response("hey"))

    spec = ModelSpec(
        name="c",
        vendor="anthropic",
        model_ref="claude-x",
        api_key="sk-ant-unit-key-000",
        headers={"anthropic-beta": "some-feature"},
    )

    async def go() -> str:
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            api = AnthropicAPI(spec, client)
            return (await api.generate([ChatMessage("user", "q")], GenerateParams())).text

    assert asyncio.run(go()) == "hey"
    (request,) = seen
    assert str(request.url) == "https://api.anthropic.com/v1/messages"
    assert request.headers["x-api-key"] == "sk-ant-unit-key-000"
    assert request.headers["anthropic-beta"] == "some-feature"
    assert json.loads(request.content)["max_tokens"] == DEFAULT_MAX_TOKENS
