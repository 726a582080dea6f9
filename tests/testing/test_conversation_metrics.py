"""Conversation relevancy (its sliding window), role adherence and consistency against
a fake judge on 127.0.0.1: exact arithmetic on scripted verdicts, batching, missing
fields, a malformed answer asked again once, identical outputs never judged (consistency
is the core's scorer: one consistency-rubric verdict per distinct pair)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from oxyeval.testing import (
    ConsistencyMetric,
    ConversationalTestCase,
    ConversationRelevancyMetric,
    LLMTestCase,
    MissingTestCaseParamsError,
    RoleAdherenceMetric,
    evaluate,
)
from tests.fakes import RecordedRequest, judge_reply, last_user_text
from tests.testing.test_judged import fake_openai, project, scripted

JUDGED = re.compile(r'<judged>\n<turn number="(\d+)">')
LISTED = re.compile(r'^\d+\. <turn number="(\d+)">', re.MULTILINE)


def conversation(n: int, role: str | None = None) -> ConversationalTestCase:
    turns = [
        LLMTestCase(input=f"user says {k}", actual_output=f"bot says {k}") for k in range(1, n + 1)
    ]
    return ConversationalTestCase(turns, chatbot_role=role)


def by_turn(bad: set[int], pattern: re.Pattern[str]) -> Callable[[RecordedRequest], str]:
    """Answer yes for every judged turn in the prompt except those in ``bad``."""

    def answer(request: RecordedRequest) -> str:
        turns = [int(t) for t in pattern.findall(last_user_text(request.body))]
        labels = ["no" if t in bad else "yes" for t in turns]
        return json.dumps({"verdicts": [{"verdict": v, "reason": f"r{v}"} for v in labels]})

    return answer


def test_conversation_relevancy_arithmetic_and_window(here: Path) -> None:
    with fake_openai(by_turn({2, 5}, JUDGED)) as server:
        project(here, server)
        metric = ConversationRelevancyMetric(window_size=2)
        assert metric.measure(conversation(5)) == 0.6
    assert metric.reason is not None and metric.reason.startswith("3 of 5 turns are relevant")
    assert "'turn 2': rno" in metric.reason and "'turn 5': rno" in metric.reason
    (request,) = server.requests  # five turns, one call
    prompt = last_user_text(request.body)
    windows = re.findall(r"<previous_turns>\n(.*?)\n</previous_turns>", prompt, re.DOTALL)
    shown = [[int(t) for t in re.findall(r'<turn number="(\d+)">', w)] for w in windows]
    assert shown == [[], [1], [1, 2], [2, 3], [3, 4]]  # turn k sees k-2..k-1 only
    assert "(none: the conversation starts)" in windows[0]
    assert "user says 4" in windows[4] and "user says 2" not in windows[4]


def test_window_zero_shows_no_previous_turns(here: Path) -> None:
    with fake_openai(by_turn(set(), JUDGED)) as server:
        project(here, server)
        assert ConversationRelevancyMetric(window_size=0).measure(conversation(3)) == 1.0
    prompt = last_user_text(server.requests[0].body)
    assert prompt.count("(none: the conversation starts)") == 3


def test_long_conversations_are_judged_in_batches(here: Path) -> None:
    with fake_openai(by_turn({1, 21, 45}, JUDGED)) as server:
        project(here, server)
        assert ConversationRelevancyMetric().measure(conversation(45)) == pytest.approx(42 / 45)
    sizes = sorted(len(JUDGED.findall(last_user_text(r.body))) for r in server.requests)
    assert sizes == [5, 20, 20]


def test_window_size_is_checked() -> None:
    with pytest.raises(ValueError, match="window_size must be an int >= 0"):
        ConversationRelevancyMetric(window_size=-1)


def test_role_adherence_arithmetic_and_prompt(here: Path) -> None:
    case = conversation(4, role="a polite pirate who only talks about ships")
    with fake_openai(by_turn({3}, LISTED)) as server:
        project(here, server)
        metric = RoleAdherenceMetric(threshold=0.8)
        assert metric.measure(case) == 0.75
    assert metric.success is False and "'turn 3': rno" in (metric.reason or "")
    prompt = last_user_text(server.requests[0].body)
    assert "<chatbot_role>\na polite pirate who only talks about ships\n</chatbot_role>" in prompt
    assert "exactly 4 verdicts" in prompt and "bot says 4" in prompt


def test_role_adherence_needs_a_role(here: Path) -> None:
    with fake_openai(scripted("{}")) as server:
        project(here, server)
        with pytest.raises(MissingTestCaseParamsError, match="needs the test case's chatbot_role"):
            RoleAdherenceMetric().measure(conversation(2))
        with pytest.raises(TypeError, match="measures a ConversationalTestCase"):
            RoleAdherenceMetric().measure(LLMTestCase("q", "a"))  # type: ignore[arg-type]
    assert server.requests == []


def test_a_short_verdict_list_is_asked_again_once(here: Path) -> None:
    short = json.dumps({"verdicts": [{"verdict": "yes", "reason": "r"}]})
    full = json.dumps(
        {"verdicts": [{"verdict": "yes", "reason": "r"}, {"verdict": "no", "reason": "r"}]}
    )
    with fake_openai(scripted(short, full)) as server:
        project(here, server)
        assert RoleAdherenceMetric().measure(conversation(2, role="r")) == 0.5
    assert len(server.requests) == 2


def outputs(*texts: str, same_input: bool = True) -> ConversationalTestCase:
    return ConversationalTestCase(
        [
            LLMTestCase(input="q" if same_input else f"q{i}", actual_output=t)
            for i, t in enumerate(texts)
        ]
    )


SUBMISSION = re.compile(r"\[Submission (\d)\]\n(.*?)\n\[End of submission \1\]", re.DOTALL)


def submissions(request: RecordedRequest) -> frozenset[str]:
    """The two outputs a consistency judge call compares."""
    return frozenset(text for _, text in SUBMISSION.findall(last_user_text(request.body)))


def by_pair(*inconsistent: tuple[str, str]) -> Callable[[RecordedRequest], object]:
    """The consistency rubric's verdict on each pair: B for the pairs named, else A, in
    the form the request asked for (structured or text)."""
    bad = {frozenset(pair) for pair in inconsistent}

    def answer(request: RecordedRequest) -> object:
        choice = "B" if submissions(request) in bad else "A"
        return judge_reply(choice, f"verdict {choice}")(request)

    return answer


def test_consistency_judges_each_distinct_pair_once(here: Path) -> None:
    # A A B A: 6 pairs; 3 A-A pairs are identical (not judged); A-B judged once, counts 3
    with fake_openai(by_pair(("Paris", "Lyon"))) as server:
        project(here, server)
        metric = ConsistencyMetric()
        assert metric.measure(outputs("Paris", "Paris", "Lyon", " Paris\n")) == 0.5
    assert metric.reason is not None and metric.reason.startswith("3 of 6 pairs")
    assert "inconsistent: outputs 1 and 3: verdict B" in metric.reason
    (request,) = server.requests
    assert submissions(request) == {"Paris", "Lyon"}
    assert "Question: q" in last_user_text(request.body)  # the input is the question


def test_consistency_arithmetic_over_distinct_outputs(here: Path) -> None:
    with fake_openai(by_pair(("a", "c"))) as server:
        project(here, server)
        assert ConsistencyMetric().measure(outputs("a", "b", "c")) == pytest.approx(2 / 3)
    assert sorted(sorted(submissions(r)) for r in server.requests) == [
        ["a", "b"],
        ["a", "c"],
        ["b", "c"],
    ]


@pytest.mark.parametrize("texts", [("same", "same", "same "), ("only",)])
def test_identical_outputs_are_not_judged(here: Path, texts: tuple[str, ...]) -> None:
    with fake_openai(scripted("Answer: B")) as server:
        project(here, server)
        assert ConsistencyMetric(strict_mode=True).measure(outputs(*texts)) == 1.0
    assert server.requests == []


def test_consistency_needs_one_input_and_few_outputs() -> None:
    with pytest.raises(ValueError, match=r"turns\[1\]\.input differs"):
        ConsistencyMetric().measure(outputs("a", "b", same_input=False))
    with pytest.raises(ValueError, match="at most 20 distinct outputs, got 21"):
        ConsistencyMetric().measure(outputs(*(str(i) for i in range(21))))


def test_consistency_malformed_reply_is_asked_again_in_evaluate(here: Path) -> None:
    with fake_openai(scripted("consistent!", "Same facts.\nAnswer: A")) as server:
        project(here, server, "judge:\n  structured: off\n")
        result = evaluate([outputs("x", "y")], [ConsistencyMetric()], print_results=False)
    (data,) = result.test_results[0].metrics_data
    assert data.score == 1.0 and data.error is None and len(server.requests) == 2
