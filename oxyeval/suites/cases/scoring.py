"""Scoring one test case execution against its expected output, and regression rules.

Pure functions, so each rule is tested on its own numbers. Field names follow the
PromptForge Testing API spec (exactMatch, semanticScore, lengthDiff, tokenDiff,
outputDiff, regressionType) because the store and the later GraphQL API expose them.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from typing import Any

from ...evaluation import LENGTH_TOLERANCE, lexical_similarity
from ...project.prompts import DEFAULT_THRESHOLD

__all__ = [
    "DEFAULT_THRESHOLD",
    "LENGTH_TOLERANCE",
    "REGRESSION_ORDER",
    "Regression",
    "TokenCounter",
    "apply_diff",
    "detect_regression",
    "exact_match",
    "lexical_similarity",
    "output_diff",
    "token_counter",
]

REGRESSION_ORDER = ("FAILED", "SCORE_DROP", "LENGTH_CHANGE")  # most severe first


def exact_match(actual: str, expected: str | None) -> bool:
    """Equal after trimming surrounding whitespace (the spec's definition)."""
    return expected is not None and actual.strip() == expected.strip()


# -- the character diff ----------------------------------------------------------------

_PIECES = re.compile(r"\s+|\w+|[^\w\s]")
_CHAR_REFINE_LIMIT = 4000  # characters per replaced region refined char by char


def _append(ops: list[dict[str, str]], op: str, text: str) -> None:
    if not text:
        return
    if ops and ops[-1]["op"] == op:
        ops[-1]["text"] += text
    else:
        ops.append({"op": op, "text": text})


_WORD_PAIR_LIMIT = 250_000  # words x words above which a changed stretch is not refined


def output_diff(expected: str, actual: str) -> list[dict[str, str]]:
    """Character-level diff from ``expected`` to ``actual`` as equal/insert/delete ops.

    Equal + delete texts concatenate to ``expected``; equal + insert to ``actual``.
    Lines are matched first, then words inside changed lines, then characters inside
    similar changed words: each step on small pieces only, so two long unrelated
    outputs cost milliseconds, not minutes, and the result stays readable.
    """
    if expected == actual:  # most cases of a passing suite: nothing to match
        return [{"op": "equal", "text": expected}] if expected else []
    ops: list[dict[str, str]] = []
    a, b = expected.splitlines(keepends=True), actual.splitlines(keepends=True)
    for tag, i1, i2, j1, j2 in _opcodes(a, b):
        old, new = "".join(a[i1:i2]), "".join(b[j1:j2])
        if tag == "equal":
            _append(ops, "equal", old)
        elif tag == "delete":
            _append(ops, "delete", old)
        elif tag == "insert":
            _append(ops, "insert", new)
        else:
            _word_diff(old, new, ops)
    return ops


_MATCH_BUDGET = 8_000_000  # line positions the matcher may visit, in all, for one diff


def _opcodes(a: Sequence[str], b: Sequence[str]) -> list[tuple[str, int, int, int, int]]:
    """``SequenceMatcher.get_opcodes()`` of ``a`` and ``b`` with bounded work.

    difflib's matcher is quadratic and worse on outputs of many short repeated lines
    (10,000 of them took minutes, in a thread nothing can stop). Here the common head and
    tail are matched first, then the longest-match search runs only on regions whose cost
    (how many positions of ``b`` its lines occur at) fits what is left of the budget; a
    region past it stays one replacement. The result is still a correct diff, only a
    coarser one where the budget ran out."""
    head = 0
    while head < min(len(a), len(b)) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < min(len(a), len(b)) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    matcher = SequenceMatcher(None, a, b, autojunk=False)
    # What one search over a[alo:ahi] costs at most: the b positions of each of its lines.
    seen = [0]
    for line in a:
        seen.append(seen[-1] + len(matcher.b2j.get(line, ())))
    blocks: list[tuple[int, int, int]] = [(0, 0, head)] if head else []
    budget = _MATCH_BUDGET
    regions = [(head, len(a) - tail, head, len(b) - tail)]
    while regions:
        alo, ahi, blo, bhi = regions.pop()
        cost = seen[ahi] - seen[alo]
        if alo >= ahi or blo >= bhi or cost > budget:
            continue
        budget -= cost
        i, j, k = matcher.find_longest_match(alo, ahi, blo, bhi)
        if k:
            blocks.append((i, j, k))
            regions.append((alo, i, blo, j))
            regions.append((i + k, ahi, j + k, bhi))
    if tail:
        blocks.append((len(a) - tail, len(b) - tail, tail))
    blocks.sort()
    out: list[tuple[str, int, int, int, int]] = []
    i = j = 0
    for ai, bj, size in [*blocks, (len(a), len(b), 0)]:
        tag = "replace" if i < ai and j < bj else "delete" if i < ai else "insert" if j < bj else ""
        if tag:
            out.append((tag, i, ai, j, bj))
        if size:
            out.append(("equal", ai, ai + size, bj, bj + size))
        i, j = ai + size, bj + size
    return out


def _word_diff(expected: str, actual: str, ops: list[dict[str, str]]) -> None:
    a, b = _PIECES.findall(expected), _PIECES.findall(actual)
    if len(a) * len(b) > _WORD_PAIR_LIMIT:
        _append(ops, "delete", expected)
        _append(ops, "insert", actual)
        return
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        old, new = "".join(a[i1:i2]), "".join(b[j1:j2])
        if tag == "equal":
            _append(ops, "equal", old)
        elif tag == "delete":
            _append(ops, "delete", old)
        elif tag == "insert":
            _append(ops, "insert", new)
        elif (
            len(old) + len(new) <= _CHAR_REFINE_LIMIT
            and (matcher := SequenceMatcher(None, old, new, autojunk=False)).ratio() >= 0.5
        ):
            # Similar stretches (a changed digit, a typo) read best char by char; unrelated
            # words ("negative" vs "neutral") read best as one deletion and one insertion.
            for t, k1, k2, m1, m2 in matcher.get_opcodes():
                if t == "equal":
                    _append(ops, "equal", old[k1:k2])
                else:
                    _append(ops, "delete", old[k1:k2])
                    _append(ops, "insert", new[m1:m2])
        else:
            _append(ops, "delete", old)
            _append(ops, "insert", new)


def apply_diff(ops: Sequence[dict[str, str]]) -> tuple[str, str]:
    """(expected, actual) rebuilt from a diff: the property every diff must keep."""
    expected = "".join(o["text"] for o in ops if o["op"] in ("equal", "delete"))
    actual = "".join(o["text"] for o in ops if o["op"] in ("equal", "insert"))
    return expected, actual


# -- lexical similarity (offline, clearly not semantic) --------------------------------

# -- tokens ------------------------------------------------------------------------------


@dataclass(frozen=True)
class TokenCounter:
    """Counts tokens; ``method`` says how, so reports never pass an estimate off as exact."""

    method: str  # "tiktoken:<encoding>" (exact) or "estimate"
    _encode: Any = field(default=None, repr=False, compare=False)

    @property
    def exact(self) -> bool:
        return self.method != "estimate"

    def count(self, text: str) -> int:
        if self._encode is not None:
            return len(self._encode(text))
        return _estimate_tokens(text)


_ESTIMATE = re.compile(r"\w+|[^\w\s]", re.UNICODE)


def _estimate_tokens(text: str) -> int:
    """Roughly what BPE tokenizers give for English: common words are one token, long
    ones split in ~5-character pieces, punctuation one token each."""
    total = 0
    for piece in _ESTIMATE.findall(text):
        total += 1 if len(piece) <= 6 else math.ceil(len(piece) / 5)
    return total


@functools.cache
def token_counter(model_ref: str = "") -> TokenCounter:
    """An exact tokenizer when one is usable with no network access, else the estimate.

    tiktoken fetches its BPE files on first use; we only use it when the file is
    already in its cache, so nothing is ever downloaded at run time.
    """
    try:
        import tiktoken
        import tiktoken_ext.openai_public  # noqa: F401  (registers the encodings)
    except ImportError:
        return TokenCounter("estimate")
    import hashlib
    import os
    import tempfile

    name = (
        "o200k_base"
        if any(m in model_ref for m in ("gpt-4o", "gpt-4.1", "o1", "o3", "o4", "gpt-5"))
        else "cl100k_base"
    )
    urls = {
        "cl100k_base": "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
        "o200k_base": "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
    }
    cache_dir = (
        os.environ.get("TIKTOKEN_CACHE_DIR")
        or os.environ.get("DATA_GYM_CACHE_DIR")
        or os.path.join(tempfile.gettempdir(), "data-gym-cache")
    )
    cached = os.path.join(cache_dir, hashlib.sha1(urls[name].encode()).hexdigest())
    if not os.path.exists(cached):
        return TokenCounter("estimate")
    try:
        encoding = tiktoken.get_encoding(name)
    except Exception:  # a corrupt cache file: fall back rather than fail the run
        return TokenCounter("estimate")
    return TokenCounter(f"tiktoken:{name}", encoding.encode)


# -- regression detection ------------------------------------------------------------------


@dataclass(frozen=True)
class Regression:
    is_regression: bool
    type: str | None  # the most severe of ``types``
    types: list[str]
    reasons: list[str]


def detect_regression(
    *,
    passed: bool,
    score: float | None,
    length: int,
    historical_pass_rate: float | None,
    recent_scores: Sequence[float | None],
    recent_lengths: Sequence[int],
) -> Regression:
    """The spec's three rules against a case's history (empty history: no regression).

    FAILED: fails now while the historical pass rate (0..1, all earlier runs) is > 0.8.
    SCORE_DROP: score < 0.9 x the average score of the recent earlier runs.
    LENGTH_CHANGE: length differs from their average length by more than 30%.
    """
    types: list[str] = []
    reasons: list[str] = []
    if not passed and historical_pass_rate is not None and historical_pass_rate > 0.8:
        types.append("FAILED")
        reasons.append(f"failed; it passed {historical_pass_rate * 100:.0f}% of earlier runs")
    scores = [s for s in recent_scores if s is not None]
    if score is not None and scores:
        average = sum(scores) / len(scores)
        if score < 0.9 * average:
            types.append("SCORE_DROP")
            reasons.append(f"score {score:.3f} < 0.9 x recent average {average:.3f}")
    if recent_lengths:
        average_length = sum(recent_lengths) / len(recent_lengths)
        if average_length > 0:
            change = abs(length - average_length) / average_length
            if change > 0.3:
                types.append("LENGTH_CHANGE")
                reasons.append(
                    f"length {length} differs {change * 100:.0f}% from recent average {average_length:.0f}"
                )
        elif length > 0:
            types.append("LENGTH_CHANGE")
            reasons.append(f"length {length} where recent outputs were empty")
    types.sort(key=REGRESSION_ORDER.index)
    return Regression(bool(types), types[0] if types else None, types, reasons)
