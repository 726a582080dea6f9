"""The template integer limit holds at its stated size: an integer of exactly
MAX_TEMPLATE_INT_BITS bits is built, one bit more is refused before it is computed."""

from __future__ import annotations

import pytest

from oxyeval.errors import LoadError
from oxyeval.project.limits import MAX_TEMPLATE_INT_BITS
from oxyeval.project.templates import TemplateRef, render

LIMIT = MAX_TEMPLATE_INT_BITS


def bits_of(source: str, **context: object) -> int:
    return int(render(TemplateRef(source), context))


def refused(source: str, **context: object) -> str:
    with pytest.raises(LoadError) as caught:
        render(TemplateRef(source), context)
    return caught.value.diagnostics[0].message


@pytest.mark.parametrize(
    ("base", "exponent"),
    [
        (2, LIMIT - 1),  # 2 ** 99999: exactly 100,000 bits
        (-2, LIMIT - 1),
        (4, (LIMIT - 1) // 2),  # a power of two with a wider base
        (10, 30102),  # 99,997 bits: the old estimate (4 bits a digit) said 120,408
        (3, 63092),  # the largest power of 3 within the limit (99,999 bits)
    ],
)
def test_powers_up_to_the_limit_are_built(base: int, exponent: int) -> None:
    expected = (abs(base) ** exponent).bit_length()
    assert expected <= LIMIT
    assert bits_of("{{ (b ** e) | abs | attr('bit_length')() }}", b=base, e=exponent) == expected


@pytest.mark.parametrize(
    ("base", "exponent", "bits"),
    [
        (2, LIMIT, LIMIT + 1),
        (-2, LIMIT, LIMIT + 1),
        (10, 30103, 100_001),
        (3, 63093, 100_001),
    ],
)
def test_one_bit_more_is_refused_with_its_size(base: int, exponent: int, bits: int) -> None:
    assert (abs(base) ** exponent).bit_length() == bits  # the figure the message gives is exact
    message = refused("{{ b ** e > 0 }}", b=base, e=exponent)
    assert f"an integer of about {bits:,} bits; templates are limited to {LIMIT:,}" in message


def test_products_hold_at_the_limit_too() -> None:
    half = 2 ** (LIMIT // 2)
    assert bits_of("{{ (a * b).bit_length() }}", a=half, b=half // 2) == LIMIT
    assert "an integer of about 100,001 bits" in refused("{{ a * b > 0 }}", a=half, b=half)


def test_huge_powers_are_refused_without_being_computed() -> None:
    # Computing these would take hours or all memory: the bound decides alone.
    assert "templates are limited to 100,000" in refused("{{ 3 ** (10 ** 30) }}")
    message = refused("{{ 2 ** (10 ** 5000) }}")  # more digits than Python will print
    assert "an integer of more than 10**18 bits" in message


def test_trivial_bases_and_negative_exponents_stay_small() -> None:
    assert render(TemplateRef("{{ 1 ** (10 ** 50) }} {{ 0 ** (10 ** 50) }}"), {}) == "1 0"
    assert render(TemplateRef("{{ (-1) ** (10 ** 50 + 1) }} {{ 2 ** -2 }}"), {}) == "-1 0.25"


def test_an_integer_too_long_to_print_says_so_in_the_users_words() -> None:
    message = refused("{{ 2 ** 20000 }}")  # 6,021 digits: computed, but not printable
    assert "an integer too long to print" in message and "4,300 digits" in message
    assert "sys.set_int_max_str_digits" not in message
    assert refused("{{ 'a'.index('b') }}").startswith("template error: ValueError: substring")
