"""Structured verdicts on the wire, the plain-text fallback, and the judge's token cap.

Every vendor's request body is checked against a fake server that refuses what the
real API refuses (strict schemas, a forced tool that is not offered, a responseSchema
without the JSON mime type), and answers in the form the request asked for.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from typing import Any

import pytest

from oxyeval.judge.judge import (
    DEFAULT_JUDGE_MAX_TOKENS,
    VERDICT_SCHEMA,
    Judge,
    JudgeResult,
    structured_verdict,
)
from oxyeval.project.config import JudgeSettings
from oxyeval.providers import GenerateParams, ModelPool, ModelSpec
from oxyeval.providers._base import ChatMessage, Completion, json_object
from oxyeval.providers.anthropic import build_anthropic_body
from oxyeval.providers.google import build_gemini_body
from oxyeval.providers.mock import MockAPI
from oxyeval.providers.openai import build_openai_body
from tests.fakes import (
    FakeServer,
    RecordedRequest,
    SleepRecorder,
    anthropic_message_response,
    fake_anthropic,
    fake_gemini,
    fake_openai,
    gemini_response,
    judge_reply,
    openai_chat_response,
    openai_error,
)

ENV = {"K": "sk-judge-test"}
MESSAGES = [ChatMessage("user", "Compare these.")]
STRUCTURED = GenerateParams(response_schema=VERDICT_SCHEMA)

# vendor -> (fake server factory, model_ref)
VENDORS: dict[str, tuple[Callable[..., FakeServer], str]] = {
    "openai": (fake_openai, "gpt-4o-mini"),
    "anthropic": (fake_anthropic, "claude-test"),
    "google": (fake_gemini, "gemini-2.0-flash"),
}


def spec(vendor: str, url: str, **overrides: Any) -> ModelSpec:
    fields: dict[str, Any] = {
        "name": "judge",
        "vendor": vendor,
        "model_ref": VENDORS[vendor][1] if vendor in VENDORS else "",
        "key_var": "K",
        "api_url": url,
        "timeout": 5.0,
        "max_retries": 0,
    }
    fields.update(overrides)
    return ModelSpec(**fields)


def judge_pairs(
    model: ModelSpec, settings: JudgeSettings | None = None, pairs: int = 1
) -> list[JudgeResult]:
    """Judge ``pairs`` comparisons, one after another, through one pool (one run)."""

    async def go() -> list[JudgeResult]:
        pool = ModelPool({model.name: model}, sleep=SleepRecorder(), environ=ENV)
        async with pool:
            judge = Judge(pool.get(model.name), settings=settings)
            return [await judge.compare("How many?", "42", f"forty-two {k}") for k in range(pairs)]

    return asyncio.run(go())


def asked_structured(request: RecordedRequest) -> bool:
    body = request.body
    return (
        "response_format" in body
        or "tool_choice" in body
        or "responseSchema" in body.get("generationConfig", {})
    )


# -- request bodies ---------------------------------------------------------------------


def test_openai_body_asks_for_a_strict_json_schema() -> None:
    body = build_openai_body("gpt-4o-mini", MESSAGES, STRUCTURED)
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {
            "name": "verdict",
            "strict": True,
            "description": VERDICT_SCHEMA.description,
            "schema": VERDICT_SCHEMA.schema,
        },
    }
    assert "response_format" not in build_openai_body("m", MESSAGES, GenerateParams())


def test_anthropic_body_forces_the_verdict_tool() -> None:
    body = build_anthropic_body("claude-test", MESSAGES, STRUCTURED)
    assert body["tool_choice"] == {"type": "tool", "name": "verdict"}
    (tool,) = body["tools"]
    assert tool["name"] == "verdict" and tool["input_schema"] == VERDICT_SCHEMA.schema
    plain = build_anthropic_body("claude-test", MESSAGES, GenerateParams())
    assert "tool_choice" not in plain and "tools" not in plain


def test_gemini_body_asks_for_json_with_a_schema_gemini_accepts() -> None:
    body = build_gemini_body(MESSAGES, STRUCTURED)
    config = body["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    schema = config["responseSchema"]
    assert "additionalProperties" not in schema  # Gemini refuses the key
    assert schema["propertyOrdering"] == ["reasoning", "verdict"]  # reasoning first
    assert schema["properties"]["verdict"]["enum"] == ["A", "B"]
    assert "generationConfig" not in build_gemini_body(MESSAGES, GenerateParams())


# -- structured answers through the real path -------------------------------------------


@pytest.mark.parametrize("vendor", sorted(VENDORS))
def test_structured_verdict_round_trip(vendor: str) -> None:
    factory, _ref = VENDORS[vendor]
    with factory(judge_reply("B", "One says 42, the other 41.")) as server:
        (result,) = judge_pairs(spec(vendor, server.url))
        (request,) = server.requests
    assert asked_structured(request)  # and the fake accepted the structured request
    assert result.choice == "B" and result.error is None and result.calls == 1
    assert result.reasoning == "One says 42, the other 41."


@pytest.mark.parametrize("vendor", sorted(VENDORS))
def test_a_server_refusing_structured_output_falls_back_to_text_once(
    vendor: str, caplog: pytest.LogCaptureFixture
) -> None:
    factory, _ref = VENDORS[vendor]
    with (
        caplog.at_level(logging.WARNING, logger="oxyeval.judge"),
        factory(judge_reply("A"), structured=False) as server,
    ):
        results = judge_pairs(spec(vendor, server.url), pairs=3)
        requests = server.requests
    assert [r.choice for r in results] == ["A", "A", "A"]
    # One refused request per structured form the vendor knows (OpenAI-compatible servers
    # take three), then plain text for the rest of the run.
    forms = 3 if vendor == "openai" else 1
    assert [asked_structured(r) for r in requests] == [True] * forms + [False, False, False]
    notes = [r.getMessage() for r in caplog.records if "refused the structured" in r.getMessage()]
    assert len(notes) == 1 and "judge.structured: off" in notes[0]


def test_structured_on_makes_a_refusal_a_judge_error() -> None:
    with fake_openai(judge_reply("A"), structured=False) as server:
        (result,) = judge_pairs(spec("openai", server.url), JudgeSettings(structured="on"))
        requests = server.requests
    assert result.choice is None
    assert result.error is not None and "judge.structured is 'on'" in result.error
    assert len(requests) == 3 and all(asked_structured(r) for r in requests)


def test_structured_off_sends_plain_text_requests() -> None:
    with fake_anthropic(judge_reply("B")) as server:
        (result,) = judge_pairs(spec("anthropic", server.url), JudgeSettings(structured="off"))
        (request,) = server.requests
    assert result.choice == "B"
    assert not asked_structured(request) and "tools" not in request.body


def test_an_unrelated_400_is_not_taken_for_a_refusal() -> None:
    # Every structured form and the plain request fail alike: the error is the judge's,
    # and the next comparison still asks for structured output (nothing was learnt).
    too_long = (400, openai_error("prompt is too long"))
    with fake_openai() as server:
        answer = openai_chat_response('{"reasoning": "r", "verdict": "A"}')
        server.enqueue(too_long, too_long, too_long, too_long, (200, answer))
        results = judge_pairs(spec("openai", server.url), pairs=2)
        requests = server.requests
    assert results[0].choice is None and "prompt is too long" in (results[0].error or "")
    assert results[1].choice == "A"
    assert [asked_structured(r) for r in requests] == [True, True, True, False, True]


def test_malformed_json_is_read_as_text() -> None:
    replies = iter(
        [
            '{"reasoning": "Both say 42", "verdict": "A"',  # cut short: not JSON
            "The server ignored response_format.\nAnswer: B",  # plain text
            '{"reasoning": "r", "verdict": "maybe"}',  # JSON without a verdict...
            "Answer: A",  # ...so it is asked again
        ]
    )
    with fake_openai(lambda _r: next(replies)) as server:
        results = judge_pairs(spec("openai", server.url), pairs=3)
        calls = len(server.requests)
    assert [r.choice for r in results] == ["A", "B", "A"]
    assert calls == 4


def test_anthropic_forced_tool_call_is_not_an_agent_tool_call() -> None:
    with fake_anthropic(judge_reply("A")) as server:
        model = spec("anthropic", server.url)

        async def go() -> Completion:
            pool = ModelPool({model.name: model}, sleep=SleepRecorder(), environ=ENV)
            async with pool:
                return await pool.get("judge").generate(MESSAGES, STRUCTURED)

        completion = asyncio.run(go())
    assert completion.structured == {"reasoning": "Both state the same facts.", "verdict": "A"}
    assert completion.tool_calls == []


def test_mock_judge_answers_in_json_when_its_script_says_so() -> None:
    api = MockAPI(
        ModelSpec("j", "mock", options={"outputs": ['{"reasoning": "ok", "verdict": "B"}']})
    )
    completion = asyncio.run(api.generate(MESSAGES, STRUCTURED))
    assert completion.structured == {"reasoning": "ok", "verdict": "B"}
    assert asyncio.run(api.generate(MESSAGES, GenerateParams())).structured is None


@pytest.mark.parametrize(
    ("data", "choice"),
    [
        ({"reasoning": "r", "verdict": "A"}, "A"),
        ({"verdict": " b "}, "B"),
        ({"verdict": "Ｂ"}, "B"),
        ({"verdict": "C"}, None),
        ({"verdict": 1}, None),
        ({"reasoning": "no verdict"}, None),
    ],
)
def test_structured_verdict(data: dict[str, Any], choice: str | None) -> None:
    verdict = structured_verdict(data)
    assert (verdict.choice if verdict else None) == choice


def test_json_object_tolerates_fences_and_never_raises() -> None:
    assert json_object('```json\n{"verdict": "A"}\n```') == {"verdict": "A"}
    assert json_object("[1, 2]") is None
    assert json_object('{"a": ') is None
    assert json_object("[" * 100_000) is None


# -- the token cap and cut-off replies -------------------------------------------------


def _max_tokens(body: dict[str, Any]) -> Any:
    return body.get("max_tokens", body.get("generationConfig", {}).get("maxOutputTokens"))


@pytest.mark.parametrize(
    ("overrides", "settings", "expected"),
    [
        ({}, None, DEFAULT_JUDGE_MAX_TOKENS),
        ({"params": GenerateParams(max_tokens=100)}, None, 100),  # the model's own wins
        ({"params": GenerateParams(max_tokens=100)}, JudgeSettings(max_tokens=64), 64),
        ({"model_ref": "o3-mini"}, None, None),  # reasoning models: no cap by default
        ({"model_ref": "gpt-5-mini"}, None, None),
        ({"model_ref": "o3-mini"}, JudgeSettings(max_tokens=2000), 2000),
    ],
)
def test_judge_calls_get_a_default_max_tokens(
    overrides: dict[str, Any], settings: JudgeSettings | None, expected: int | None
) -> None:
    with fake_openai(judge_reply("A")) as server:
        judge_pairs(spec("openai", server.url, **overrides), settings)
        (request,) = server.requests
    assert _max_tokens(request.body) == expected


def test_gemini_thinking_models_get_no_default_cap() -> None:
    with fake_gemini(judge_reply("A")) as server:
        judge_pairs(spec("google", server.url, model_ref="gemini-2.5-pro"))
        judge_pairs(spec("google", server.url))
        thinking, flash = server.requests
    assert _max_tokens(thinking.body) is None
    assert _max_tokens(flash.body) == DEFAULT_JUDGE_MAX_TOKENS


CUT = "Submission 1 says the total is 42 while submission 2 says"


@pytest.mark.parametrize(
    ("vendor", "body"),
    [
        ("openai", openai_chat_response(CUT, finish_reason="length")),
        ("anthropic", anthropic_message_response(CUT, stop_reason="max_tokens")),
        ("google", gemini_response(CUT, finish_reason="MAX_TOKENS")),
    ],
)
def test_a_reply_cut_at_max_tokens_says_so(vendor: str, body: dict[str, Any]) -> None:
    factory, _ref = VENDORS[vendor]
    settings = JudgeSettings(structured="off", max_tokens=40)
    with factory(lambda _r: body) as server:
        (result,) = judge_pairs(spec(vendor, server.url), settings)
    assert result.choice is None
    assert result.error is not None
    assert "cut off at max_tokens=40" in result.error and "judge.max_tokens" in result.error


def test_a_cut_without_max_tokens_blames_the_server_limit() -> None:
    body = openai_chat_response(CUT, finish_reason="length")
    with fake_openai(lambda _r: body) as server:
        (result,) = judge_pairs(spec("openai", server.url, model_ref="o3-mini"))
        (first, _second) = server.requests
    assert "max_tokens" not in first.body
    assert result.error is not None and "cut off at the server's limit" in result.error
    assert "max_tokens=" not in result.error


def test_a_first_reply_cut_then_no_verdict_mentions_the_cut() -> None:
    replies = iter(
        [
            openai_chat_response(CUT, finish_reason="length"),
            openai_chat_response("I cannot tell."),
        ]
    )
    with fake_openai(lambda _r: next(replies)) as server:
        (result,) = judge_pairs(spec("openai", server.url), JudgeSettings(structured="off"))
        assert len(server.requests) == 2
    assert result.error is not None
    assert "first reply was cut off at max_tokens=512" in result.error
    assert "I cannot tell." in result.error


def test_structured_requests_pass_every_fake_schema_check() -> None:
    # The verdict schema satisfies OpenAI strict mode and Gemini's schema subset as sent.
    for vendor, (factory, _ref) in VENDORS.items():
        with factory(judge_reply("A")) as server:
            (result,) = judge_pairs(spec(vendor, server.url), JudgeSettings(structured="on"))
        assert result.choice == "A", (vendor, result.error)
    assert json.dumps(VERDICT_SCHEMA.schema)  # plain JSON, no Python-only values
