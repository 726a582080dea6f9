"""oxyeval.inputs: outside text made valid, outside JSON strict and bounded."""

from __future__ import annotations

import json
import logging

import pytest

from oxyeval.inputs import (
    MAX_JSON_DEPTH,
    JSONProblem,
    finite_json,
    lenient_loads,
    loads,
    reset_warnings,
    valid_text,
    value_problem,
)


@pytest.fixture(autouse=True)
def _fresh_warnings(monkeypatch: pytest.MonkeyPatch) -> None:
    reset_warnings()
    # caplog listens at the root; a CLI test before this one may have stopped propagation.
    monkeypatch.setattr(logging.getLogger("oxyeval"), "propagate", True)


@pytest.mark.parametrize(
    ("text", "fixed"),
    [
        ("plain", "plain"),
        ("Sales rose \ud83d", "Sales rose \ufffd"),  # JSON's "\ud83d", alone
        ("\udcff\udcfe", "\ufffd\ufffd"),  # argv bytes ff fe, as Python decodes them
        ("\ud83d\ude00", "\U0001f600"),  # a pair: joined into its character
    ],
)
def test_valid_text_replaces_lone_surrogates(text: str, fixed: str) -> None:
    assert valid_text(text) == fixed
    fixed.encode("utf-8")  # what every writer needs


def test_the_warning_names_the_place_once_per_invocation(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="oxyeval"):
        valid_text("a\udcff", "--var 'n'")
        valid_text("b\udcff", "--var 'n'")
    (record,) = caplog.records
    assert record.getMessage().startswith("--var 'n': 1 invalid character(s)")
    reset_warnings()
    with caplog.at_level(logging.WARNING, logger="oxyeval"):
        valid_text("a\udcff", "--var 'n'")
    assert len(caplog.records) == 2


def test_loads_makes_keys_and_values_valid(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="oxyeval"):
        value = loads('{"k\\ud800": ["Sales rose \\ud83d", {"x": "\\udcff"}]}', "model 'm'")
    assert value == {"k\ufffd": ["Sales rose \ufffd", {"x": "\ufffd"}]}
    assert [r.getMessage()[:30] for r in caplog.records] == ["model 'm': 3 invalid character"]


@pytest.mark.parametrize(
    ("text", "line", "why"),
    [
        ("[1, NaN]", 1, "NaN is not a number JSON allows"),
        ('{\n"a": -Infinity}', 2, "-Infinity is not a number"),
        ("[\n\n1e999]", 3, "1e999 is out of range"),
        ("[0,\n" + "9" * 5000 + "]", 2, "an integer of 5000 digits"),  # ValueError in int()
        ("[" * 100_000 + "]" * 100_000, 1, "nested more than 100 levels"),  # RecursionError
        ("[" * 101 + "]" * 101, 1, "nested more than 100 levels"),  # parsed, then too deep
        ("{", 1, "not valid JSON"),
    ],
)
def test_loads_refuses_what_json_has_not_or_python_cannot_hold(
    text: str, line: int, why: str
) -> None:
    with pytest.raises(JSONProblem, match=why) as caught:
        loads(text)
    assert caught.value.line == line
    assert caught.value.syntax is (why == "not valid JSON")


def test_loads_takes_the_deepest_allowed_and_every_finite_number() -> None:
    deep = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH
    assert loads(deep) is not None
    assert loads('{"a": [1e308, -0.0, 123, "NaN"]}') == {"a": [1e308, -0.0, 123, "NaN"]}


def test_loads_bytes_that_are_not_utf8() -> None:
    with pytest.raises(JSONProblem, match="not UTF-8") as caught:
        loads(b'"\xff"')
    assert caught.value.syntax


def _nested(levels: int) -> object:
    value: object = []
    for _ in range(levels - 1):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ({"a": [1, float("nan")]}, "input.a[1]: NaN is not a number JSON allows"),
        ({"a": float("-inf")}, "input.a: -Infinity is not a number JSON allows"),
        ({"a": 10**308}, "input.a: an integer of more than 308 digits"),
        ({"a": -(10**5000)}, "input.a: an integer of more than 308 digits"),
        ({"a": _nested(MAX_JSON_DEPTH)}, "input: nested more than 100 levels"),
        ({"a": _nested(900)}, "input: nested more than 100 levels"),
    ],
    ids=["nan", "-inf", "309 digits", "5001 digits", "101 levels", "901 levels"],
)
def test_a_decoded_value_is_held_to_the_bounds_loads_keeps(value: object, why: str) -> None:
    assert value_problem(value, "input") == why + (
        " (numbers must be finite)"
        if "JSON allows" in why
        else " is out of range"
        if "digits" in why
        else " deep (lists and objects inside each other)"
    )


def test_a_decoded_value_within_the_bounds_has_no_problem() -> None:
    value = {"a": [10**308 - 1, -1e308, True, None, "NaN"], "b": _nested(MAX_JSON_DEPTH - 1)}
    assert value_problem(value, "input") is None


def test_finite_json_writes_what_strict_json_cannot_hold_as_null() -> None:
    value = {"a": (float("nan"), 1.5, 10**5000), "b": [{"c": float("inf")}], "d": True}
    fixed = finite_json(value)
    assert fixed == {"a": [None, 1.5, None], "b": [{"c": None}], "d": True}
    json.dumps(fixed, allow_nan=False)  # strict JSON now
    assert value["b"][0]["c"] == float("inf")  # a copy: the caller's value is untouched
    deep, levels = finite_json(_nested(5000)), 1  # iterative: any depth
    while deep:
        deep, levels = deep[0], levels + 1
    assert levels == 5000


def test_lenient_loads_reads_what_an_older_version_stored() -> None:
    text = '{"a": NaN, "b": -Infinity, "c": 1e999, "d": ' + "9" * 5000 + ', "e": [1, 2.5]}'
    assert lenient_loads(text) == {"a": None, "b": None, "c": None, "d": None, "e": [1, 2.5]}
