"""A dataclass pickled as its values comes back equal, every field in its place."""

from __future__ import annotations

import pickle
from dataclasses import dataclass

import pytest

from oxyeval._pickled import as_values


@as_values
@dataclass(frozen=True, slots=True)
class _Point:
    name: str
    score: float | None
    length: int
    passed: bool = False


def test_values_come_back_in_their_fields() -> None:
    point = _Point("a", 0.25, 7, True)
    data = pickle.dumps(point, protocol=pickle.HIGHEST_PROTOCOL)
    assert pickle.loads(data) == point
    assert b"score" not in data  # by value, not by field name
    assert pickle.loads(pickle.dumps(_Point("b", None, 0))) == _Point("b", None, 0)


def test_a_one_field_class_is_refused() -> None:
    @dataclass
    class One:
        only: int

    with pytest.raises(TypeError, match="too few fields"):
        as_values(One)
