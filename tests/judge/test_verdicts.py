"""The verdict parser on the forms small and CJK judges write, and on echoed instructions.

a real llama.cpp judge (Gemma 3 270M) echoed its prompt and
every verdict read from it was false. What repeats the instructions is no verdict; the
forms that were missed ("Option A", "They agree; A", full-width letters) are verdicts.
"""

from __future__ import annotations

import pytest

from oxyeval.judge.judge import DEFAULT_CONSISTENCY_PROMPT, parse_verdict

# Item 11: forms that were judge errors and are verdicts.
READ = [
    ("Option A", "A"),
    ("**Option B**", "B"),
    ("Option A (consistent)", "A"),
    ("Both are the same. A", "A"),
    ("They agree; A", "A"),
    ("The totals differ! B", "B"),
    ("Same totals; **A**", "A"),
    ("Ａｎｓｗｅｒ: Ａ", "A"),
    ("Ａｎｓｗｅｒ：Ｂ", "B"),
    ("**Ａｎｓｗｅｒ**： Ｂ", "B"),
    ("両方とも同じ数値です。\nＡｎｓｗｅｒ：Ａ", "A"),
    ("Answer: Option B", "B"),
    ("The answer is option A", "A"),
    ("Both report 42.\nOption A", "A"),
    # The same verdict twice is not an option list.
    ("Answer: A\nAnswer: A", "A"),
]

# Item 16: what the real judge wrote (the first three), and our own adversarial echoes.
ECHOES = [
    "The totals match.\nAnswer: A\nAnswer: B\n\nTreatment as inconsistent when they differ.",
    "...reasoning...\nAnswer: A\nAnswer: B\n\nTreatment as inconsistent...",
    'If, or rather than:\n"Answer: B" if it is consistent.',
    "...exactly one of:\nAnswer: A\nAnswer: B\n(A = consistent, B = they disagree)",
    # Part of the list with the instruction text around it is still an echo.
    "Then write the verdict alone on the last line, exactly one of:\nAnswer: A",
    "Answer: B\n(A = consistent, B = they disagree)",
    # Option lists in other shapes.
    "Answer: A\n\nAnswer: B",
    "A\nB",
    "Option A\nOption B",
    "Answer: A (consistent)\nAnswer: B (inconsistent)",
    "Option A: consistent\nOption B: inconsistent",
    "Answer: A or Answer: B",
    # Quoted or conditional verdicts are mentions of the instructions.
    '"Answer: A"',
    "'Answer: B' if they disagree",
    "“Answer: A” if the two submissions are consistent",
    "Answer: A if they agree, Answer: B otherwise.",
    "Reply with 'Answer: A' or 'Answer: B'.",
    "Answer: A = consistent",
    "Answer: B when the numbers differ",
    # The re-ask message echoed back.
    "Reply with exactly one line: 'Answer: A' if the two submissions are consistent, "
    "or 'Answer: B' if they disagree.",
    # Letters after abbreviations or next to the other letter are not trailing verdicts.
    "Plan A vs. B",
    "Compare region A, e.g. B",
    "Store A has 5. B",
    # A looser form is trusted on the last line only, never from reasoning above it.
    "They agree; A\nBut I am not sure yet.",
    "Option A\nHard to say.",
]


@pytest.mark.parametrize(("text", "choice"), READ)
def test_new_verdict_forms_are_read(text: str, choice: str) -> None:
    verdict = parse_verdict(text)
    assert verdict is not None, text
    assert verdict.choice == choice


@pytest.mark.parametrize("text", ECHOES)
def test_echoed_instructions_are_no_verdict(text: str) -> None:
    assert parse_verdict(text) is None


def test_the_echo_does_not_hide_a_verdict_given_after_it() -> None:
    verdict = parse_verdict(
        "Then write the verdict alone on the last line, exactly one of:\n"
        "The totals agree, both say 42.\nAnswer: A"
    )
    assert verdict is not None and verdict.choice == "A"


def test_reasoning_that_quotes_a_submission_keeps_the_verdict() -> None:
    # Submissions are rendered into the prompt, but only the template's own text counts
    # as instructions: quoting a submission before the verdict is not an echo.
    verdict = parse_verdict("Submission 1: Total sales were 42 units\nAnswer: B")
    assert verdict is not None and verdict.choice == "B"


def test_custom_prompt_instructions_are_recognised() -> None:
    prompt = (
        "Compare {{ submission_1 }} with {{ submission_2 }}.\n"
        "Finish with your pick among these two options:\n"
        "Verdict: A\n"
        "Verdict: B\n"
    )
    echo = "Finish with your pick among these two options:\nVerdict: B"
    assert parse_verdict(echo, prompt) is None
    # The built-in prompt does not contain that line, so there it reads as a verdict.
    assert parse_verdict(echo) is not None
    real = parse_verdict("Both say 42.\nVerdict: B", prompt)
    assert real is not None and real.choice == "B"


def test_full_width_reasoning_is_kept_as_written() -> None:
    verdict = parse_verdict("数値は同じ：４２。\nＡｎｓｗｅｒ：Ａ")
    assert verdict is not None
    assert verdict.reasoning == "数値は同じ：４２。"


def test_every_option_line_of_the_default_prompt_is_an_echo() -> None:
    # Whatever slice of the prompt's ending a judge repeats, it gives no verdict.
    tail = DEFAULT_CONSISTENCY_PROMPT.strip().splitlines()[-4:]
    for start in range(len(tail) - 1):
        echoed = "\n".join(tail[start:])
        assert parse_verdict(echoed) is None, echoed
