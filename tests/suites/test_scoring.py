from __future__ import annotations

import random

import pytest

from oxyeval.suites.cases.scoring import (
    apply_diff,
    detect_regression,
    exact_match,
    lexical_similarity,
    output_diff,
    token_counter,
)


@pytest.mark.parametrize(
    ("actual", "expected", "match"),
    [
        ("positive", "positive", True),
        ("  positive\n", "positive", True),
        ("Positive", "positive", False),
        ("x", None, False),
    ],
)
def test_exact_match_trims_only(actual: str, expected: str | None, match: bool) -> None:
    assert exact_match(actual, expected) is match


@pytest.mark.parametrize(
    ("expected", "actual"),
    [
        ("", ""),
        ("", "new"),
        ("old", ""),
        ("The total is 42 dollars.", "The total was 43 dollars!"),
        ("negative", "neutral"),
        ("line one\nline two\n", "line one\nline 2\nline three"),
        ("naïve café 🙂", "naive cafe 🙃"),
        ("a" * 5000, "b" * 5000),
    ],
)
def test_diff_reproduces_both_texts(expected: str, actual: str) -> None:
    ops = output_diff(expected, actual)
    assert apply_diff(ops) == (expected, actual)
    assert all(op["op"] in ("equal", "insert", "delete") and op["text"] for op in ops)


def test_diff_random_texts_reproduce() -> None:
    rng = random.Random(7)
    alphabet = "ab c\n.1"
    for _ in range(300):
        a = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        b = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        assert apply_diff(output_diff(a, b)) == (a, b)


def test_diff_is_character_level_for_small_edits() -> None:
    ops = output_diff("The total is 42.", "The total is 43.")
    assert ops == [
        {"op": "equal", "text": "The total is 4"},
        {"op": "delete", "text": "2"},
        {"op": "insert", "text": "3"},
        {"op": "equal", "text": "."},
    ]


def test_lexical_similarity_orders_sensibly() -> None:
    same = lexical_similarity("the cat sat on the mat", "the cat sat on the mat")
    close = lexical_similarity("the cat sat on the mat", "a cat sat on a mat")
    far = lexical_similarity("the cat sat on the mat", "quarterly revenue grew")
    assert same == 1.0
    assert 0.5 < close < 1.0
    assert far < 0.2
    assert lexical_similarity("", "x") == 0.0


def test_token_counter_is_labelled() -> None:
    counter = token_counter("some-model")
    assert counter.method == "estimate" or counter.method.startswith("tiktoken:")
    if counter.method == "estimate":
        assert not counter.exact
        assert counter.count("Hello, world!") == 4
        assert counter.count("internationalization") == 4
        assert counter.count("") == 0


def base(**kw):
    args = dict(
        passed=True,
        score=1.0,
        length=10,
        historical_pass_rate=1.0,
        recent_scores=[1.0],
        recent_lengths=[10],
    )
    args.update(kw)
    return detect_regression(**args)


def test_no_history_means_no_regression() -> None:
    r = detect_regression(
        passed=False,
        score=0.1,
        length=100,
        historical_pass_rate=None,
        recent_scores=[],
        recent_lengths=[],
    )
    assert not r.is_regression and r.type is None and r.types == []


def test_failed_rule_needs_pass_rate_above_080() -> None:
    assert base(passed=False, score=None, historical_pass_rate=0.81).types == ["FAILED"]
    assert base(passed=False, score=None, historical_pass_rate=0.80).types == []  # not > 0.8
    assert base(passed=True, historical_pass_rate=1.0).types == []


def test_score_drop_is_below_ninety_percent_of_recent_average() -> None:
    assert base(score=0.89, recent_scores=[1.0, 1.0]).types == ["SCORE_DROP"]
    assert base(score=0.9, recent_scores=[1.0]).types == []  # exactly 0.9 x average: no drop
    assert base(score=0.5, recent_scores=[None, None]).types == []  # no scored history
    assert base(score=0.5, recent_scores=[0.5, None, 0.6]).types == []  # 0.5 >= 0.9 x 0.55


def test_length_change_is_more_than_thirty_percent() -> None:
    assert base(length=14, recent_lengths=[10, 10]).types == ["LENGTH_CHANGE"]
    assert base(length=13, recent_lengths=[10]).types == []  # exactly 30%: not more
    assert base(length=6, recent_lengths=[10]).types == ["LENGTH_CHANGE"]
    assert base(length=5, recent_lengths=[0, 0]).types == ["LENGTH_CHANGE"]


def test_precedence_keeps_all_types_most_severe_first() -> None:
    r = base(
        passed=False,
        score=0.2,
        length=50,
        historical_pass_rate=0.95,
        recent_scores=[0.9, 1.0],
        recent_lengths=[10],
    )
    assert r.is_regression
    assert r.types == ["FAILED", "SCORE_DROP", "LENGTH_CHANGE"]
    assert r.type == "FAILED"
    r2 = base(score=0.5, length=20, recent_scores=[1.0], recent_lengths=[10])
    assert r2.type == "SCORE_DROP" and r2.types == ["SCORE_DROP", "LENGTH_CHANGE"]
    assert len(r2.reasons) == 2


def test_output_diff_work_is_bounded_on_repeated_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    """Many short repeated lines made difflib's matcher run for minutes, in a thread that
    SIGTERM cannot stop. The matcher now gets a budget of positions to visit: measured
    here by counting what each search may visit, not by timing it."""
    import difflib

    from oxyeval.suites.cases import scoring

    visited = 0
    real = difflib.SequenceMatcher.find_longest_match

    def counting(self, alo=0, ahi=None, blo=0, bhi=None):  # type: ignore[no-untyped-def]
        nonlocal visited
        visited += sum(len(self.b2j.get(line, ())) for line in self.a[alo:ahi])
        return real(self, alo, ahi, blo, bhi)

    monkeypatch.setattr(difflib.SequenceMatcher, "find_longest_match", counting)
    expected = "".join("a\n" if i % 2 else "b\n" for i in range(10_000))
    actual = "".join("a\n" if i % 3 else "b\n" for i in range(10_000))
    ops = output_diff(expected, actual)
    assert apply_diff(ops) == (expected, actual)  # coarse where the budget ran out, still right
    assert visited <= scoring._MATCH_BUDGET
    # An ordinary change in a long output is still found line by line.
    base = "".join(f"line {i}\n" for i in range(2000))
    edited = base.replace("line 1000\n", "line 1000 changed\n")
    ops = output_diff(base, edited)
    assert [o["op"] for o in ops] == ["equal", "insert", "equal"]
    assert ops[1]["text"] == " changed"
