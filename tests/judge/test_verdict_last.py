"""The last verdict wins, also when the judge changes its mind on the same line.

`parse_verdict("Answer: A? No, B.")` used to return A although the README says the parser
takes the last verdict in the reply. A retraction ("No, B", "Actually, B", "I mean B")
after a verdict is now the verdict; a passing mention, the article "A" or a letter inside
prose ("There is no A", "No B-tier store") still is not.
"""

from __future__ import annotations

import pytest

from oxyeval.judge.judge import parse_verdict

CHANGED_MIND = [
    # The review's reply, and the same change of mind in other words.
    ("Answer: A? No, B.", "B"),
    ("Answer: B? No, A.", "A"),
    ("Answer: A. Actually, B.", "B"),
    ("Answer: A — wait, B.", "B"),
    ("Answer: A. No wait, Answer: B", "B"),
    ("Answer: A, no, Answer: B", "B"),
    ("Answer: **A**... no, **B**.", "B"),
    ("Answer: A. Sorry, I meant B.", "B"),
    ("Answer: A. I mean B.", "B"),
    ("Answer: A. Make that B.", "B"),
    ("Answer: A. Correction: B", "B"),
    ("Answer: A. No, the answer is B.", "B"),
    ("Answer: A. On second thought, Option B.", "B"),
    ("Answer: A? Nope: B!", "B"),
    ("Answer: A. No - B (they differ).", "B"),
    ("Answer: A (no, B)", "B"),
    ("Answer: A. No, B is right.", "B"),
    # Twice: the last one counts.
    ("Answer: A? No, B. Wait, no, A.", "A"),
    # On a line of its own after the verdict.
    ("Answer: A\nNo, B.", "B"),
    ("Both say 42.\nAnswer: B\nWait, no. A.", "A"),
    # After a weaker form of verdict.
    ("I pick A. Actually, B.", "B"),
    ("A. No, B.", "B"),
    # A later explicit verdict still wins over an earlier change of mind.
    ("Answer: A? No, B.\nAnswer: A", "A"),
]

NOT_A_CHANGE = [
    # The article "A" and letters inside prose are no retraction.
    ("Answer: B. Actually, A good answer would say more.", "B"),
    ("Answer: B. There is no A.", "B"),
    ("Answer: B. No A.", "B"),
    ("Answer: A. No B-tier store differs.", "A"),
    ("Answer: A. No, B's total is wrong.", "A"),
    ("Answer: A. (No, B would be wrong.)", "A"),
    ("Answer: B. No, A and B differ.", "B"),
    ("Answer: A. Actually, A: 42 vs B: 40.", "A"),
    ("Answer: A\nA good answer.", "A"),
    # A condition after a retraction word is a mention of the instructions.
    ("Answer: A. No, 'B' if they disagree.", "A"),
    # A passing mention without a retraction does not flip a verdict (as before).
    ("Answer: A\n\nNote: had the gap been larger I would say B.", "A"),
    ("Answer: A. (Had the numbers differed I would answer B.)", "A"),
    # A retraction naming the same letter keeps it.
    ("Answer: A\n\nActually, A.", "A"),
]

NO_VERDICT = [
    # Both letters without a retraction between them leave the choice open, as before.
    "Answer: A or Answer: B",
    "Answer: A, Answer: B",
    "Answer: A or B? Hard to say.",
    # A retraction needs a verdict to take back: "A?" is none.
    "A? No, B.",
    # The echoed option list is still no choice.
    "...exactly one of:\nAnswer: A\nAnswer: B\n(A = consistent, B = they disagree)",
]


@pytest.mark.parametrize(("text", "choice"), CHANGED_MIND)
def test_a_change_of_mind_gives_the_later_verdict(text: str, choice: str) -> None:
    verdict = parse_verdict(text)
    assert verdict is not None, text
    assert verdict.choice == choice


@pytest.mark.parametrize(("text", "choice"), NOT_A_CHANGE)
def test_prose_after_a_verdict_does_not_change_it(text: str, choice: str) -> None:
    verdict = parse_verdict(text)
    assert verdict is not None, text
    assert verdict.choice == choice


@pytest.mark.parametrize("text", NO_VERDICT)
def test_open_choices_stay_without_a_verdict(text: str) -> None:
    assert parse_verdict(text) is None


def test_the_reasoning_of_a_corrected_verdict_is_the_text_before_it() -> None:
    verdict = parse_verdict("Totals differ: 42 vs 40.\nAnswer: A\nNo, B.")
    assert verdict is not None and verdict.choice == "B"
    assert verdict.reasoning == "Totals differ: 42 vs 40.\nAnswer: A"
    # The same letter again keeps the verdict where it was, and its reasoning.
    same = parse_verdict("Totals match.\nAnswer: A\nActually, A.")
    assert same is not None and same.reasoning == "Totals match."


def test_a_long_run_of_retraction_words_is_read_in_linear_time() -> None:
    # Nested repetition in the retraction pattern would make this quadratic (minutes);
    # bounded, it is a fraction of a second. No time is asserted: a hang fails the run.
    text = "Answer: A. " + "wait, actually, no, " * 20_000 + "B."
    verdict = parse_verdict(text)
    assert verdict is not None and verdict.choice == "B"
