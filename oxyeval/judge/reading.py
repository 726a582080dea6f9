"""Reading a judge's reply into a verdict: one parser for every rubric.

oxy has two parsers that disagree (in its test path "Answer: A" scores 0, in
workflows it counts as B). Here there is exactly one, built from a rubric's labels
(:class:`oxyeval.judge.Rubric`): A/B, PASS/FAIL and a 1-5 scale are read by the same
rules, with the same safeguards. A reply without a verdict is asked again once; if it
still has none, that is a judge error, reported and excluded, never guessed.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from .retractions import change_of_mind, correction_pattern, settle

if TYPE_CHECKING:
    from .rubrics import Rubric

__all__ = ["Verdict", "read_cut_verdict", "read_verdict", "structured_reading"]


@dataclass(frozen=True)
class Verdict:
    choice: str  # one of the rubric's labels: "A" or "B" for consistency
    reasoning: str


# Markdown and quoting that models wrap verdicts in: **Answer:** A, `A`, > A, ### A
_DECORATION = re.compile(r"^[\s>#]+|[*_`~]+")
_BASE_WORDS = (
    "answer",
    "verdict",
    "choice",
    "decision",
    "grade",
    "result",
    "réponse",
    "respuesta",
    "antwort",
    "resposta",
)
# What makes a verdict-shaped phrase a mention instead of a choice: it is quoted as a whole
# ('"Answer: B" if it is consistent') or it is a condition ("Answer: A if they agree").
_QUOTES_OPEN = "\"'“‘«「『"
_QUOTES_CLOSE = "\"'”’»」』"
_CONDITION = re.compile(
    r"\s*[\)\]\"'”’»」』]*\s*,?\s*(?:(?i:if|when|whenever|otherwise|unless|means|meaning|stands)\b|=)"
)
_PAREN_TAIL = re.compile(r"\S\s*\([^()]*\)\s*[.!]?\s*$")
_ABBREVIATIONS = frozenset(
    {"vs", "eg", "ie", "etc", "cf", "no", "nr", "fig", "sec", "ex", "approx", "pp", "vol"}
    | {"ch", "st", "mr", "ms", "dr", "al", "resp"}
)


def _label_regex(name: str) -> str:
    """One letter is case-sensitive (never the article "a"); a word matches in any case."""
    if len(name) > 1 and name.isalpha():
        return "(?i:" + re.escape(name) + ")"
    return re.escape(name)


class _Grammar:
    """The parser's patterns for one rubric's labels.

    For A/B they are, character for character, the patterns the consistency parser has
    always used; a scale (labels made of digits) adds its own forms ("4/5", "4 out of
    5") and refuses ranges and decimals ("1-5", "4.5")."""

    def __init__(self, rubric: Rubric) -> None:
        names = sorted(rubric.names, key=lambda n: (-len(n), n))
        self.scale = all(n.isdigit() for n in names)
        label = "(?:" + "|".join(_label_regex(n) for n in names) + ")"
        if names == ["A", "B"]:
            label = "[AB]"  # as it always read
        extra = [w.casefold() for w in (rubric.keyword, *rubric.keywords)]
        extra = [w for k, w in enumerate(extra) if w not in _BASE_WORDS and w not in extra[:k]]
        words = [*_BASE_WORDS, *extra]
        self.words = r"(?:final\s+)?(?:" + "|".join(words) + ")"
        top = max(names, key=int) if self.scale else ""
        # A scale's grade may carry its maximum ("4/5", "4 out of 5"); no decimals ("4.5"),
        # no other maximum ("4/10"), no range ("1-5", "1 to 5") is a grade.
        suffix = r"(?:\s*(?:/|(?i:out\s+of))\s*" + top + r")?" if self.scale else ""
        tail = r"(?![.,]\d)(?!\s*(?:/|(?i:out\s+of))\s*\d)" if self.scale else ""
        ranges = r"|-|–|—|to" if self.scale else ""
        self.letter = (
            r"[\(\[\{\"'“]*\s*(" + label + r")" + suffix + r"\s*[\)\]\}\"'”]*"
            r"(?![A-Za-z0-9])"
            + tail
            + r"(?!\s*(?:or|/|\||and|,|vs\.?"
            + ranges
            + r")\s*[\(\[]?"
            + label
            + r"(?![A-Za-z0-9]))"
        )
        letter, option_word = self.letter, r"(?i:option\s+)?"
        self.strong = re.compile(
            r"(?i:\b"
            + self.words
            + r")[\"']?\s*[:=\-–—]\s*"
            + option_word
            + letter
            + r"|<answer>\s*("
            + label
            + r")\s*</answer>|\\boxed\{\s*("
            + label
            + r")\s*\}"
        )
        # Weak forms, used only when no strong verdict exists, read from the last line up.
        self.keyword = re.compile(
            r"(?i:\b" + self.words + r"\b)[\"']?\s*(?i:is|would be|:)\s*" + option_word + letter
        )
        picks = r"pick|choose|select|go with|opt for"
        if self.scale:  # "I'd give it a 4", "rate it 3"
            picks += r"|give\s+it(?:\s+an?)?|rate\s+it(?:\s+an?)?|rate\s+this(?:\s+an?)?"
        self.pick = re.compile(r"(?i:\b(?:" + picks + r")\b)\s*(?i:option\s*)?" + letter)
        lower = "|".join(re.escape(n.casefold()) for n in names)
        self.lower = re.compile(
            r"(?i)^(?:final\s+)?(?:answer|verdict)\s*[:=\-]\s*(" + lower + r")\s*\.?$"
        )
        self.bare = re.compile(r"^" + letter + r"\s*[.!]?\s*$")
        # A scale's "1." opens a numbered list; only "4 - good", "4: good" lead with a grade.
        lead = r"[:\-–—]" if self.scale else r"[:.\-–—)]"
        self.leading = re.compile(r"^[\(\[]?(" + label + r")[\)\]]?\s*" + lead + r"\s+\S")
        self.trailing = re.compile(r"[\(\[](" + label + r")[\)\]]\s*[.!]?\s*$")
        self.option = re.compile(r"^\s*[\(\[]?(" + label + r")[\)\].:]\s+\S")
        # "Option A" alone on a line (an optional "(consistent)" after it).
        self.option_line = re.compile(
            r"(?i:option|choice)\s+(" + label + r")\s*(?:\([^()]*\))?\s*[.!]?"
        )
        # A label closing the last line after a sentence: "Both are the same. A".
        self.after_sentence = re.compile(r"\b(\w+)[.;!]\s+(" + label + r")\s*[.!]?\s*$")
        self.any_label = [
            (n, re.compile(r"(?<![A-Za-z0-9])" + _label_regex(n) + r"(?![A-Za-z0-9])"))
            for n in names
        ]
        # "I'd give it a 4 out of 5": a grade with its maximum, anywhere on a line.
        self.out_of = (
            re.compile(
                r"(?<![\w.,/])(" + label + r")\s*(?:/|(?i:out\s+of))\s*" + top + r"(?![\w.,/])"
            )
            if self.scale
            else None
        )
        verdict_words = self.words.replace(r"\s+", " ")
        top_words = r"(?: (?:out of )?" + top + r")?" if self.scale else ""
        self.verdict_words = re.compile(
            r"(?:" + verdict_words + r" )?(?:option )?(" + lower + r")" + top_words
        )
        self.correction = correction_pattern(label, "|".join(["answer", "verdict", *extra]))
        self.folded = {n.casefold(): n for n in names}

    def canon(self, text: str) -> str:
        return self.folded.get(text.casefold(), text)


@lru_cache(maxsize=16)
def _grammar(rubric: Rubric) -> _Grammar:
    return _Grammar(rubric)


def _first(match: re.Match[str]) -> str:
    return next(g for g in match.groups() if g)


def _is_mention(g: _Grammar, line: str, match: re.Match[str]) -> bool:
    """A verdict quoted as a phrase or stated as a condition is an echo of instructions."""
    start = match.start()
    before = line[start - 1] if start > 0 else ""
    if before and before in _QUOTES_OPEN:
        # '"Answer: B"' quotes the whole verdict; '{"answer": "A"}' only quotes the key.
        keyword = re.match(r"(?i:" + g.words + r")", line[start:])
        after = line[start + keyword.end()] if keyword and start + keyword.end() < len(line) else ""
        if not (after and after in _QUOTES_CLOSE):
            return True
    return _CONDITION.match(line, match.end()) is not None


def _choices(g: _Grammar, pattern: re.Pattern[str], line: str) -> list[re.Match[str]]:
    """The pattern's matches on a line that are choices, not mentions."""
    return [m for m in pattern.finditer(line) if not _is_mention(g, line, m)]


def _verdict_line(g: _Grammar, line: str) -> str | None:
    """The label of a line that is nothing but a verdict ("Answer: A", "B", "Option A")."""
    tail = _PAREN_TAIL.search(line)
    if tail is not None:  # "Answer: A (consistent)"
        line = line[: tail.start() + 1]
    match = g.verdict_words.fullmatch(_words(line))
    return g.canon(match.group(1)) if match else None


def _words(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.casefold()))


@lru_cache(maxsize=32)
def _instruction_lines(instructions: str, reask: str) -> tuple[str, ...]:
    """The instruction text of a prompt template, line by line, without its variable parts."""
    lines = (instructions + "\n" + reask).splitlines()
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


def _echoed_lines(g: _Grammar, lines: list[str], instructions: tuple[str, ...]) -> set[int]:
    """Lines that are no verdict: instruction text, and the option lists small judges echo.

    Verdict-shaped lines in a row (blank lines between them allowed) that name two
    labels or more are the prompt's option list ("Answer: A" / "Answer: B"), not a
    choice; so are verdict-shaped lines right next to echoed instruction text
    ("...exactly one of:" before them, the "(A = consistent, B = they disagree)" legend
    after them). A lone "Answer: A" among the judge's own words is a choice, although
    the prompt contains that line too: it is the very form the prompt asks for.
    """
    out: set[int] = set()
    letters = [_verdict_line(g, line) for line in lines]
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


def _weak_verdict(g: _Grammar, line: str, options: bool, last: bool) -> tuple[str, int] | None:
    """A weak form's label and where it ends on the line (a change of mind may follow)."""
    hits = _choices(g, g.keyword, line) + _choices(g, g.pick, line)
    if g.out_of is not None:
        hits += _choices(g, g.out_of, line)
    if hits:
        return settle(line, hits, g.canon)
    match = (
        g.bare.match(line)
        or (None if options else g.leading.match(line))
        or g.trailing.search(line)
    )
    if match:
        return g.canon(match.group(1)), match.end(1)
    lower = g.lower.match(line)
    if lower:
        return g.canon(lower.group(1)), lower.end(1)
    if not last:
        return None
    # Looser forms, trusted only on the reply's last line: "Option A", "They agree; A".
    option = g.option_line.fullmatch(line)
    if option:
        return g.canon(option.group(1)), option.end(1)
    tail = g.after_sentence.search(line)
    if tail and tail.group(1).casefold() not in _ABBREVIATIONS and len(tail.group(1)) > 1:
        chosen = g.canon(tail.group(2))
        # Never when the line names another label: "Store A has 5. B".
        if not any(n != chosen and p.search(line) for n, p in g.any_label):
            return chosen, tail.end(2)
    return None


def read_verdict(text: str, rubric: Rubric, instructions: str | None = None) -> Verdict | None:
    """The judge's verdict and the reasoning before it, or None when it gave none.

    An explicit verdict ("Answer: A", "**Verdict:** PASS", "<answer>A</answer>",
    "Score: 4/5") wins wherever it stands, the last one if there are several, so a later
    passing mention ("... I would answer B") cannot flip it; a retraction after the
    verdict does, on its line or below: "Answer: A? No, B.", "Answer: A. Actually, B",
    "Answer: A. No wait, Answer: B" are B. Only without an explicit verdict are weaker
    forms read, from the last line up: "The answer is A", "I pick B", a lone "(B)", for
    a scale "I'd give it a 4 out of 5", and on the last line only "Option A" or "They
    agree; A". A reply that lists the options ("A) consistent / B) inconsistent")
    without choosing has none.

    Small judges echo their prompt, so what repeats ``instructions`` (the prompt
    template's own text; the rubric's prompt when None) or the re-ask is never a
    verdict: the option list "Answer: A / Answer: B", "PASS/FAIL", "1-5", a quoted
    '"Answer: B" if ...', a condition "Answer: A if they agree". Full-width forms
    (Ａｎｓｗｅｒ: Ａ) are NFKC-normalised.
    """
    g = _grammar(rubric)
    original = text.strip().splitlines()
    lines = [_DECORATION.sub("", unicodedata.normalize("NFKC", line)).strip() for line in original]
    prompt = rubric.prompt if instructions is None else instructions
    echoed = _echoed_lines(g, lines, _instruction_lines(prompt, rubric.reask))
    strong: tuple[int, str, int] | None = None
    for index, line in enumerate(lines):
        if index in echoed:
            continue
        if (settled := settle(line, _choices(g, g.strong, line), g.canon)) is not None:
            strong = (index, *settled)
    if strong is not None:
        index, choice, end = strong
    else:
        leading = {g.canon(m.group(1)) for line in lines if (m := g.option.match(line))}
        options = len(leading) > 1  # an option list, not a choice
        candidates = [k for k in range(len(lines)) if lines[k] and k not in echoed]
        found = None
        for index in reversed(candidates):
            weak = _weak_verdict(g, lines[index], options, last=index == candidates[-1])
            if weak is not None:
                found = (index, *weak)
                break
        if found is None:
            return None
        index, choice, end = found
    changed = change_of_mind(lines, echoed, index, end, g.correction, g.canon)
    if changed is not None and changed[1] != choice:
        index, choice = changed
    reasoning = "\n".join(original[:index]).strip()
    if not reasoning:
        # The verdict may share its line with the reasoning: "Same totals. Answer: A"
        line = lines[index]
        bare = g.bare.match(line) or re.fullmatch(r"(?:" + g.strong.pattern + r")\s*[.!]?", line)
        if not bare:
            reasoning = line
    return Verdict(choice, reasoning)


_CLOSED = re.compile(r"[.!)\]}*_`\"'”’»]\s*$")


def read_cut_verdict(text: str, rubric: Rubric, instructions: str | None = None) -> Verdict | None:
    """The verdict of a reply cut off at the token limit, or None: only a verdict that is
    complete and final counts.

    Final: the reply's last line states it, and states the verdict the whole reply is
    read as (so nothing after it can have changed it, and a list of the options, whose
    last entry the cut left half-written, is no choice). Complete: that line ended
    before the cut (a line break follows it, or it closes with punctuation), so the
    label is not the start of a longer word. "The user should answer: A.\n\n...Be
    clear on when the two", "Answer: B\n(" and "exactly one of:\nVerdict: PASS\nVerdict:
    F" have none; "...same totals.\nAnswer: A." has A.
    """
    body = text.rstrip()
    if not body:
        return None
    last = body.splitlines()[-1]
    complete = "\n" in text[len(body) :] or bool(_CLOSED.search(last))
    if not complete:
        return None
    whole = read_verdict(text, rubric, instructions)
    final = read_verdict(last, rubric, instructions)
    if whole is None or final is None or final.choice != whole.choice:
        return None
    return whole


def structured_reading(data: Mapping[str, Any], rubric: Rubric) -> Verdict | None:
    """The verdict of a structured reply ``{"reasoning": ..., "verdict": label}``, or None."""
    choice = data.get("verdict")
    if not isinstance(choice, (str, int)) or isinstance(choice, bool):
        return None
    if isinstance(choice, int) and not _grammar(rubric).scale:
        return None
    text = unicodedata.normalize("NFKC", str(choice)).strip().strip("\"'").strip()
    label = rubric.label(text)
    if label is None:
        return None
    reasoning = data.get("reasoning")
    return Verdict(label, reasoning.strip() if isinstance(reasoning, str) else "")
