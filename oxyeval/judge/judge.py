"""The LLM judge: one default prompt, one verdict parser, used by every judge call.

oxy has two parsers that disagree (in its test path "Answer: A" scores 0, in
workflows it counts as B). Here there is exactly one: :func:`parse_verdict`.
A reply without a verdict is asked again once; if it still has none, that is a
judge error, reported and excluded from the score, never guessed as A or B.
"""

from __future__ import annotations

import json
import logging
import re
import unicodedata
import weakref
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, ProviderError
from ..project.templates import TemplateRef, render
from ..providers import ChatMessage, Completion, GenerateParams, ResponseSchema
from ..redact import clip
from .retractions import change_of_mind, settle
from .verdicts import VerdictCache, verdict_key

if TYPE_CHECKING:
    from ..project.config import JudgeSettings
    from ..providers import Model

__all__ = [
    "DEFAULT_CONSISTENCY_PROMPT",
    "DEFAULT_JUDGE_MAX_TOKENS",
    "REASK_MESSAGE",
    "STRUCTURED_MODES",
    "VERDICT_SCHEMA",
    "Judge",
    "JudgeResult",
    "Verdict",
    "parse_verdict",
    "structured_verdict",
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
_OPTION_WORD = r"(?i:option\s+)?"  # "Answer: Option A"
# Strong: the keyword with a separator, as the prompt asks ("Answer: A"), in any language we
# know (full-width forms are NFKC-normalised first); also <answer>B</answer> and \boxed{A}.
_STRONG = re.compile(
    r"(?i:\b"
    + _WORDS
    + r")[\"']?\s*[:=\-–—]\s*"
    + _OPTION_WORD
    + _LETTER
    + r"|<answer>\s*([AB])\s*</answer>|\\boxed\{\s*([AB])\s*\}"
)
# Weak forms, used only when no strong verdict exists, read from the last line up.
_KEYWORD = re.compile(
    r"(?i:\b" + _WORDS + r"\b)[\"']?\s*(?i:is|would be|:)\s*" + _OPTION_WORD + _LETTER
)
_PICK = re.compile(r"(?i:\b(?:pick|choose|select|go with|opt for)\b)\s*(?i:option\s*)?" + _LETTER)
_LOWER = re.compile(r"(?i)^(?:final\s+)?(?:answer|verdict)\s*[:=\-]\s*([ab])\s*\.?$")
_BARE = re.compile(r"^" + _LETTER + r"\s*[.!]?\s*$")
_LEADING = re.compile(r"^[\(\[]?([AB])[\)\]]?\s*[:.\-–—)]\s+\S")
_TRAILING = re.compile(r"[\(\[]([AB])[\)\]]\s*[.!]?\s*$")
_OPTION = re.compile(r"^\s*[\(\[]?([AB])[\)\].:]\s+\S")
# "Option A" alone on a line (an optional "(consistent)" after it).
_OPTION_LINE = re.compile(r"(?i:option|choice)\s+([AB])\s*(?:\([^()]*\))?\s*[.!]?")
# A letter closing the last line after a sentence: "Both are the same. A", "They agree; A".
# Read only from the last line, and never after an abbreviation ("Plan A vs. B", "e.g. B").
_AFTER_SENTENCE = re.compile(r"\b(\w+)[.;!]\s+([AB])\s*[.!]?\s*$")
_ABBREVIATIONS = frozenset(
    {"vs", "eg", "ie", "etc", "cf", "no", "nr", "fig", "sec", "ex", "approx", "pp", "vol"}
    | {"ch", "st", "mr", "ms", "dr", "al", "resp"}
)
# A verdict-shaped line, word by word: "Answer: A", "B", "Option B", '{"answer": "A"}'.
_VERDICT_WORDS = re.compile(
    r"(?:(?:final )?(?:answer|verdict|choice|decision|grade|result|réponse|respuesta|antwort"
    r"|resposta) )?(?:option )?([ab])"
)
_PAREN_TAIL = re.compile(r"\S\s*\([^()]*\)\s*[.!]?\s*$")
# What makes a verdict-shaped phrase a mention instead of a choice: it is quoted as a whole
# ('"Answer: B" if it is consistent') or it is a condition ("Answer: A if they agree").
_QUOTES_OPEN = "\"'“‘«「『"
_QUOTES_CLOSE = "\"'”’»」』"
_CONDITION = re.compile(
    r"\s*[\)\]\"'”’»」』]*\s*,?\s*(?:(?i:if|when|whenever|otherwise|unless|means|meaning|stands)\b|=)"
)


@dataclass(frozen=True)
class Verdict:
    choice: str  # "A" or "B"
    reasoning: str


def _is_mention(line: str, match: re.Match[str]) -> bool:
    """A verdict quoted as a phrase or stated as a condition is an echo of instructions."""
    start = match.start()
    before = line[start - 1] if start > 0 else ""
    if before and before in _QUOTES_OPEN:
        # '"Answer: B"' quotes the whole verdict; '{"answer": "A"}' only quotes the key.
        keyword = re.match(r"(?i:" + _WORDS + r")", line[start:])
        after = line[start + keyword.end()] if keyword and start + keyword.end() < len(line) else ""
        if not (after and after in _QUOTES_CLOSE):
            return True
    return _CONDITION.match(line, match.end()) is not None


def _choices(pattern: re.Pattern[str], line: str) -> list[re.Match[str]]:
    """The pattern's matches on a line that are choices, not mentions."""
    return [m for m in pattern.finditer(line) if not _is_mention(line, m)]


def _verdict_line(line: str) -> str | None:
    """The letter of a line that is nothing but a verdict ("Answer: A", "B", "Option A")."""
    tail = _PAREN_TAIL.search(line)
    if tail is not None:  # "Answer: A (consistent)"
        line = line[: tail.start() + 1]
    match = _VERDICT_WORDS.fullmatch(_words(line))
    return match.group(1).upper() if match else None


def _words(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.casefold()))


@lru_cache(maxsize=32)
def _instruction_lines(instructions: str) -> tuple[str, ...]:
    """The instruction text of a prompt template, line by line, without its variable parts."""
    lines = (instructions + "\n" + REASK_MESSAGE).splitlines()
    found = (_words(line) for line in lines if "{{" not in line and "{%" not in line)
    return tuple(line for line in found if line)


def _is_echo(line: str, instructions: tuple[str, ...]) -> bool:
    """A line that repeats the prompt's own instructions: a whole line, or four words or more.

    Shorter fragments are left alone: "B: they disagree" is a verdict with its reason,
    although the prompt's legend says "B = they disagree".
    """
    words = _words(line)
    if not words:
        return False
    if words in instructions:
        return True
    return len(words.split()) >= 4 and any(f" {words} " in f" {i} " for i in instructions)


def _echoed_lines(lines: list[str], instructions: tuple[str, ...]) -> set[int]:
    """Lines that are no verdict: instruction text, and the option lists small judges echo.

    Verdict-shaped lines in a row (blank lines between them allowed) that name both
    letters are the prompt's option list ("Answer: A" / "Answer: B"), not a choice; so
    are verdict-shaped lines right next to echoed instruction text ("...exactly one of:"
    before them, the "(A = consistent, B = they disagree)" legend after them). A lone
    "Answer: A" among the judge's own words is a choice, although the prompt contains
    that line too: it is the very form the prompt asks for.
    """
    out: set[int] = set()
    letters = [_verdict_line(line) for line in lines]
    for index, line in enumerate(lines):
        if letters[index] is None and _is_echo(line, instructions):
            out.add(index)
    echo_text = set(out)
    index = 0
    while index < len(lines):
        if letters[index] is None:
            index += 1
            continue
        group = [index]
        nxt = index + 1
        while nxt < len(lines) and (not lines[nxt] or letters[nxt] is not None):
            if lines[nxt]:
                group.append(nxt)
            nxt += 1
        before = next((k for k in range(index - 1, -1, -1) if lines[k]), None)
        after = nxt if nxt < len(lines) else None
        if before in echo_text or after in echo_text or len({letters[k] for k in group}) > 1:
            out.update(group)
        index = nxt
    return out


def _weak_verdict(line: str, options: bool, last: bool) -> tuple[str, int] | None:
    """A weak form's letter and where it ends on the line (a change of mind may follow)."""
    hits = _choices(_KEYWORD, line) + _choices(_PICK, line)
    if hits:
        return settle(line, hits)
    match = (
        _BARE.match(line) or (None if options else _LEADING.match(line)) or _TRAILING.search(line)
    )
    if match:
        return match.group(1), match.end(1)
    lower = _LOWER.match(line)
    if lower:
        return lower.group(1).upper(), lower.end(1)
    if not last:
        return None
    # Looser forms, trusted only on the reply's last line: "Option A", "They agree; A".
    option = _OPTION_LINE.fullmatch(line)
    if option:
        return option.group(1), option.end(1)
    tail = _AFTER_SENTENCE.search(line)
    if tail and tail.group(1).casefold() not in _ABBREVIATIONS and len(tail.group(1)) > 1:
        other = "B" if tail.group(2) == "A" else "A"
        if not re.search(r"(?<![A-Za-z0-9])" + other + r"(?![A-Za-z0-9])", line):
            return tail.group(2), tail.end(2)
    return None


def parse_verdict(text: str, instructions: str | None = None) -> Verdict | None:
    """The judge's verdict and the reasoning before it, or None when it gave none.

    An explicit verdict ("Answer: A", "**Verdict:** B", "<answer>A</answer>") wins
    wherever it stands, the last one if there are several, so a later passing mention
    ("... I would answer B") cannot flip it; a retraction after the verdict does, on
    its line or below: "Answer: A? No, B.", "Answer: A. Actually, B", "Answer: A. No
    wait, Answer: B" are B. Only without an explicit verdict are weaker forms read,
    from the last line up: "The answer is A", "I pick B", a lone "(B)", and on the last
    line only "Option A" or "They agree; A". A reply that lists both options
    ("A) consistent / B) inconsistent") without choosing has none.

    Small judges echo their prompt, so what repeats ``instructions`` (the prompt
    template's own text; the built-in prompt when None) is never a verdict: the option
    list "Answer: A / Answer: B", a quoted '"Answer: B" if ...', a condition
    "Answer: A if they agree". Full-width forms (Ａｎｓｗｅｒ: Ａ) are NFKC-normalised.
    """
    original = text.strip().splitlines()
    lines = [_DECORATION.sub("", unicodedata.normalize("NFKC", line)).strip() for line in original]
    echoed = _echoed_lines(
        lines,
        _instruction_lines(DEFAULT_CONSISTENCY_PROMPT if instructions is None else instructions),
    )
    strong: tuple[int, str, int] | None = None
    for index, line in enumerate(lines):
        if index not in echoed and (settled := settle(line, _choices(_STRONG, line))) is not None:
            strong = (index, *settled)
    if strong is not None:
        index, choice, end = strong
    else:
        leading = {m.group(1) for line in lines if (m := _OPTION.match(line))}
        options = leading == {"A", "B"}  # an option list, not a choice
        candidates = [k for k in range(len(lines)) if lines[k] and k not in echoed]
        found = None
        for index in reversed(candidates):
            weak = _weak_verdict(lines[index], options, last=index == candidates[-1])
            if weak is not None:
                found = (index, *weak)
                break
        if found is None:
            return None
        index, choice, end = found
    changed = change_of_mind(lines, echoed, index, end)
    if changed is not None and changed[1] != choice:
        index, choice = changed
    reasoning = "\n".join(original[:index]).strip()
    if not reasoning:
        # The verdict may share its line with the reasoning: "Same totals. Answer: A"
        line = lines[index]
        bare = _BARE.match(line) or re.fullmatch(r"(?:" + _STRONG.pattern + r")\s*[.!]?", line)
        if not bare:
            reasoning = line
    return Verdict(choice, reasoning)


def structured_verdict(data: dict[str, Any]) -> Verdict | None:
    """The verdict of a structured reply ``{"reasoning": ..., "verdict": "A"|"B"}``, or None."""
    choice = data.get("verdict")
    if not isinstance(choice, str):
        return None
    choice = unicodedata.normalize("NFKC", choice).strip().strip("\"'").strip().upper()
    if choice not in ("A", "B"):
        return None
    reasoning = data.get("reasoning")
    return Verdict(choice, reasoning.strip() if isinstance(reasoning, str) else "")


@dataclass
class JudgeResult:
    choice: str | None  # "A", "B", or None for a judge error
    reasoning: str
    raw: str
    calls: int
    error: str | None = None
    #: Served from a verdict cache: the judge calls it took when it was first made
    #: (``calls`` is 0: none was made now).
    cached_calls: int = 0


#: Judge replies are a few sentences and a verdict; without a cap a small model that
#: rambles holds a single-slot server for minutes (and a cut-off reply is reported).
DEFAULT_JUDGE_MAX_TOKENS = 512
STRUCTURED_MODES = ("auto", "on", "off")
# Hosted reasoning models get no default cap: their hidden thinking counts against it
# (an empty reply at 512), and OpenAI's o-series/gpt-5 refuse the max_tokens field.
_THINKING_MODEL = re.compile(r"(?i)^(?:models/)?(?:o\d|gpt-5|gemini-(?:2\.5|[3-9]))")
# Statuses with which servers refuse a request field they do not support.
_REFUSED = (400, 422)

VERDICT_SCHEMA = ResponseSchema(
    name="verdict",
    description="Your verdict on the two submissions, as the instructions ask for it.",
    schema={
        "type": "object",
        "properties": {
            "reasoning": {
                "type": "string",
                "description": "Brief reasoning about the facts each submission states.",
            },
            "verdict": {
                "type": "string",
                "enum": ["A", "B"],
                "description": "The verdict the instructions ask for: A or B.",
            },
        },
        "required": ["reasoning", "verdict"],
        "additionalProperties": False,
    },
)

log = logging.getLogger("oxyeval.judge")
# Judge models whose server refused structured output in this run: text from then on.
_TEXT_ONLY: weakref.WeakSet[Any] = weakref.WeakSet()


def _raw(completion: Completion) -> str:
    if completion.text.strip() or completion.structured is None:
        return completion.text
    return json.dumps(completion.structured, ensure_ascii=False)


class Judge:
    """Compares two submissions with one model and one prompt template."""

    def __init__(
        self,
        model: Model,
        prompt: TemplateRef | None = None,
        params: GenerateParams | None = None,
        settings: JudgeSettings | None = None,
        cache: VerdictCache | None = None,
    ) -> None:
        if prompt is not None:
            from ..project.tests import unseen_submissions

            missing = unseen_submissions(prompt)
            if missing:
                # Files are checked when they load; this guards prompts built in code. A
                # judge that cannot see the answers would call every pair consistent.
                raise ConfigError(
                    f"{prompt.name}: judge prompt never uses {{{{ "
                    + " }} or {{ ".join(missing)
                    + " }}, so the judge cannot see what it compares"
                )
        self.model = model
        self.prompt = prompt or _DEFAULT_PROMPT
        self.params = params
        #: Verdicts of earlier runs (see :mod:`oxyeval.judge.verdicts`); None: always ask.
        self.cache = cache
        # config.yml's judge: section (project.JudgeSettings); None means the defaults.
        self.structured_mode = settings.structured if settings is not None else "auto"
        self.max_tokens_setting = settings.max_tokens if settings is not None else None

    def render(self, task_description: str, submission_1: str, submission_2: str) -> str:
        return render(
            self.prompt,
            {
                "task_description": task_description,
                "submission_1": submission_1,
                "submission_2": submission_2,
            },
        )

    @property
    def max_tokens(self) -> int | None:
        """The cap on a judge reply: judge.max_tokens, the call's or model's own, else 512."""
        if self.max_tokens_setting is not None:
            return self.max_tokens_setting
        if self.params is not None and self.params.max_tokens is not None:
            return self.params.max_tokens
        spec = self.model.spec
        if spec.params.max_tokens is not None:
            return spec.params.max_tokens
        return None if _THINKING_MODEL.match(spec.model_ref or "") else DEFAULT_JUDGE_MAX_TOKENS

    def _supports_structured(self) -> bool:
        return bool(getattr(getattr(self.model, "api", None), "structured_output", False))

    def _structured(self) -> bool:
        mode = self.structured_mode
        if mode == "off" or (mode == "auto" and self.model in _TEXT_ONLY):
            return False
        return mode == "on" or self._supports_structured()

    def _request(self, structured: bool) -> GenerateParams:
        own = GenerateParams(
            max_tokens=self.max_tokens,
            response_schema=VERDICT_SCHEMA if structured else None,
        )
        return (self.params or GenerateParams()).merged(own)

    async def _ask(self, messages: list[ChatMessage]) -> Completion:
        """One judge call: structured when allowed, plain text after the server refused it."""
        structured = self._structured()
        if structured and not self._supports_structured():
            raise ProviderError(
                f"judge.structured is 'on', but oxyeval has no structured output for vendor "
                f"'{self.model.spec.vendor}' (model '{self.model.name}'); set judge.structured "
                "to auto or off in config.yml",
                model=self.model.name,
            )
        try:
            return await self.model.generate(messages, self._request(structured))
        except ProviderError as exc:
            if not structured or exc.status not in _REFUSED:
                raise
            if self.structured_mode == "on":
                raise ProviderError(
                    f"{exc} (the structured verdict request was refused; judge.structured is "
                    "'on', so there is no plain-text fallback: set it to auto or off)",
                    model=exc.model,
                    status=exc.status,
                ) from None
            completion = await self.model.generate(messages, self._request(False))
            self._fall_back(exc)
            return completion

    def _fall_back(self, refusal: ProviderError) -> None:
        """Remember, and say once per judge model, that its server refused structured output."""
        if self.model in _TEXT_ONLY:
            return
        _TEXT_ONLY.add(self.model)
        log.warning(
            "judge model '%s' refused the structured verdict request (HTTP %s), so its verdicts "
            "are read from plain text for the rest of this run; set judge.structured: off in "
            "config.yml to skip the attempt. The refusal: %s",
            self.model.name,
            refusal.status,
            refusal,
        )

    def _verdict(self, completion: Completion) -> Verdict | None:
        if completion.structured is not None:
            verdict = structured_verdict(completion.structured)
            if verdict is not None:
                return verdict
        # No structured answer, or a malformed one: read the text as from any judge.
        return parse_verdict(_raw(completion), self.prompt.source)

    def _limit(self) -> str:
        limit = self.model.max_tokens(self._request(False))
        return "the server's limit (no max_tokens set)" if limit is None else f"max_tokens={limit}"

    def _no_verdict(self, first: Completion, retry: Completion) -> str:
        snippet = clip(" ".join(_raw(retry).split()), 160, "") or "(empty reply)"
        if retry.truncated:
            return (
                f"no verdict: the judge's reply was cut off at {self._limit()} (finish reason "
                f"{retry.finish_reason}), also when asked again; raise judge.max_tokens in "
                f"config.yml: {snippet!r}"
            )
        if first.truncated:
            return (
                f"no verdict in the judge's reply, even when asked again (its first reply was "
                f"cut off at {self._limit()}): {snippet!r}"
            )
        return f"no verdict in the judge's reply, even when asked again: {snippet!r}"

    def comparer(
        self,
        task_description: str,
        slot: Callable[[], AbstractAsyncContextManager[Any]] | None = None,
    ) -> Callable[[str, str], Awaitable[JudgeResult]]:
        """A compare function for :func:`oxyeval.judge.consistency.assess`, optionally under a slot."""

        async def compare(s1: str, s2: str) -> JudgeResult:
            if slot is None:
                return await self.compare(task_description, s1, s2)
            async with slot():
                return await self.compare(task_description, s1, s2)

        return compare

    async def compare(
        self, task_description: str, submission_1: str, submission_2: str
    ) -> JudgeResult:
        """The verdict on two submissions; with a cache, an earlier verdict on the same
        rendered prompt by the same judge is replayed, and a new verdict (never an
        error) is kept."""
        prompt = self.render(task_description, submission_1, submission_2)
        if self.cache is None:
            return await self._judge(prompt)
        sent = self.model.spec.params.merged(self._request(False))  # what the calls carry
        key = verdict_key(self.model, sent, str(self.structured_mode), prompt)
        hit = await self.cache.get(key)
        if hit is not None:
            return hit
        result = await self._judge(prompt)
        if result.choice is not None and result.error is None:
            await self.cache.put(key, result)
        return result

    async def _judge(self, prompt: str) -> JudgeResult:
        """One verdict, asking again once (same cached verdict) when the reply has none."""
        messages = [ChatMessage("user", prompt)]
        calls = 0
        raw = ""
        try:
            first = await self._ask(messages)
            calls += 1
            raw = _raw(first)
            verdict = self._verdict(first)
            if verdict is None:
                # An empty assistant turn is rejected by some APIs (Anthropic): leave it out.
                if raw.strip():
                    messages += [ChatMessage("assistant", raw)]
                messages += [ChatMessage("user", REASK_MESSAGE)]
                retry = await self._ask(messages)
                calls += 1
                verdict = self._verdict(retry)
                both = raw + "\n---\n" + _raw(retry)
                if verdict is not None:
                    reasoning = raw.strip() or verdict.reasoning
                    return JudgeResult(verdict.choice, reasoning, both, calls)
                error = self._no_verdict(first, retry)
                return JudgeResult(None, both.strip(), both, calls, error=error)
        except ProviderError as exc:
            return JudgeResult(None, "", raw, calls, error=f"judge call failed: {exc}")
        return JudgeResult(verdict.choice, verdict.reasoning, raw, calls)
