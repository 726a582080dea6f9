"""Test cases check their fields when built, with one-line errors naming the field."""

from __future__ import annotations

from typing import Any

import pytest

from oxyeval.testing import (
    MAX_ITEMS,
    MAX_TEXT,
    ConversationalTestCase,
    ExactMatchMetric,
    LLMTestCase,
    LLMTestCaseParams,
    MissingTestCaseParamsError,
    ToolCall,
)


def test_a_full_case_keeps_every_field() -> None:
    call = ToolCall("search", description="web", input_parameters={"q": "x"}, output=[1])
    case = LLMTestCase(
        input="q",
        actual_output="a",
        expected_output="e",
        retrieval_context=["r"],
        tools_called=[call],
        expected_tools=[ToolCall("search")],
        token_cost=0.01,
        completion_time=1.5,
        context=["c"],
    )
    assert case.tools_called == [call] and case.context == ["c"] and case.token_cost == 0.01
    assert getattr(case, LLMTestCaseParams.RETRIEVAL_CONTEXT.value) == ["r"]


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"input": None, "actual_output": "a"}, TypeError, "LLMTestCase.input is required"),
        ({"input": "q", "actual_output": 3}, TypeError, "LLMTestCase.actual_output must be a str"),
        (
            {"input": "q", "actual_output": "a", "context": "one"},
            TypeError,
            "context must be a list",
        ),
        (
            {"input": "q", "actual_output": "a", "retrieval_context": ["ok", 2]},
            TypeError,
            "retrieval_context[1] must be a str",
        ),
        (
            {"input": "q", "actual_output": "a", "tools_called": [{"name": "x"}]},
            TypeError,
            "tools_called[0] must be a ToolCall",
        ),
        ({"input": "q", "actual_output": "a", "token_cost": -1}, ValueError, "token_cost must be"),
        (
            {"input": "q", "actual_output": "a", "completion_time": True},
            TypeError,
            "completion_time must be a number",
        ),
        (
            {"input": "q", "actual_output": "x" * (MAX_TEXT + 1)},
            ValueError,
            "actual_output is 1,000,001 characters",
        ),
        (
            {"input": "q", "actual_output": "a", "context": ["c"] * (MAX_ITEMS + 1)},
            ValueError,
            "context has 10,001 items",
        ),
    ],
)
def test_llm_test_case_errors_name_the_field(
    kwargs: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as info:
        LLMTestCase(**kwargs)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_llm_test_case_needs_an_input_and_its_output_when_measured() -> None:
    with pytest.raises(TypeError):
        LLMTestCase()  # type: ignore[call-arg]
    golden_like = LLMTestCase(input="q")  # as DeepEval: the output comes later
    assert golden_like.actual_output is None
    with pytest.raises(MissingTestCaseParamsError, match="actual_output"):
        ExactMatchMetric().measure(LLMTestCase(input="q", expected_output="a"))


def test_tool_call_checks() -> None:
    with pytest.raises(ValueError, match=r"ToolCall\.name must not be empty"):
        ToolCall(" ")
    with pytest.raises(TypeError, match=r"ToolCall\.input_parameters must be a dict"):
        ToolCall("x", input_parameters=[1])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="str keys"):
        ToolCall("x", input_parameters={1: 2})  # type: ignore[dict-item]


def test_conversational_case() -> None:
    turn = LLMTestCase("hi", "hello")
    case = ConversationalTestCase([turn, turn], chatbot_role="a wizard")
    assert len(case.turns) == 2 and case.chatbot_role == "a wizard"
    with pytest.raises(ValueError, match="turns must hold at least one turn"):
        ConversationalTestCase([])
    with pytest.raises(
        TypeError, match=r"turns\[1\] must be an LLMTestCase like turns\[0\], got str"
    ):
        ConversationalTestCase([turn, "hello"])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="chatbot_role must be a str"):
        ConversationalTestCase([turn], chatbot_role=1)  # type: ignore[arg-type]
