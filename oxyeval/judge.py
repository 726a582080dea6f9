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

_DEFAULT_PROMPT = TemplateRef(DEFAULT_CONSISTENCY_PROMPT)  # compiled once, on first use

REASK_MESSAGE = (
    "Your reply did not end with a verdict. Reply with exactly one line: "
    "'Answer: A' if the two submissions are consistent, or 'Answer: B' if they disagree."
)

# Markdown and quoting that models wrap verdicts in: **Answer:** A, `A`, > A, ### A
_DECORATION = re.compile(r"^[\s>#]+|[*_`~]+")
# A letter standing alone (optionally bracketed or quoted), not "A or B" / "A/B" / "AB".
_LETTER = (
    r"[\(\[\{\"'“]*\s*([AB])\s*[\)\]\}\"'”]*"
    r"(?![A-Za-z0-9])(?!\s*(?:or|/|\||and|,|vs\.?)\s*[\(\[]?[AB](?![A-Za-z0-9]))"
)
_WORDS = r"(?:final\s+)?(?:answer|verdict|choice|decision|grade|result|réponse|respuesta|antwort|resposta)"
# Strong: the keyword with a separator, as the prompt asks ("Answer: A"), in any language we
# know and with full-width colons (CJK models); also <answer>B</answer> and \boxed{A}.
_STRONG = re.compile(
    r"(?i:\b"
    + _WORDS
    + r")[\"']?\s*[:=：\-–—]\s*"
    + _LETTER
    + r"|<answer>\s*([AB])\s*</answer>|\\boxed\{\s*([AB])\s*\}"
)
# Weak forms, used only when no strong verdict exists, read from the last line up.
_KEYWORD = re.compile(r"(?i:\b" + _WORDS + r"\b)[\"']?\s*(?i:is|would be|:)\s*" + _LETTER)
_PICK = re.compile(r"(?i:\b(?:pick|choose|select|go with|opt for)\b)\s*(?i:option\s*)?" + _LETTER)
_LOWER = re.compile(r"(?i)^(?:final\s+)?(?:answer|verdict)\s*[:=\-]\s*([ab])\s*\.?$")
_BARE = re.compile(r"^" + _LETTER + r"\s*[.!]?\s*$")
_LEADING = re.compile(r"^[\(\[]?([AB])[\)\]]?\s*[:.\-–—)]\s+\S")
_TRAILING = re.compile(r"[\(\[]([AB])[\)\]]\s*[.!]?\s*$")
_OPTION = re.compile(r"^\s*[\(\[]?([AB])[\)\].:]\s+\S")


@dataclass(frozen=True)
class Verdict:
    choice: str  # "A" or "B"
    reasoning: str


def _first_group(match: re.Match[str]) -> str:
    return next(g for g in match.groups() if g)


def _weak_verdict(line: str, options: bool) -> str | None:
    hits = [_first_group(m) for m in _KEYWORD.finditer(line)] + [
        _first_group(m) for m in _PICK.finditer(line)
    ]
    if hits:
        return hits[-1]
    match = (
        _BARE.match(line) or (None if options else _LEADING.match(line)) or _TRAILING.search(line)
    )
    if match:
        return match.group(1)
    lower = _LOWER.match(line)
    return lower.group(1).upper() if lower else None


def parse_verdict(text: str) -> Verdict | None:
    """The judge's verdict and the reasoning before it, or None when it gave none.

    An explicit verdict ("Answer: A", "**Verdict:** B", "<answer>A</answer>") wins
    wherever it stands, the last one if there are several, so a later passing mention
    ("... I would answer B") cannot flip it. Only without one are weaker forms read,
    from the last line up: "The answer is A", "I pick B", a lone "(B)". A reply that
    lists both options ("A) consistent / B) inconsistent") without choosing has none.
    """
    lines = [_DECORATION.sub("", line).strip() for line in text.strip().splitlines()]
    strong: tuple[int, str] | None = None
    for index, line in enumerate(lines):
        for match in _STRONG.finditer(line):
            strong = (index, _first_group(match))
    if strong is not None:
        index, choice = strong
    else:
        leading = {m.group(1) for line in lines if (m := _OPTION.match(line))}
        options = leading == {"A", "B"}  # an option list, not a choice
        found = None
        for index in range(len(lines) - 1, -1, -1):
            if lines[index] and (choice := _weak_verdict(lines[index], options)) is not None:
                found = (index, choice)
                break
        if found is None:
            return None
        index, choice = found
    reasoning = "\n".join(text.strip().splitlines()[:index]).strip()
    if not reasoning:
        # The verdict may share its line with the reasoning: "Same totals. Answer: A"
        line = lines[index]
        bare = _BARE.match(line) or re.fullmatch(r"(?:" + _STRONG.pattern + r")\s*[.!]?", line)
        if not bare:
            reasoning = line
    return Verdict(choice, reasoning)


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
        self.prompt = prompt or _DEFAULT_PROMPT
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
                # An empty assistant turn is rejected by some APIs (Anthropic): leave it out.
                if raw.strip():
                    messages += [ChatMessage("assistant", raw)]
                messages += [ChatMessage("user", REASK_MESSAGE)]
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
