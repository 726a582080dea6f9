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


class UnderWay:
    """An event sink that counts the subjects under way at once: started
    (``SubjectStarted``) and not yet given all their ``runs`` samples
    (``SampleFinished``); ``most`` is the largest count seen."""

    def __init__(self, runs: int) -> None:
        self.runs = runs
        self.most = 0
        self._live: set[str] = set()
        self._sampled: dict[str, int] = {}

    def __call__(self, event: Any) -> None:
        name = type(event).__name__
        if name == "SubjectStarted":
            self._live.add(event.subject)
            self.most = max(self.most, len(self._live))
        elif name == "SampleFinished":
            self._sampled[event.subject] = self._sampled.get(event.subject, 0) + 1
            if self._sampled[event.subject] == self.runs:
                self._live.discard(event.subject)


def scrubbed(value: Any, root: Any, volatile: frozenset[str]) -> Any:
    """A run document without what differs between two runs of the same files: the
    ``volatile`` keys (ids, times) and the project's folder in texts."""
    if isinstance(value, dict):
        return {k: scrubbed(v, root, volatile) for k, v in value.items() if k not in volatile}
    if isinstance(value, list):
        return [scrubbed(v, root, volatile) for v in value]
    return value.replace(str(root), "ROOT") if isinstance(value, str) else value
