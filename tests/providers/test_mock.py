from __future__ import annotations

import asyncio

import pytest

from oxyeval.errors import ProviderError
from oxyeval.providers import ChatMessage, GenerateParams, Model, ModelSpec
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
    with pytest.raises(ProviderError, match="simulated failure: exploded") as info:
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
