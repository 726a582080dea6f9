"""Measurements of one output's text that need no model: readability, sameness, JSON.

In the evaluation core because they are properties of an output, not of a kind of test:
A/B branch executions record them today (clarityScore, consistencyHash, validJson, and
a branch's consistencyScore from its hashes), and judged tests or a JSON-output gate can
reuse them. Pure, stdlib only, deterministic.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Sequence

__all__ = [
    "clarity_score",
    "consistency_hash",
    "modal_share",
    "normalise_whitespace",
    "valid_json",
]

#: A word: letters (any script), joined by inner apostrophes ("don't" is one word).
#: Digits and underscores split words and are not words themselves, so numbers, JSON
#: punctuation and code symbols never count as words.
_WORD = re.compile(r"[^\W\d_]+(?:['\u2019][^\W\d_]+)*")
_VOWELS = "aeiouyàáâãäåæèéêëìíîïòóôõöøœùúûüý"
_VOWEL_GROUP = re.compile(f"[{_VOWELS}]+")
#: A sentence ends at a run of . ! ? or an ellipsis followed by whitespace or the end of the
#: text ("3.5" and "example.com" do not end one), or at a line break.
_SENTENCE_END = re.compile(r"(?:[.!?\u2026]+(?=\s|\Z))|\n")


def _syllables(word: str) -> int:
    """English syllables by vowel groups: each run of vowels (y included) is one, a silent
    final e is dropped ("make" 1, but "table" 2 and "agree" 2), and every word has one.

    A heuristic: it is right for most common words and off by one for some ("recipe" 2),
    which is noise next to the formula's own crudeness; it needs no dictionary.
    """
    w = word.lower().replace("'", "").replace("\u2019", "")
    count = len(_VOWEL_GROUP.findall(w))
    if (
        count > 1
        and len(w) > 2
        and w.endswith("e")
        and w[-2] not in _VOWELS
        and not (w.endswith("le") and w[-3] not in _VOWELS)
    ):
        count -= 1
    return max(1, count)


def _sentences(text: str) -> list[str]:
    """The pieces of ``text`` between sentence ends that contain at least one word."""
    return [part for part in _SENTENCE_END.split(text) if _WORD.search(part)]


def clarity_score(text: str) -> float | None:
    """Readability in 0..1: the Flesch Reading Ease score clamped to 0..100, divided by 100.

    ``FRE = 206.835 - 1.015 * words / sentences - 84.6 * syllables / words`` (Flesch,
    1948): short sentences of short words score high ("The cat sat on the mat." 1.0),
    long sentences of long words low (dense legal or academic prose near 0). Plain
    English lands around 0.6-0.7. It measures sentence structure only, not whether the
    text is right or well organised, and its syllable counts are for English.

    Words are runs of letters (see ``_WORD``); a sentence ends at ``.``, ``!``, ``?`` or an
    ellipsis followed by whitespace, or at a line break, since list items, headings and
    lines of code are units a reader takes one at a time. Syllables: see
    :func:`_syllables`.

    Code and JSON are not detected or treated apart: their identifiers, keys and string
    values are the words (``snake_case`` is two), each line a sentence, so structured
    output scores on what a reader would read in it, usually high (short lines, short
    keys). Text with no words at all (empty, whitespace, only numbers and punctuation
    such as ``[1, 2.5, {}]``) gives None: there is nothing to read, and 0 would claim
    it is unreadable.
    """
    words = _WORD.findall(text)
    if not words:
        return None
    sentences = max(1, len(_sentences(text)))
    syllables = sum(_syllables(w) for w in words)
    ease = 206.835 - 1.015 * len(words) / sentences - 84.6 * syllables / len(words)
    return min(100.0, max(0.0, ease)) / 100.0


def normalise_whitespace(text: str) -> str:
    """Every run of whitespace (spaces, tabs, line breaks, Unicode spaces) as one space,
    the ends stripped; case and everything else kept.

    What two outputs must share to count as the same answer: a model that rewraps a
    line or adds a trailing newline gave the same text, one that changed a word or its
    case did not.
    """
    return " ".join(text.split())


def consistency_hash(text: str) -> str:
    """The sha256 hex digest of the whitespace-normalised text (UTF-8): equal for outputs
    that differ only in whitespace, so a branch's runs can be compared by hash alone
    without storing or shipping every output twice."""
    return hashlib.sha256(normalise_whitespace(text).encode("utf-8")).hexdigest()


def _reject_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


def _parses(text: str) -> bool:
    try:
        json.loads(text, parse_constant=_reject_constant)
    except ValueError:  # json.JSONDecodeError is a ValueError
        return False
    return True


#: The whole text is one fenced block, untagged or tagged json (any case).
_FENCE = re.compile(r"\A```(?:json)?[ \t]*\n(.*?)\n?[ \t]*```\Z", re.DOTALL | re.IGNORECASE)


def valid_json(text: str) -> bool:
    """Whether the output, as a whole, is one JSON value.

    Accepted: the text stripped of surrounding whitespace parses as strict JSON (RFC
    8259: any value, so ``42`` and ``"positive"`` with its quotes are JSON, ``NaN`` and
    ``Infinity`` are not); or the whole text is a single fenced block, untagged or tagged
    ``json``, whose content parses. Models fence JSON routinely even when asked not to,
    and a caller strips a fence easily, so a fenced object is counted as JSON output.

    Rejected: anything else around the JSON ("Here is the JSON: {...}"), two blocks, a
    block tagged with another language, JSON Lines (several values), an empty text. A
    caller that must ``json.loads`` the raw output cannot use any of those as is.
    """
    stripped = text.strip()
    if not stripped:
        return False
    if _parses(stripped):
        return True
    fenced = _FENCE.match(stripped)
    return fenced is not None and _parses(fenced.group(1))


def modal_share(hashes: Sequence[str]) -> float | None:
    """The share (0..1) of ``hashes`` equal to the most common one; None for no hashes.

    A branch's consistencyScore: 1.0 when every run gave the same normalised text, ``1/n``
    when all ``n`` differ. Chosen over a count of distinct outputs because it reads the
    same at any number of runs and says how often the usual answer comes back.
    """
    if not hashes:
        return None
    return Counter(hashes).most_common(1)[0][1] / len(hashes)
