"""Native tool calling for the HTTP vendors: what goes on the wire, what comes back.

Each vendor is driven through a whole conversation against its fake server
(offer tools -> the model calls them -> results go back -> final answer) with
one ModelPool, as an agent loop would, and the recorded request bodies are
compared with the vendor's documented shapes. Edge cases use httpx.MockTransport
or the body builders directly.
"""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from oxyeval.errors import ProviderError
from oxyeval.providers import (
    ChatMessage,
    Completion,
    GenerateParams,
    ModelPool,
    ModelSpec,
    ToolCall,
    ToolSpec,
)
from oxyeval.providers.anthropic import build_anthropic_body
from oxyeval.providers.google import GoogleAPI, build_gemini_body, gemini_schema
from oxyeval.providers.openai import OpenAIAPI, build_openai_body
from tests.fakes import (
    FakeServer,
    RecordedRequest,
    anthropic_tool_problem,
    anthropic_tool_use_response,
    fake_anthropic,
    fake_gemini,
    fake_openai,
    gemini_function_call_response,
    gemini_tool_problem,
    last_tool_results,
    last_user_text,
    openai_chat_response,
    openai_tool_call_response,
    openai_tool_problem,
)

ENV = {"MY_KEY": "sk-test-secret-123"}

WEATHER = ToolSpec(
    "get_weather",
    "Current weather for a city.",
    {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {"city": {"type": "string", "description": "City name"}},
        "required": ["city"],
        "additionalProperties": False,
    },
)
CLOCK = ToolSpec("now", "The current time.")  # no arguments
TOOLS = (WEATHER, CLOCK)
RESULTS = {"get_weather": "21C and sunny", "now": "12:00"}
QUESTION = [ChatMessage("system", "Use the tools."), ChatMessage("user", "Weather and time?")]


def spec_for(vendor: str, url: str) -> ModelSpec:
    return ModelSpec(
        name="m",
        vendor=vendor,
        model_ref="model-x",
        key_var="MY_KEY",
        api_url=url,
        timeout=5.0,
        max_retries=0,
    )


def converse(
    spec: ModelSpec, messages: list[ChatMessage], tools: tuple[ToolSpec, ...] = TOOLS
) -> tuple[list[Completion], list[ChatMessage]]:
    """A minimal agent loop on one pool: call tools until the model answers."""

    async def go() -> tuple[list[Completion], list[ChatMessage]]:
        history = list(messages)
        completions: list[Completion] = []
        async with ModelPool({spec.name: spec}, environ=ENV) as pool:
            model = pool.get(spec.name)
            for _ in range(4):
                completion = await model.generate(history, GenerateParams(tools=tools))
                completions.append(completion)
                if not completion.tool_calls:
                    break
                history.append(
                    ChatMessage(
                        "assistant", completion.text, tool_calls=tuple(completion.tool_calls)
                    )
                )
                history.extend(
                    ChatMessage("tool", RESULTS[c.name], tool_call_id=c.id, name=c.name)
                    for c in completion.tool_calls
                )
        return completions, history

    return asyncio.run(go())


def two_turns(tool_call_body: dict[str, Any]) -> Callable[[RecordedRequest], Any]:
    """First request: ask for the tools; once results come back: answer."""

    def respond(request: RecordedRequest) -> Any:
        if last_tool_results(request.body):
            return "Sunny, 21C, at noon."
        return tool_call_body

    return respond


def call_on_transport(
    api_class: type, vendor: str, body: dict[str, Any], messages: list[ChatMessage] | None = None
) -> Completion:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=body)

    spec = ModelSpec(name="m", vendor=vendor, model_ref="model-x", api_key="k")

    async def go() -> Completion:
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            api = api_class(spec, client)
            params = GenerateParams(tools=TOOLS)
            return await api.generate(messages or [ChatMessage("user", "q")], params)

    return asyncio.run(go())


# =============================================================================== OpenAI


def test_openai_conversation_offers_tools_parses_calls_and_sends_results_back() -> None:
    reply = openai_tool_call_response([("get_weather", {"city": "Paris"}), ("now", {})])
    with fake_openai(two_turns(reply)) as server:
        completions, _history = converse(spec_for("openai", server.url), QUESTION)
        first, second = (r.body for r in server.requests)

    asking, answer = completions
    assert asking.tool_calls == [
        ToolCall("call_fake_0", "get_weather", {"city": "Paris"}),
        ToolCall("call_fake_1", "now", {}),
    ]
    assert asking.finish_reason == "tool_calls"
    assert asking.text == ""
    assert answer.text == "Sunny, 21C, at noon." and answer.tool_calls == []

    assert first["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Current weather for a city.",
                "parameters": WEATHER.parameters,  # OpenAI takes full JSON Schema as is
            },
        },
        {
            "type": "function",
            "function": {
                "name": "now",
                "description": "The current time.",
                "parameters": {"type": "object", "properties": {}},
            },
        },
    ]
    assert second["tools"] == first["tools"]
    assert second["messages"] == [
        {"role": "system", "content": "Use the tools."},
        {"role": "user", "content": "Weather and time?"},
        {
            "role": "assistant",
            "content": "",  # not null: llama.cpp's server rejects null (HTTP 500)
            "tool_calls": [
                {
                    "id": "call_fake_0",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                },
                {
                    "id": "call_fake_1",
                    "type": "function",
                    "function": {"name": "now", "arguments": "{}"},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_fake_0", "content": "21C and sunny"},
        {"role": "tool", "tool_call_id": "call_fake_1", "content": "12:00"},
    ]


def test_ollama_inherits_tool_calling() -> None:
    reply = openai_tool_call_response([("now", {})], ids=["call_ollama"])
    with fake_openai(two_turns(reply)) as server:
        completions, _ = converse(spec_for("ollama", server.url), QUESTION)
        second = server.requests[1].body
    assert completions[0].tool_calls == [ToolCall("call_ollama", "now", {})]
    assert second["messages"][-1] == {
        "role": "tool",
        "tool_call_id": "call_ollama",
        "content": "12:00",
    }


def test_openai_assistant_text_next_to_calls_is_kept() -> None:
    call = ToolCall("c1", "now", {})
    messages = [
        ChatMessage("user", "time?"),
        ChatMessage("assistant", "Checking.", tool_calls=(call,)),
        ChatMessage("tool", "12:00", tool_call_id="c1", name="now"),
    ]
    body = build_openai_body("m", messages, GenerateParams())
    assert body["messages"][1] == {
        "role": "assistant",
        "content": "Checking.",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "now", "arguments": "{}"}}
        ],
    }
    assert "tools" not in body
    assert openai_tool_problem(body) is None


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ('{"city": "Par', {"_raw": '{"city": "Par'}),  # cut-off JSON
        ("[1, 2]", {"_raw": "[1, 2]"}),  # JSON, but not an object
        ("", {}),
        (None, {}),
        ({"city": "Rome"}, {"city": "Rome"}),  # some local servers send an object
        ('{"n": 3, "tags": ["a"]}', {"n": 3, "tags": ["a"]}),
    ],
)
def test_openai_arguments_that_are_not_a_json_object_do_not_crash(
    arguments: object, expected: dict[str, Any]
) -> None:
    body = openai_chat_response(None, finish_reason="tool_calls")
    body["choices"][0]["message"]["tool_calls"] = [
        {
            "id": "c1",
            "type": "function",
            "function": {"name": "get_weather", "arguments": arguments},
        }
    ]
    completion = call_on_transport(OpenAIAPI, "openai", body)
    assert completion.tool_calls == [ToolCall("c1", "get_weather", expected)]


def test_openai_call_without_id_gets_a_stable_one_and_other_types_are_skipped() -> None:
    body = openai_chat_response(None, finish_reason="tool_calls")
    body["choices"][0]["message"]["tool_calls"] = [
        {"type": "custom", "custom": {"name": "grammar", "input": "x"}},
        {"type": "function", "function": {"name": "now", "arguments": "{}"}},
    ]
    first = call_on_transport(OpenAIAPI, "openai", body)
    again = call_on_transport(OpenAIAPI, "openai", copy.deepcopy(body))
    assert first.tool_calls == [ToolCall("call_1_now", "now", {})]
    assert again.tool_calls == first.tool_calls


def test_openai_call_without_a_name_is_a_malformed_response() -> None:
    body = openai_chat_response(None, finish_reason="tool_calls")
    body["choices"][0]["message"]["tool_calls"] = [
        {"id": "c1", "type": "function", "function": {"arguments": "{}"}}
    ]
    with pytest.raises(ProviderError, match=r"malformed response.*function\.name"):
        call_on_transport(OpenAIAPI, "openai", body)


def test_openai_fake_refuses_results_without_a_matching_call() -> None:
    orphan = [ChatMessage("user", "q"), ChatMessage("tool", "x", tool_call_id="nope")]
    problem = openai_tool_problem(build_openai_body("m", orphan, GenerateParams()))
    assert problem is not None and "preceeding message with 'tool_calls'" in problem
    unanswered = [
        ChatMessage("user", "q"),
        ChatMessage("assistant", "", tool_calls=(ToolCall("c1", "now"),)),
        ChatMessage("user", "well?"),
    ]
    problem = openai_tool_problem(build_openai_body("m", unanswered, GenerateParams()))
    assert problem is not None and "c1" in problem


# =============================================================================== Anthropic


def test_anthropic_conversation_offers_tools_parses_calls_and_sends_results_back() -> None:
    reply = anthropic_tool_use_response(
        [("get_weather", {"city": "Paris"}), ("now", {})], text="Let me check."
    )
    with fake_anthropic(two_turns(reply)) as server:
        completions, _ = converse(spec_for("anthropic", server.url), QUESTION)
        first, second = (r.body for r in server.requests)

    asking, answer = completions
    assert asking.text == "Let me check."
    assert asking.finish_reason == "tool_use"
    assert asking.tool_calls == [
        ToolCall("toolu_fake_0", "get_weather", {"city": "Paris"}),
        ToolCall("toolu_fake_1", "now", {}),
    ]
    assert answer.text == "Sunny, 21C, at noon." and answer.tool_calls == []

    assert first["tools"] == [
        {
            "name": "get_weather",
            "description": "Current weather for a city.",
            "input_schema": WEATHER.parameters,
        },
        {
            "name": "now",
            "description": "The current time.",
            "input_schema": {"type": "object", "properties": {}},
        },
    ]
    assert second["system"] == "Use the tools."
    assert second["messages"] == [
        {"role": "user", "content": "Weather and time?"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Let me check."},
                {
                    "type": "tool_use",
                    "id": "toolu_fake_0",
                    "name": "get_weather",
                    "input": {"city": "Paris"},
                },
                {"type": "tool_use", "id": "toolu_fake_1", "name": "now", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_fake_0", "content": "21C and sunny"},
                {"type": "tool_result", "tool_use_id": "toolu_fake_1", "content": "12:00"},
            ],
        },
    ]


def test_anthropic_consecutive_results_share_one_user_turn_and_lead_it() -> None:
    calls = (ToolCall("t1", "get_weather", {"city": "Oslo"}), ToolCall("t2", "now"))
    messages = [
        ChatMessage("user", "q"),
        ChatMessage("assistant", "", tool_calls=calls),  # no text: no empty text block
        ChatMessage("tool", "cold", tool_call_id="t1", name="get_weather"),
        ChatMessage("tool", "noon", tool_call_id="t2", name="now"),
        ChatMessage("user", "Be brief."),
        ChatMessage("assistant", "Cold at noon."),
        ChatMessage("user", "Thanks"),
    ]
    body = build_anthropic_body("m", messages, GenerateParams())
    assert body["messages"] == [
        {"role": "user", "content": "q"},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "t1", "name": "get_weather", "input": {"city": "Oslo"}},
                {"type": "tool_use", "id": "t2", "name": "now", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "cold"},
                {"type": "tool_result", "tool_use_id": "t2", "content": "noon"},
                {"type": "text", "text": "Be brief."},
            ],
        },
        {"role": "assistant", "content": "Cold at noon."},  # plain turns stay strings
        {"role": "user", "content": "Thanks"},
    ]
    assert "tools" not in body
    assert anthropic_tool_problem(body) is None


def test_anthropic_results_come_first_even_after_user_text() -> None:
    messages = [
        ChatMessage("user", "q"),
        ChatMessage("assistant", "", tool_calls=(ToolCall("t1", "now"),)),
        ChatMessage("user", "hurry"),  # said before the result was sent back
        ChatMessage("tool", "noon", tool_call_id="t1", name="now"),
    ]
    body = build_anthropic_body("m", messages, GenerateParams())
    assert body["messages"][2]["content"] == [
        {"type": "tool_result", "tool_use_id": "t1", "content": "noon"},
        {"type": "text", "text": "hurry"},
    ]
    assert anthropic_tool_problem(body) is None


def test_anthropic_fake_refuses_unpaired_tool_use_and_results() -> None:
    unanswered = [
        ChatMessage("user", "q"),
        ChatMessage("assistant", "", tool_calls=(ToolCall("t1", "now"),)),
        ChatMessage("user", "and?"),
    ]
    problem = anthropic_tool_problem(build_anthropic_body("m", unanswered, GenerateParams()))
    assert problem is not None and "without `tool_result` blocks" in problem
    stray = [ChatMessage("user", "q"), ChatMessage("tool", "x", tool_call_id="t9")]
    problem = anthropic_tool_problem(build_anthropic_body("m", stray, GenerateParams()))
    assert problem is not None and "unexpected `tool_use_id`" in problem


def test_anthropic_tool_use_without_id_or_input_still_parses() -> None:
    from oxyeval.providers.anthropic import AnthropicAPI

    body = anthropic_tool_use_response([("now", {})])
    del body["content"][0]["id"]
    del body["content"][0]["input"]
    completion = call_on_transport(AnthropicAPI, "anthropic", body)
    assert completion.tool_calls == [ToolCall("call_0_now", "now", {})]
    assert completion.text == ""


# =============================================================================== Gemini


def test_gemini_conversation_offers_tools_parses_calls_and_sends_results_back() -> None:
    reply = gemini_function_call_response([("get_weather", {"city": "Paris"}), ("now", {})])
    with fake_gemini(two_turns(reply)) as server:
        completions, _ = converse(spec_for("google", server.url), QUESTION)
        first, second = (r.body for r in server.requests)

    asking, answer = completions
    assert asking.tool_calls == [
        ToolCall("call_0_get_weather", "get_weather", {"city": "Paris"}),
        ToolCall("call_1_now", "now", {}),
    ]
    assert asking.finish_reason == "STOP"  # Gemini has no "tool" finish reason
    assert answer.text == "Sunny, 21C, at noon." and answer.tool_calls == []

    assert first["tools"] == [
        {
            "functionDeclarations": [
                {
                    "name": "get_weather",
                    "description": "Current weather for a city.",
                    "parameters": {  # $schema and additionalProperties stripped
                        "type": "object",
                        "properties": {"city": {"type": "string", "description": "City name"}},
                        "required": ["city"],
                    },
                },
                # an empty OBJECT schema is refused: a tool without arguments has none
                {"name": "now", "description": "The current time."},
            ]
        }
    ]
    assert second["systemInstruction"] == {"parts": [{"text": "Use the tools."}]}
    assert second["contents"] == [
        {"role": "user", "parts": [{"text": "Weather and time?"}]},
        {
            "role": "model",
            "parts": [
                {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}},
                {"functionCall": {"name": "now", "args": {}}},
            ],
        },
        {
            "role": "user",
            "parts": [
                {
                    "functionResponse": {
                        "name": "get_weather",
                        "response": {"content": "21C and sunny"},
                    }
                },
                {"functionResponse": {"name": "now", "response": {"content": "12:00"}}},
            ],
        },
    ]


def test_gemini_ids_and_thought_signatures_go_back_with_their_calls() -> None:
    reply = gemini_function_call_response(
        [("get_weather", {"city": "Paris"}), ("now", {})],
        text="Checking.",
        ids=["fc-weather", None],  # type: ignore[list-item]
        signatures=["c2lnLUE=", None],
    )
    del reply["candidates"][0]["content"]["parts"][2]["functionCall"]["id"]
    with fake_gemini(two_turns(reply)) as server:
        completions, _ = converse(spec_for("google", server.url), QUESTION)
        second = server.requests[1].body

    weather, clock = completions[0].tool_calls
    assert completions[0].text == "Checking."
    assert weather.id == "fc-weather"  # Gemini's own id is kept
    assert clock.id == "call_1_now"
    model_turn, results_turn = second["contents"][1:]
    assert model_turn == {
        "role": "model",
        "parts": [
            {"text": "Checking."},
            {
                "functionCall": {
                    "name": "get_weather",
                    "args": {"city": "Paris"},
                    "id": "fc-weather",
                },
                "thoughtSignature": "c2lnLUE=",
            },
            {"functionCall": {"name": "now", "args": {}}},
        ],
    }
    assert results_turn["parts"][0] == {
        "functionResponse": {
            "name": "get_weather",
            "response": {"content": "21C and sunny"},
            "id": "fc-weather",
        }
    }
    assert "id" not in results_turn["parts"][1]["functionResponse"]


def test_gemini_signed_calls_without_ids_get_distinct_ids_per_signature() -> None:
    first = call_on_transport(
        GoogleAPI, "google", gemini_function_call_response([("now", {})], signatures=["AAA"])
    )
    second = call_on_transport(
        GoogleAPI, "google", gemini_function_call_response([("now", {})], signatures=["BBB"])
    )
    (a,), (b,) = first.tool_calls, second.tool_calls
    assert a.id.startswith("call_0_now_") and b.id.startswith("call_0_now_")
    assert a.id != b.id


def test_gemini_result_names_come_from_the_call_when_missing() -> None:
    messages = [
        ChatMessage("user", "q"),
        ChatMessage("assistant", "", tool_calls=(ToolCall("x1", "now"),)),
        ChatMessage("tool", "noon", tool_call_id="x1"),  # no name given
        ChatMessage("tool", "loose text"),  # no call to pair with: plain user text
    ]
    body = build_gemini_body(messages, GenerateParams())
    assert body["contents"][2] == {
        "role": "user",
        "parts": [
            {"functionResponse": {"name": "now", "response": {"content": "noon"}}},
            {"text": "loose text"},
        ],
    }


def test_gemini_schema_is_cut_to_the_supported_subset_without_touching_the_input() -> None:
    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "$id": "x",
        "type": "object",
        "title": "Args",
        "additionalProperties": False,
        "properties": {
            # property *names* are data: one called additionalProperties survives
            "additionalProperties": {"type": "boolean"},
            "when": {"type": "string", "format": "date-time"},
            "link": {"type": "string", "format": "uri", "minLength": 3},
            "note": {"type": ["string", "null"], "examples": ["a"]},
            "mode": {"const": "fast"},
            "level": {"type": "integer", "enum": [1, 2], "exclusiveMinimum": 0},
            "tags": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"k": {"type": "string"}},
                    "additionalProperties": False,
                },
            },
            "either": {"anyOf": [{"type": "string"}, {"type": "number", "multipleOf": 2}]},
        },
        "required": ["when"],
    }
    original = copy.deepcopy(schema)
    assert gemini_schema(schema) == {
        "type": "object",
        "title": "Args",
        "properties": {
            "additionalProperties": {"type": "boolean"},
            "when": {"type": "string", "format": "date-time"},
            "link": {"type": "string", "minLength": 3},
            "note": {"type": "string", "nullable": True},
            "mode": {"enum": ["fast"]},
            "level": {"type": "integer", "enum": ["1", "2"]},
            "tags": {
                "type": "array",
                "items": {"type": "object", "properties": {"k": {"type": "string"}}},
            },
            "either": {"anyOf": [{"type": "string"}, {"type": "number"}]},
        },
        "required": ["when"],
    }
    assert schema == original
    body = build_gemini_body(
        [ChatMessage("user", "q")], GenerateParams(tools=(ToolSpec("f", "", schema),))
    )
    assert body["tools"] == [
        {"functionDeclarations": [{"name": "f", "parameters": gemini_schema(schema)}]}
    ]
    assert gemini_tool_problem(body) is None
    raw = {"tools": [{"functionDeclarations": [{"name": "f", "parameters": schema}]}]}
    assert "Unknown name" in (gemini_tool_problem(raw) or "")


def test_gemini_function_call_without_a_name_is_a_malformed_response() -> None:
    body = gemini_function_call_response([("now", {})])
    del body["candidates"][0]["content"]["parts"][0]["functionCall"]["name"]
    with pytest.raises(ProviderError, match=r"malformed response.*functionCall\.name"):
        call_on_transport(GoogleAPI, "google", body)


def test_gemini_fake_wants_every_call_answered_in_the_next_turn() -> None:
    messages = [
        ChatMessage("user", "q"),
        ChatMessage("assistant", "", tool_calls=(ToolCall("a", "now"), ToolCall("b", "now"))),
        ChatMessage("tool", "noon", tool_call_id="a", name="now"),
    ]
    problem = gemini_tool_problem(build_gemini_body(messages, GenerateParams()))
    assert problem is not None and "number of function response parts" in problem


# =============================================================================== all vendors


@pytest.mark.parametrize("tools", [None, ()])
def test_no_tools_key_when_none_are_offered(tools: tuple[ToolSpec, ...] | None) -> None:
    messages = [ChatMessage("user", "hi")]
    params = GenerateParams(tools=tools)
    assert "tools" not in build_openai_body("m", messages, params)
    assert "tools" not in build_anthropic_body("m", messages, params)
    assert "tools" not in build_gemini_body(messages, params)


@pytest.mark.parametrize(
    ("factory", "vendor"),
    [(fake_openai, "openai"), (fake_anthropic, "anthropic"), (fake_gemini, "google")],
)
def test_plain_requests_through_the_fakes_carry_no_tools_key(
    factory: Callable[..., FakeServer], vendor: str
) -> None:
    with factory() as server:
        converse(spec_for(vendor, server.url), [ChatMessage("user", "hello")], tools=())
        (request,) = server.requests
    assert "tools" not in request.body
    assert last_user_text(request.body) == "hello"


def test_a_broken_history_is_refused_by_the_fake_server() -> None:
    """The fakes stand in for the APIs' validation, so encoding bugs fail loudly."""
    with fake_anthropic() as server:
        spec = spec_for("anthropic", server.url)
        messages = [
            ChatMessage("user", "q"),
            ChatMessage("assistant", "", tool_calls=(ToolCall("t1", "now"),)),
            ChatMessage("user", "no result sent"),
        ]

        async def go() -> None:
            async with ModelPool({"m": spec}, environ=ENV) as pool:
                await pool.get("m").generate(messages)

        with pytest.raises(ProviderError, match="without `tool_result` blocks"):
            asyncio.run(go())
        assert json.loads(server.requests[0].raw)["messages"][1]["role"] == "assistant"
