"""No single filter or method call runs for long where nothing can stop it (attack F6).

The render deadline and the stop flag (the CLI's first SIGTERM) are checked between
operations. A single call doing quadratic work in C or library code held both:
``("a" * 4000000) | wordwrap(3)`` ran 54 s (SIGTERM waited 49 s), ``trim(chars)`` with a
multi-megabyte ``chars`` minutes. Each such call is now linear, or bounded before it runs
(a precision, a codec's input, a length to allocate), or its result measured; and the
work of calls adds up on a clock that checks the deadline and the stop flag as it goes,
also inside the longest of them (wordwrap, urlize, strip).

Each test finishes well within a second (the old code took seconds to hours on each).
"""

from __future__ import annotations

import asyncio
import random
import threading
import time

import pytest
from jinja2 import Environment
from jinja2 import filters as jinja_filters
from jinja2.nodes import EvalContext

from oxyeval import _tasks
from oxyeval.errors import LoadError
from oxyeval.project import sandbox_text
from oxyeval.project.render_budget import budget

from .sandbox_checks import limit_error as _limit_error
from .sandbox_checks import render_source as _render

# 300 distinct characters: a chars argument no deduplication makes short
MANY = "".join(map(chr, range(0x100, 0x100 + 300)))


def _quick(source: str, **context: object) -> str:
    started = time.monotonic()
    out = _render(source, **context)
    assert time.monotonic() - started < 5, source
    return out


# -- wordwrap: linear, same lines as Jinja's ----------------------------------------------


def test_wordwrap_breaks_a_long_word_in_linear_time() -> None:
    """A million-character word at width 3: about 3 s by re-slicing (0.44 s for 400,000,
    growing as the square), a fraction of a second by position."""
    out = _quick("{{ ('a' * 1000000) | wordwrap(3) }}")
    assert out == "\n".join(["aaa"] * 333_333 + ["a"])


def test_wordwrap_writes_the_same_lines_as_jinja() -> None:
    """Random texts with long words, hyphens, Unicode whitespace (which textwrap's
    str.strip() drops but its splitting keeps in words) and every option."""
    env = Environment()
    pieces = ["a", "b", "-", " ", "  ", "\n", "\t", "1", "\xa0", "--", "é", "x-y", "\u2028", "."]
    rnd = random.Random(13)
    with budget():
        for _ in range(3000):
            text = "".join(
                rnd.choice(pieces) * rnd.choice([1, 1, 3, 12]) for _ in range(rnd.randrange(40))
            )
            args = (
                rnd.choice([1, 2, 3, 5, 13]),
                rnd.random() < 0.8,
                rnd.choice([None, "|", "<br>"]),
                rnd.random() < 0.7,
            )
            expected = jinja_filters.do_wordwrap(env, text, *args)
            assert sandbox_text._wordwrap(env, text, *args) == expected, (text, args)
    with pytest.raises(LoadError, match=r"invalid width 0 \(must be > 0\)"):
        _render("{{ 'abc' | wordwrap(0) }}")


def test_wordwrap_output_is_measured_before_it_is_joined(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OXY_MAX_RENDER_CHARS", "10000")
    assert "wordwrap(...) would be 11,999 characters" in _limit_error(
        "{{ ('a' * 6000) | wordwrap(1) }}"
    )
    assert len(_render("{{ ('a' * 5000) | wordwrap(1) }}")) == 9_999


# -- strip with chars ------------------------------------------------------------------


@pytest.mark.parametrize(
    "source",
    [
        "{{ ('ab' * 600000) | trim('c' * 3000000 ~ 'ab') | length }}",
        "{{ ('ab' * 600000).strip('c' * 3000000 ~ 'ab') | length }}",
        "{{ ('ab' * 600000).lstrip('c' * 3000000 ~ 'ab') | length }}",
        "{{ ('ab' * 600000).rstrip('c' * 3000000 ~ 'ab') | length }}",
        "{{ ('ab' * 600000).encode().strip(('c' * 3000000 ~ 'ab').encode()) | length }}",
    ],
    ids=["trim", "strip", "lstrip", "rstrip", "bytes"],
)
def test_strip_with_a_long_chars_looks_up_its_distinct_characters(source: str) -> None:
    """The attack's case (34 s) with the same result: chars holds three characters."""
    assert _quick(source) == "0"


@pytest.mark.parametrize(
    ("how", "left", "right"), [("strip", 0, 0), ("lstrip", 0, 1), ("rstrip", 1, 0)]
)
def test_strip_with_many_distinct_characters_finds_the_edges_with_a_set(
    how: str, left: int, right: int
) -> None:
    """Stripping 3,000,000 characters of 300 kinds named at the end of a 300,300-character
    chars: 9e11 lookups by scanning chars (minutes), a set lookup per character now."""
    side = MANY * 5_000
    chars = "\u4e00" * 300_000 + MANY
    expected = side * left + "ok" + side * right
    source = f"{{{{ (side ~ 'ok' ~ side).{how}(chars) == expected }}}}"
    assert _quick(source, side=side, chars=chars, expected=expected) == "True"
    assert _quick("{{ s | trim(chars) | length }}", s=side, chars=chars) == "0"
    high = bytes(range(128, 256))
    text = high * 5_000 + b"ok" + high * 5_000
    assert _quick("{{ text.strip(chars) }}", text=text, chars=b"\0" * 300_000 + high) == "b'ok'"


def test_strip_keeps_the_type_of_what_it_strips() -> None:
    source = (
        "{% set m = ('<b>' ~ chars ~ '</b>') | safe %}{{ m.strip(chars) is escaped }} "
        "{{ (m ~ chars).rstrip(chars) }} {{ (chars ~ 'x').lstrip(chars) }}"
    )
    assert _render(source, chars=MANY) == "True <b>" + MANY + "</b> x"


# -- urlize: in blocks, measured --------------------------------------------------------


def test_urlize_in_blocks_writes_the_same_text_as_jinja(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox_text, "_URLIZE_BLOCK", 5)  # many cuts in short texts
    words = ["www.a.com", "http://x.org/a?b=1", "(www.b.com)", "a@b.com", "<x>", "&amp;"]
    words += ["foo", "bar.", " ", "  ", "\n", "\xa0", "https://e.x/<", "mailto:a@b.c"]
    rnd = random.Random(7)
    with budget():
        for _ in range(500):
            text = "".join(rnd.choice(words) for _ in range(rnd.randrange(15)))
            for autoescape in (False, True):
                ctx = EvalContext(Environment(autoescape=autoescape))
                kw = rnd.choice([{}, {"trim_url_limit": 5}, {"nofollow": True, "target": "_b"}])
                expected = jinja_filters.do_urlize(ctx, text, **kw)
                got = sandbox_text._urlize(ctx, text, **kw)
                assert (got, type(got)) == (expected, type(expected)), (text, kw)


def test_urlize_is_stopped_at_the_render_limit_while_it_writes() -> None:
    """400,000 links: 22,800,000 characters before, now refused as it passes 5,000,000."""
    text = _limit_error("{{ ('www.a.com ' * 400000) | urlize | length }}")
    assert "urlize(...) would be" in text


# -- results a call makes several times larger than its input ---------------------------


@pytest.mark.parametrize(
    ("source", "what"),
    [
        ("{{ ('<' * 4000) | e }}", "e(...) would be 16,000"),
        ("{{ ('&' * 4000) | forceescape }}", "forceescape(...) would be 20,000"),
        ("{{ ('\U0001f600' * 1000) | urlencode }}", "urlencode(...) would be 12,000"),
        ("{{ ('\U0001f600' * 1000) | tojson }}", "tojson(...) would be 12,002"),
        ("{{ (['\\x00' * 3000]) | string }}", "string(...) would be 12,004"),
        ("{{ ('a' * 4000).encode().hex('-') }}", "the result of .hex() would be 11,999"),
        ("{{ 'x' | safe + '<' * 4000 }}", "the result of + would be 16,001"),
    ],
    ids=["escape", "forceescape", "urlencode", "tojson", "string", "hex", "markup +"],
)
def test_results_larger_than_their_input_are_measured(
    monkeypatch: pytest.MonkeyPatch, source: str, what: str
) -> None:
    monkeypatch.setenv("OXY_MAX_RENDER_CHARS", "10000")
    assert what in _limit_error(source)


def test_a_long_text_given_to_a_template_may_still_pass_through_filters(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Only what a call makes larger is refused: a context file longer than the render
    limit can still be trimmed, lowered and cut."""
    monkeypatch.setenv("OXY_MAX_RENDER_CHARS", "10000")
    assert _render("{{ doc | trim | lower | truncate(20) }}", doc=" A" * 8000) == (
        "a a a a a a a a..."
    )


# -- numbers and codecs -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "what"),
    [
        ("{{ 5 | round(-100000000) }}", "round(precision=-100,000,000)"),
        ("{{ 5.5 | round(100000000, 'floor') }}", "round(precision=100,000,000)"),
        ("{{ ('f' * 1000000) | int(base=16) }}", "int(...) is an integer of 4,000,000 bits"),
        ("{{ (0).from_bytes(('a' * 100000).encode(), 'big') }}", "an integer of 799,999 bits"),
        ("{{ (1).to_bytes(1000000000, 'big') | length }}", ".to_bytes() would be 1,000,000,000"),
        ("{{ ('\\u00e9' * 20000).encode('punycode') }}", "the punycode codec of 20,000"),
        ("{{ ('xn--' ~ 'a' * 2000000).encode().decode('idna') }}", "the idna codec of 2,000,004"),
        ("{{ ('\\u00e9' * 20000).encode('IDNA') }}", "the idna codec of 20,000"),
        ("{{ ('\\u00e9' * 100000).encode('ascii', 'namereplace') }}", "with namereplace"),
    ],
    ids=[
        *("round", "round floor", "int base 16", "from_bytes", "to_bytes"),
        *("punycode", "idna", "IDNA", "namereplace"),
    ],
)
def test_numbers_and_codecs_whose_work_outgrows_their_input(source: str, what: str) -> None:
    """round(5, -10**8) computes 10**(10**8) (minutes); an integer of millions of bits
    from int(s, 16) makes the next division take seconds; to_bytes allocates what it is
    asked for; punycode and idna are quadratic (2,000,000 characters: minutes)."""
    assert what in _limit_error(source)


def test_ordinary_numbers_and_codecs_are_unchanged() -> None:
    source = (
        "{{ 1234.5678 | round(2) }} {{ 1234 | round(-2) }} {{ 2.5 | round(0, 'ceil') }} "
        "{{ 'ff' | int(base=16) }} {{ 'münchen.de'.encode('idna').decode() }} "
        "{{ 'é'.encode('ascii', 'namereplace').decode() }} {{ (258).to_bytes(2, 'big') | list }}"
    )
    assert _render(source) == (
        "1234.57 1200 3.0 255 xn--mnchen-3ya.de \\N{LATIN SMALL LETTER E WITH ACUTE} [1, 2]"
    )


# -- the clock: deadline and stop flag between and inside long calls ----------------------


def test_the_deadline_stops_a_few_long_calls_without_loop_iterations_to_count(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Forty calls of about 0.05 s each: far fewer than a batch of iterations or calls
    between two checks, but their work adds up on the clock."""
    monkeypatch.setenv("OXY_RENDER_TIMEOUT", "0.2")
    source = "{% for i in range(40) %}{{ s | wordwrap(1) | length }}{% endfor %}"
    text = _limit_error(source, s="a" * 100_000)
    assert "rendering took more than 0.2 s" in text


def test_a_stop_request_ends_a_long_single_call() -> None:
    """A word of Unicode spaces wrapped at width 1: a line per character, seconds of
    work in one call (quadratic before: hours); the stop flag is seen inside it."""
    timer = threading.Timer(0.2, _tasks.request_stop)
    started = time.monotonic()
    timer.start()
    try:
        with pytest.raises(asyncio.CancelledError):
            _render("{{ s | wordwrap(1) | length }}", s=("\xa0" * 1000 + "b") * 4000)
    finally:
        timer.cancel()
        _tasks.clear_stop()
    assert time.monotonic() - started < 5


def test_sum_of_lists_concatenates_once() -> None:
    """100,000 one-item lists: minutes with Python's sum (each + copies the total)."""
    assert _quick("{{ ([[1]] * 100000) | sum(start=[]) | length }}") == "100000"
    assert _render("{{ [[1], [2, 3]] | sum(start=[0]) }} {{ [(1,), (2,)] | sum(start=()) }}") == (
        "[0, 1, 2, 3] (1, 2)"
    )
    with pytest.raises(LoadError, match="TypeError"):  # Python's own error for a mix
        _render("{{ [[1], (2,)] | sum(start=[]) }}")
