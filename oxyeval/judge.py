"""The LLM judge: one default prompt, one verdict parser, used by every judge call.

oxy has two parsers that disagree (in its test path "Answer: A" scores 0, in
workflows it counts as B). Here there is exactly one: :func:`parse_verdict`.
A reply without a verdict is asked again once; if it still has none, that is a
judge error, reported and excluded from the score, never guessed as A or B.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .errors import ProviderError
from .providers._base import ChatMessage, GenerateParams
from .templates import TemplateRef, render

if TYPE_CHECKING:
    from .providers._model import Model

__all__ = [
    "DEFAULT_CONSISTENCY_PROMPT",
    "REASK_MESSAGE",
    "Judge",
    "JudgeResult",
    "Verdict",
    "parse_verdict",
]

DEFAULT_CONSISTENCY_PROMPT = """\
You are checking whether two answers to the same data-analysis question state the same facts.

Question: {{ task_description }}

[Submission 1]
{{ submission_1 }}
[End of submission 1]

[Submission 2]
{{ submission_2 }}
[End of submission 2]

Treat the submissions as CONSISTENT when they differ only in:
- rounding or precision, where numbers differ by less than 0.1% \
(1,081,396 vs 1,081,395.67; 42.67% vs 42.7%);
- grammar, tense, contractions or word choice that keeps the meaning \
("sales fell" vs "sales decreased"; "there are" vs "there're");
- how numbers, dates, units or layout are written \
(1000 vs 1,000; 2024-01-15 vs January 15, 2024; a table vs a sentence; whitespace);
- extra detail, context or explanation in one submission that does not contradict the other.

Treat them as INCONSISTENT when:
- they make opposite or incompatible claims ("sales increased" vs "sales decreased");
- a number that answers the question differs by 0.1% or more (500,000 vs 450,000);
- they name different entities, periods, counts or categories for the same fact;
- one answers the question and the other refuses, fails or answers a different question.

Reason briefly (at most three sentences) about the facts each submission states.
Then write the verdict alone on the last line, exactly one of:
Answer: A
Answer: B
(A = consistent, B = they disagree)
"""

REASK_MESSAGE = (
    "Your reply did not end with a verdict. Reply with exactly one line: "
    "'Answer: A' if the two submissions are consistent, or 'Answer: B' if they disagree."
)

# Markdown and quoting that models wrap verdicts in: **Answer:** A, `A`, > A, ### A
_DECORATION = re.compile(r"[*_`#>~]+")
_LETTER = r"[\(\[\{\"']*\s*([AB])\s*[\)\]\}\"']*(?![A-Za-z0-9])"
_KEYWORD = re.compile(
    r"(?i:\b(?:final\s+)?(?:answer|verdict|choice|decision|grade|result)\b)[\"']?"
    r"\s*(?i:is)?\s*[:=\-–—]?\s*" + _LETTER
)
# "answer: a" only when nothing follows: mid-sentence "a" is an article, not a verdict.
_LOWER = re.compile(r"(?i)^(?:final\s+)?(?:answer|verdict)\s*[:=\-]\s*([ab])\s*\.?$")
_BOXED = re.compile(r"\\boxed\{\s*([AB])\s*\}")
_BARE = re.compile(r"^" + _LETTER + r"\s*[.!]?\s*$")
_LEADING = re.compile(r"^[\(\[]?([AB])[\)\]]?\s*[:.\-–—)]\s+\S")
_TRAILING = re.compile(r"[\(\[]([AB])[\)\]]\s*[.!]?\s*$")


@dataclass(frozen=True)
class Verdict:
    choice: str  # "A" or "B"
    reasoning: str


def _line_verdict(line: str) -> str | None:
    line = _DECORATION.sub("", line).strip()
    if not line:
        return None
    hits = [m.group(1) for m in _KEYWORD.finditer(line)] + [
        m.group(1) for m in _BOXED.finditer(line)
    ]
    if hits:
        return hits[-1]
    match = _BARE.match(line) or _LEADING.match(line) or _TRAILING.search(line)
    if match:
        return match.group(1)
    lower = _LOWER.match(line)
    return lower.group(1).upper() if lower else None


def parse_verdict(text: str) -> Verdict | None:
    """The last verdict in a judge's reply, with the text before it as reasoning.

    Lines are read from the bottom, so "Answer: A" after a paragraph that mentions
    option B wins, and a closing remark after the verdict does not hide it.
    """
    lines = text.strip().splitlines()
    for index in range(len(lines) - 1, -1, -1):
        choice = _line_verdict(lines[index])
        if choice is not None:
            reasoning = "\n".join(lines[:index]).strip()
            if not reasoning:
                # The verdict may share its line with the reasoning: "Same totals. Answer: A"
                line = _DECORATION.sub("", lines[index]).strip()
                if not (_BARE.match(line) or re.fullmatch(_KEYWORD.pattern + r"\s*[.!]?", line)):
                    reasoning = line
            return Verdict(choice, reasoning)
    return None


@dataclass
class JudgeResult:
    choice: str | None  # "A", "B", or None for a judge error
    reasoning: str
    raw: str
    calls: int
    error: str | None = None


class Judge:
    """Compares two submissions with one model and one prompt template."""

    def __init__(
        self,
        model: Model,
        prompt: TemplateRef | None = None,
        params: GenerateParams | None = None,
    ) -> None:
        self.model = model
        self.prompt = prompt or TemplateRef(DEFAULT_CONSISTENCY_PROMPT)
        self.params = params

    def render(self, task_description: str, submission_1: str, submission_2: str) -> str:
        return render(
            self.prompt,
            {
                "task_description": task_description,
                "submission_1": submission_1,
                "submission_2": submission_2,
            },
        )

    def comparer(
        self,
        task_description: str,
        slot: Callable[[], AbstractAsyncContextManager[Any]] | None = None,
    ) -> Callable[[str, str], Awaitable[tuple[str | None, str, str | None, int]]]:
        """A compare function for :func:`oxyeval.consistency.evaluate`, optionally under a slot."""

        async def compare(s1: str, s2: str) -> tuple[str | None, str, str | None, int]:
            if slot is None:
                r = await self.compare(task_description, s1, s2)
            else:
                async with slot():
                    r = await self.compare(task_description, s1, s2)
            return r.choice, r.reasoning, r.error, r.calls

        return compare

    async def compare(
        self, task_description: str, submission_1: str, submission_2: str
    ) -> JudgeResult:
        prompt = self.render(task_description, submission_1, submission_2)
        messages = [ChatMessage("user", prompt)]
        calls = 0
        raw = ""
        try:
            completion = await self.model.generate(messages, self.params)
            calls += 1
            raw = completion.text
            verdict = parse_verdict(raw)
            if verdict is None:
                messages += [ChatMessage("assistant", raw), ChatMessage("user", REASK_MESSAGE)]
                retry = await self.model.generate(messages, self.params)
                calls += 1
                verdict = parse_verdict(retry.text)
                if verdict is not None:
                    reasoning = raw.strip() or verdict.reasoning
                    return JudgeResult(
                        verdict.choice, reasoning, raw + "\n---\n" + retry.text, calls
                    )
                raw = raw + "\n---\n" + retry.text
                snippet = " ".join(retry.text.split())[:160] or "(empty reply)"
                return JudgeResult(
                    None,
                    raw.strip(),
                    raw,
                    calls,
                    error=f"no verdict in the judge's reply, even when asked again: {snippet!r}",
                )
        except ProviderError as exc:
            return JudgeResult(None, "", raw, calls, error=f"judge call failed: {exc}")
        return JudgeResult(verdict.choice, verdict.reasoning, raw, calls)
