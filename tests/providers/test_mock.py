from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from oxyeval.errors import ProviderError
from oxyeval.project.document import parse_yaml
from oxyeval.project.schema import validate_document
from oxyeval.providers import (
    ChatMessage,
    Completion,
    GenerateParams,
    Model,
    ModelSpec,
    ToolCall,
    ToolSpec,
)
from oxyeval.providers.mock import MockAPI


def ask(api: MockAPI, text: str) -> str:
    return asyncio.run(api.generate([ChatMessage("user", text)], GenerateParams())).text


def mock(**options) -> MockAPI:
    return MockAPI(ModelSpec(name="m", vendor="mock", options=options))


def test_outputs_cycle_per_question() -> None:
    api = mock(outputs=["a", "b", "c"])
    assert [ask(api, "q1") for _ in range(4)] == ["a", "b", "c", "a"]
    assert ask(api, "q2") == "a"  # another question starts its own cycle
    assert ask(api, "q1") == "b"


def test_random_sampling_is_seeded() -> None:
    def draw(seed: int) -> list[str]:
        api = mock(outputs=list("abcdef"), sample="random", seed=seed)
        return [ask(api, "q") for _ in range(20)]

    assert draw(3) == draw(3)
    assert draw(3) != draw(4)
    assert len(set(draw(3))) > 1


def test_rules_match_last_user_message_in_order() -> None:
    api = mock(rules=[{"match": r"total", "output": "42"}, {"match": ".", "output": "fallback"}])
    messages = [ChatMessage("system", "total"), ChatMessage("user", "hello")]
    assert asyncio.run(api.generate(messages, GenerateParams())).text == "fallback"
    assert ask(api, "what is the total?") == "42"


def test_rule_error_and_no_match_are_provider_errors() -> None:
    api = mock(rules=[{"match": "boom", "error": "exploded"}])
    with pytest.raises(ProviderError, match=r"\(mock\): exploded") as info:
        ask(api, "boom now")
    assert not info.value.retryable
    with pytest.raises(ProviderError, match="no rule matched"):
        ask(api, "something else")


def test_goes_through_model_wrapper_with_latency_and_usage() -> None:
    model = Model(mock(outputs=["four words right here"], latency_ms=20))
    completion = asyncio.run(model.generate([ChatMessage("user", "two words")]))
    assert completion.text == "four words right here"
    assert completion.latency >= 0.02
    assert (completion.usage.input_tokens, completion.usage.output_tokens) == (2, 4)
    assert completion.model == "m" and completion.attempts == 1


# --------------------------------------------------------------------------- tool calls

WEATHER = ToolSpec(
    "get_weather", "Weather for a city.", {"type": "object", "properties": {"city": {}}}
)
TOOL_RULES = [
    {"match": r"^\[\{", "output": "It is 21C in Paris."},  # reacts to the tool's result
    {"match": "weather", "tool_call": {"name": "get_weather", "arguments": {"city": "Paris"}}},
    {"match": ".", "output": "fallback"},
]


def run(
    api: MockAPI, messages: list[ChatMessage], tools: tuple[ToolSpec, ...] | None
) -> Completion:
    return asyncio.run(api.generate(messages, GenerateParams(tools=tools)))


def test_tool_call_rule_asks_for_the_tool_then_a_rule_reacts_to_its_result() -> None:
    api = mock(rules=TOOL_RULES)
    history = [ChatMessage("user", "What is the weather in Paris?")]
    asking = run(api, history, (WEATHER,))
    assert asking.tool_calls == [ToolCall("call_0_get_weather", "get_weather", {"city": "Paris"})]
    assert asking.finish_reason == "tool_calls"
    assert asking.text == ""

    asking.tool_calls[0].arguments["city"] = "changed by the agent loop"
    history += [
        ChatMessage("assistant", "", tool_calls=tuple(asking.tool_calls)),
        ChatMessage(
            "tool", '[{"temp": 21}]', tool_call_id="call_0_get_weather", name="get_weather"
        ),
    ]
    answer = run(api, history, (WEATHER,))
    assert answer.text == "It is 21C in Paris."
    assert answer.tool_calls == [] and answer.finish_reason == "stop"
    # the rule's arguments were not changed through the first call's dict
    again = run(api, history[:1], (WEATHER,))
    assert again.tool_calls[0].arguments == {"city": "Paris"}


def test_tool_call_ids_are_numbered_through_the_conversation() -> None:
    api = mock(rules=[{"match": ".", "tool_call": {"name": "get_weather"}, "output": "On it."}])
    history = [
        ChatMessage("user", "weather?"),
        ChatMessage("assistant", "", tool_calls=(ToolCall("call_0_get_weather", "get_weather"),)),
        ChatMessage("tool", "rain", tool_call_id="call_0_get_weather", name="get_weather"),
    ]
    completion = run(api, history, (WEATHER,))
    assert completion.tool_calls == [ToolCall("call_1_get_weather", "get_weather", {})]
    assert completion.text == "On it."


def test_tool_call_rule_is_skipped_when_the_tool_is_not_offered() -> None:
    api = mock(rules=TOOL_RULES)
    plain = run(api, [ChatMessage("user", "weather?")], None)
    assert plain.text == "fallback" and plain.tool_calls == []
    strict = mock(rules=TOOL_RULES[1:2])
    with pytest.raises(ProviderError, match=r"rules for tool\(s\) 'get_weather' matched"):
        run(strict, [ChatMessage("user", "weather?")], (ToolSpec("other", ""),))


def test_outputs_cycle_by_question_even_when_a_tool_result_is_last() -> None:
    api = mock(outputs=["a", "b"])
    history = [
        ChatMessage("user", "q1"),
        ChatMessage("assistant", "", tool_calls=(ToolCall("c", "t"),)),
        ChatMessage("tool", "result", tool_call_id="c", name="t"),
    ]
    assert [run(api, history, None).text for _ in range(3)] == ["a", "b", "a"]
    assert ask(api, "q1") == "b"  # the same cycle as the plain question


def test_config_schema_accepts_tool_call_rules_and_rejects_unknown_keys() -> None:
    def problems(rule: str) -> list[str]:
        text = f"models:\n  - name: m\n    vendor: mock\n    rules:\n      - {rule}\n"
        doc, parse_problems = parse_yaml(text, Path("config.yml"))
        assert parse_problems == []
        return [p.message for p in validate_document(doc, "config") if p.severity == "error"]

    assert problems("{match: w, tool_call: {name: get_weather, arguments: {city: Paris}}}") == []
    assert problems("{match: w, tool_call: {arguments: {}}}")  # name is required
    assert problems("{match: w, tool_call: {name: t, args: {}}}")  # a typo is caught


def test_a_rule_with_too_many_capture_groups_is_refused_at_its_line(tmp_path: Path) -> None:
    from oxyeval.errors import OxyError
    from oxyeval.project.config import load_project

    match = "(x)" * 12_000
    (tmp_path / "config.yml").write_text(
        "models:\n  - name: m\n    vendor: mock\n    rules:\n"
        f"      - {{match: '{match}', output: 'got \\g<1>'}}\n"
    )
    with pytest.raises(OxyError) as caught:
        load_project(project_dir=str(tmp_path))
    message = str(caught.value)
    assert "config.yml:5" in message and "12,000 capture groups" in message
