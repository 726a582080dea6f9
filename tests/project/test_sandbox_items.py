"""Filters and methods that make lists keep to the item limit; filters walk their input
through the rendering's ticker (attack F17).

``("x" * 5000000) | sort`` made five million items (4 s, 840 MB) and ``| map("upper") |
list`` six seconds, while a list built with ``+`` or ``*`` stops at 100,000 items. Every
conversion that makes a list now keeps to the same limit, before it starts where the
input's length is known; the Python loops inside filters count as iterations and check
the deadline and the stop flag.
"""

from __future__ import annotations

import pytest
from jinja2 import Environment

from oxyeval.errors import LoadError
from oxyeval.project import limits

from .sandbox_checks import limit_error as _limit_error
from .sandbox_checks import render_source as _render

FIVE_MILLION = "{% set s = 'x' * 5000000 %}"


@pytest.mark.parametrize(
    "expression",
    [
        "s | list",
        "s | sort",
        "s | map('upper') | list",
        "s | select | list",
        "s | reject('lower') | list",
        "s | unique | list",
        "s | max",
        "s | min",
        "s | join(',')",
        "s | batch(3) | list",
        "s | slice(3) | list",
        "s | groupby('x')",
        "s | sum",
        "s | list | reverse | list",
    ],
)
def test_a_long_string_is_not_taken_as_millions_of_items(expression: str) -> None:
    name = expression.split("|")[1].strip().split("(")[0]
    text = _limit_error(FIVE_MILLION + "{{ " + expression + " }}")
    assert f"{name}(...) would take a string of 5,000,000 characters as that many items" in text
    assert f"limited to {limits.MAX_TEMPLATE_ITEMS:,} items" in text


def test_a_string_within_the_limit_and_a_loop_over_a_long_one_are_fine() -> None:
    source = (
        "{{ ('ab' * 50000) | list | length }} {{ ('ba' * 50000) | sort | first }} "
        "{{ ('xyz' * 1000) | unique | join }} {{ ('x' * 5000000) | reverse | length }}"
        "{% set n = namespace(c=0) %}{% for c in 'x' * 1000000 %}{% endfor %}"
    )
    assert _render(source) == "100000 a xyz 5000000"


@pytest.fixture
def small(monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(limits, "MAX_TEMPLATE_ITEMS", 1_000)
    return 1_000


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("items | list", "list(...) would hold 1,001 items"),
        ("items | sort", "sort(...) would hold 1,001 items"),
        ("items | unique | list", "unique(...) would hold 1,001 items"),
        ("items | groupby('real')", "groupby(...) would hold 1,001 items"),
        ("items | slice(2) | list", "slice(...) would hold 1,001 items"),
        ("mapping | dictsort", "dictsort(...) would have 1,001 items"),
        ("mapping | list", "list(...) would hold 1,001 items"),
        ("items | sum(start=[])", "sum(...) would hold 1,001 items"),
        # lazy inputs: cut as the next item would pass the limit
        ("items | map('string') | list", "list(...) would hold more than 1,000 items"),
        ("items | select('number') | sort", "sort(...) would hold more than 1,000 items"),
        ("mapping | items | list", "list(...) would hold more than 1,000 items"),
        ("items | map('string') | reverse | list", "reverse(...) would hold more than 1,000"),
        # methods
        ("text.split(',')", "the result of .split() would hold 1,001 items"),
        ("text.rsplit(',')", "the result of .rsplit() would hold 1,001 items"),
        ("words.split()", "the result of .split() would hold more than 1,000 items"),
        ("lines.splitlines()", "the result of .splitlines() would hold 1,001 items"),
        ("blines.splitlines()", "the result of .splitlines() would hold 1,001 items"),
        ("dict.fromkeys(items)", "the value returned by a call would have 1,001 items"),
    ],
)
def test_every_conversion_to_a_list_keeps_to_the_item_limit(
    small: int, expression: str, message: str
) -> None:
    context = {
        "items": list(range(small + 1)),
        "mapping": dict.fromkeys(range(small + 1)),
        "text": "," * small,
        "words": "w " * (small + 1),
        "lines": "l\r\n\u2028" * (small // 2) + "last",
        "blines": b"l\r\n\r" * (small // 2) + b"last",
    }
    assert message in _limit_error("{{ " + expression + " }}", **context)


def test_at_the_limit_and_with_maxsplit_the_lists_are_made(small: int) -> None:
    context = {"items": list(range(small)), "text": "," * (small - 1), "lines": "l\n" * small}
    source = (
        "{{ items | list | length }} {{ items | sort | last }} {{ text.split(',') | length }} "
        "{{ lines.splitlines() | length }} {{ (text ~ ',,,').split(',', 5) | length }} "
        "{{ items | map('string') | join | length }} {{ items | sum }}"
    )
    assert _render(source, **context) == f"1000 999 1000 1000 6 2890 {sum(range(1000))}"


def test_streaming_filters_walk_any_number_of_items_as_iterations(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """map, select, join, sum, min and max hold nothing: a large input from outside (an
    SQL result of many rows) may go through them, its items counted as iterations."""
    rows = [{"n": i} for i in range(200_000)]
    source = (
        "{{ rows | map(attribute='n') | select('odd') | map('string') | join(',') | length }} "
        "{{ rows | map(attribute='n') | sum }} {{ rows | map(attribute='n') | max }}"
    )
    odd = ",".join(str(i) for i in range(1, 200_000, 2))
    assert _render(source, rows=rows) == f"{len(odd)} {sum(range(200_000))} 199999"
    monkeypatch.setattr(limits, "MAX_TEMPLATE_ITERATIONS", 300_000)
    text = _limit_error(source, rows=rows)
    assert "more than 300,000 loop iterations in one rendering, counting the items" in text


@pytest.mark.parametrize(
    "source",
    [
        "{{ items | map('upper') | list }} {{ items | map(attribute='real') | list }}",
        "{{ items | select('lower') | list }} {{ items | reject('lower') | list }}",
        "{{ rows | selectattr('a', 'gt', 1) | list }} {{ rows | rejectattr('a') | list }}",
        "{{ items | unique | list }} {{ items | unique(case_sensitive=true) | list }}",
        "{{ rows | groupby('b') }} {{ rows | groupby('b', case_sensitive=true) | list }}",
        "{{ mapping | dictsort }} {{ mapping | dictsort(by='value', reverse=true) }}",
        "{{ items | sort }} {{ rows | sort(attribute='a,b', reverse=true) }}",
        "{{ items | reverse | list }} {{ 'abc' | reverse }} {{ (items | map('upper')) | reverse }}",
        "{{ items | batch(2, 'z') | list }} {{ items | slice(2, 'z') | list }}",
        "{{ rows | sum(attribute='a') }} {{ items | join('-') }} {{ rows | join(',', 'b') }}",
        "{{ items | min }} {{ items | max(case_sensitive=true) }} {{ rows | max(attribute='a') }}",
        "{{ mapping | list }} {{ mapping | items | list }} {{ [] | map('upper') | list }}",
        "{{ 'a,b,,c'.split(',') }} {{ ' a b '.split() }} {{ 'a\\nb\\r\\n'.splitlines(true) }}",
    ],
)
def test_the_filters_give_what_jinja_gives(source: str) -> None:
    context = {
        "items": ["b", "A", "a", "C", "b"],
        "rows": [{"a": 1, "b": "x"}, {"a": 3, "b": "Y"}, {"a": 2, "b": "X"}],
        "mapping": {"b": 2, "A": 1, "c": 3},
    }
    expected = Environment().from_string(source).render(context)
    assert _render(source, **context) == expected


def test_an_undefined_input_is_still_an_undefined_error() -> None:
    for expression in ("x | list", "x | map('upper') | list", "x | sort", "x | join"):
        with pytest.raises(LoadError, match="'x' is undefined"):
            _render("{{ " + expression + " }}")
