"""oxyeval.patterns: project regexes run by RE2, in linear time, with Python's meaning."""

from __future__ import annotations

import time

import pytest

from oxyeval.patterns import MAX_PATTERN_GROUPS, PatternError, compile_pattern


@pytest.mark.parametrize(
    ("pattern", "text"),
    [
        ("(a+)+$", "a" * 100_000 + "!"),  # backtracking re: minutes for 40 characters
        ("(a|aa)+$", "a" * 100_000 + "!"),
        ("(.*a){20}", "a" * 10_000),
        (r"(\w+\s?)+$", "word " * 20_000 + "!"),
    ],
)
def test_catastrophic_patterns_match_in_linear_time(pattern: str, text: str) -> None:
    started = time.perf_counter()
    compile_pattern(pattern).search(text)
    assert time.perf_counter() - started < 1.0


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        ("[", "missing ]"),
        ("(?=x)x", "lookarounds"),  # RE2 has none: refused with the reason, not mis-run
        (r"(a)\1", "backreferences"),
        (r"(?P<x>a)(?P=x)", "backreferences"),
        ("a++", "possessive"),
        ("(?:a{1000}){1000}", "repeat counts"),  # 270 MB in the regex package's compile
    ],
)
def test_what_re2_cannot_run_is_a_clear_error(pattern: str, why: str) -> None:
    with pytest.raises(PatternError, match=why):
        compile_pattern(pattern)


@pytest.mark.parametrize(
    ("pattern", "text", "found"),
    [
        (r"\w+", "März", "März"),  # Python's Unicode \w, not RE2's ASCII one
        (r"[\w-]+", "é-x", "é-x"),
        (r"\d+", "٣٤", "٣٤"),
        (r"\s", "a\u00a0b", "\u00a0"),
        (r"x\Z", "x", "x"),  # Python's \Z is RE2's \z
        (r"\\w", "\\w", "\\w"),  # an escaped backslash is left alone
        ("[]a]+", "]a", "]a"),  # ']' first in a class is a literal, in both
        (r"\W+", "a, b", ", "),
    ],
)
def test_python_meaning_is_kept(pattern: str, text: str, found: str) -> None:
    match = compile_pattern(pattern).search(text)
    assert match is not None and match.group() == found


def test_groups_as_re_gives_them() -> None:
    compiled = compile_pattern(r"for (?P<month>\w+) (\d+)")
    assert compiled.groups == 2 and compiled.groupindex == {"month": 1}
    match = compiled.search("sales for März 42")
    assert match.group("month") == "März" and match.group(2) == "42"
    assert compile_pattern("(a)?b").search("b").group(1) is None


def test_a_lone_surrogate_in_the_text_is_matched_as_its_stand_in() -> None:
    assert compile_pattern("rose .$").search("Sales rose \ud83d") is not None


def test_re2_prints_nothing_of_its_own_on_a_bad_pattern(capfd: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(PatternError):
        compile_pattern("(?<!x)y")
    assert capfd.readouterr().err == ""  # RE2 logs to fd 2 unless told not to


def test_capture_groups_are_bounded_where_the_pattern_is_compiled() -> None:
    # Each group is kept in every RE2 thread: 12,000 of them took 2.3 GB for one search.
    assert compile_pattern("(a)" * MAX_PATTERN_GROUPS).groups == MAX_PATTERN_GROUPS
    with pytest.raises(PatternError, match="12,000 capture groups; a pattern has at most 100"):
        compile_pattern("(a)" * 12_000)
    named = "".join(f"(?P<g{i}>a)" for i in range(MAX_PATTERN_GROUPS + 1))
    with pytest.raises(PatternError, match="101 capture groups"):
        compile_pattern(named)
    assert compile_pattern("(?:a)" * 12_000).groups == 0  # groups that capture nothing


@pytest.mark.parametrize("source", ["good", ".", "^Say", "a.c", "é ü", ""])
def test_a_fixed_length_pattern_runs_on_re_and_finds_what_re2_finds(source: str) -> None:
    import re2

    fast = compile_pattern(source)
    assert type(fast._compiled).__module__ == "re"  # keeps the GIL: see compile_pattern
    slow = re2.compile(source)
    for text in ["good", "Say good\nthen", "abc a.c", "no\n", "é ü!", "\n"]:
        got, want = fast.search(text), slow.search(text)
        assert (got is None) == (want is None), (source, text)
        assert got is None or (got.group(0), got.start()) == (want.group(0), want.start())


@pytest.mark.parametrize("source", ["a*", "(a)", "a|b", "[ab]", "a$", r"\d", "x^y"])
def test_any_other_pattern_stays_on_re2(source: str) -> None:
    assert type(compile_pattern(source)._compiled).__module__ == "re2"
