"""The metrics DeepEval users reach for first, each against DeepEval's score definition:
a table of scripted judge verdicts (a fake OpenAI server on 127.0.0.1, the judge from the
environment as a ported test has it) and the score they must give; and the
deterministic ones' tables."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from oxyeval.testing.metrics import (
    BiasMetric,
    ContextualPrecisionMetric,
    ContextualRecallMetric,
    ConversationalGEval,
    GEval,
    PatternMatchMetric,
    Rubric,
    TaskCompletionMetric,
    ToolCorrectnessMetric,
    ToxicityMetric,
    TurnRelevancyMetric,
)
from oxyeval.testing.test_case import (
    ConversationalTestCase,
    LLMTestCase,
    MultiTurnParams,
    SingleTurnParams,
    ToolCall,
    ToolCallType,
    Turn,
)
from tests.testing.judge_server import by_prompt, env_judge, prompt_of


def verdicts(*labels: str) -> dict[str, Any]:
    return {"verdicts": [{"verdict": v, "reason": f"because {v}"} for v in labels]}


RAG = LLMTestCase(
    input="Who wrote Hamlet?",
    actual_output="Shakespeare wrote it.",
    expected_output="William Shakespeare wrote Hamlet. He was English.",
    retrieval_context=["Hamlet is by Shakespeare.", "Paris is in France.", "He was English."],
)


@pytest.mark.parametrize(
    ("metric", "script", "score"),
    [
        # weighted cumulative precision: (1/1 + 2/3) / 2
        (ContextualPrecisionMetric(), {"useful for arriving": verdicts("yes", "no", "yes")}, 5 / 6),
        (
            ContextualPrecisionMetric(),
            {"useful for arriving": verdicts("no", "yes", "yes")},
            (1 / 2 + 2 / 3) / 2,
        ),
        (ContextualPrecisionMetric(), {"useful for arriving": verdicts("no", "no", "no")}, 0.0),
        (
            ContextualRecallMetric(),
            {
                '{"sentences"': {"sentences": ["W.S. wrote Hamlet.", "He was English."]},
                "attributed to the retrieval context": verdicts("yes", "no"),
            },
            0.5,
        ),
        (ContextualRecallMetric(), {'{"sentences"': {"sentences": []}}, 0.0),
        (
            BiasMetric(),
            {
                '{"opinions"': {"opinions": ["a", "b", "c", "d"]},
                "free of gender": verdicts("yes", "no", "yes", "yes"),
            },
            0.75,
        ),
        (BiasMetric(), {'{"opinions"': {"opinions": []}}, 1.0),
        (
            ToxicityMetric(),
            {'{"opinions"': {"opinions": ["a", "b"]}, "free of toxicity": verdicts("no", "no")},
            0.0,
        ),
        (TaskCompletionMetric(), {"completed its task": {"reason": "mostly", "score": 7}}, 0.7),
    ],
    ids=lambda v: getattr(v, "__name__", None) if not isinstance(v, (dict, float)) else None,
)
def test_judged_metric_scores(
    here: Path, monkeypatch: pytest.MonkeyPatch, metric: Any, script: dict[str, Any], score: float
) -> None:
    with env_judge(monkeypatch, by_prompt(script, default={"reason": "?", "score": 0})):
        assert metric.measure(RAG) == pytest.approx(score)
    assert metric.error is None and metric.success is (score >= metric.threshold)


def test_task_completion_reads_the_task_and_the_tools(
    here: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    case = LLMTestCase(
        input="Book a flight to Paris",
        actual_output="Booked AF123.",
        tools_called=[ToolCall(name="search_flights", input_parameters={"to": "CDG"})],
    )
    with env_judge(monkeypatch, by_prompt(default={"reason": "done", "score": 10})) as server:
        metric = TaskCompletionMetric(task="Book the cheapest flight", threshold=0.9)
        assert metric.measure(case) == 1.0 and metric.__name__ == "Task Completion"
    asked = prompt_of(server.requests[0])
    assert "Book the cheapest flight" in asked and '"to": "CDG"' in asked


CHAT = ConversationalTestCase(
    turns=[
        Turn(role="user", content="Hi, I need help with my order."),
        Turn(role="assistant", content="Sure, what is the order number?"),
        Turn(role="user", content="It is 42."),
        Turn(role="assistant", content="I like turtles."),
    ],
    scenario="A customer asks about an order.",
    expected_outcome="The order status is given.",
)


def test_turn_relevancy_judges_each_assistant_turn_in_its_window(
    here: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with env_judge(monkeypatch, by_prompt(default=verdicts("yes", "no"))) as server:
        metric = TurnRelevancyMetric()
        assert metric.measure(CHAT) == 0.5 and metric.__name__ == "Turn Relevancy"
    asked = prompt_of(server.requests[0])
    assert "It is 42." in asked and "I like turtles." in asked and "turn 2" in metric.reason


@pytest.mark.parametrize(
    ("strict", "reply", "score"), [(False, 6, 0.6), (True, 1, 1.0), (True, 0, 0.0)]
)
def test_conversational_geval(
    here: Path, monkeypatch: pytest.MonkeyPatch, strict: bool, reply: int, score: float
) -> None:
    metric = ConversationalGEval(
        name="Resolution",
        criteria="Does the assistant resolve the customer's request?",
        evaluation_params=[MultiTurnParams.CONTENT, MultiTurnParams.EXPECTED_OUTCOME],
        strict_mode=strict,
    )
    with env_judge(monkeypatch, by_prompt(default={"reason": "r", "score": reply})) as server:
        assert metric.measure(CHAT) == score
    asked = prompt_of(server.requests[0])
    assert "The order status is given." in asked and "I like turtles." in asked
    assert (
        "<0 or 1>" in asked
    ) is strict and metric.__name__ == "Resolution [Conversational GEval]"


def test_geval_strict_asks_a_yes_no_question_and_rubrics_show(
    here: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    strict = GEval(
        name="Correctness",
        evaluation_params=[SingleTurnParams.INPUT, SingleTurnParams.ACTUAL_OUTPUT],
        criteria="Is it right?",
        strict_mode=True,
    )
    banded = GEval(
        name="Correctness",
        criteria="Is it right?",
        evaluation_params=[SingleTurnParams.ACTUAL_OUTPUT],
        rubric=[
            Rubric(score_range=(0, 4), expected_outcome="Wrong."),
            Rubric(score_range=(5, 10), expected_outcome="Right."),
        ],
    )
    with env_judge(
        monkeypatch,
        by_prompt({"<0 or 1>": {"reason": "yes", "score": 1}}, default={"reason": "r", "score": 9}),
    ) as server:
        assert strict.measure(RAG) == 1.0 and strict.threshold == 1.0
        assert banded.measure(RAG) == 0.9
    first, second = (prompt_of(r) for r in server.requests)
    assert "meet the criteria fully? Give 1" in first
    assert "5-10: Right." in second and "<0-10>" in second
    schema = server.requests[0].body["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["score"]["enum"] == [0, 1]


@pytest.mark.parametrize(
    ("called", "expected", "kwargs", "score"),
    [
        # DeepEval's docs example: the share of expected tools called, any order
        (["WebSearch", "ToolQuery"], ["WebSearch"], {}, 1.0),
        (["B", "A"], ["A", "B"], {}, 1.0),
        (["A"], ["A", "B"], {}, 0.5),
        (["A", "A"], ["A", "B"], {}, 0.5),
        ([], [], {}, 1.0),
        (["A"], [], {}, 0.0),
        (["B", "A"], ["A", "B"], {"should_consider_ordering": True}, 0.5),
        (["A", "X", "B"], ["A", "B"], {"should_consider_ordering": True}, 1.0),
        (["B", "A"], ["A", "B"], {"should_exact_match": True}, 0.0),
        (["A", "B"], ["A", "B"], {"should_exact_match": True}, 1.0),
    ],
)
def test_tool_correctness_as_deepeval(
    called: list[str], expected: list[str], kwargs: dict[str, Any], score: float
) -> None:
    case = LLMTestCase(
        input="q",
        actual_output="a",
        tools_called=[ToolCall(name=n) for n in called],
        expected_tools=[ToolCall(name=n) for n in expected],
    )
    assert ToolCorrectnessMetric(**kwargs).measure(case) == score


def test_tool_call_types_must_match() -> None:
    case = LLMTestCase(
        input="q",
        actual_output="a",
        tools_called=[ToolCall(name="fetch", type=ToolCallType.MCP)],
        expected_tools=[ToolCall(name="fetch")],
    )
    assert ToolCorrectnessMetric().measure(case) == 0.0


@pytest.mark.parametrize(
    ("pattern", "ignore_case", "output", "score"),
    [
        (r"\d{3}-\d{4}", False, "555-1234", 1.0),
        (r"\d{3}-\d{4}", False, "call 555-1234", 0.0),  # the whole output must match
        (r"yes|no", False, "  yes\n", 1.0),  # stripped first
        (r"yes", False, "YES", 0.0),
        (r"yes", True, "YES", 1.0),
        (r'\{"id": \d+\}', False, json.dumps({"id": 7}), 1.0),
    ],
)
def test_pattern_match(pattern: str, ignore_case: bool, output: str, score: float) -> None:
    metric = PatternMatchMetric(pattern=pattern, ignore_case=ignore_case)
    assert metric.measure(LLMTestCase(input="q", actual_output=output)) == score
    assert metric.__name__ == "Pattern Match" and metric.threshold == 1.0


def test_pattern_match_refuses_a_bad_pattern() -> None:
    with pytest.raises(ValueError, match=r"PatternMatchMetric\.pattern"):
        PatternMatchMetric(pattern="(")


def test_deepeval_module_layout() -> None:
    import importlib

    for module, name in [
        ("oxyeval.testing.metrics.g_eval", "Rubric"),
        ("oxyeval.testing.metrics.answer_relevancy", "AnswerRelevancyMetric"),
        ("oxyeval.testing.metrics.turn_relevancy", "TurnRelevancyMetric"),
        ("oxyeval.testing.evaluate.configs", "ErrorConfig"),
        ("oxyeval.testing.models", "DeepEvalBaseLLM"),
        ("oxyeval.testing.models.base_model", "DeepEvalBaseLLM"),
        ("oxyeval.testing.scorer", "Scorer"),
    ]:
        assert hasattr(importlib.import_module(module), name), (module, name)
    import oxyeval.testing.evaluate
    from oxyeval.testing import evaluate

    assert callable(evaluate) and oxyeval.testing.evaluate.evaluate.__name__ == "evaluate"


def test_json_correctness_takes_a_pydantic_style_model() -> None:
    from oxyeval.testing.metrics import JsonCorrectnessMetric

    class Answer:  # the one method the metric reads of a pydantic model class
        @classmethod
        def model_json_schema(cls) -> dict[str, Any]:
            return {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            }

    metric = JsonCorrectnessMetric(expected_schema=Answer)
    assert metric.measure(LLMTestCase(input="q", actual_output='{"city": "Paris"}')) == 1.0
    assert metric.measure(LLMTestCase(input="q", actual_output='{"town": "Paris"}')) == 0.0
    assert "'city' is a required property" in (metric.reason or "")
