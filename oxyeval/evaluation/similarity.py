"""Similarity of two texts without a model: the offline stand-in for an embedding.

In the evaluation core because every kind that scores an output against an expected one
(test cases today; the SDK's metrics and judged tests tomorrow) may fall back on it, and
it is pure: no model, no I/O.
"""

from __future__ import annotations

import math
import re
from collections import Counter

__all__ = ["LENGTH_TOLERANCE", "lexical_similarity"]

_WORDS = re.compile(r"\w+", re.UNICODE)


def _features(text: str) -> Counter[str]:
    words = [w.lower() for w in _WORDS.findall(text)]
    grams: Counter[str] = Counter(f"w:{w}" for w in words)
    for w in words:
        padded = f" {w} "
        grams.update(f"c:{padded[i : i + 3]}" for i in range(len(padded) - 2))
    return grams


#: A text may have up to this many times the other's words before the score is scaled down.
LENGTH_TOLERANCE = 2.0


def lexical_similarity(a: str, b: str) -> float:
    """Cosine of word and character-trigram counts, scaled down for a length mismatch; in [0, 1].

    ``score = cosine(features(a), features(b)) * min(1, 2 * short / long)``, where
    ``short`` and ``long`` are the two texts' word counts. A cosine of counts ignores
    how much was said: a 500-character echo of the prompt that contains the word
    "positive" scored 0.53 against the expected "positive". So once one text has more
    than twice the words of the other, the score falls in proportion (three times the
    words: x0.67; eighty times: x0.025); texts of similar length are not penalised.

    A stand-in for offline use only: it rewards shared wording, not shared meaning
    (a synonym or a negation scores low, a reworded echo of the expected answer can
    score high), so reports label it ``lexical`` and never call it semantic.
    """
    if a.strip() == b.strip():
        return 1.0
    fa, fb = _features(a), _features(b)
    if not fa or not fb:
        return 0.0
    dot = sum(v * fb.get(k, 0) for k, v in fa.items())
    na = math.sqrt(sum(v * v for v in fa.values()))
    nb = math.sqrt(sum(v * v for v in fb.values()))
    words_a, words_b = len(_WORDS.findall(a)), len(_WORDS.findall(b))
    short, long = sorted((words_a, words_b))
    return dot / (na * nb) * min(1.0, LENGTH_TOLERANCE * short / long)
