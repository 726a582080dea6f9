"""Text metrics of one output: readability reference values, hashes, JSON, modal share."""

from __future__ import annotations

import hashlib

import pytest

from oxyeval.evaluation import (
    clarity_score,
    consistency_hash,
    modal_share,
    normalise_whitespace,
    valid_json,
)
from oxyeval.evaluation.text import _syllables

SIMPLE = "The cat sat on the mat."
DENSE = (
    "Institutional considerations necessitate comprehensive organizational restructuring "
    "notwithstanding unanticipated administrative complications."
)


@pytest.mark.parametrize(
    ("word", "count"),
    [
        ("the", 1),
        ("make", 1),  # silent final e
        ("table", 2),  # consonant + le is a syllable
        ("agree", 2),  # a final e after a vowel is not silent
        ("people", 2),
        ("lazy", 2),  # y is a vowel
        ("comprehensive", 4),
        ("organizational", 6),
        ("don't", 1),
        ("hmm", 1),  # every word has one
    ],
)
def test_syllable_heuristic(word: str, count: int) -> None:
    assert _syllables(word) == count


def test_clarity_reference_values() -> None:
    # 9 words, 1 sentence, 11 syllables: 206.835 - 1.015*9 - 84.6*11/9 = 94.30
    assert clarity_score("The quick brown fox jumps over the lazy dog.") == pytest.approx(0.943)
    assert clarity_score(SIMPLE) == 1.0  # 116.1, clamped
    assert clarity_score(DENSE) == 0.0  # far below 0, clamped
    dickens = (
        "It was a dark and stormy night; the rain fell in torrents, except at occasional "
        "intervals, when it was checked by a violent gust of wind which swept up the streets."
    )
    score = clarity_score(dickens)
    assert score is not None and 0.5 < score < 0.75  # one long sentence of plain words


def test_clarity_is_monotonic_in_the_obvious_cases() -> None:
    long_sentence = (
        "The report that the team wrote after the meeting that ran late on the last day "
        "of the month was sent to the board."
    )
    split = (
        "The team wrote a report. The meeting ran late. It was the last day of the month. "
        "The report went to the board."
    )
    a, b = clarity_score(long_sentence), clarity_score(split)
    assert a is not None and b is not None and b > a  # shorter sentences read easier
    plain = "We need to change how the firm is run."
    fancy = "We necessitate reconfiguring organizational governance."
    p, f = clarity_score(plain), clarity_score(fancy)
    assert p is not None and f is not None and p > f  # longer words read harder


def test_clarity_counts_sentences_at_terminators_and_line_breaks_not_decimals() -> None:
    one = "The price rose 3.5 percent at example.com today and then fell back again"
    assert clarity_score(one) == clarity_score(one + ".")
    items = ["Remember the paperwork", "Consider the budget", "Deliver the products"]
    lines, joined = "\n".join(items), " ".join(items)
    s_lines, s_joined = clarity_score(lines), clarity_score(joined)
    assert s_lines is not None and s_joined is not None and s_lines > s_joined


def test_clarity_of_text_without_words_is_none() -> None:
    for text in ["", "   \n\t", "[1, 2.5, {}]", "42", "{} [] :,", "--- *** ---"]:
        assert clarity_score(text) is None, text


def test_clarity_scores_json_on_its_keys_and_string_values() -> None:
    score = clarity_score('{"name": "Alice", "age": 3}')
    # words name (1), Alice (2), age (1): 3 words, 4 syllables, one line:
    # 206.835 - 1.015 * 3 - 84.6 * 4 / 3 = 90.99
    assert score == pytest.approx(0.9099, abs=1e-4)
    assert clarity_score('{"id": 7}') == clarity_score("id")


def test_clarity_stays_in_zero_one() -> None:
    for text in [SIMPLE, DENSE, "a", "Supercalifragilisticexpialidocious!", "ok " * 500]:
        score = clarity_score(text)
        assert score is not None and 0.0 <= score <= 1.0


def test_normalise_whitespace_collapses_runs_and_keeps_case() -> None:
    assert normalise_whitespace("  Hello,\n\n  World \t!\u00a0x ") == "Hello, World ! x"
    assert normalise_whitespace("") == ""
    assert normalise_whitespace("A b") != normalise_whitespace("a b")


def test_consistency_hash_ignores_whitespace_only() -> None:
    h = consistency_hash("Hello world")
    assert h == hashlib.sha256(b"Hello world").hexdigest()
    assert consistency_hash("  Hello\n   world\n") == h
    assert consistency_hash("hello world") != h
    assert consistency_hash("Hello world.") != h
    assert len(h) == 64 and all(c in "0123456789abcdef" for c in h)


@pytest.mark.parametrize(
    "text",
    [
        '{"a": 1}',
        '  \n[1, 2, {"b": null}]\n ',
        "42",
        '"positive"',
        "true",
        '```json\n{"a": 1}\n```',
        '```JSON\n{"a": 1}```',
        "```\n[1, 2]\n```",
        '\n```json\n{\n  "a": [1, 2]\n}\n```\n',
    ],
)
def test_valid_json_accepts_whole_json_and_one_fenced_block(text: str) -> None:
    assert valid_json(text)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "positive",
        "{'a': 1}",
        '{"a": 1,}',
        "NaN",
        '{"a": Infinity}',
        'Here is the JSON: {"a": 1}',
        '{"a": 1}\n{"b": 2}',
        '```json\n{"a": 1}\n```\nHope this helps!',
        '```json\n{"a": 1}\n```\n```json\n{"b": 2}\n```',
        '```python\n{"a": 1}\n```',
        "```json\n\n```",
    ],
)
def test_valid_json_rejects_anything_else(text: str) -> None:
    assert not valid_json(text)


def test_modal_share() -> None:
    assert modal_share([]) is None
    assert modal_share(["a"]) == 1.0
    assert modal_share(["a", "a", "a"]) == 1.0
    assert modal_share(["a", "b", "a", "c"]) == 0.5
    assert modal_share(["a", "b", "c", "d"]) == 0.25
