"""DeepEval-style tests of an app, in plain pytest, offline (the mock models of
examples/config.yml). Run from the examples folder:

    cd examples && pytest sdk/test_deepeval_style.py --oxy-repeat 3
"""

from oxyeval.testing import (
    ExactMatchMetric,
    GEval,
    JsonCorrectnessMetric,
    LLMTestCase,
    LLMTestCaseParams,
    ToolCall,
    ToolCorrectnessMetric,
    assert_test,
)


def capital_app(question: str) -> str:
    """The app under test (a real one would call its model)."""
    return "Paris"


def test_the_answer_is_right_and_judged_correct() -> None:
    question = "What is the capital of France?"
    case = LLMTestCase(input=question, actual_output=capital_app(question), expected_output="Paris")
    correct = GEval(
        "Correctness",
        criteria="The answer names the capital city the question asks about.",
        evaluation_params=[LLMTestCaseParams.INPUT, LLMTestCaseParams.ACTUAL_OUTPUT],
        model="sdk_judge",
        threshold=0.8,
    )
    assert_test(case, [ExactMatchMetric(), correct])


def test_structured_output_and_tools() -> None:
    case = LLMTestCase(
        input="Sales by region, as JSON",
        actual_output='{"South": 577.41, "West": 448.44}',
        tools_called=[ToolCall(name="query_orders")],
        expected_tools=[ToolCall(name="query_orders")],
    )
    schema = {"type": "object", "additionalProperties": {"type": "number"}}
    assert_test(case, [JsonCorrectnessMetric(expected_schema=schema), ToolCorrectnessMetric()])
