"""Every parser table of tests/judge, run for every built-in rubric.

The consistency tables (test_judge, test_verdicts, test_verdict_last) are rewritten with
the rubric's labels in place of A and B (PASS/FAIL; 4 and 2 on the 1-5 scale), full-width
forms included, and read against the consistency prompt with the same substitution: each
safeguard (echoed option lists, quoted verdicts, instruction lines, NFKC, retractions)
must hold for every rubric. Then the cases only one rubric has.
"""

from __future__ import annotations

import re

import pytest

from oxyeval.judge import CONSISTENCY, DEFAULT_CONSISTENCY_PROMPT, PASS_FAIL, SCALE_1_5, Rubric
from oxyeval.judge.judge import parse_verdict

from .test_judge import VERDICTS
from .test_verdict_last import CHANGED_MIND, NO_VERDICT, NOT_A_CHANGE
from .test_verdicts import ECHOES, READ

RUBRICS: list[tuple[Rubric, dict[str, str]]] = [
    (CONSISTENCY, {"A": "A", "B": "B"}),
    (PASS_FAIL, {"A": "PASS", "B": "FAIL"}),
    (SCALE_1_5, {"A": "4", "B": "2"}),
]

TABLE: list[tuple[str, str | None]] = [
    *VERDICTS,
    *READ,
    *((text, None) for text in ECHOES),
    *CHANGED_MIND,
    *NOT_A_CHANGE,
    *((text, None) for text in NO_VERDICT),
]

#: Rows whose meaning depends on the labels being letters or words, per rubric: on a
#: scale "4. No, 2." opens a numbered list ("4." is list numbering, not a grade), so
#: the "A. No, B." retraction has no verdict to take back.
LETTERS_ONLY = {("scale_1_5", "A. No, B.")}


def _wide(text: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) for c in text)


def substitute(text: str, labels: dict[str, str]) -> str:
    """A and B as verdicts (not inside words) become the rubric's labels; the lone
    lower-case "answer: b" its lower-case label; full-width Ａ/Ｂ full-width labels."""
    text = re.sub(r"(?<![A-Za-z0-9])([AB])(?![A-Za-z0-9])", lambda m: labels[m.group(1)], text)
    text = re.sub(r"(?<=: )([ab])$", lambda m: labels[m.group(1).upper()].lower(), text)
    return re.sub(
        r"(?<![Ａ-Ｚａ-ｚ])([ＡＢ])(?![Ａ-Ｚａ-ｚ])",
        lambda m: _wide(labels[chr(ord(m.group(1)) - 0xFEE0)]),
        text,
    )


CASES = [
    (rubric, labels, substitute(text, labels), labels[choice] if choice else None)
    for rubric, labels in RUBRICS
    for text, choice in TABLE
    if (rubric.name, text) not in LETTERS_ONLY
]


@pytest.mark.parametrize(("rubric", "labels", "text", "choice"), CASES)
def test_every_table_row_holds_for_every_rubric(
    rubric: Rubric, labels: dict[str, str], text: str, choice: str | None
) -> None:
    instructions = substitute(DEFAULT_CONSISTENCY_PROMPT, labels)
    verdict = rubric.parse(text, instructions)
    assert (verdict.choice if verdict else None) == choice, text
    # The same through the public function with the rubric given.
    again = parse_verdict(text, instructions, rubric=rubric)
    assert (again.choice if again else None) == choice


def test_the_substitution_really_changes_the_rows() -> None:
    # Guards the table above: a substitution that did nothing would test A/B three times.
    # Every row with a verdict names it, so every such row changes.
    for text, choice in TABLE:
        if choice is not None:
            assert substitute(text, {"A": "PASS", "B": "FAIL"}) != text, text
    assert substitute("Ａｎｓｗｅｒ：Ｂ", {"A": "4", "B": "2"}) == "Ａｎｓｗｅｒ：２"
    assert substitute("answer: b", {"A": "PASS", "B": "FAIL"}) == "answer: fail"
    assert substitute("Answer: AB", {"A": "4", "B": "2"}) == "Answer: AB"


def test_the_consistency_rubric_reads_exactly_as_parse_verdict_always_did() -> None:
    for text, choice in TABLE:
        verdict = parse_verdict(text)
        assert (verdict.choice if verdict else None) == choice, text
        by_rubric = CONSISTENCY.parse(text)
        assert by_rubric == verdict


# -- PASS/FAIL only ---------------------------------------------------------------------

PASS_FAIL_CASES = [
    ("The answer gives the right date.\nVerdict: PASS", "PASS"),
    # Words match in any case: judges write "Pass" and "fail." too.
    ("Verdict: pass", "PASS"),
    ("Verdict: Fail", "FAIL"),
    ("**Verdict:** FAIL", "FAIL"),
    ("fail.", "FAIL"),
    ("Result: PASS", "PASS"),
    ("Verdict: FAIL - the date is wrong", "FAIL"),
    ("The date is right, so it passes. PASS", "PASS"),
    ("Everything checks out; pass", "PASS"),
    ("Verdict: PASS. Actually, FAIL.", "FAIL"),
    # Echoed option lists in every spelling the prompt or a spec uses.
    ("Verdict: PASS/FAIL", None),
    ("Verdict: PASS|FAIL", None),
    ("PASS or FAIL", None),
    ("Verdict: PASS\nVerdict: FAIL", None),
    # The rubric's own prompt tail and re-ask, echoed.
    ("Then write the verdict alone on the last line, exactly one of:\nVerdict: PASS", None),
    ("Reply with exactly one line: 'Verdict: PASS' if the answer meets the criterion", None),
    # Quoted or conditional verdicts are mentions.
    ('"Verdict: FAIL"', None),
    ("Verdict: PASS if it meets the criterion", None),
    # Inflected words and other rubrics' labels are not labels.
    ("The answer passes.", None),
    ("It fails the criterion.", None),
    ("Verdict: PASSED", None),
    ("I pass on this one.", None),
    ("Verdict: A", None),
]

SCALE_CASES = [
    ("Score: 4", "4"),
    ("Rating: 5", "5"),
    ("Grade: 2", "2"),
    ("Final score - 1", "1"),
    ("Score: 4 (minor gaps)", "4"),
    ("**Score:** 3/5", "3"),
    ("\\boxed{4}", "4"),
    ("Ｓｃｏｒｅ：４", "4"),
    # The scale's maximum after a grade is part of it: "4/5", "4 out of 5".
    ("Score: 4/5", "4"),
    ("Score: 5/5", "5"),
    ("Score: 4 out of 5", "4"),
    ("4/5", "4"),
    # Without a keyword: a grade with its maximum anywhere, or "give it a N".
    ("I'd give it a 4 out of 5.", "4"),
    ("I'd give it a 4.", "4"),
    ("Accurate and complete. 5", "5"),
    ("4 - good, but misses the year", "4"),
    ("Score: 4. No, 3.", "3"),
    # A numbered list is reasoning, not a grade; the grade after it counts.
    ("1. The answer names the right city.\n2. It gives the population.\nScore: 4", "4"),
    ("1. The answer names the right city.\n2. It misses the year.", None),
    ("1. The answer names the right city.", None),
    # Decimals, another maximum, ranges, numbers outside the scale: no grade.
    ("Score: 4.5", None),
    ("Score: 4/10", None),
    ("Score: 1-5", None),
    ("Score: 1 to 5", None),
    ("Score: 1, 2, 3, 4 or 5", None),
    ("Score: 10", None),
    ("Score: 6", None),
    ("Score: -1", None),
    ("It is on 4/5/2024.", None),
    # Two different grades leave the choice open.
    ("4 out of 5 for accuracy, 2/5 for clarity", None),
    ("Score: 3 if partly, 4 if mostly", None),
    # Numbers in prose are not grades.
    ("The answer covers 3 of the 4 points.", None),
    ("It names 2 cities. It misses 1.", None),
    # The rubric's own prompt lines, echoed.
    (
        'Then write the grade alone on the last line, as "Score: N", with N one of 1, 2, 3, 4, 5.',
        None,
    ),
    ("5 when it meets the criterion fully;", None),
]


@pytest.mark.parametrize(("text", "choice"), PASS_FAIL_CASES)
def test_pass_fail_replies(text: str, choice: str | None) -> None:
    verdict = PASS_FAIL.parse(text)
    assert (verdict.choice if verdict else None) == choice


@pytest.mark.parametrize(("text", "choice"), SCALE_CASES)
def test_scale_replies(text: str, choice: str | None) -> None:
    verdict = SCALE_1_5.parse(text)
    assert (verdict.choice if verdict else None) == choice


def test_an_a_b_reply_is_no_verdict_under_another_rubric() -> None:
    assert PASS_FAIL.parse("Both say 42.\nAnswer: A") is None
    assert SCALE_1_5.parse("Answer: B") is None
    assert CONSISTENCY.parse("Verdict: PASS") is None
    assert CONSISTENCY.parse("Score: 4") is None


def test_every_tail_of_each_default_prompt_is_an_echo() -> None:
    # Two lines or more: the last line alone may be the very form asked ("Verdict: FAIL").
    for rubric in (CONSISTENCY, PASS_FAIL, SCALE_1_5):
        tail = rubric.prompt.strip().splitlines()[-4:]
        for start in range(len(tail) - 1):
            echoed = "\n".join(tail[start:])
            assert rubric.parse(echoed) is None, (rubric.name, echoed)


@pytest.mark.parametrize(
    ("rubric", "data", "choice"),
    [
        (PASS_FAIL, {"reasoning": "ok", "verdict": "PASS"}, "PASS"),
        (PASS_FAIL, {"verdict": " fail "}, "FAIL"),
        (PASS_FAIL, {"verdict": "ＰＡＳＳ"}, "PASS"),
        (PASS_FAIL, {"verdict": "A"}, None),
        (SCALE_1_5, {"verdict": "4"}, "4"),
        (SCALE_1_5, {"verdict": 4}, "4"),  # a number where the enum says "4"
        (SCALE_1_5, {"verdict": "4/5"}, None),
        (SCALE_1_5, {"verdict": 6}, None),
        (SCALE_1_5, {"verdict": True}, None),
        (CONSISTENCY, {"verdict": 1}, None),
    ],
)
def test_structured_replies_per_rubric(rubric: Rubric, data: dict, choice: str | None) -> None:
    verdict = rubric.structured(data)
    assert (verdict.choice if verdict else None) == choice
