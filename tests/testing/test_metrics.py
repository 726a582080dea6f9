"""The deterministic metrics' arithmetic, the metric base's contract (strict mode,
missing fields, sync and async use), evaluate's table and assert_test's message."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any, ClassVar

import pytest

from oxyeval.testing import (
    BaseConversationalMetric,
    BaseMetric,
    ConversationalTestCase,
    ErrorConfig,
    ExactMatchMetric,
    JsonCorrectnessMetric,
    LLMTestCase,
    MissingTestCaseParamsError,
    ToolCall,
    ToolCorrectnessMetric,
    assert_test,
    evaluate,
    tool_correctness,
)


def case(actual: str = "Paris", expected: str | None = "Paris", **kw: Any) -> LLMTestCase:
    return LLMTestCase(
        input="capital of France?", actual_output=actual, expected_output=expected, **kw
    )


def test_exact_match_strips_only_the_edges() -> None:
    metric = ExactMatchMetric()
    assert metric.measure(case("  Paris\n")) == 1.0
    assert metric.success is True and metric.error is None and metric.reason
    assert metric.measure(case("paris")) == 0.0
    assert metric.success is False and metric.score == 0.0


def test_a_missing_field_names_the_metric_and_the_field() -> None:
    with pytest.raises(
        MissingTestCaseParamsError, match="Exact Match needs the test case's expected_output"
    ):
        ExactMatchMetric().measure(case(expected=None))
    with pytest.raises(MissingTestCaseParamsError, match=r"Tool Correctness needs .* tools_called"):
        ToolCorrectnessMetric().measure(case(expected_tools=[]))


def test_a_metric_refuses_the_other_kind_of_test_case() -> None:
    conversation = ConversationalTestCase([case()])
    with pytest.raises(
        TypeError, match="Exact Match measures a LLMTestCase, got ConversationalTestCase"
    ):
        ExactMatchMetric().measure(conversation)  # type: ignore[arg-type]


SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "population": {"type": "integer"}},
    "required": ["city", "population"],
}


@pytest.mark.parametrize(
    ("output", "score", "reason"),
    [
        ('{"city": "Paris", "population": 2100000}', 1.0, "valid under the expected schema"),
        ('```json\n{"city": "Paris"}\n```', 0.0, "not JSON"),
        ('{"city": "Paris"}', 0.0, "at the top level: 'population' is a required property"),
        (
            '{"city": "Paris", "population": "many"}',
            0.0,
            "at population: 'many' is not of type 'integer'",
        ),
        ("[1, 2", 0.0, "not JSON"),
    ],
)
def test_json_correctness(output: str, score: float, reason: str) -> None:
    metric = JsonCorrectnessMetric(SCHEMA)
    assert metric.measure(case(output, None)) == score
    assert metric.reason is not None and reason in metric.reason


def test_json_correctness_checks_its_schema() -> None:
    with pytest.raises(ValueError, match="not a valid JSON Schema"):
        JsonCorrectnessMetric({"type": "no-such-type"})
    with pytest.raises(TypeError, match="expected_schema must be a JSON Schema"):
        JsonCorrectnessMetric("{}")  # type: ignore[arg-type]


A, B, C, D = "a", "b", "c", "d"


@pytest.mark.parametrize(
    ("called", "expected", "exact", "ordered", "unordered"),
    [
        ([A, B, C], [A, B, C], 1.0, 1.0, 1.0),
        ([C, B, A], [A, B, C], 0.0, 1 / 3, 1.0),  # LCS of reversed lists: one call
        ([A, D, B], [A, B, C], 0.0, 2 / 3, 2 / 3),  # an extra call costs nothing
        ([A, B, C, D], [A, B, C], 0.0, 1.0, 1.0),
        ([A, A], [A, B], 0.0, 0.5, 0.5),  # a repeat matches one expected call only
        ([B, A, A], [A, A], 0.0, 1.0, 1.0),
        ([A], [A, A], 0.0, 0.5, 0.5),
        ([], [A, B], 0.0, 0.0, 0.0),
        ([], [], 1.0, 1.0, 1.0),  # nothing expected, nothing called
        ([A], [], 0.0, 0.0, 0.0),  # nothing expected, something called
    ],
)
def test_tool_correctness_arithmetic(
    called: list[str], expected: list[str], exact: float, ordered: float, unordered: float
) -> None:
    assert tool_correctness(called, expected, "exact") == exact
    assert tool_correctness(called, expected, "ordered") == pytest.approx(ordered)
    assert tool_correctness(called, expected, "unordered") == pytest.approx(unordered)
    tools = {n: ToolCall(n) for n in (A, B, C, D)}
    for mode, want in (("exact", exact), ("ordered", ordered), ("unordered", unordered)):
        test = case(
            tools_called=[tools[n] for n in called], expected_tools=[tools[n] for n in expected]
        )
        assert ToolCorrectnessMetric(mode=mode).measure(test) == pytest.approx(want)


def test_tool_correctness_compares_the_chosen_fields() -> None:
    test = case(
        tools_called=[ToolCall("search", input_parameters={"q": "Paris"}, output=1)],
        expected_tools=[ToolCall("search", input_parameters={"q": "Rome"}, output=1)],
    )
    assert ToolCorrectnessMetric().measure(test) == 1.0  # names only by default
    assert ToolCorrectnessMetric(evaluation_params=["input_parameters"]).measure(test) == 0.0
    assert ToolCorrectnessMetric(evaluation_params=["output"]).measure(test) == 1.0
    with pytest.raises(ValueError, match="unknown 'args'"):
        ToolCorrectnessMetric(evaluation_params=["args"])
    with pytest.raises(ValueError, match="mode must be one of"):
        ToolCorrectnessMetric(mode="fuzzy")


def test_strict_mode_makes_the_score_all_or_nothing() -> None:
    test = case(tools_called=[ToolCall(A), ToolCall(D)], expected_tools=[ToolCall(A), ToolCall(B)])
    lenient = ToolCorrectnessMetric(mode="unordered", threshold=0.5)
    assert lenient.measure(test) == 0.5 and lenient.success is True
    strict = ToolCorrectnessMetric(mode="unordered", threshold=0.5, strict_mode=True)
    assert strict.threshold == 1.0
    assert strict.measure(test) == 0.0 and strict.success is False
    perfect = case(
        tools_called=[ToolCall(B), ToolCall(A)], expected_tools=[ToolCall(A), ToolCall(B)]
    )
    assert strict.measure(perfect) == 1.0 and strict.success is True


def test_threshold_is_checked() -> None:
    with pytest.raises(ValueError, match="threshold must be between 0 and 1"):
        ToolCorrectnessMetric(threshold=2)


def test_measure_works_inside_a_running_loop() -> None:
    async def main() -> tuple[float, float]:
        metric = ExactMatchMetric()
        inside = metric.measure(case())  # a worker thread runs its own loop
        awaited = await ExactMatchMetric().a_measure(case("Rome"))
        return inside, awaited

    assert asyncio.run(main()) == (1.0, 0.0)


class Length(BaseMetric):
    """A user's async metric: 1.0 for a short answer."""

    name = "Short"

    async def _a_score(self, test_case: LLMTestCase) -> tuple[float, str | None]:
        return (1.0 if len(test_case.actual_output) < 10 else 0.0), "length"


class SyncOnly(BaseMetric):
    """A metric written the DeepEval way: only ``measure``, setting the outcome itself."""

    threads: ClassVar[set[str]] = set()

    def measure(self, test_case: LLMTestCase) -> float:
        SyncOnly.threads.add(threading.current_thread().name)
        time.sleep(0.01)
        self.score = 1.0 if "Paris" in test_case.actual_output else 0.0
        self.success = self.score >= self.threshold
        self.reason = "mentions Paris" if self.success else "no Paris"
        return self.score


class Turns(BaseConversationalMetric):
    name = "Turns"

    async def _a_score(self, test_case: ConversationalTestCase) -> tuple[float, str | None]:
        return min(1.0, len(test_case.turns) / 2), f"{len(test_case.turns)} turns"


class Boom(BaseMetric):
    name = "Boom"

    async def _a_score(self, test_case: LLMTestCase) -> tuple[float, str | None]:
        raise RuntimeError("bug in the metric")


def test_conversational_metric() -> None:
    metric = Turns(threshold=1.0)
    assert metric.measure(ConversationalTestCase([case()])) == 0.5 and metric.success is False
    with pytest.raises(TypeError, match="Turns measures a ConversationalTestCase"):
        metric.measure(case())


def test_evaluate_measures_copies_and_reports_each_pair(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "250")
    exact = ExactMatchMetric()
    cases = [case("Paris"), case("Rome is the answer, surely")]
    result = evaluate(
        cases,
        [exact, Length(), SyncOnly(), Boom()],
        concurrency=2,
        error_config=ErrorConfig(ignore_errors=True),
    )
    assert exact.score is None  # the listed metric itself is never measured
    first, second = result.test_results
    assert [d.name for d in first.metrics_data] == ["Exact Match", "Short", "SyncOnly", "Boom"]
    assert [d.success for d in first.metrics_data] == [True, True, True, False]
    assert [d.score for d in second.metrics_data] == [0.0, 0.0, 0.0, None]
    assert first.metrics_data[3].error == "RuntimeError: bug in the metric"
    assert not first.success and not second.success and not result.success
    assert any(t.startswith("asyncio") for t in SyncOnly.threads)  # off the event loop
    out = capsys.readouterr().out
    assert "Exact Match" in out and "error" in out and "bug in the metric" in out
    assert "0 of 2 test cases passed; metrics: 3 passed, 3 failed, 2 errors" in out


def test_evaluate_mixes_kinds_of_case_and_can_stay_quiet(
    capsys: pytest.CaptureFixture[str],
) -> None:
    conversation = ConversationalTestCase([case(), case()])
    result = evaluate([conversation], [Turns()], print_results=False)
    assert result.success and result.test_results[0].conversational
    assert capsys.readouterr().out == ""
    with pytest.raises(TypeError, match="a single test case"):
        evaluate(case(), [Turns()])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="concurrency must be an int >= 1"):
        evaluate([case()], [Turns()], concurrency=0)


def test_assert_test_names_each_failing_metric() -> None:
    assert_test(case(), [ExactMatchMetric(), Length()])  # passes: no exception
    with pytest.raises(AssertionError) as info:
        assert_test(case("Rome, I think"), [ExactMatchMetric(), Length(), Boom()])
    message = str(info.value)
    assert message.startswith("Metrics: Exact Match (score: 0.0, threshold: 1.0, strict: False")
    assert (
        "Short (score: 0.0, threshold: 0.5, strict: False, error: None, reason: length)" in message
    )
    assert (
        "Boom (score: None, threshold: 0.5, strict: False, error: RuntimeError: bug in" in message
    )
    assert message.endswith(" failed.")
