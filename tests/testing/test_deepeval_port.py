"""A DeepEval user's test code with only its import lines changed: evaluate with its
configs, assert_test's words, custom metrics, datasets from code and files, tracing
with @observe, multimodal test cases. The judge is a fake OpenAI server on 127.0.0.1
named by the environment, as DeepEval's is."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest

from oxyeval.testing import assert_test, log_hyperparameters
from oxyeval.testing._hyperparameters import LOGGED
from oxyeval.testing.dataset import ConversationalGolden, EvaluationDataset, Golden
from oxyeval.testing.evaluate import AsyncConfig, DisplayConfig, ErrorConfig, evaluate
from oxyeval.testing.metrics import AnswerRelevancyMetric, BaseMetric, GEval
from oxyeval.testing.test_case import LLMTestCase, MLLMImage, SingleTurnParams, ToolCall
from oxyeval.testing.tracing import observe, update_current_span, update_current_trace
from tests.testing.judge_server import by_prompt, env_judge

#: A judge that finds two statements and calls one relevant, and scores GEval 8/10.
HALF = by_prompt(
    {
        '{"statements"': {"statements": ["It is sunny.", "I like cats."]},
        "relevant to answering": {
            "verdicts": [
                {"verdict": "yes", "reason": "on topic"},
                {"verdict": "no", "reason": "about cats"},
            ]
        },
    },
    default={"reason": "Mostly right.", "score": 8},
)
CASE = LLMTestCase(input="What's the weather?", actual_output="It is sunny. I like cats.")


def correctness() -> GEval:
    return GEval(
        name="Correctness",
        criteria="Is the actual output correct?",
        evaluation_params=[SingleTurnParams.INPUT, SingleTurnParams.ACTUAL_OUTPUT],
    )


def test_evaluate_with_deepeval_configs(here: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with env_judge(monkeypatch, HALF):
        result = evaluate(
            test_cases=[CASE],
            metrics=[AnswerRelevancyMetric(threshold=0.7, async_mode=False), correctness()],
            async_config=AsyncConfig(max_concurrent=2),
            display_config=DisplayConfig(print_results=False, show_indicator=False),
            hyperparameters={"model": "gpt-4.1", "prompt version": 3},
        )
    (test,) = result.test_results
    assert [(d.name, d.score, d.success) for d in test.metrics_data] == [
        ("Answer Relevancy", 0.5, False),
        ("Correctness [GEval]", 0.8, True),
    ]
    assert test.success is False and result.confident_link is None
    assert result.hyperparameters == {"model": "gpt-4.1", "prompt version": "3"}


def test_evaluate_raises_on_a_judge_failure_unless_told_to_ignore_errors(
    here: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from oxyeval.testing import MetricError

    with env_judge(monkeypatch, by_prompt(default="not json")):
        with pytest.raises(MetricError, match=r"Correctness \[GEval\].*no usable JSON"):
            evaluate([CASE], [correctness()], display_config=DisplayConfig(print_results=False))
        result = evaluate(
            [CASE],
            [correctness()],
            display_config=DisplayConfig(print_results=False),
            error_config=ErrorConfig(ignore_errors=True),
        )
    (data,) = result.test_results[0].metrics_data
    assert data.error and data.score is None and not result.test_results[0].success


def test_skip_on_missing_params(here: Path) -> None:
    needs_context = GEval(
        name="Grounded",
        criteria="Uses the context.",
        evaluation_params=[SingleTurnParams.CONTEXT],
    )
    result = evaluate(
        [CASE],
        [needs_context],
        display_config=DisplayConfig(print_results=False),
        error_config=ErrorConfig(skip_on_missing_params=True),
    )
    assert result.test_results[0].metrics_data == [] and result.success


class LengthMetric(BaseMetric):
    """DeepEval's custom-metric example: no super().__init__(), a threshold above 1."""

    def __init__(self, max_length: int = 10):
        self.threshold = max_length
        self.evaluation_model = "none: counted"

    def measure(self, test_case: LLMTestCase) -> float:
        self.success = len(test_case.actual_output or "") <= self.threshold
        self.score = 1 if self.success else 0
        return self.score

    async def a_measure(self, test_case: LLMTestCase) -> float:
        return self.measure(test_case)

    def is_successful(self) -> bool:
        return bool(self.success)

    @property
    def __name__(self) -> str:
        return "Length"


def test_a_custom_metric_without_super_init(here: Path) -> None:
    metric = LengthMetric(max_length=5)
    assert metric.reason is None and metric.error is None and metric.strict_mode is False
    result = evaluate([CASE], [metric], display_config=DisplayConfig(print_results=False))
    (data,) = result.test_results[0].metrics_data
    assert (data.name, data.score, data.success, data.reason) == ("Length", 0, False, None)
    assert data.evaluation_model == "none: counted"
    with pytest.raises(AssertionError) as info:
        assert_test(CASE, [metric])
    assert str(info.value) == (
        "Metrics: Length (score: 0, threshold: 5.0, strict: False, error: None, "
        "reason: None) failed."
    )


def test_assert_test_in_deepeval_words_and_flaky_cases(
    here: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with env_judge(monkeypatch, HALF):
        with pytest.raises(AssertionError) as info:
            assert_test(test_case=CASE, metrics=[AnswerRelevancyMetric(threshold=0.7)])
        assert str(info.value).startswith(
            "Metrics: Answer Relevancy (score: 0.5, threshold: 0.7, strict: False, error: "
            "None, reason: 1 of 2 statements are relevant"
        )
        flaky = LLMTestCase(input=CASE.input, actual_output=CASE.actual_output, flaky=True)
        with pytest.warns(UserWarning, match="Flaky test case failed"):
            assert_test(flaky, [AnswerRelevancyMetric(threshold=0.7)], run_async=False)
        assert_test(CASE, [AnswerRelevancyMetric(threshold=0.5)])  # passes


def test_test_case_fields_deepeval_added(here: Path) -> None:
    case = LLMTestCase(input="q", name="first", tags=["smoke"], additional_metadata={"v": 1})
    assert case.actual_output is None and case.metadata == {"v": 1} and case.tags == ["smoke"]
    with pytest.raises(TypeError, match=r"LLMTestCase\.tags"):
        LLMTestCase(input="q", tags="smoke")  # type: ignore[arg-type]


def test_log_hyperparameters(here: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("oxyeval.testing._hyperparameters.LOGGED", dict(LOGGED))

    @log_hyperparameters
    def hyperparameters() -> dict[str, Any]:
        return {"temperature": 0.2, "chunk size": 500}

    result = evaluate(
        [CASE], [LengthMetric(100)], display_config=DisplayConfig(print_results=False)
    )
    assert result.hyperparameters == {"temperature": "0.2", "chunk size": "500"}


# -- datasets ---------------------------------------------------------------------------


def test_goldens_from_code_csv_json_and_jsonl(here: Path) -> None:
    (here / "g.csv").write_text(
        "input,expected_output,context,tools_called\n"
        "Q1,A1,c1|c2,search;calc\n"
        'Q2,,,"[{""name"": ""fetch"", ""input_parameters"": {""id"": 1}}]"\n',
        encoding="utf-8",
    )
    (here / "g.json").write_text(
        json.dumps([{"question": "Q3", "expected_output": "A3"}]), encoding="utf-8"
    )
    (here / "g.jsonl").write_text('{"input": "Q4"}\n\n{"input": "Q5"}\n', encoding="utf-8")
    dataset = EvaluationDataset(goldens=[Golden(input="Q0")])
    dataset.add_goldens_from_csv_file("g.csv")
    dataset.add_goldens_from_json_file("g.json", input_key_name="question")
    dataset.add_goldens_from_jsonl_file("g.jsonl")
    assert [g.input for g in dataset.goldens] == ["Q0", "Q1", "Q2", "Q3", "Q4", "Q5"]
    q1, q2 = dataset.goldens[1:3]
    assert q1.context == ["c1", "c2"] and [t.name for t in q1.tools_called or []] == [
        "search",
        "calc",
    ]
    assert q2.expected_output is None and q2.tools_called == [
        ToolCall(name="fetch", input_parameters={"id": 1})
    ]
    saved = dataset.save_as("json", str(here / "out"), file_name="copy")
    again = EvaluationDataset()
    again.add_goldens_from_json_file(saved)
    assert [g.input for g in again.goldens] == [g.input for g in dataset.goldens]


def test_a_bad_dataset_file_names_the_place(here: Path) -> None:
    (here / "bad.csv").write_text("question\nQ1\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad\.csv: line 2: no 'input'"):
        EvaluationDataset().add_goldens_from_csv_file("bad.csv")
    (here / "bad.json").write_text('[{"input": "q", "tools_called": 3}]', encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad\.json: item 0, tools_called: must be a list"):
        EvaluationDataset().add_goldens_from_json_file("bad.json")
    with pytest.raises(TypeError, match="not both"):
        EvaluationDataset(goldens=[Golden(input="q"), ConversationalGolden(scenario="s")])


# -- tracing ----------------------------------------------------------------------------


@observe(type="retriever")
def retrieve(question: str) -> list[str]:
    return [f"notes about {question}"]


@observe(type="llm", metrics=[LengthMetric(max_length=20)])
def generate(question: str, context: list[str]) -> str:
    update_current_span(input=question, retrieval_context=context)
    return "Short answer." if "short" in question else "A long answer that goes on and on."


@observe(type="agent")
def app(question: str) -> str:
    answer = generate(question, retrieve(question))
    update_current_trace(output=answer, metadata={"user": "u1"})
    return answer


def test_evals_iterator_scores_traces_and_spans(
    here: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dataset = EvaluationDataset(
        goldens=[
            Golden(input="short one", expected_output="Short answer."),
            Golden(input="long one"),
        ]
    )
    with env_judge(monkeypatch, by_prompt(default={"reason": "ok", "score": 10})) as server:
        for golden in dataset.evals_iterator(
            metrics=[correctness()], display_config=DisplayConfig(print_results=False)
        ):
            app(golden.input)
    result = dataset.last_result
    rows = [(t.input, [(d.name, d.success) for d in t.metrics_data]) for t in result.test_results]
    assert rows == [
        ("short one", [("Correctness [GEval]", True)]),
        ("short one", [("Length", True)]),
        ("long one", [("Correctness [GEval]", True)]),
        ("long one", [("Length", False)]),
    ]
    trace_case = result.test_results[0].test_case
    assert trace_case.expected_output == "Short answer." and trace_case.metadata == {"user": "u1"}
    assert result.test_results[1].test_case.retrieval_context == ["notes about short one"]
    assert len(server.requests) == 2  # the judge saw the two traces, never the spans


def test_assert_test_with_a_golden_scores_the_last_trace(here: Path) -> None:
    golden = Golden(input="long one")
    app(golden.input)
    with pytest.raises(AssertionError, match=r"^Metrics: Length \(score: 0"):
        assert_test(golden=golden)
    with pytest.raises(ValueError, match="nothing was traced"):
        assert_test(golden=golden)  # that trace was scored: a new one is needed
    app("short one")
    assert_test(golden=Golden(input="short one"))


def test_update_outside_a_span_is_an_error() -> None:
    with pytest.raises(RuntimeError, match="outside any @observe call"):
        update_current_span(output="x")


# -- images -----------------------------------------------------------------------------


def test_an_image_reaches_a_vision_judge_as_an_image_part(
    here: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    png = here / "cat.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\nfake")
    remote = MLLMImage(url="https://example.com/dog.jpg")
    case = LLMTestCase(
        input=f"What is in {MLLMImage(url=str(png))} and {remote}?",
        actual_output="A cat and a dog.",
    )
    assert case.multimodal
    with env_judge(monkeypatch, by_prompt(default={"reason": "ok", "score": 9})) as server:
        assert correctness().measure(case) == 0.9
    content = server.requests[0].body["messages"][0]["content"]
    assert [p["type"] for p in content] == ["text", "image_url", "image_url"]
    assert content[1]["image_url"]["url"].startswith("data:image/png;base64,")
    assert content[2]["image_url"]["url"] == "https://example.com/dog.jpg"
    assert "[image 1:" in content[0]["text"] and "[image 2:" in content[0]["text"]


def test_an_image_is_refused_by_a_judge_that_cannot_see(here: Path) -> None:
    from oxyeval.testing import MetricError

    (here / "config.yml").write_text(
        "models:\n  - name: judge\n    vendor: google\n    model_ref: gemini-x\n"
        "    api_url: http://127.0.0.1:9/v1beta\n",
        encoding="utf-8",
    )
    case = LLMTestCase(input=f"{MLLMImage(url='https://example.com/a.png')}", actual_output="x")
    with warnings.catch_warnings(), pytest.raises(MetricError, match="images only to OpenAI"):
        correctness().measure(case)


def test_an_image_reaches_claude_as_an_image_block(here: Path) -> None:
    from tests.fakes import fake_anthropic

    inline = MLLMImage(dataBase64="aGVsbG8=", mimeType="image/png")
    case = LLMTestCase(input=f"Describe {inline}", actual_output="A greeting.")
    with fake_anthropic(by_prompt(default={"reason": "ok", "score": 7})) as server:
        (here / "config.yml").write_text(
            "models:\n  - name: judge\n    vendor: anthropic\n    model_ref: claude-x\n"
            f"    api_url: {server.url}\n    max_retries: 0\n",
            encoding="utf-8",
        )
        assert correctness().measure(case) == 0.7
    blocks = server.requests[0].body["messages"][0]["content"]
    assert [b["type"] for b in blocks] == ["text", "image"]
    assert blocks[1]["source"] == {"type": "base64", "media_type": "image/png", "data": "aGVsbG8="}


def test_traces_exported_with_genai_attributes() -> None:
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from oxyeval.testing.tracing import export_to_otlp

    @observe(type="llm", model="gpt-4.1")
    def llm(prompt: str) -> str:
        update_current_span(metadata={"attempt": 1})
        return "42"

    @observe(type="agent", name="support")
    def agent(question: str) -> str:
        update_current_trace(tags=["smoke"])
        return llm(question)

    @observe(type="tool")
    def broken() -> None:
        raise ValueError("tool down")

    memory = InMemorySpanExporter()
    stop = export_to_otlp(exporter=memory, service_name="shop-bot")
    try:
        agent("what is 6*7?")
        with pytest.raises(ValueError):
            broken()
    finally:
        stop()
    agent("after stop")  # not exported
    spans = {s.name: s for s in memory.get_finished_spans()}
    assert set(spans) == {"support", "llm", "broken"}
    root, child, tool = spans["support"], spans["llm"], spans["broken"]
    assert child.parent.span_id == root.context.span_id and root.parent is None
    assert child.context.trace_id == root.context.trace_id != tool.context.trace_id
    assert child.attributes["gen_ai.operation.name"] == "chat"
    assert child.attributes["gen_ai.request.model"] == "gpt-4.1"
    assert child.attributes["oxyeval.span.output"] == "42"
    assert child.attributes["oxyeval.metadata.attempt"] == 1
    assert root.attributes["gen_ai.agent.name"] == "support"
    assert tuple(root.attributes["oxyeval.trace.tags"]) == ("smoke",)
    assert tool.status.status_code.name == "ERROR" and "tool down" in tool.status.description
    assert root.resource.attributes["service.name"] == "shop-bot"
    assert child.start_time >= root.start_time and child.end_time <= root.end_time


def test_test_cases_from_files(here: Path) -> None:
    (here / "cases.json").write_text(
        json.dumps([{"q": "Q1", "a": "A1", "gold": "A1"}, {"q": "Q2", "a": "A2"}]),
        encoding="utf-8",
    )
    (here / "cases.csv").write_text("question,answer\nQ3,A3\n", encoding="utf-8")
    dataset = EvaluationDataset()
    dataset.add_test_cases_from_json_file(
        "cases.json",
        input_key_name="q",
        actual_output_key_name="a",
        expected_output_key_name="gold",
    )
    dataset.add_test_cases_from_csv_file("cases.csv", "question", "answer")
    assert [(c.input, c.actual_output, c.expected_output) for c in dataset.test_cases] == [
        ("Q1", "A1", "A1"),
        ("Q2", "A2", None),
        ("Q3", "A3", None),
    ]
    (here / "no_output.json").write_text('[{"input": "q"}]', encoding="utf-8")
    with pytest.raises(ValueError, match=r"no_output\.json: test case 1 has no actual output"):
        dataset.add_test_cases_from_json_file("no_output.json", "input", "actual_output")
