"""The words of a bad history location: a port out of range says so."""

from __future__ import annotations

import pytest

from oxyeval.errors import EXIT_INPUT
from oxyeval.store import LocationError, resolve_location


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("postgresql://u@host:99999/db", "the port 99999 is out of range: a port is 1-65535"),
        ("postgresql://u@host:0/db", "the port 0 is out of range: a port is 1-65535"),
        ("postgresql://u@[::1]:70000/db", "the port 70000 is out of range: a port is 1-65535"),
        ("postgresql://u@host:5o32/db", "the port is not a number ('5o32')"),
    ],
)
def test_a_bad_port_is_named_with_what_is_wrong(url: str, problem: str) -> None:
    with pytest.raises(LocationError) as info:
        resolve_location(url, environ={})
    assert str(info.value) == f"history database {url}: {problem}"
    assert info.value.exit_code == EXIT_INPUT


@pytest.mark.parametrize(
    "url",
    ["postgresql://u@host:1/db", "postgresql://u@host:65535/db", "postgresql://u@[::1]/db"],
)
def test_ports_in_range_and_no_port_are_accepted(url: str) -> None:
    assert resolve_location(url, environ={}).backend == "postgresql"
