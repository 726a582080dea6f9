"""What a rendering produces is bounded while it is produced.

Each piece of ``{% set s = 'x' * 1000000 %}{% set a = [s] * 100000 %}{{ a }}`` is within
its own limit, but the list holds the string 100,000 times: printing it builds 100 GB,
comparing or sorting it walks as much. So every list, tuple or mapping a template builds
(a literal, ``*``, ``+``, a filter, a call) is weighed as it is made: its size once
unfolded, about the characters of its text. None may weigh more than ten times the
render limit, and one about to become text (printed, ``~``, ``string``, ``tojson``,
``%``, ``format``, ``join``) no more than the render limit itself.

The render limit is set to 10,000 characters here (weights up to 100,000), so that each
case is decided in milliseconds.
"""

from __future__ import annotations

import time

import pytest

from oxyeval.project.render_budget import budget

from .sandbox_checks import limit_error as _limit_error
from .sandbox_checks import render_source as _render

LIMIT = 10_000


@pytest.fixture(autouse=True)
def _small_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OXY_MAX_RENDER_CHARS", str(LIMIT))


def test_the_issue_s_list_of_one_string_many_times_is_refused_before_it_is_printed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OXY_MAX_RENDER_CHARS")  # the issue's sizes, at the default limits
    text = _limit_error("{% set s='x'*1000000 %}{% set a=[s]*100000 %}{{ a }}")
    assert "a repeated list would be more than 50,000,000 characters once printed" in text


def test_comparing_or_printing_shared_nested_lists_is_refused_when_they_are_built(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The issue's 24-second ``c == d`` and 40-second ``c | string``."""
    monkeypatch.delenv("OXY_MAX_RENDER_CHARS")
    build = "{% set a = [0] * 1000 %}{% set b = [a] * 1000 %}{% set c = [b] * 1000 %}"
    for use in ("{{ c == c2 }}", "{{ c | string }}", "{{ c | sort | first }}"):
        text = _limit_error(build + "{% set c2 = [b] * 1000 %}" + use)
        assert "a repeated list would be more than" in text


# Each builds a value that holds a 1,000-character string (or a list as heavy) more
# often than the weight limit allows, in one of the ways a template can.
S = "{% set s = 'x' * 1000 %}"
DOUBLE = "{% set ns = namespace(v=[s]) %}{% for i in range(20) %}{% set ns.v = V %}{% endfor %}"


def double(value: str) -> str:
    """Twenty rounds of ``ns.v = <value>``, which holds ns.v twice."""
    return S + DOUBLE.replace("V", value)


@pytest.mark.parametrize(
    ("source", "message"),
    [
        (double("[ns.v, ns.v]"), "a list would be more than 100,000"),
        (double("(ns.v, ns.v)"), "a tuple would be more than"),
        (double("{'a': ns.v, 'b': ns.v}"), "a mapping would be more than"),
        (double("ns.v + ns.v"), "a + concatenated list would be more than"),
        (double("dict(a=ns.v, b=ns.v)"), "the value returned by a call would be"),
        (double("[ns.v, ns.v] | list"), "a list would be more than"),
        (S + "{{ [s] * 200 }}", "a repeated list would be more than"),
        (S + "{{ ([none] * 200) | map('default', [s], true) | list }}", "the result of list("),
        (S + "{% for b in [1] | batch(200, s) %}{{ b }}{% endfor %}", "batch(...) would repeat"),
        (S + "{{ range(200) | slice(200, [s]) | list }}", "slice(...) would repeat"),
        (S + "{{ ([[s]] * 60) | sum(start=[s] * 60) }}", "the result of sum(...) would be"),
    ],
    ids=[
        "literal list",
        "literal tuple",
        "literal mapping",
        "plus",
        "dict()",
        "filter result",
        "repeat",
        "map default",
        "batch fill",
        "slice fill",
        "sum of lists",
    ],
)
def test_every_way_to_repeat_a_value_is_weighed(source: str, message: str) -> None:
    assert message in _limit_error(source)


@pytest.mark.parametrize(
    ("use", "message"),
    [
        ("{{ a }}", "the rendered text would be"),
        ("{{ a ~ '' }}", "a ~ concatenation would be more than 10,000"),
        ("{{ a | string }}", "string(...) would be more than 10,000"),
        ("{{ a | tojson }}", "tojson(...) would be more than 10,000"),
        ("{{ a | join(',') }}", "join(...) would be"),
        ("{{ '%s' % (a,) }}", "a %-formatted value would be more than"),
        ("{{ '{}'.format(a) }}", "a formatted field would be more than"),
        ("{{ a | upper }}", "upper(...) would be more than"),
    ],
)
def test_a_value_within_the_weight_limit_still_prints_only_within_the_render_limit(
    use: str, message: str
) -> None:
    """50 copies of 1,000 characters: 50,000, a value a template may hold (and compare,
    count, loop over), but not print."""
    assert message in _limit_error(S + "{% set a = [s] * 50 %}" + use)
    assert _render(S + "{% set a = [s] * 50 %}{{ a | length }} {{ a == a }}") == "50 True"


def test_tojson_with_indent_is_measured_as_it_is_written() -> None:
    """Indentation grows with depth: a list 200 deep weighs 800 but prints 1.2 MB."""
    deep = "{% set ns = namespace(v=[1]) %}{% for i in range(200) %}{% set ns.v = [ns.v] %}{% endfor %}"
    assert "tojson(...) would be" in _limit_error(deep + "{{ ns.v | tojson(indent=64) }}")
    assert "pprint(...) would be" in _limit_error(deep + "{{ ns.v | pprint }}")
    assert _render(deep + "{{ ns.v | tojson | length }}") == "403"


def test_a_namespace_in_a_list_cannot_grow_the_list_after_it_was_weighed() -> None:
    source = (
        "{% set ns = namespace(a=1) %}{% set l = [ns] * 200 %}{% set ns.a = 'x' * 10000 %}"
        "{{ l[0] }} {{ l | string | length }} {{ ns.a | length }}"
    )
    assert _render(source) == "<Namespace a> 3000 10000"


def test_large_data_from_outside_can_still_be_copied_sorted_and_looped_over() -> None:
    """The weight limit bounds repetition, not the data a rendering was given: 2,000 rows
    weigh about 60,000 (6 times the render limit), and copying them is no repetition."""
    rows = [{"region": f"region {i:04}", "total": i} for i in range(2_000)]
    source = (
        "{% set big = rows | selectattr('total', 'ge', 0) | list %}"
        "{% set top = rows | sort(attribute='total', reverse=true) %}"
        "{{ big | length }} {{ top[0].region }} {{ rows | map(attribute='total') | sum }}"
        "{% for r in top[:2] %} {{ r.total }}{% endfor %} {{ big == rows }}"
    )
    assert _render(source, rows=rows) == "2000 region 1999 1999000 1999 1998 True"


def test_weights_count_shared_references_and_stop_early(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OXY_MAX_RENDER_CHARS")
    s = "x" * 1_000_000
    shared = [[s] * 1000] * 1000  # a gigabyte of text, 8 MB of memory
    started = time.monotonic()
    with budget() as spent:
        assert spent.weigh(shared) > spent.weight_limit
        assert spent.weigh([1, [2, 3], "ab"]) == len(repr([1, [2, 3], "ab"])) + 4  # ~ its text
        deep: list[object] = [1]
        for _ in range(100_000):  # deeper than Python's recursion: walked without it
            deep = [deep]
        assert spent.weigh(deep, 10**9) == 4 * 100_000 + 5
    assert time.monotonic() - started < 5
