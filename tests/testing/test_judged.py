"""The JSON judge and GEval against a fake OpenAI server on 127.0.0.1: structured
output, JSON read from text, one re-ask, judge failures as metric errors, the pool's
life per event loop and the concurrency limits of evaluate and of the model."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from oxyeval.testing import (
    ErrorConfig,
    GEval,
    JudgeError,
    LLMTestCase,
    LLMTestCaseParams,
    MetricError,
    MissingTestCaseParamsError,
    _judge,
    ask_json,
    close_judges,
    evaluate,
    parse_json_object,
)
from tests.fakes import FakeServer, RecordedRequest, fake_openai, last_user_text

CASE = LLMTestCase(input="What is 2+2?", actual_output="4", expected_output="4")
SCHEMA = {
    "type": "object",
    "properties": {"score": {"type": "integer", "minimum": 0, "maximum": 10}},
    "required": ["score"],
    "additionalProperties": False,
}


def project(tmp_path: Path, server: FakeServer, extra: str = "", concurrency: int = 16) -> None:
    (tmp_path / "config.yml").write_text(
        "models:\n"
        f"  - name: judge\n    vendor: openai\n    model_ref: j\n    api_url: {server.url}\n"
        f"    max_retries: 0\n    concurrency: {concurrency}\n" + extra,
        encoding="utf-8",
    )


def scripted(*replies: str) -> Callable[[RecordedRequest], str]:
    """Answer each request with the next reply; the last one repeats."""
    queue = list(replies)
    lock = threading.Lock()

    def answer(request: RecordedRequest) -> str:
        with lock:
            return queue.pop(0) if len(queue) > 1 else queue[0]

    return answer


def geval(**kw: object) -> GEval:
    return GEval(
        "Correctness",
        criteria="The actual output answers the input correctly.",
        evaluation_params=[LLMTestCaseParams.INPUT, LLMTestCaseParams.ACTUAL_OUTPUT],
        **kw,  # type: ignore[arg-type]
    )


def test_geval_structured_output(here: Path) -> None:
    with fake_openai(scripted('{"reason": "Correct sum.", "score": 7}')) as server:
        project(here, server)
        metric = geval()
        assert metric.measure(CASE) == 0.7
    assert metric.reason == "Correct sum." and metric.success is True and metric.error is None
    (request,) = server.requests
    asked = request.body["response_format"]
    assert asked["type"] == "json_schema"
    # bounds are checked here, not sent: not every vendor's structured output takes them
    assert asked["json_schema"]["schema"]["properties"]["score"] == {"type": "integer"}
    prompt = last_user_text(request.body)
    assert "<input>\nWhat is 2+2?\n</input>" in prompt and "<actual_output>\n4\n" in prompt
    assert "expected_output" not in prompt and "Criteria:\nThe actual output answers" in prompt


TEXT_ONLY = "judge:\n  structured: off\n"


@pytest.mark.parametrize(
    "reply",
    [
        '{"reason": "fine", "score": 1}',
        'Here is my grade:\n```json\n{"reason": "fine", "score": 1}\n```\nThanks.',
        'My answer is {"reason": "fine", "score": 1} as asked.',
    ],
)
def test_json_read_from_text(here: Path, reply: str) -> None:
    with fake_openai(scripted(reply)) as server:
        project(here, server, TEXT_ONLY)
        assert geval(strict_mode=True).measure(CASE) == 1.0
    (request,) = server.requests
    assert "response_format" not in request.body


def test_a_malformed_reply_is_asked_again_once(here: Path) -> None:
    with fake_openai(scripted("score: seven", '{"reason": "ok", "score": 3}')) as server:
        project(here, server, TEXT_ONLY)
        metric = geval()
        assert metric.measure(CASE) == 0.3
    assert metric.success is False and metric.error is None
    _, second = server.requests
    messages = second.body["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[1]["content"] == "score: seven"
    assert "could not be used: the reply held no JSON object" in messages[2]["content"]


def test_an_out_of_range_score_is_asked_again(here: Path) -> None:
    with fake_openai(
        scripted('{"reason": "great", "score": 11}', '{"reason": "ok", "score": 9}')
    ) as server:
        project(here, server)
        assert geval().measure(CASE) == 0.9
    retry = server.requests[1].body["messages"][-1]["content"]
    assert "at score: 11 is greater than the maximum of 10" in retry


def test_malformed_twice_is_a_metric_error_never_a_pass(here: Path) -> None:
    with fake_openai(scripted("no idea")) as server:
        project(here, server, TEXT_ONLY)
        metric = geval(threshold=0.0)
        with pytest.raises(MetricError, match="gave no usable JSON twice") as info:
            metric.measure(CASE)
    assert len(server.requests) == 2
    assert metric.success is False and metric.score is None
    assert metric.error is not None and "'no idea'" in metric.error
    assert "Correctness" in str(info.value)


def test_evaluate_reports_a_judge_error_as_an_error(here: Path) -> None:
    with fake_openai(scripted("nope")) as server:
        project(here, server, TEXT_ONLY)
        result = evaluate(
            [CASE],
            [geval(threshold=0.0)],
            print_results=False,
            error_config=ErrorConfig(ignore_errors=True),
        )
    (data,) = result.test_results[0].metrics_data
    assert data.error and "no usable JSON" in data.error and data.success is False
    assert result.success is False


def test_a_refusal_of_structured_output_is_learnt_once_per_run(
    here: Path, caplog: pytest.LogCaptureFixture
) -> None:
    other = LLMTestCase(input="What is 3+3?", actual_output="6")
    with (
        caplog.at_level(logging.WARNING, logger="oxyeval.judge"),
        fake_openai(scripted('{"reason": "ok", "score": 5}'), structured=False) as server,
    ):
        project(here, server)
        result = evaluate([CASE, other], [geval()], concurrency=1, print_results=False)
        assert [t.metrics_data[0].score for t in result.test_results] == [0.5, 0.5]
        first = ["response_format" in r.body for r in server.requests]
        later = LLMTestCase(input="What is 4+4?", actual_output="8")
        evaluate([later], [geval()], print_results=False)  # a run of its own
        second = ["response_format" in r.body for r in server.requests[len(first) :]]
    # Each structured form an OpenAI-compatible server may take is refused once, then
    # text only for the run.
    assert first == [True, True, True, False, False]
    # A new run has its own session but the project's cache: it starts in text at once.
    assert second == [False]
    assert any("as an earlier run learnt" in r.getMessage() for r in caplog.records)
    notes = [r for r in caplog.records if "refused the structured answer" in r.getMessage()]
    assert len(notes) == 1  # said once, by the run that learnt it


def test_a_failed_call_is_a_metric_error_without_the_key(
    here: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JUDGE_KEY", "sk-wrong-0123456789abcdef")
    with fake_openai(scripted("{}"), api_key="sk-right") as server:
        project(here, server)
        text = (
            (here / "config.yml")
            .read_text("utf-8")
            .replace("    max_retries", "    key_var: JUDGE_KEY\n    max_retries")
        )
        (here / "config.yml").write_text(text, "utf-8")
        metric = geval()
        with pytest.raises(MetricError) as info:
            metric.measure(CASE)
    assert "401" in str(info.value) or "API key" in str(info.value)
    assert "sk-wrong-0123456789abcdef" not in str(info.value)
    assert metric.error and "sk-wrong-0123456789abcdef" not in metric.error


def test_ask_json_needs_a_judge_and_a_known_model(
    here: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(JudgeError, match="OPENAI_API_KEY"):  # no project: the environment's
        asyncio.run(ask_json(None, "grade", SCHEMA))
    with fake_openai(scripted('{"score": 1}')) as server:
        project(here, server)
        assert asyncio.run(ask_json(None, "grade", SCHEMA)) == {"score": 1}
        with pytest.raises(JudgeError, match=r"'other' is not a model of config\.yml \(judge\)"):
            asyncio.run(ask_json("other", "grade", SCHEMA))


def test_one_pool_per_loop_closed_at_the_loop_end_or_on_request(here: Path) -> None:
    seen: list[object] = []

    async def main() -> None:
        await ask_json(None, "a", SCHEMA)
        await ask_json(None, "b", SCHEMA)
        state = _judge._STATES[asyncio.get_running_loop()]
        (entry,) = state.contexts.values()
        seen.append(entry.models)
        assert entry.models._client is not None  # one client, open, shared by both calls
        await close_judges()
        assert state.contexts == {} and entry.models._client is None
        await ask_json(None, "c", SCHEMA)  # a new pool
        (again,) = state.contexts.values()
        seen.append(again.models)

    with fake_openai(scripted('{"score": 2}')) as server:
        project(here, server)
        asyncio.run(main())
    first, second = seen
    assert first is not second
    assert second._client is None  # asyncio.run's end closed it  # type: ignore[attr-defined]
    assert len(server.requests) == 3


def test_a_judged_measure_inside_a_running_loop(here: Path) -> None:
    async def main() -> float:
        return geval().measure(CASE)  # worker thread, its own loop and pool

    with fake_openai(scripted('{"reason": "r", "score": 4}')) as server:
        project(here, server)
        assert asyncio.run(main()) == 0.4


@pytest.mark.parametrize(("limit", "model_limit", "most"), [(2, 16, 2), (8, 1, 1)])
def test_evaluate_respects_its_concurrency_and_the_models(
    here: Path, limit: int, model_limit: int, most: int
) -> None:
    with fake_openai(scripted('{"reason": "r", "score": 6}'), latency=0.2) as server:
        project(here, server, concurrency=model_limit)
        cases = [LLMTestCase(input=f"q{i}", actual_output="a") for i in range(6)]
        result = evaluate(cases, [geval()], concurrency=limit, print_results=False)
    assert all(t.success for t in result.test_results)
    assert len(server.requests) == 6
    assert server.max_in_flight == most


def test_geval_arguments() -> None:
    with pytest.raises(ValueError, match="needs criteria or evaluation_steps"):
        GEval("x", evaluation_params=[LLMTestCaseParams.INPUT])
    with pytest.raises(ValueError, match="unknown 'answer'"):
        GEval("x", criteria="c", evaluation_params=["answer"])  # type: ignore[list-item]
    metric = GEval(
        "x",
        criteria="c",
        evaluation_steps=["Check the sum", "Check the units"],
        evaluation_params=[LLMTestCaseParams.EXPECTED_OUTPUT, LLMTestCaseParams.CONTEXT],
    )
    with pytest.raises(
        MissingTestCaseParamsError, match=r"x \[GEval\] needs the test case.s context"
    ):
        metric.measure(CASE)


def test_geval_steps_win_over_criteria(here: Path) -> None:
    with fake_openai(scripted('{"reason": "r", "score": 8}')) as server:
        project(here, server)
        GEval(
            "x",
            criteria="ignored",
            evaluation_steps=["Check the sum"],
            evaluation_params=[LLMTestCaseParams.EXPECTED_OUTPUT],
        ).measure(CASE)
    prompt = last_user_text(server.requests[0].body)
    assert "1. Check the sum" in prompt and "ignored" not in prompt


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ('{"a": 1}', {"a": 1}),
        ('```\n{"a": 1}\n```', {"a": 1}),
        ('so: {"a": {"b": 2}} ok', {"a": {"b": 2}}),
        ("[1, 2]", None),
        ("{not json}", None),
        ("", None),
    ],
)
def test_parse_json_object(text: str, value: object) -> None:
    assert parse_json_object(text) == value


def test_the_judge_prompt_is_json_serialisable_for_tools(here: Path) -> None:
    from oxyeval.testing import ToolCall

    case = LLMTestCase("q", "a", tools_called=[ToolCall("search", input_parameters={"q": 1})])
    with fake_openai(scripted('{"reason": "r", "score": 8}')) as server:
        project(here, server)
        GEval("t", criteria="c", evaluation_params=[LLMTestCaseParams.TOOLS_CALLED]).measure(case)
    prompt = last_user_text(server.requests[0].body)
    start = prompt.index("<tools_called>\n") + len("<tools_called>\n")
    shown = json.loads(prompt[start : prompt.index("\n</tools_called>")])
    assert shown[0]["name"] == "search" and shown[0]["input_parameters"] == {"q": 1}
