from __future__ import annotations

import asyncio

import pytest

from oxyeval.judge.judge import (
    DEFAULT_CONSISTENCY_PROMPT,
    REASK_MESSAGE,
    Judge,
    parse_verdict,
)
from oxyeval.project.templates import TemplateRef
from oxyeval.providers import Model, ModelSpec
from oxyeval.providers.mock import MockAPI

VERDICTS = [
    ("A", "A"),
    ("B", "B"),
    ("Answer: A", "A"),
    ("answer: b", "B"),  # a lone lower-case letter after the keyword is a verdict...
    ("The answer is a bit odd.", None),  # ...but mid-sentence "a" is an article
    ('{"answer": "A"}', "A"),
    ("answer = 'B'", "B"),
    ("[[B]]", "B"),
    ("Consistent (A)", "A"),
    ("Verdict: **A** (consistent)", "A"),
    ("<think>maybe Answer: B</think>\nAnswer: A", "A"),
    ("Answer:\nB", "B"),
    ("**Answer:** B", "B"),
    ("**Answer: A**", "A"),
    ("Answer: **B**", "B"),
    ("(B)", "B"),
    ("[A]", "A"),
    ("A.", "A"),
    ("B!", "B"),
    ("`A`", "A"),
    ("### Verdict: B", "B"),
    ("Final answer: (A)", "A"),
    ("Final Verdict - B", "B"),
    ("The totals match.\nAnswer: A", "A"),
    ("Both mention B-tier stores.\n\nAnswer: A", "A"),
    ("Answer: A\n\nNote: had the gap been larger I would say B.", "A"),
    ("First I thought Answer: A.\nOn reflection, Answer: B", "B"),
    ("Answer: A (consistent)", "A"),
    ("Answer: B - the totals differ", "B"),
    ("Same totals. Answer: A", "A"),
    ("A - both say 42", "A"),
    ("B: they disagree", "B"),
    ("$\\boxed{B}$", "B"),
    ("The answer is A because both report 42.", "A"),
    ("A key point is that both agree", None),
    ("consistent", None),
    ("Answer: C", None),
    ("Answer: AB", None),
    ("", None),
    ("I cannot decide.", None),
    # An explicit verdict is not flipped by a later passing mention.
    ("Answer: A. (Had the numbers differed I would answer B.)", "A"),
    # Option lists are not choices; an explicit pick after them is.
    ("A) consistent\nB) inconsistent", None),
    ("A) consistent\nB) inconsistent\nI pick A", "A"),
    # Ambiguous replies give no verdict.
    ("Answer: A or B? Hard to say.", None),
    ("Answer: A/B", None),
    # Other languages, full-width colons, tags.
    ("Réponse : A", "A"),
    ("Answer：B", "B"),
    ("<answer>B</answer>", "B"),
    ("> **Answer:** A", "A"),
]


@pytest.mark.parametrize(("text", "choice"), VERDICTS)
def test_parse_verdict(text: str, choice: str | None) -> None:
    verdict = parse_verdict(text)
    assert (verdict.choice if verdict else None) == choice


def test_reasoning_is_text_before_the_verdict() -> None:
    verdict = parse_verdict("Both report 1,204 users.\nOnly wording differs.\n**Answer:** A")
    assert verdict is not None
    assert verdict.reasoning == "Both report 1,204 users.\nOnly wording differs."
    bare = parse_verdict("Answer: B")
    assert bare is not None and bare.reasoning == ""


def _judge(rules: list[dict], outputs: list[str] | None = None) -> tuple[Judge, MockAPI]:
    options: dict = {"rules": rules}
    if outputs:
        options["outputs"] = outputs
    api = MockAPI(ModelSpec(name="j", vendor="mock", options=options))
    return Judge(Model(api)), api


def test_default_prompt_renders_all_variables() -> None:
    judge, _ = _judge([{"match": ".", "output": "A"}])
    text = judge.render("How many?", "forty-two", "42")
    assert "How many?" in text and "forty-two" in text and "42" in text
    assert "Answer: A" in DEFAULT_CONSISTENCY_PROMPT and "0.1%" in DEFAULT_CONSISTENCY_PROMPT


def test_no_verdict_is_asked_again_once() -> None:
    # First reply has no verdict; the re-ask message matches the second rule.
    judge, _ = _judge(
        [
            {"match": "did not end with a verdict", "output": "Answer: B"},
            {"match": ".", "output": "They look similar to me."},
        ]
    )
    result = asyncio.run(judge.compare("q", "x", "y"))
    assert result.choice == "B"
    assert result.calls == 2
    assert result.reasoning == "They look similar to me."
    assert REASK_MESSAGE.startswith("Your reply did not end with a verdict")


def test_still_no_verdict_is_a_judge_error_not_a_guess() -> None:
    judge, _ = _judge([{"match": ".", "output": "Hmm, hard to say."}])
    result = asyncio.run(judge.compare("q", "x", "y"))
    assert result.choice is None
    assert result.calls == 2
    assert result.error is not None and "no verdict" in result.error


def test_provider_failure_is_a_judge_error() -> None:
    judge, _ = _judge([{"match": ".", "error": "judge down"}])
    result = asyncio.run(judge.compare("q", "x", "y"))
    assert result.choice is None
    assert result.error is not None and "judge down" in result.error


def test_custom_prompt_is_used() -> None:
    judge, _ = _judge(
        [{"match": "^STRICT", "output": "Answer: B"}, {"match": ".", "output": "Answer: A"}]
    )
    judge.prompt = TemplateRef("STRICT {{ submission_1 }} | {{ submission_2 }}")
    assert asyncio.run(judge.compare("q", "x", "y")).choice == "B"
