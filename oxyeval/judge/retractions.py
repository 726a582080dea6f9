"""A judge changing its mind after a verdict: "Answer: A? No, B." is B.

The verdict parser (:mod:`oxyeval.judge.reading`) takes the last verdict in a reply. A
retraction after a verdict ("No, B", "Actually, B", "Wait, no: Answer: B") is one, on
the verdict's line or below; a passing mention of the other letter, the article "A" or
a letter inside prose ("There is no A", "No B-tier store") is not. The labels are a
rubric's (:func:`correction_pattern`): "Verdict: PASS. Actually, FAIL." is FAIL.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from itertools import pairwise

__all__ = ["change_of_mind", "correction_pattern", "first_group", "is_retraction", "settle"]

# A change of mind after a verdict: "Answer: A? No, B.", "A. Actually, B", "Wait, no: Answer: B".
# The retraction opens a clause and the letter closes one, so "There is no A", "No B-tier
# store differs" and "Actually, A good answer..." are no corrections.
_RETRACT = (
    r"(?i:\b(?:no|nope|wait|sorry|oops|correction|hold\s+on|scratch\s+that|on\s+second\s+thoughts?"
    r"|on\s+reflection|my\s+(?:mistake|bad)|let\s+me\s+correct\s+(?:that|myself)"
    r"|actually|i\s+mean|i\s+meant|make\s+(?:that|it)|rather)\b)"
)
# Bounded, so that a long run of "no, no, no" costs linear time, not quadratic.
_RETRACTIONS = r"(?P<chain>(?:" + _RETRACT + r"[\s,.:;!…\-–—]{0,4}){1,4})"
# Retractions that may lead to the letter without punctuation: "I mean B"; "No A" means none.
_DIRECT_RETRACT = re.compile(r"(?i)\b(?:actually|i\s+mean|i\s+meant|make\s+(?:that|it)|rather)\b")


@lru_cache(maxsize=32)
def correction_pattern(labels: str = "[AB]", keywords: str = "answer|verdict") -> re.Pattern[str]:
    """A retraction followed by a verdict: ``labels`` is the regex of a rubric's labels
    (no capture groups), ``keywords`` the words a verdict follows ("answer|verdict")."""
    return re.compile(
        r"(?:^|(?<=[.!?;,:…\-–—(]))\s*"
        + _RETRACTIONS
        + r"(?i:(?:it(?:'s|\s+is|\s+should\s+be|\s+must\s+be)|the\s+(?:right\s+|correct\s+)?"
        r"(?:"
        + keywords
        + r")\s+is|(?:final\s+)?(?:"
        + keywords
        + r")\s*[:=\-–—]|i(?:'d|\s+would)\s+say"
        r"|i(?:'ll|\s+will)\s+go\s+with)\s*)?"
        + r"(?i:option\s+)?"
        + r"[\(\[\{\"'“]*(?P<letter>"
        + labels
        + r")[\)\]\}\"'”]*"
        r"(?:\s+(?i:is\s+(?:right|correct|the\s+(?:right\s+|correct\s+)?answer)))?"
        r"(?=[.!\s]*$|[.!]+\s|\s+[\-–—(])"
    )


# What may stand between two different verdicts on a line for the second to be a change of
# mind ("Answer: A. No wait, Answer: B"), not a choice left open ("Answer: A or Answer: B").
_RETRACTION_GAP = re.compile(r"[\s.!?;,:…\-–—()]*" + _RETRACTIONS)


def first_group(match: re.Match[str]) -> str:
    return next(g for g in match.groups() if g)


def is_retraction(chain: str) -> bool:
    """ "No, B" and "I mean B" take back a verdict; "No B" ("there is no B") does not."""
    return bool(re.search(r"[,.:;!…\-–—]", chain)) or _DIRECT_RETRACT.search(chain) is not None


def _same(text: str) -> str:
    return text


def settle(
    line: str, matches: list[re.Match[str]], canon: Callable[[str], str] = _same
) -> tuple[str, int] | None:
    """The line's last letter and where it ends, unless the line leaves the choice open.

    "Answer: A or Answer: B" names both and chooses neither; "Answer: A. No wait,
    Answer: B" changes its mind, and the later letter is the verdict.
    """
    if not matches:
        return None
    matches = sorted(matches, key=lambda m: m.start())
    letter = canon(first_group(matches[0]))
    for previous, match in pairwise(matches):
        following = canon(first_group(match))
        if following != letter:
            gap = _RETRACTION_GAP.fullmatch(line, previous.end(), match.start())
            if gap is None or not is_retraction(gap.group("chain")):
                return None
        letter = following
    return letter, matches[-1].end()


def change_of_mind(
    lines: list[str],
    echoed: set[int],
    index: int,
    pos: int,
    correction: re.Pattern[str] | None = None,
    canon: Callable[[str], str] = _same,
) -> tuple[int, str] | None:
    """The last retraction after the verdict at ``lines[index][pos]``: "A? No, B." means B.

    Only a retraction counts ("No, B", "Actually, B", "I mean B"): a later passing
    mention ("...had the gap been larger I would say B") does not flip a verdict.
    """
    pattern = correction if correction is not None else correction_pattern()
    found = None
    for k in range(index, len(lines)):
        if k in echoed:
            continue
        for match in pattern.finditer(lines[k], pos if k == index else 0):
            if is_retraction(match.group("chain")):
                found = (k, canon(match.group("letter")))
    return found
