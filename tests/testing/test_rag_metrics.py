"""Answer relevancy, faithfulness and contextual relevancy against a fake judge on
127.0.0.1: the exact arithmetic on scripted verdicts, the fields each reads, missing
fields, and a malformed answer asked again once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from oxyeval.testing import (
    AnswerRelevancyMetric,
    ContextualRelevancyMetric,
    ErrorConfig,
    FaithfulnessMetric,
    LLMTestCase,
    MetricError,
    MissingTestCaseParamsError,
    evaluate,
)
from tests.fakes import last_user_text
from tests.testing.test_judged import fake_openai, project, scripted

CASE = LLMTestCase(
    input="When was the Eiffel Tower built?",
    actual_output="It was built 1887-1889. It is in Paris. I like cheese.",
    retrieval_context=["The Eiffel Tower was built from 1887 to 1889.", "Paris is in France."],
)


def items(*texts: str, key: str = "statements") -> str:
    return json.dumps({key: list(texts)})


def verdicts(*labels: str) -> str:
    return json.dumps({"verdicts": [{"verdict": v, "reason": f"why {v}"} for v in labels]})


def test_answer_relevancy_counts_yes_and_idk(here: Path) -> None:
    replies = (items("built 1887-1889", "in Paris", "likes cheese", "tall"),)
    replies += (verdicts("yes", "idk", "no", "no"),)
    with fake_openai(scripted(*replies)) as server:
        project(here, server)
        metric = AnswerRelevancyMetric(threshold=0.6)
        assert metric.measure(CASE) == 0.5
    assert metric.success is False and metric.error is None
    assert metric.reason is not None and metric.reason.startswith("2 of 4 statements")
    assert "'likes cheese': why no" in metric.reason and "in Paris" not in metric.reason
    extract, judge = (last_user_text(r.body) for r in server.requests)
    assert "<text>\nIt was built 1887-1889." in extract and "Eiffel Tower built?" not in extract
    assert "<input>\nWhen was the Eiffel Tower built?\n</input>" in judge
    assert "3. likes cheese" in judge and "exactly 4 verdicts" in judge
    assert "Paris is in France" not in judge  # the retrieval context is not its business


def test_faithfulness_checks_claims_against_the_retrieval_context(here: Path) -> None:
    replies = (items("built 1887", "in Paris", "built by Romans", key="claims"),)
    replies += (verdicts("yes", "idk", "no"),)
    with fake_openai(scripted(*replies)) as server:
        project(here, server)
        metric = FaithfulnessMetric()
        assert metric.measure(CASE) == pytest.approx(2 / 3)
    assert metric.success is True and "'built by Romans': why no" in (metric.reason or "")
    judge = last_user_text(server.requests[1].body)
    assert "1. The Eiffel Tower was built from 1887 to 1889.\n2. Paris is in France." in judge
    assert "3. built by Romans" in judge


def test_contextual_relevancy_counts_only_yes(here: Path) -> None:
    replies = (items("built 1887-1889", "Paris is in France", "x", "y", "z"),)
    replies += (verdicts("yes", "no", "yes", "no", "no"),)
    with fake_openai(scripted(*replies)) as server:
        project(here, server)
        metric = ContextualRelevancyMetric()
        assert metric.measure(CASE) == 0.4
    extract = last_user_text(server.requests[0].body)
    assert "1887 to 1889.\n\nParis is in France." in extract
    assert "I like cheese" not in extract  # reads the context, not the output


@pytest.mark.parametrize(
    ("metric", "score"),
    [
        (AnswerRelevancyMetric(), 1.0),
        (FaithfulnessMetric(), 1.0),
        (ContextualRelevancyMetric(), 0.0),
    ],
)
def test_nothing_extracted(here: Path, metric: AnswerRelevancyMetric, score: float) -> None:
    key = "claims" if isinstance(metric, FaithfulnessMetric) else "statements"
    with fake_openai(scripted(items(key=key))) as server:
        project(here, server)
        assert metric.measure(CASE) == score
    assert len(server.requests) == 1  # no verdict call for no items


def test_an_empty_output_is_not_sent(here: Path) -> None:
    with fake_openai(scripted("{}")) as server:
        project(here, server)
        assert AnswerRelevancyMetric().measure(LLMTestCase("q", "  ")) == 1.0
    assert server.requests == []


@pytest.mark.parametrize("metric", [FaithfulnessMetric(), ContextualRelevancyMetric()])
def test_a_missing_retrieval_context_is_named(here: Path, metric: FaithfulnessMetric) -> None:
    with fake_openai(scripted("{}")) as server:
        project(here, server)
        with pytest.raises(MissingTestCaseParamsError, match="needs the test case's retrieval_c"):
            metric.measure(LLMTestCase("q", "a"))
    assert server.requests == []


def test_a_wrong_verdict_count_is_asked_again_once(here: Path) -> None:
    replies = (items("a", "b", "c"), verdicts("yes", "no"), verdicts("yes", "no", "no"))
    with fake_openai(scripted(*replies)) as server:
        project(here, server)
        assert AnswerRelevancyMetric().measure(CASE) == pytest.approx(1 / 3)
    assert len(server.requests) == 3
    retry = server.requests[2].body["messages"][-1]["content"]
    assert "could not be used" in retry and "verdicts" in retry


def test_an_unknown_label_twice_is_a_metric_error(here: Path) -> None:
    replies = (items("a"), verdicts("maybe"))
    with fake_openai(scripted(*replies)) as server:
        project(here, server)
        metric = AnswerRelevancyMetric(threshold=0.0)
        with pytest.raises(MetricError, match=r"Answer Relevancy: .*no usable JSON twice"):
            metric.measure(CASE)
        result = evaluate(
            [CASE],
            [AnswerRelevancyMetric(threshold=0.0)],
            print_results=False,
            error_config=ErrorConfig(ignore_errors=True),
        )
    assert metric.success is False and metric.score is None
    assert result.success is False and result.test_results[0].metrics_data[0].error
