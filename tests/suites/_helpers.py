"""Small helpers shared by the suites' tests."""

from __future__ import annotations

from typing import Any


def count_lookups(store: Any) -> list[int]:
    """The number of keys of each ``store.cache.get_many`` from now on (appended as they
    are asked), the store's own method still answering."""
    asked: list[int] = []
    real = store.cache.get_many

    def counted(keys: Any, **kwargs: Any) -> Any:
        asked.append(len(keys))
        return real(keys, **kwargs)

    store.cache.get_many = counted
    return asked
