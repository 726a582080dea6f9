"""GoogleAPI (Gemini) against a real local socket (tests.fakes), through ModelPool and Model."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from oxyeval.errors import ProviderError
from oxyeval.providers import ChatMessage, GenerateParams, ModelSpec
from oxyeval.providers.google import GoogleAPI, build_gemini_body, parse_gemini_response
from tests.fakes import (
    FakeResponse,
    SleepRecorder,
    fake_gemini,
    gemini_error,
    gemini_response,
    run_model,
    stall,
)

KEY = "sk-test-secret-123"
ENV = {"MY_KEY": KEY}
MESSAGES = [
    ChatMessage("system", "Answer in French."),
    ChatMessage("user", "Hello"),
    ChatMessage("assistant", "Bonjour"),
    ChatMessage("user", "Thanks"),
]


def spec_for(url: str, **overrides: object) -> ModelSpec:
    fields: dict[str, object] = {
        "name": "gem",
        "vendor": "google",
        "model_ref": "gemini-test",
        "key_var": "MY_KEY",
        "api_url": url,
        "timeout": 5.0,
        "max_retries": 2,
    }
    fields.update(overrides)
    return ModelSpec(**fields)  # type: ignore[arg-type]


def test_success_parses_text_usage_finish_and_sends_the_expected_request() -> None:
    with fake_gemini("Merci") as server:
        params = GenerateParams(temperature=0.3, max_tokens=50, top_p=0.8, seed=11, stop=("###",))
        result = run_model(spec_for(server.url), MESSAGES, params=params, environ=ENV)
        (request,) = server.requests

    assert result.text == "Merci"
    assert result.finish_reason == "STOP"
    assert (result.usage.input_tokens, result.usage.output_tokens) == (10, 1)
    assert request.route == "/v1beta/models/gemini-test:generateContent"
    assert request.headers["x-goog-api-key"] == KEY
    assert request.query == {}  # the key is never in the URL
    assert KEY not in request.path
    assert request.body == {
        "contents": [
            {"role": "user", "parts": [{"text": "Hello"}]},
            {"role": "model", "parts": [{"text": "Bonjour"}]},
            {"role": "user", "parts": [{"text": "Thanks"}]},
        ],
        "systemInstruction": {"parts": [{"text": "Answer in French."}]},
        "generationConfig": {
            "temperature": 0.3,
            "maxOutputTokens": 50,
            "topP": 0.8,
            "seed": 11,
            "stopSequences": ["###"],
        },
    }


def test_gemini_vendor_alias_uses_the_same_class() -> None:
    with fake_gemini() as server:
        result = run_model(spec_for(server.url, vendor="gemini"), MESSAGES, environ=ENV)
        assert server.requests[0].headers["x-goog-api-key"] == KEY
    assert result.text == "Thanks"


def test_blocked_prompt_is_a_clear_non_retryable_error() -> None:
    body = {
        "promptFeedback": {"blockReason": "SAFETY", "blockReasonMessage": "unsafe request"},
        "usageMetadata": {"promptTokenCount": 5},
    }
    sleep = SleepRecorder()
    with fake_gemini() as server:
        server.enqueue(FakeResponse(200, body))
        with pytest.raises(ProviderError) as info:
            run_model(spec_for(server.url), MESSAGES, environ=ENV, sleep=sleep)
        count = len(server.requests)
    message = str(info.value)
    assert count == 1
    assert sleep.delays == []
    assert info.value.retryable is False
    assert "prompt was blocked" in message
    assert "SAFETY" in message
    assert "unsafe request" in message


def test_candidate_without_content_is_an_empty_answer_with_its_reason() -> None:
    body = {"candidates": [{"finishReason": "SAFETY", "index": 0}]}
    with fake_gemini() as server:
        server.enqueue(FakeResponse(200, body))
        result = run_model(spec_for(server.url), MESSAGES, environ=ENV)
    assert result.text == ""
    assert result.finish_reason == "SAFETY"


def test_429_with_retry_after_waits_at_least_that_long_then_succeeds() -> None:
    sleep = SleepRecorder()
    with fake_gemini("ok") as server:
        server.enqueue(
            (429, gemini_error(429, "Quota exceeded", "RESOURCE_EXHAUSTED"), {"Retry-After": "2"})
        )
        result = run_model(spec_for(server.url), MESSAGES, environ=ENV, sleep=sleep)
        count = len(server.requests)
    assert result.text == "ok"
    assert result.attempts == 2
    assert count == 2
    assert sleep.delays and sleep.delays[0] >= 2.0


def test_429_retry_info_in_the_body_is_honoured() -> None:
    """Gemini sends no Retry-After header; the delay is a RetryInfo detail."""
    retry_info = {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "7s"}
    error = gemini_error(429, "Quota exceeded", "RESOURCE_EXHAUSTED", [retry_info])
    sleep = SleepRecorder()
    with fake_gemini("ok") as server:
        server.enqueue((429, error))
        result = run_model(spec_for(server.url), MESSAGES, environ=ENV, sleep=sleep)
    assert result.attempts == 2
    assert sleep.delays and sleep.delays[0] >= 7.0


def test_500s_until_retries_are_exhausted() -> None:
    with fake_gemini() as server:
        server.enqueue_many((503, gemini_error(503, "The model is overloaded.", "UNAVAILABLE")), 3)
        with pytest.raises(ProviderError) as info:
            run_model(spec_for(server.url, max_retries=2), MESSAGES, environ=ENV)
        count = len(server.requests)
    assert count == 3
    assert "gave up after 3 attempts" in str(info.value)
    assert "overloaded" in str(info.value)


def test_timeout_is_retried_then_reported() -> None:
    with fake_gemini() as server:
        server.enqueue(stall(2.0), stall(2.0))
        spec = spec_for(server.url, timeout=0.2, max_retries=1)
        with pytest.raises(ProviderError) as info:
            run_model(spec, MESSAGES, environ=ENV)
        count = len(server.requests)
    assert count == 2
    assert "within 0.2s" in str(info.value)
    assert "gave up after 2 attempts" in str(info.value)


@pytest.mark.parametrize("status", [401, 403])
def test_auth_errors_fail_fast_name_the_key_var_and_never_show_the_key(status: int) -> None:
    sleep = SleepRecorder()
    with fake_gemini() as server:
        server.enqueue(
            (status, gemini_error(status, f"API key {KEY} not valid", "PERMISSION_DENIED"))
        )
        with pytest.raises(ProviderError) as info:
            run_model(spec_for(server.url), MESSAGES, environ=ENV, sleep=sleep)
        count = len(server.requests)
    message = str(info.value)
    assert count == 1
    assert sleep.delays == []
    assert "$MY_KEY" in message
    assert "Check" in message
    assert KEY not in message


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("not json at all", "expected a JSON body"),
        ({"usageMetadata": {"promptTokenCount": 3}}, "'candidates' list"),
        ({"candidates": []}, "'candidates' list"),
        ({"candidates": [{"content": {"parts": "text"}}]}, "content.parts"),
    ],
)
def test_malformed_success_bodies_say_what_was_expected(body: object, expected: str) -> None:
    with fake_gemini() as server:
        server.enqueue(FakeResponse(200, body))
        with pytest.raises(ProviderError) as info:
            run_model(spec_for(server.url), MESSAGES, environ=ENV)
        assert len(server.requests) == 1
    assert "malformed response" in str(info.value)
    assert expected in str(info.value)


# --------------------------------------------------------------- request building (no sockets)


def test_body_has_no_generation_config_or_system_when_unset() -> None:
    body = build_gemini_body([ChatMessage("user", "hi")], GenerateParams())
    assert body == {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}


def test_same_role_turns_become_one_turn_with_several_parts() -> None:
    messages = [
        ChatMessage("user", "a"),
        ChatMessage("tool", "b"),
        ChatMessage("assistant", "c"),
        ChatMessage("system", "s1"),
        ChatMessage("system", "s2"),
    ]
    body = build_gemini_body(messages, GenerateParams(max_tokens=5))
    assert body["contents"] == [
        {"role": "user", "parts": [{"text": "a"}, {"text": "b"}]},
        {"role": "model", "parts": [{"text": "c"}]},
    ]
    assert body["systemInstruction"] == {"parts": [{"text": "s1\n\ns2"}]}
    assert body["generationConfig"] == {"maxOutputTokens": 5}


def test_thought_parts_are_skipped_and_text_parts_joined() -> None:
    data = gemini_response("ignored")
    data["candidates"][0]["content"]["parts"] = [
        {"text": "thinking...", "thought": True},
        {"text": "Hello, "},
        {"text": "world"},
    ]
    parsed = parse_gemini_response(data)
    assert not isinstance(parsed, str)
    assert parsed[0] == "Hello, world"


def test_mock_transport_default_url_has_no_key_in_query() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=gemini_response("fine"))

    spec = ModelSpec(
        name="g", vendor="google", model_ref="models/gemini-2.5-flash", api_key="AIza-unit-key"
    )

    async def go() -> str:
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            api = GoogleAPI(spec, client)
            return (await api.generate([ChatMessage("user", "q")], GenerateParams())).text

    assert asyncio.run(go()) == "fine"
    (request,) = seen
    assert str(request.url) == (
        "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent"
    )
    assert request.url.query == b""
    assert request.headers["x-goog-api-key"] == "AIza-unit-key"
