"""Dataclasses pickled as their field values, in order.

Why: a large run sends results, previous results and case histories between its
processes and to disk by the thousand (its writer process answers with one per case; a
run past its memory budget reads its results back several times for the report). A
slotted dataclass pickles by field name, which took about five times the room and the
time to read back; its values in order, handed to the class, make the same object.
"""

from __future__ import annotations

from dataclasses import fields
from operator import attrgetter
from typing import Any, TypeVar

__all__ = ["as_values"]

T = TypeVar("T")


def as_values(cls: type[T]) -> type[T]:
    """Class decorator, above ``@dataclass``: ``cls`` pickled as ``cls(*values)``. Every
    field must be an ``__init__`` argument, in field order (the dataclass default)."""
    names = [f.name for f in fields(cls)]  # type: ignore[arg-type]
    if len(names) < 2:
        raise TypeError(f"{cls.__name__} has too few fields to be pickled as values")
    values = attrgetter(*names)

    def __reduce__(self: T) -> tuple[type[T], tuple[Any, ...]]:
        return cls, values(self)

    cls.__reduce__ = __reduce__  # type: ignore[assignment,method-assign]
    return cls
